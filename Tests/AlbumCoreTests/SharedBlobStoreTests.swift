import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// A library several hosts serve (PostgreSQL) shares its blob folder: a blob file that
/// no row names yet may be another host's import about to commit, not a crash's
/// leftover. These tests play that other host by putting files into `originals/` by
/// hand, as its link would.
final class SharedBlobStoreTests: XCTestCase {
    var temp: TempDirectory!
    var database: String!
    var library: Library!
    let photo = Samples.directory + "/photos/jpg/gps/DSCN0010.jpg"

    override func setUpWithError() throws {
        temp = TempDirectory("albumfs-shared-blobs")
        database = try PostgresServer.shared().makeDatabase()
        library = try Library.create(at: temp.sub("lib"), database: database)
    }

    override func tearDown() {
        library = nil
        if let database { try? PostgresServer.shared().dropDatabase(database) }
        temp?.remove()
    }

    /// Puts `bytes` at the blob path of `sha256`, as another host's placement would.
    func placeByHand(_ bytes: Data, as sha256: String) throws -> String {
        let path = library.files.absolute(.blob(sha256))
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try bytes.write(to: URL(fileURLWithPath: path))
        return path
    }

    func inode(_ path: String) -> UInt64 {
        var st = stat()
        return stat(path, &st) == 0 ? UInt64(st.st_ino) : 0
    }

    func testGCLeavesABlobWithoutARowAloneForAnHour() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: photo))
        let hash = SHA256Digest.hex(of: bytes)
        let path = try placeByHand(bytes, as: hash)
        let now = nowSeconds()
        XCTAssertEqual(try library.gc(now: now).removedBlobs, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path), "a blob another host may be importing stays")
        XCTAssertEqual(try library.gc(now: now + 2 * 3600).removedBlobs, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "an hour later it is a leftover, and goes")
    }

    /// A crash's leftover (a blob file with no row, over an hour old) that another host
    /// imports the very bytes of while `gc` is removing leftovers: the import found the
    /// file in place and its row names it, so `gc` keeps it (until 2026-12-05 it removed
    /// it, and the photo's blob was missing).
    func testGCKeepsALeftoverThatAnImportNamedMeanwhile() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: photo))
        let hash = SHA256Digest.hex(of: bytes)
        let path = try placeByHand(bytes, as: hash)
        let report = try library.gc(now: nowSeconds() + 2 * 3600, beforeOrphans: {
            guard case .imported = try library.importFile(at: photo, originalName: "P.jpg", destination: ImportDestination()) else {
                return XCTFail("the photo was not imported")
            }
        })
        XCTAssertEqual(report.removedBlobs, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path), "the blob of a photo imported meanwhile was removed")
        XCTAssertTrue(try library.check().isHealthy)
        // Without the import, the same leftover goes.
        let other = try Data(contentsOf: URL(fileURLWithPath: Samples.directory + "/photos/jpg/gps/DSCN0012.jpg"))
        let leftover = try placeByHand(other, as: SHA256Digest.hex(of: other))
        XCTAssertEqual(try library.gc(now: nowSeconds() + 2 * 3600).removedBlobs, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover))
    }

    func testAnImportKeepsAnotherHostsPlacementOfTheSameBytes() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: photo))
        let hash = SHA256Digest.hex(of: bytes)
        let path = try placeByHand(bytes, as: hash)
        let before = inode(path)
        guard case .imported = try library.importFile(at: photo, originalName: "P.jpg", destination: ImportDestination()) else {
            return XCTFail("the photo was not imported")
        }
        XCTAssertEqual(inode(path), before, "the other host's file is kept, not replaced under it")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes)
        XCTAssertTrue(try library.check().isHealthy)
    }

    func testAnImportReplacesAShortLeftover() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: photo))
        let hash = SHA256Digest.hex(of: bytes)
        let path = try placeByHand(bytes.prefix(1000), as: hash)
        guard case .imported = try library.importFile(at: photo, originalName: "P.jpg", destination: ImportDestination()) else {
            return XCTFail("the photo was not imported")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes, "the short file is replaced by the whole bytes")
        XCTAssertTrue(try library.check().isHealthy)
    }

    /// A plain file's bytes (`plain/<id>`, as the mount keeps a file being written)
    /// stored as a blob.
    func plainFileHolding(_ bytes: Data, id: Int64) throws -> HashedFile {
        let fd = try library.files.open(.plainFile(id), flags: O_RDWR | O_CREAT | O_EXCL)
        _ = try bytes.withUnsafeBytes { try fd.write($0, at: 0) }
        return try HashedFile.hashing(.plainFile(id), descriptor: fd)
    }

    /// Another host may still write into a plain file this host makes a photo of (its
    /// handles do not know), so the blob is a copy of the bytes, never a second name of
    /// the file: writes into it afterwards leave the blob as it was. Before, the blob
    /// was a link, and `plain-stress.py photos= elsewhere=` found blobs whose bytes had
    /// changed under their photos.
    func testAPlainFilesBytesArePlacedAsACopyOfTheirOwn() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: photo))
        let file = try plainFileHolding(bytes, id: 900_001)
        XCTAssertNotNil(try library.placeBlob(file))
        let blob = library.files.absolute(.blob(file.sha256)), plain = library.files.absolute(.plainFile(900_001))
        XCTAssertNotEqual(inode(blob), inode(plain), "the blob is a file of its own")
        _ = try Data("another host's write".utf8).withUnsafeBytes { try file.descriptor.write($0, at: 0) }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: blob)), bytes, "a write into the plain file leaves the blob alone")
        var st = stat()
        XCTAssertEqual(stat(blob, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o400, "read-only, as every blob")
        XCTAssertEqual(try library.blobs.healLeftovers(), [], "no second name is left")
    }

    /// Bytes that changed between their hash and their copy (another host writing into
    /// the file) are no blob of that hash: `changedMeanwhile`, so that the close reads
    /// them again, and nothing is placed.
    func testAPlainFileChangedBeforeItsCopyIsNotPlaced() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: photo))
        let file = try plainFileHolding(bytes, id: 900_002)
        _ = try Data("another host's write".utf8).withUnsafeBytes { try file.descriptor.write($0, at: 0) }
        XCTAssertThrowsError(try library.placeBlob(file)) { error in
            guard case LibraryError.changedMeanwhile = error else { return XCTFail("\(error)") }
        }
        XCTAssertFalse(library.blobs.exists(file.sha256))
        XCTAssertEqual(try library.blobs.healLeftovers(), [], "no second name is left")
    }

    /// This host placed a photo's bytes for an import whose transaction then failed,
    /// while another host found the file in place and committed a photo of the same
    /// bytes: taken back, the file stays, since a row names it now. Before, it went, and
    /// the other host's photo had no bytes (`check`: "blob file missing").
    func testATakenBackPlacementKeepsBytesAnotherHostsRowNamesNow() throws {
        let staged = try Staging(files: library.files).copy(from: photo)
        defer { _ = try? library.files.remove(staged.path) }
        guard let placement = try library.placeBlob(staged), placement.created else { return XCTFail("nothing was placed") }
        guard case .imported = try library.importFile(at: photo, originalName: "P.jpg", destination: ImportDestination()) else {
            return XCTFail("the photo was not imported")
        }
        library.takeBack(placement)
        XCTAssertTrue(FileManager.default.fileExists(atPath: library.files.absolute(.blob(staged.sha256))))
        XCTAssertTrue(try library.check().isHealthy)
    }

    /// The other way round: another host found this host's placement in place, and it
    /// was taken back (no row named it) before that host's transaction. The transaction
    /// then finds it gone (`changedMeanwhile`), and the import places its own bytes.
    func testALandingWhoseFoundBlobWasTakenBackStartsOver() throws {
        let staged = try Staging(files: library.files).copy(from: photo)
        defer { _ = try? library.files.remove(staged.path) }
        guard let placement = try library.placeBlob(staged), placement.created else { return XCTFail("nothing was placed") }
        XCTAssertNoThrow(try library.write { tx in try tx.expectBlobInPlace(staged.sha256) }, "in place: nothing to do")
        library.takeBack(placement)
        XCTAssertFalse(FileManager.default.fileExists(atPath: library.files.absolute(.blob(staged.sha256))), "no row named it: it went")
        XCTAssertThrowsError(try library.write { tx in try tx.expectBlobInPlace(staged.sha256) }) { error in
            guard case LibraryError.changedMeanwhile = error else { return XCTFail("\(error)") }
        }
        guard case .imported = try library.importFile(at: photo, originalName: "P.jpg", destination: ImportDestination()) else {
            return XCTFail("the photo was not imported")
        }
        XCTAssertTrue(try library.check().isHealthy)
    }
}
