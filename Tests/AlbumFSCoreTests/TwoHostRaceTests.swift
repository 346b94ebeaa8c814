import AlbumCore
import AlbumFSCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// Two hosts of one PostgreSQL library, in-process (two filesystem cores, each with its
/// own connections and host name, sharing the library's folder as two mounts on two
/// machines do), for races that a real two-host run meets once in thousands of calls:
/// `Library.setBeforeWrite` lets host b act at the very moment between a step of host
/// a and its transaction.
final class TwoHostRaceTests: XCTestCase {
    var temp: TempDirectory!
    var database: String?
    var a: CoreDriver!
    var b: CoreDriver!

    override func setUpWithError() throws {
        temp = TempDirectory("albumfs-two-hosts")
        let database = try PostgresServer.shared().makeDatabase()
        self.database = database
        let lib = temp.sub("lib")
        _ = try Library.create(at: lib, database: database)
        a = try CoreDriver(library: lib, host: "a")
        b = try CoreDriver(library: lib, host: "b")
    }

    override func tearDown() {
        a?.stop()
        b?.stop()
        a = nil
        b = nil
        if let database { try? PostgresServer.shared().dropDatabase(database) }
        temp?.remove()
    }

    /// Two handles of photo P through host a append to it; the first one's close places
    /// the new bytes as their blob, and before its transaction host b makes a photo R of
    /// the very same bytes (it finds them in place and names them) and deletes P for
    /// good. Host a's save cannot land; the blob stays, since R's row names it. The
    /// second handle then writes on. On a disk, P's handles keep a removed file's bytes:
    /// the write succeeds and changes nothing anyone else reads. Before, it went into
    /// the blob file itself, which the save had linked from its private copy: R read EIO
    /// ("size 3308, expected 3268" in `albumfs check`, a TSan run of
    /// `LoadTests.testProcessesOnTwoHostsRacingOnPlainFilesAndPhotosEndAsOnADisk`).
    func testHandlesWritingOnAfterASaveThatDidNotLandLeaveAnotherHostsPhotoOfTheSameBytesAlone() throws {
        let jpeg = Array(try Data(contentsOf: URL(fileURLWithPath: Samples.directory + "/photos/jpg/Olympus_C8080WZ.jpg")))
        let tail = Array(repeating: UInt8(ascii: "x"), count: 44)
        let saved = jpeg + tail
        try a.mkdir("Albums/Trip")
        try a.put("Albums/Trip/P.jpg", jpeg)
        let blob = a.fs.library.files.absolute(.blob(SHA256Digest.hex(of: Data(saved))))

        let first = try a.open("Albums/Trip/P.jpg", O_WRONLY | O_APPEND, mode: 0)
        let second = try a.open("Albums/Trip/P.jpg", O_WRONLY | O_APPEND, mode: 0)
        try a.write(first, tail, at: Int64(jpeg.count))
        nonisolated(unsafe) let hostB: CoreDriver = b
        let failures = Locked<[String]>([]), ran = Locked(false)
        a.fs.library.setBeforeWrite {
            // Host a's placement is there: its transaction comes next.
            guard FileManager.default.fileExists(atPath: blob) else { return false }
            do {
                try hostB.put("Albums/Trip/R.jpg", saved)
                try hostB.unlink("All Photos/P.jpg")
                try hostB.unlink("Smart Albums/Recently Deleted/P.jpg")
            } catch {
                failures.withLock { $0.append("host b: \(error)") }
            }
            ran.withLock { $0 = true }
            return true
        }
        XCTAssertNoThrow(try a.close(first), "P left the library while it was being saved: its close does not fail, as on a disk")
        a.fs.library.setBeforeWrite(nil)
        XCTAssertTrue(ran.withLock { $0 }, "host b acted between host a's placement and its transaction")
        XCTAssertEqual(failures.withLock { $0 }, [])

        let more = Array("and more\n".utf8)
        XCTAssertNoThrow(try a.write(second, more, at: Int64(saved.count)), "P's other handle writes on")
        XCTAssertNoThrow(try a.close(second))
        XCTAssertEqual(try b.get("Albums/Trip/R.jpg"), saved, "R, through host b, has the bytes it was made of")
        XCTAssertEqual(try a.get("Albums/Trip/R.jpg"), saved, "and through host a")
        XCTAssertEqual(try a.list("Albums/Trip"), ["R.jpg"], "nothing P's handles wrote became a photo")
        let check = try a.fs.library.check()
        XCTAssertEqual(check.problems, [])
    }

    /// Photo P is in Recently Deleted. Host a removes it there for good (`rm`), and
    /// between host a's look and its transaction host b restores it (`mv` back into All
    /// Photos). On a disk the name is gone by the time the rm runs: it fails with ENOENT,
    /// and the file stays. Before, host a deleted P for good, restored or not.
    func testAnRmInRecentlyDeletedLeavesAPhotoAnotherHostRestoredMeanwhile() throws {
        let jpeg = try Self.jpeg()
        try a.mkdir("Albums/Trip")
        try a.put("Albums/Trip/P.jpg", jpeg)
        try a.unlink("All Photos/P.jpg")
        XCTAssertTrue(b.exists("Smart Albums/Recently Deleted/P.jpg"))
        let ran = actingThroughHostB { b in try b.rename("Smart Albums/Recently Deleted/P.jpg", "All Photos/P.jpg") }
        XCTAssertEqual(a.errno { try a.unlink("Smart Albums/Recently Deleted/P.jpg") }, ENOENT,
                       "the rm finds the name gone, as on a disk")
        XCTAssertEqual(ran(), [], "host b restored P between host a's look and its transaction")
        XCTAssertEqual(try a.get("All Photos/P.jpg"), jpeg, "P is back, not deleted for good")
        XCTAssertEqual(try a.list("Albums/Trip"), ["P.jpg"], "with its album")
        XCTAssertEqual(try a.list("Smart Albums/Recently Deleted"), [])
        XCTAssertEqual(try a.fs.library.check().problems, [])
    }

    /// Host a renames photo T over photo P in one album (a save: P's next version is the
    /// bytes of what it renames), and between its look and its transaction host b renames
    /// T to U.jpg and copies photo S in under the name T had. rename(2) acts on what the
    /// name is when it runs: S's bytes are P's next version, and U.jpg is T as it was.
    /// Before, P took T's bytes, and the entry that left was S's.
    func testARenameOverAPhotoSavesWhatTheNameIsWhenAnotherHostReplacedItMeanwhile() throws {
        let jpeg = try Self.jpeg()
        let t = jpeg + Array("T".utf8), s = jpeg + Array("S".utf8)
        try a.mkdir("Albums/Trip")
        try a.put("Albums/Trip/P.jpg", jpeg)
        // Made through host b: host a knows no minute of a save for it.
        try b.put("Albums/Trip/T.jpg", t)
        XCTAssertEqual(try a.get("Albums/Trip/T.jpg"), t)
        let ran = actingThroughHostB { b in
            try b.rename("Albums/Trip/T.jpg", "Albums/Trip/U.jpg")
            try b.put("Albums/Trip/T.jpg", s)
        }
        XCTAssertNoThrow(try a.rename("Albums/Trip/T.jpg", "Albums/Trip/P.jpg"))
        XCTAssertEqual(ran(), [], "host b acted between host a's look and its transaction")
        let which = { (bytes: [UInt8]) in bytes == s ? "S" : bytes == t ? "T" : bytes == jpeg ? "P as it was" : "other bytes" }
        XCTAssertEqual(which(try a.get("Albums/Trip/P.jpg")), "S", "P's next version is what T.jpg was when the rename ran")
        XCTAssertEqual(which(try a.get("Albums/Trip/U.jpg")), "T", "T lives on as U.jpg, unchanged")
        XCTAssertEqual(Set(try a.list("Albums/Trip")), ["P.jpg", "U.jpg"])
        XCTAssertEqual(try a.fs.library.check().problems, [])
    }

    /// Host a removes the empty album Old (`rmdir`), and between its look and its
    /// transaction host b renames it Kept and makes a new empty album Old; then host a
    /// renames album Trip to Rome, and host b renames Trip to Paris and makes a new Trip
    /// meanwhile. rmdir and rename(2) act on what a name is when they run: the new Old
    /// goes and Kept stays; the new Trip becomes Rome, and Paris keeps Trip's photo.
    /// Before, both acted on the album their look found, by its number, where host b had
    /// put it: Kept was removed, and Paris became Rome.
    func testAnRmdirAndAnAlbumsRenameActOnWhatTheNameIsWhenAnotherHostRenamedItMeanwhile() throws {
        try a.mkdir("Albums/Old")
        try a.mkdir("Albums/Trip")
        try a.put("Albums/Trip/P.jpg", try Self.jpeg())
        var ran = actingThroughHostB { b in
            try b.rename("Albums/Old", "Albums/Kept")
            try b.mkdir("Albums/Old")
        }
        XCTAssertNoThrow(try a.rmdir("Albums/Old"))
        XCTAssertEqual(ran(), [], "host b acted between host a's look and its transaction")
        XCTAssertEqual(Set(try a.list("Albums")), ["Kept", "Trip"], "the rmdir removed what Old was when it ran")

        ran = actingThroughHostB { b in
            try b.rename("Albums/Trip", "Albums/Paris")
            try b.mkdir("Albums/Trip")
        }
        XCTAssertNoThrow(try a.rename("Albums/Trip", "Albums/Rome"))
        XCTAssertEqual(ran(), [], "host b acted between host a's look and its transaction")
        XCTAssertEqual(Set(try a.list("Albums")), ["Kept", "Paris", "Rome"])
        XCTAssertEqual(try a.list("Albums/Paris"), ["P.jpg"], "Paris is the Trip that held P")
        XCTAssertEqual(try a.list("Albums/Rome"), [], "Rome is the Trip made meanwhile")
        XCTAssertEqual(try a.fs.library.check().problems, [])
    }

    /// Host a renames plain file N3 (text) over plain file N8, and between its look and
    /// its transaction host b writes a photo into N8 and closes it: N8 becomes a photo,
    /// keeping its number. Renaming bytes that are no photo over a photo is refused
    /// (PRODUCT.md section 3): the rename fails with EINVAL and both stay as they were, as
    /// through one host. Before, the rename's look again took the photo for the plain
    /// file it had found (the same number) and gave N3 the name: the album listed N8
    /// twice, a photo and a plain file (`plain-stress.py photos= elsewhere=`, an ASan run
    /// of `LoadTests.testProcessesOnTwoHostsRacingOnPlainFilesAndPhotosEndAsOnADisk`).
    func testARenameOverAPlainFileThatAnotherHostMadeAPhotoMeanwhileIsRefused() throws {
        let photo = try Self.jpeg() + Array("abc".utf8)
        let text = Array("text\n".utf8)
        try a.mkdir("Albums/Trip")
        try a.put("Albums/Trip/N8", Array("plain\n".utf8))
        try a.put("Albums/Trip/N3", text)
        XCTAssertTrue(b.exists("Albums/Trip/N8"))
        let ran = actingThroughHostB { b in try b.put("Albums/Trip/N8", photo) }
        XCTAssertEqual(a.errno { try a.rename("Albums/Trip/N3", "Albums/Trip/N8") }, EINVAL,
                       "text over what is now a photo is refused, as through one host")
        XCTAssertEqual(ran(), [], "host b made N8 a photo between host a's look and its transaction")
        XCTAssertEqual(try a.list("Albums/Trip").sorted(), ["N3", "N8"], "each name once")
        XCTAssertEqual(try b.list("Albums/Trip").sorted(), ["N3", "N8"])
        XCTAssertEqual(try a.get("Albums/Trip/N8"), photo)
        XCTAssertEqual(try a.get("Albums/Trip/N3"), text)
        XCTAssertEqual(try a.fs.library.check().problems, [])
    }

    /// Host a renames plain file N3 over plain file N8, and between its look and its
    /// transaction host b links N8 as N9. rename(2) replaces the name N8 only: N9 keeps
    /// the file N8 was (a reading of the code suspected that the rename, whose row of
    /// N8 said one name, removed the file with both).
    func testARenameOverAPlainFileThatAnotherHostLinkedMeanwhileLeavesTheLink() throws {
        let old = Array("old\n".utf8), new = Array("new\n".utf8)
        try a.mkdir("Albums/Trip")
        try a.put("Albums/Trip/N8", old)
        try a.put("Albums/Trip/N3", new)
        XCTAssertTrue(b.exists("Albums/Trip/N8"))
        let ran = actingThroughHostB { b in try b.link("Albums/Trip/N8", "Albums/Trip/N9") }
        XCTAssertNoThrow(try a.rename("Albums/Trip/N3", "Albums/Trip/N8"))
        XCTAssertEqual(ran(), [], "host b linked N8 between host a's look and its transaction")
        XCTAssertEqual(try a.list("Albums/Trip").sorted(), ["N8", "N9"])
        XCTAssertEqual(try a.get("Albums/Trip/N8"), new)
        XCTAssertEqual(try b.get("Albums/Trip/N9"), old, "the link keeps the file N8 was")
        XCTAssertEqual(try a.stat("Albums/Trip/N9").nlink, 1)
        XCTAssertEqual(try a.fs.library.check().problems, [])
    }

    static func jpeg() throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: Samples.directory + "/photos/jpg/Olympus_C8080WZ.jpg")))
    }

    /// Has host b run `body` just before host a's next write transaction; returns what
    /// tells, afterwards, what went wrong: host b's failures, or that it never ran.
    func actingThroughHostB(_ body: @escaping @Sendable (CoreDriver) throws -> Void) -> () -> [String] {
        nonisolated(unsafe) let hostB: CoreDriver = b
        let failures = Locked<[String]>([]), ran = Locked(false)
        a.fs.library.setBeforeWrite {
            do { try body(hostB) } catch { failures.withLock { $0.append("host b: \(error)") } }
            ran.withLock { $0 = true }
            return true
        }
        return { [a] in
            a?.fs.library.setBeforeWrite(nil)
            return ran.withLock { $0 } ? failures.withLock { $0 } : ["host b never ran"]
        }
    }
}
