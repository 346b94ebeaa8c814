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
