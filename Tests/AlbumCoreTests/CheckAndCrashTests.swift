import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// `albumfs check` and what a SIGKILL in the middle of an import leaves behind, with the
/// real command-line binary.
final class CheckAndCrashTests: XCTestCase {
    var temp: TempDirectory!

    override func setUp() { temp = TempDirectory() }
    override func tearDown() { temp.remove() }

    func testCheckPassesOnAFreshLibraryAndNamesAlteredOrMissingBlobs() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0)
        let imported = try Processes.albumfs("import", lib, Samples.directory + "/photos/jpg/gps")
        XCTAssertTrue(imported.stdout.contains("imported 9"), imported.stdout)
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0)

        let library = try Library.open(at: lib, access: .reader)
        let altered = try XCTUnwrap(try library.asset(named: "DSCN0010.jpg"))
        let removed = try XCTUnwrap(try library.asset(named: "DSCN0012.jpg"))
        let alteredPath = library.files.absolute(.blob(altered.sha256))
        chmod(alteredPath, 0o600)
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: alteredPath))
        try handle.seek(toOffset: 1000)
        handle.write(Data([0x00, 0x01, 0x02]))
        try handle.close()
        XCTAssertEqual(unlink(library.files.absolute(.blob(removed.sha256))), 0)

        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 1)
        XCTAssertTrue(check.stdout.contains("asset \(altered.id) (DSCN0010.jpg)"), check.stdout)
        XCTAssertTrue(check.stdout.contains("contents altered"), check.stdout)
        XCTAssertTrue(check.stdout.contains("asset \(removed.id) (DSCN0012.jpg)"), check.stdout)
        XCTAssertTrue(check.stdout.contains("blob file missing"), check.stdout)
        let problems = check.stdout.split(separator: "\n").filter { $0.hasPrefix("problem:") }
        XCTAssertEqual(problems.count, 2, check.stdout)
    }

    /// A copy of a library that did not keep the files' times (`cp -r`, a restore from a
    /// backup without them): every original's time differs from the one stored, and
    /// reads refuse them (EIO) as they would a file changed on disk. `check` names each
    /// (a review found it saying "ok"), `check --repair` records the intact ones as they
    /// are, and they read again. An orphan a crash left short is a note, not damage.
    /// A name shown twice in one album, a photo's and a plain file's (what a race
    /// through two hosts left once, 2026-12-05): `check` names the album and the name.
    /// The rows are written with sqlite3 here, as no call through the mount makes them.
    func testCheckNamesANameAPhotoAndAPlainFileShareInOneAlbum() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        XCTAssertTrue(try Processes.albumfs("import", lib, "--album", "Trip", Samples.directory + "/photos/jpg/Olympus_C8080WZ.jpg").ok)
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0)
        let forged = try Processes.run("sqlite3", [lib + "/library.db", """
            INSERT INTO plain_files(id, dir_ino, name, name_key, mode, mtime_ns, changed_ns, blob_sha256)
            SELECT 900000, m.album_id, m.name, m.name_key, 420, 0, 0, a.sha256 FROM memberships m JOIN assets a ON a.id = m.asset_id
            """], timeout: 30)
        XCTAssertTrue(forged.ok, forged.stderr)
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 1, check.stdout)
        XCTAssertTrue(check.stdout.contains("Trip/Olympus_C8080WZ.jpg names a photo and a plain file"), check.stdout)
    }

    func testACopyOfTheLibraryWithoutItsTimesIsNamedAndRepairedByCheck() throws {
        let lib = temp.sub("lib"), copy = temp.sub("copy")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        XCTAssertTrue(try Processes.albumfs("import", lib, Samples.directory + "/photos/jpg/gps").stdout.contains("imported 9"))
        usleep(20_000)  // the copy's times differ from the originals' even on a coarse clock
        XCTAssertTrue(try Processes.shell("cp -r \(q(lib)) \(q(copy))").ok)
        let assets = try Library.open(at: copy, access: .reader).assets(in: .allPhotos)
        XCTAssertEqual(assets.count, 9)
        func reads() throws -> Int {
            let library = try Library.open(at: copy, access: .reader)
            return assets.filter { (try? library.openBlob($0.sha256, owner: $0.name)) != nil }.count
        }
        XCTAssertEqual(try reads(), 0, "reads refuse originals whose time changed")

        // A short orphan (a crash between linking a blob and its commit): a note.
        let other = Samples.directory + "/photos/tiff/Arbitro.tiff"
        let hash = try SystemCalls.open(other, flags: O_RDONLY).sha256()
        try FileManager.default.createDirectory(atPath: "\(copy)/originals/\(hash.prefix(2))", withIntermediateDirectories: true)
        try Data(try Data(contentsOf: URL(fileURLWithPath: other)).prefix(300)).write(to: URL(fileURLWithPath: "\(copy)/originals/\(hash.prefix(2))/\(hash)"))

        let check = try Processes.albumfs("check", copy)
        XCTAssertEqual(check.status, 1, check.stdout)
        let problems = check.stdout.split(separator: "\n").filter { $0.hasPrefix("problem:") }
        XCTAssertEqual(problems.count, 9, check.stdout)
        XCTAssertTrue(problems.allSatisfy { $0.contains("modification time") }, check.stdout)
        XCTAssertTrue(check.stdout.contains("orphan blob \(hash)"), check.stdout)
        XCTAssertFalse(check.stdout.contains("altered"), check.stdout)

        let repair = try Processes.albumfs("check", "--repair", copy)
        XCTAssertEqual(repair.status, 0, repair.stdout)
        XCTAssertTrue(repair.stdout.contains("recorded 9 intact original(s)"), repair.stdout)
        XCTAssertEqual(try reads(), 9)
        let again = try Processes.albumfs("check", copy)
        XCTAssertEqual(again.status, 0, again.stdout)
        XCTAssertFalse(again.stdout.contains("problem:"), again.stdout)
    }

    func testSIGKILLDuringImportNeverLeavesAHalfImportedAsset() throws {
        // Enough distinct photos that an import takes a while.
        let source = temp.sub("card")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        let count = 40
        for i in 0..<count {
            try MediaFactory.image(at: "\(source)/IMG_\(1000 + i).JPG", width: 1600, height: 1200, exif: [
                "exif-ifd2-DateTimeOriginal": String(format: "2024:06:%02d 10:00:00", 1 + i % 28),
            ])
        }
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        var generator = SystemRandomNumberGenerator()
        for round in 0..<6 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Processes.albumfs)
            process.arguments = ["import", lib, source]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(UInt32.random(in: 20_000...400_000, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let check = try Processes.albumfs("check", lib)
            XCTAssertEqual(check.status, 0, "round \(round): \(check.stdout)")
            // Every asset that made it has its whole blob and its album.
            let library = try Library.open(at: lib, access: .reader)
            for asset in try library.assets(in: .allPhotos) {
                XCTAssertEqual(asset.links, 1, "round \(round): \(asset.name) has no album membership")
            }
        }
        let finish = try Processes.albumfs("import", lib, source)
        XCTAssertEqual(finish.status, 0, finish.stderr)
        let library = try Library.open(at: lib, access: .exclusive)
        XCTAssertEqual(try library.stats().assets, count)
        XCTAssertEqual(try library.album(path: ["card"]).map { try library.members(ofAlbum: $0.id).count }, count)
        XCTAssertTrue(try library.check().isHealthy)
        _ = try library.gc()
        XCTAssertEqual(try library.blobs.allFiles().map(\.name).count, count, "gc removes orphans a kill left")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: library.files.absolute(.staging)), [],
                       "staging is cleaned when the library is opened for writing")
    }
}
