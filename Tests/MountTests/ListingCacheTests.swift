import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// The kernel keeps a folder's listing (`cache_readdir`) until the daemon drops it after a
/// change. A page of the listing read before a change and taken in by the kernel after
/// the change was dropped would be kept, stale, until the folder's next change: the
/// kernel's drop (`fuse_reverse_inval_inode`) removes the pages it has, not a reply on
/// its way (`OpenListings`). These tests hold such a page in the daemon
/// (`ALBUMFS_TEST_HOLD_LISTINGS`) while the change lands, then list the folder again, as
/// a user would.
///
/// The change is a new photo landing at its writer's close: a close takes no lock of the
/// folder, and a new name needs no name dropped. A change that drops a name in the
/// folder (a save in place, a photo deleted or redated elsewhere) is kept apart from
/// listings by the kernel itself: the name's drop waits for the folder's lock, which a
/// listing holds, and then counts a change of the folder that the kept listing is
/// checked against (tried here, with holds: such tests passed without the fix).
final class ListingCacheTests: MountTestCase {
    override var folderPrefix: String { "albumfs-listing-cache" }

    var holds: String { temp.sub("holds") }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try FileManager.default.createDirectory(atPath: holds, withIntermediateDirectories: true)
        try mountLibrary(environment: ["ALBUMFS_TEST_HOLD_LISTINGS": holds])
    }

    /// Two photos without a date of their own (dated by their mtime) in album B.
    func makeAlbumOfTwoPhotos() throws {
        try sh("mkdir Albums/B")
        for name in ["p0", "p1"] {
            let photo = temp.sub("\(name).jpg")
            try MediaFactory.image(at: photo, width: 64, height: 48)
            try sh("cp \(q(photo)) Albums/B/")
        }
    }

    /// Starts `ls -f` of `folder` (or a program that reads one entry of it and closes it,
    /// `firstEntryOnly`) with its first page held in the daemon; returns the running
    /// program once the page is read and held.
    func listHeld(_ folder: String, number n: Int, firstEntryOnly: Bool = false, output: Pipe? = nil) throws -> Process {
        var st = stat()
        XCTAssertEqual(stat(mount.path(folder), &st), 0)
        try "\(st.st_ino)".write(toFile: holds + "/hold", atomically: true, encoding: .utf8)
        let ls = Process()
        if firstEntryOnly {
            ls.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            ls.arguments = ["-c", "import os, sys; entries = os.scandir(sys.argv[1]); next(entries); entries.close()", mount.path(folder)]
        } else {
            ls.executableURL = URL(fileURLWithPath: "/bin/ls")
            ls.arguments = ["-f", mount.path(folder)]
        }
        ls.standardOutput = output ?? FileHandle.nullDevice
        try ls.run()
        let deadline = Date().addingTimeInterval(10)
        while access("\(holds)/held-\(n)", F_OK) != 0 && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(access("\(holds)/held-\(n)", F_OK), 0, "the listing of \(folder) reached the daemon and was held")
        return ls
    }

    /// Creates `path` on the mount and writes a photo's bytes into it, leaving it open.
    func startWritingAPhoto(_ path: String) throws -> Int32 {
        let photo = temp.sub("written.jpg")
        try MediaFactory.image(at: photo, width: 64, height: 48)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: photo))
        let fd = open(mount.path(path), O_CREAT | O_WRONLY | O_EXCL | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, bytes.count)
        return fd
    }

    func release(_ n: Int, _ ls: Process) {
        try? FileManager.default.removeItem(atPath: holds + "/hold")
        FileManager.default.createFile(atPath: "\(holds)/release-\(n)", contents: nil)
        ls.waitUntilExit()
    }

    /// `ls -f` of `folder`: the names in the folder's own order (its photos oldest first,
    /// PRODUCT.md section 2).
    func listed(_ folder: String) throws -> [String] {
        try sh("ls -f \(q(folder))").stdout.split(separator: "\n").map(String.init)
    }

    /// A photo copied into an album lands when its writer closes it: until then the album
    /// lists it as a file being written (among the plain files, before the photos), then
    /// among the photos, newest last. The kernel took in the first program's page, read
    /// before the close, after the close's drop; a second program that starts listing
    /// between the two dates the kernel's cache after the close, so that neither the
    /// album's new mtime nor anything else tells the kernel the cache is stale. Kept, it
    /// listed the new photo first, or twice before `OpenListings.returning`.
    func testAPhotoThatLandsWhileTwoProgramsListItsAlbumIsListedInItsPlaceAfterwards() throws {
        try makeAlbumOfTwoPhotos()
        let fd = try startWritingAPhoto("Albums/B/p2.jpg")
        let first = try listHeld("Albums/B", number: 1)
        XCTAssertEqual(close(fd), 0)
        let second = try listHeld("Albums/B", number: 2)
        release(1, first)
        release(2, second)
        XCTAssertEqual(try listed("Albums/B"), [".", "..", "p0.jpg", "p1.jpg", "p2.jpg"])
        XCTAssertEqual(try listed("Albums/B"), [".", "..", "p0.jpg", "p1.jpg", "p2.jpg"], "listed again, from the kernel's cache")
    }

    /// The program that lists the album across the close itself sees each name once: the
    /// photo is the file it listed among the files being written, and it is left out
    /// among the photos (`OpenListings.returning`).
    func testAProgramListingAnAlbumAcrossAPhotosLandingSeesItOnce() throws {
        try makeAlbumOfTwoPhotos()
        let fd = try startWritingAPhoto("Albums/B/p2.jpg")
        let output = Pipe()
        let ls = try listHeld("Albums/B", number: 1, output: output)
        XCTAssertEqual(close(fd), 0)
        release(1, ls)
        let seen = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(seen.split(separator: "\n").map(String.init).sorted(), [".", "..", "p0.jpg", "p1.jpg", "p2.jpg"])
        XCTAssertEqual(try listed("Albums/B"), [".", "..", "p0.jpg", "p1.jpg", "p2.jpg"])
    }

    /// The same with a first program that reads one entry and closes the folder (a
    /// listing stopped before its end): the kernel keeps the page it took in, and the
    /// second program's listing, read after the close, continues and completes it.
    func testAPhotoThatLandsWhileOneProgramReadsAnEntryOfItsAlbumAndAnotherListsItIsListedInItsPlaceAfterwards() throws {
        try makeAlbumOfTwoPhotos()
        let fd = try startWritingAPhoto("Albums/B/p2.jpg")
        let first = try listHeld("Albums/B", number: 1, firstEntryOnly: true)
        XCTAssertEqual(close(fd), 0)
        let second = try listHeld("Albums/B", number: 2)
        release(1, first)
        XCTAssertEqual(first.terminationStatus, 0)
        release(2, second)
        // The first program's close reaches the daemon a moment after it exits (the
        // kernel sends RELEASEDIR in the background): the listing is right once it has.
        let expected = [".", "..", "p0.jpg", "p1.jpg", "p2.jpg"]
        let deadline = Date().addingTimeInterval(5)
        while try listed("Albums/B") != expected && Date() < deadline { usleep(50_000) }
        XCTAssertEqual(try listed("Albums/B"), expected)
        XCTAssertEqual(try listed("Albums/B"), expected, "listed again")
    }
}
