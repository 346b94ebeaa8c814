import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// Two hosts serving one library (PRODUCT.md section 8): two daemons, each with its own
/// mountpoint and host name, on one library folder whose metadata is in PostgreSQL (a
/// server of the test process's own). What one host changes, the other shows at once:
/// the test first makes the other host's kernel cache the old state (a listing, a name
/// looked up, attributes), so that only the PostgreSQL notification can make it see the
/// change; it waits for that, never for a fixed time.
final class MultiHostTests: XCTestCase {
    var temp: TempDirectory!
    var database: String!
    var lib: String!
    var a: MountedLibrary!
    var b: MountedLibrary!
    let gps = Samples.directory + "/photos/jpg/gps"

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-hosts")
        database = try PostgresServer.shared().makeDatabase()
        lib = temp.sub("lib")
        let created = try Processes.run(Processes.albumfs, ["init", lib, "--database", database], timeout: 60)
        XCTAssertTrue(created.ok, created.stderr)
        a = try MountedLibrary(library: lib, temp: temp, name: "a", options: ["host=a", "allow_other"])
        b = try MountedLibrary(library: lib, temp: temp, name: "b", options: ["host=b", "allow_other"])
    }

    override func tearDown() {
        a?.unmount()
        b?.unmount()
        if let database { try? PostgresServer.shared().dropDatabase(database) }
        temp?.remove()
    }

    /// Waits until `condition` holds (a change seen through the other host), up to 10 s;
    /// returns how long it took.
    @discardableResult
    func waitFor(_ what: String, _ condition: () -> Bool, file: StaticString = #filePath, line: UInt = #line) -> Double {
        let start = Date()
        while Date().timeIntervalSince(start) < 10 {
            if condition() { return Date().timeIntervalSince(start) }
            usleep(5_000)
        }
        XCTFail("never seen: \(what)", file: file, line: line)
        return 10
    }

    func names(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// Runs a shell command and fails the test if it fails.
    func sh(_ command: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try Processes.shell(command)
        XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)", file: file, line: line)
    }

    func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    func inode(_ path: String) -> UInt64? {
        var st = stat()
        return stat(path, &st) == 0 ? UInt64(st.st_ino) : nil
    }

    func testAPhotoCopiedInThroughOneHostIsListedReadAndThumbnailedThroughTheOther() throws {
        let trip = "Albums/Trip"
        try FileManager.default.createDirectory(atPath: a.mountpoint + "/" + trip, withIntermediateDirectories: false)
        waitFor("the new album") { exists(b.mountpoint + "/" + trip) }
        // b's kernel now holds the album's (empty) listing and the top of All Photos.
        XCTAssertEqual(names(b.mountpoint + "/" + trip), [])
        _ = names(b.mountpoint + "/All Photos")

        let source = gps + "/DSCN0010.jpg"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        try sh("cp '\(source)' '\(a.mountpoint)/\(trip)/P.jpg'")
        waitFor("P.jpg in the album") { names(b.mountpoint + "/" + trip) == ["P.jpg"] }
        // All Photos' listing was cached: only the notification makes b list it again.
        let listed = waitFor("P.jpg in All Photos") { names(b.mountpoint + "/All Photos").contains("P.jpg") }
        print("host b listed in All Photos the photo copied in through host a after \(String(format: "%.1f", listed * 1000)) ms")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: b.mountpoint + "/\(trip)/P.jpg")), bytes)
        let thumbnail = try Data(contentsOf: URL(fileURLWithPath: b.mountpoint + "/\(trip)/.thumbnails/P.jpg.jpg"))
        XCTAssertEqual(Array(thumbnail.prefix(2)), [0xFF, 0xD8], "a JPEG thumbnail made through host b")
        // The same inode number through both hosts (an NFS client may move between them).
        let number = try XCTUnwrap(inode(a.mountpoint + "/\(trip)/P.jpg"))
        XCTAssertEqual(inode(b.mountpoint + "/\(trip)/P.jpg"), number)

        // A rename through a: b had looked P.jpg up (its kernel keeps names for an hour).
        try sh("mv '\(a.mountpoint)/\(trip)/P.jpg' '\(a.mountpoint)/\(trip)/Q.jpg'")
        waitFor("the rename") { !exists(b.mountpoint + "/\(trip)/P.jpg") && exists(b.mountpoint + "/\(trip)/Q.jpg") }
        XCTAssertEqual(inode(b.mountpoint + "/\(trip)/Q.jpg"), number)

        // b's kernel holds the attributes of the photo's shared thumbnail (a PNG of the
        // freedesktop layout, whose size and mtime follow the photo's bytes).
        let png = "/\(trip)/.sh_thumbnails/large/" + (try XCTUnwrap(names(b.mountpoint + "/\(trip)/.sh_thumbnails/large").first))
        let oldPNG = try Data(contentsOf: URL(fileURLWithPath: b.mountpoint + png))

        // A new version through a: b's kernel had the old size and bytes.
        let other = try Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0012.jpg"))
        XCTAssertNotEqual(other.count, bytes.count)
        try sh("cat '\(gps)/DSCN0012.jpg' > '\(a.mountpoint)/\(trip)/Q.jpg'")
        waitFor("the new version's size") {
            var st = stat()
            return stat(b.mountpoint + "/\(trip)/Q.jpg", &st) == 0 && Int(st.st_size) == other.count
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: b.mountpoint + "/\(trip)/Q.jpg")), other)
        XCTAssertEqual(inode(b.mountpoint + "/\(trip)/Q.jpg"), number)
        // The shared thumbnail through b is the new one, whole (a review found b keeping
        // the old PNG's size, so that the new one came cut short).
        let newPNG = try Data(contentsOf: URL(fileURLWithPath: a.mountpoint + png))
        XCTAssertNotEqual(newPNG, oldPNG)
        func attributes(_ path: String) -> [Int] {
            var st = stat()
            return stat(path, &st) == 0 ? [st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec] : []
        }
        XCTAssertEqual(attributes(a.mountpoint + png).first, newPNG.count)
        waitFor("the new version's shared thumbnail") {
            attributes(b.mountpoint + png) == attributes(a.mountpoint + png)
                && (try? Data(contentsOf: URL(fileURLWithPath: b.mountpoint + png))) == newPNG
        }

        // Trashed through a: gone from b's album and All Photos, in b's Recently Deleted.
        try sh("rm '\(a.mountpoint)/All Photos/P.jpg'")
        waitFor("the photo trashed") {
            !exists(b.mountpoint + "/\(trip)/Q.jpg") && !names(b.mountpoint + "/All Photos").contains("P.jpg")
                && names(b.mountpoint + "/Smart Albums/Recently Deleted").contains("P.jpg")
        }
        // Restored through b: back in a's album.
        _ = names(a.mountpoint + "/" + trip)
        try sh("mv '\(b.mountpoint)/Smart Albums/Recently Deleted/P.jpg' '\(b.mountpoint)/All Photos/P.jpg'")
        waitFor("the photo restored, seen through host a") { names(a.mountpoint + "/" + trip) == ["Q.jpg"] }

        // The album renamed through b.
        try sh("mv '\(b.mountpoint)/\(trip)' '\(b.mountpoint)/Albums/Rome'")
        waitFor("the album renamed, seen through host a") {
            !exists(a.mountpoint + "/" + trip) && names(a.mountpoint + "/Albums/Rome") == ["Q.jpg"]
        }
        // A plain file through a.
        try sh("echo notes > '\(a.mountpoint)/Albums/Rome/notes.txt'")
        waitFor("the plain file") { names(b.mountpoint + "/Albums/Rome") == ["Q.jpg", "notes.txt"] }
        XCTAssertEqual(try String(contentsOfFile: b.mountpoint + "/Albums/Rome/notes.txt", encoding: .utf8), "notes\n")
        // A hard link of it through a: b's kernel had its attributes (one name).
        func links(_ path: String) -> Int {
            var st = stat()
            return stat(path, &st) == 0 ? Int(st.st_nlink) : 0
        }
        XCTAssertEqual(links(b.mountpoint + "/Albums/Rome/notes.txt"), 1)
        try sh("ln '\(a.mountpoint)/Albums/Rome/notes.txt' '\(a.mountpoint)/Albums/Rome/again.txt'")
        waitFor("the hard link") {
            names(b.mountpoint + "/Albums/Rome") == ["Q.jpg", "again.txt", "notes.txt"] && links(b.mountpoint + "/Albums/Rome/notes.txt") == 2
        }
        XCTAssertEqual(inode(b.mountpoint + "/Albums/Rome/again.txt"), inode(b.mountpoint + "/Albums/Rome/notes.txt"))
        try sh("rm '\(a.mountpoint)/Albums/Rome/notes.txt'")
        waitFor("the first name removed") {
            names(b.mountpoint + "/Albums/Rome") == ["Q.jpg", "again.txt"] && links(b.mountpoint + "/Albums/Rome/again.txt") == 1
        }
        XCTAssertEqual(try String(contentsOfFile: b.mountpoint + "/Albums/Rome/again.txt", encoding: .utf8), "notes\n")

        // A fixed folder's mode set through a: b's kernel had its attributes.
        func mode(_ path: String) -> mode_t {
            var st = stat()
            return stat(path, &st) == 0 ? st.st_mode & 0o7777 : 0
        }
        XCTAssertEqual(mode(b.mountpoint + "/All Photos"), 0o750)  // allow_other's umask: 027
        try sh("chmod 700 '\(a.mountpoint)/All Photos'")
        waitFor("the mode of All Photos") { mode(b.mountpoint + "/All Photos") == 0o700 }

        a.unmount()
        b.unmount()
        let check = try Processes.albumfs("check", lib)
        XCTAssertTrue(check.ok, check.stdout + check.stderr)
    }

    /// DSCN0010 copied in as All Photos/P.jpg through host a, once host b shows it.
    func copyPThroughAAndSeeItThroughB() throws {
        try sh("cp '\(gps)/DSCN0010.jpg' '\(a.mountpoint)/All Photos/P.jpg'")
        waitFor("P.jpg through b") { exists(b.mountpoint + "/All Photos/P.jpg") }
    }

    /// P.jpg deleted for good through host b: removed, then removed from Recently Deleted.
    func deletePForGoodThroughB() throws {
        try sh("rm '\(b.mountpoint)/All Photos/P.jpg' && rm '\(b.mountpoint)/Smart Albums/Recently Deleted/P.jpg'")
    }

    /// After handles through host a wrote on into P.jpg, deleted for good through host b,
    /// and closed: P.jpg is gone through a, nothing they wrote is a photo, and `check`
    /// passes once both hosts are unmounted.
    func expectNothingWrittenCameBackThenCheck(file: StaticString = #filePath, line: UInt = #line) throws {
        waitFor("P.jpg gone through a", { !exists(a.mountpoint + "/All Photos/P.jpg") }, file: file, line: line)
        XCTAssertEqual(names(a.mountpoint + "/All Photos"), [], "nothing it wrote is a photo", file: file, line: line)
        XCTAssertEqual(names(b.mountpoint + "/Smart Albums/Recently Deleted"), [], file: file, line: line)
        a.unmount()
        b.unmount()
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 0, check.stdout, file: file, line: line)
    }

    /// A photo deleted for good through host b while a process has it open for writing
    /// through host a, with nothing written yet: as on a disk, the process writes on into
    /// the bytes it opened and closes without an error, and nothing it wrote comes back
    /// into the library. Before, its first write failed with EIO ("no bytes to copy"),
    /// seen with `plain-stress.py photos= elsewhere=`.
    func testAPhotoDeletedThroughOneHostWhileOpenThroughTheOtherTakesItsWrites() throws {
        try copyPThroughAAndSeeItThroughB()
        let fd = open(a.mountpoint + "/All Photos/P.jpg", O_WRONLY | O_APPEND)
        XCTAssertGreaterThanOrEqual(fd, 0, String(cString: strerror(errno)))
        try deletePForGoodThroughB()
        let tail = Array("a tail".utf8)
        XCTAssertEqual(write(fd, tail, tail.count), tail.count, String(cString: strerror(errno)))
        XCTAssertEqual(close(fd), 0, String(cString: strerror(errno)))
        try expectNothingWrittenCameBackThenCheck()
    }

    /// A photo deleted for good through host b while a viewer reads it and its thumbnail
    /// through host a: as on a disk, `fstat` through a's handles says `st_nlink` 0 and
    /// their size, and they read to the end (before, both were ENOENT once a heard of it).
    func testAPhotoDeletedThroughOneHostWhileReadThroughTheOtherKeepsItsBytesForItsReaders() throws {
        try copyPThroughAAndSeeItThroughB()
        let photo = try Array(Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0010.jpg")))
        let thumbnailPath = a.mountpoint + "/All Photos/.thumbnails/P.jpg.jpg"
        let thumbnail = try Array(Data(contentsOf: URL(fileURLWithPath: thumbnailPath)))
        // With a handle open for writing beside the reader, nothing written through it
        // yet: before, `fstat` through both was ENOENT, and a read through it EIO.
        let held = [(open(a.mountpoint + "/All Photos/P.jpg", O_RDONLY), photo), (open(thumbnailPath, O_RDONLY), thumbnail),
                    (open(a.mountpoint + "/All Photos/P.jpg", O_RDWR), photo)]
        for (fd, _) in held { XCTAssertGreaterThanOrEqual(fd, 0, String(cString: strerror(errno))) }
        try deletePForGoodThroughB()
        waitFor("P.jpg gone through a") { !exists(a.mountpoint + "/All Photos/P.jpg") }
        for (index, (fd, bytes)) in held.enumerated() {
            var st = stat()
            XCTAssertEqual(fstat(fd, &st), 0, "handle \(index): \(String(cString: strerror(errno)))")
            XCTAssertEqual(st.st_nlink, 0, "handle \(index)")
            XCTAssertEqual(Int(st.st_size), bytes.count, "handle \(index)")
            var read = [UInt8](repeating: 0, count: bytes.count + 10)
            XCTAssertEqual(pread(fd, &read, read.count, 0), bytes.count, "handle \(index): \(String(cString: strerror(errno)))")
            XCTAssertTrue(read.prefix(bytes.count).elementsEqual(bytes), "handle \(index)")
            XCTAssertEqual(close(fd), 0, String(cString: strerror(errno)))
        }
        try expectNothingWrittenCameBackThenCheck()
    }

    /// The same once a close of the process's had saved a version: a second handle it
    /// holds writes on into that version (until 2026-12-05 its write failed with EBADF,
    /// a gap docs/scale.md listed), `fstat` and reads through it show what it wrote, and
    /// it closes without an error; nothing it wrote comes back into the library.
    func testAPhotoDeletedThroughOneHostAfterASaveThroughTheOtherTakesTheWritesOfItsOtherHandle() throws {
        try copyPThroughAAndSeeItThroughB()
        let path = a.mountpoint + "/All Photos/P.jpg"
        let saving = open(path, O_WRONLY | O_APPEND), other = open(path, O_RDWR | O_APPEND)
        XCTAssertGreaterThanOrEqual(saving, 0, String(cString: strerror(errno)))
        XCTAssertGreaterThanOrEqual(other, 0, String(cString: strerror(errno)))
        let first = Array("first tail".utf8), second = Array("second tail".utf8)
        XCTAssertEqual(write(saving, first, first.count), first.count, String(cString: strerror(errno)))
        XCTAssertEqual(close(saving), 0, String(cString: strerror(errno)))
        let saved = try Array(Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0010.jpg"))) + first
        waitFor("the saved version through b") { (try? Data(contentsOf: URL(fileURLWithPath: b.mountpoint + "/All Photos/P.jpg")).count) == saved.count }
        try deletePForGoodThroughB()
        XCTAssertEqual(write(other, second, second.count), second.count, String(cString: strerror(errno)))
        var st = stat()
        XCTAssertEqual(fstat(other, &st), 0, String(cString: strerror(errno)))
        XCTAssertEqual(Int(st.st_size), saved.count + second.count, "its size: the version it saved, then what it wrote")
        var read = [UInt8](repeating: 0, count: saved.count + second.count + 10)
        XCTAssertEqual(pread(other, &read, read.count, 0), saved.count + second.count, String(cString: strerror(errno)))
        XCTAssertTrue(read.prefix(saved.count + second.count).elementsEqual(saved + second), "it reads the version it saved, then what it wrote")
        XCTAssertEqual(close(other), 0, String(cString: strerror(errno)))
        try expectNothingWrittenCameBackThenCheck()
    }

    /// A host crashes while a new file is open for writing through it; the file is then
    /// written and closed through the other host. The crashed host's next start discards
    /// the files it created and never closed, but not that one: it was closed since, and
    /// it keeps both hosts' bytes (until 2026-12-05 it was discarded).
    func testAFileCreatedThroughACrashedHostAndClosedThroughTheOtherSurvivesItsRestart() throws {
        try sh("mkdir '\(a.mountpoint)/Albums/N'")
        let fd = open(a.mountpoint + "/Albums/N/notes.txt", O_WRONLY | O_CREAT | O_EXCL, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0, String(cString: strerror(errno)))
        let first = Array("written through a\n".utf8)
        XCTAssertEqual(write(fd, first, first.count), first.count, String(cString: strerror(errno)))
        // Another file created through a and never closed: the restart discards it.
        let lost = open(a.mountpoint + "/Albums/N/lost.txt", O_WRONLY | O_CREAT | O_EXCL, 0o644)
        XCTAssertGreaterThanOrEqual(lost, 0, String(cString: strerror(errno)))
        a.crash()
        close(fd)
        close(lost)
        waitFor("notes.txt through b") { exists(b.mountpoint + "/Albums/N/notes.txt") }
        try sh("echo 'written through b' >> '\(b.mountpoint)/Albums/N/notes.txt'")
        a = try MountedLibrary(library: lib, temp: temp, name: "a2", options: ["host=a", "allow_other"])
        let expected = "written through a\nwritten through b\n"
        XCTAssertEqual(try String(contentsOfFile: a.mountpoint + "/Albums/N/notes.txt", encoding: .utf8), expected)
        waitFor("lost.txt gone through b") { !exists(b.mountpoint + "/Albums/N/lost.txt") }
        XCTAssertEqual(names(b.mountpoint + "/Albums/N"), ["notes.txt"])
        XCTAssertEqual(try String(contentsOfFile: b.mountpoint + "/Albums/N/notes.txt", encoding: .utf8), expected)
        a.unmount()
        b.unmount()
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 0, check.stdout)
    }

    /// PostgreSQL ends every session (as a restart does): both daemons connect again,
    /// the first operation after it included, and host b's listener too, which says it may
    /// have missed changes and then hears the next ones.
    func testBothHostsGoOnWhenTheDatabaseEndsTheirSessions() throws {
        try FileManager.default.createDirectory(atPath: a.mountpoint + "/Albums/Trip", withIntermediateDirectories: false)
        waitFor("the new album") { exists(b.mountpoint + "/Albums/Trip") }
        _ = names(b.mountpoint + "/All Photos")
        let ended = try PostgresConnection(database).query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
            """)
        XCTAssertGreaterThanOrEqual(ended.count, 4, "both daemons' writers and listeners were connected")
        waitFor("b's listener connected again") { b.log.contains("may have been missed") }

        let source = gps + "/DSCN0010.jpg"
        try sh("cp '\(source)' '\(a.mountpoint)/Albums/Trip/P.jpg'")
        waitFor("P.jpg in All Photos") { names(b.mountpoint + "/All Photos").contains("P.jpg") }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: b.mountpoint + "/Albums/Trip/P.jpg")),
                       try Data(contentsOf: URL(fileURLWithPath: source)))
        try sh("mkdir '\(b.mountpoint)/Albums/Rome'")
        waitFor("the album made through b, seen through a") { exists(a.mountpoint + "/Albums/Rome") }
    }

    /// An NFS client moves from host a to host b, as when a fails and its service address
    /// moves to b: the file handles it got through a's ganesha are accepted by b's (same
    /// export block, mount-scripts/sharing) and name the same files, though b's kernel
    /// never looked those files up. The handles hold FUSE node ids, which are the inode
    /// numbers every host shares, and the filesystem's major number (fsid_type Major64).
    func testNFSHandlesGotThroughHostAAreAcceptedByHostB() throws {
        let trip = a.mountpoint + "/Albums/Trip"
        try FileManager.default.createDirectory(atPath: trip, withIntermediateDirectories: false)
        try sh("cp '\(gps)/DSCN0010.jpg' '\(gps)/DSCN0012.jpg' '\(trip)/'")
        let nfs = try GaneshaServer(exporting: a.mountpoint, in: temp)
        defer { nfs.stop() }
        let holder = try NFSHolder(nfs, paths: ["/Albums/Trip/DSCN0010.jpg", "/All Photos/DSCN0010.jpg", "/Albums/Trip/DSCN0012.jpg"],
                                   in: temp)
        defer { holder.stop() }
        XCTAssertEqual(holder.before.count, 3, holder.before.joined(separator: "\n"))

        // Host a goes down, ganesha and daemon; host b's ganesha takes over the address.
        nfs.stopGanesha()
        a.unmount()
        try nfs.failOver(to: b.mountpoint)
        let after = holder.readAgain()
        XCTAssertEqual(after.status, 0, after.lines.joined(separator: "\n"))
        XCTAssertEqual(after.lines, holder.before, "same inode numbers and bytes through host a's handles")
    }
}
