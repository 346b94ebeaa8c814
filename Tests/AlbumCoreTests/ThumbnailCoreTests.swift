import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// The thumbnail cache and the decoder worker processes (the real `albumfs
/// decoder-worker`), in-process: a decoder that dies on a file costs that file's
/// thumbnail; one that hangs or cannot start costs nothing for good.
final class ThumbnailCoreTests: NewLibraryTestCase {
    override func tearDown() {
        unsetenv("ALBUMFS_TEST_CRASH_MARKER")
        unsetenv("ALBUMFS_TEST_HANG_MARKER")
        super.tearDown()
    }

    func importVariant(_ tag: String) throws -> Asset {
        let path = temp.sub("\(tag).jpg")
        try MediaFactory.variant(of: Samples.directory + "/photos/jpg/gps/DSCN0010.jpg", at: path, tag: tag)
        return try XCTUnwrap(try library.importFile(at: path, originalName: "\(tag).jpg", destination: .library).asset)
    }

    func testDecodersThatCrashHangOrCannotStart() throws {
        let good = try importVariant("plain")
        let crashing = try importVariant("marker-crash-me")
        let hanging = try importVariant("marker-hang-me")
        // Workers started from here inherit these: they die, or hang, on files that carry
        // the marker, as a parser would on crafted bytes.
        setenv("ALBUMFS_TEST_CRASH_MARKER", "marker-crash-me", 1)
        setenv("ALBUMFS_TEST_HANG_MARKER", "marker-hang-me", 1)
        let pool = DecoderPool(executable: Processes.albumfs, arguments: ["decoder-worker"], count: 1, timeout: 2)
        let cache = ThumbnailCache(library: library, decoder: pool)

        // Dies on its bytes twice (a fresh worker the second time): no thumbnail, and that
        // is remembered. The pool goes on working.
        XCTAssertNil(cache.thumbnail(for: crashing, size: 64))
        XCTAssertTrue(cache.failed(sha256: crashing.sha256, size: 64))
        XCTAssertNotNil(cache.thumbnail(for: good, size: 64))
        let blob = try library.blobs.open(crashing.sha256)
        XCTAssertThrowsError(try pool.metadata(of: blob, format: .jpeg)) { error in
            XCTAssertEqual((error as? DecoderError).map { if case .crashed = $0 { return true } else { return false } }, true, "\(error)")
        }

        // Out of time: a failure of the moment, not remembered.
        let started = Date()
        XCTAssertNil(cache.thumbnail(for: hanging, size: 64))
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        XCTAssertFalse(cache.failed(sha256: hanging.sha256, size: 64))

        // A decoder that cannot be started: not remembered either.
        let missing = ThumbnailCache(library: library, decoder: DecoderPool(executable: temp.sub("no-such-albumfs"),
                                                                              arguments: ["decoder-worker"], count: 1))
        XCTAssertNil(missing.thumbnail(for: good, size: 96))
        XCTAssertFalse(missing.failed(sha256: good.sha256, size: 96))

        // Once the machine is well again, the ones that failed for the moment are made.
        unsetenv("ALBUMFS_TEST_HANG_MARKER")
        let well = ThumbnailCache(library: library, decoder: DecoderPool(executable: Processes.albumfs,
                                                                           arguments: ["decoder-worker"], count: 1))
        let made = try XCTUnwrap(well.thumbnail(for: hanging, size: 64))
        XCTAssertEqual(made.size, Int64(try Data(contentsOf: URL(fileURLWithPath: library.files.absolute(made.path))).count))
        XCTAssertNotNil(well.thumbnail(for: good, size: 96))

        // gc keeps thumbnails while their blob lives, and removes them with it.
        XCTAssertEqual(try library.gc().removedThumbnails, 0)
        try library.write { try $0.deleteAsset(crashing.id) }
        XCTAssertEqual(try library.gc().removedThumbnails, 1, "the failure mark of a gone blob")
    }
}
