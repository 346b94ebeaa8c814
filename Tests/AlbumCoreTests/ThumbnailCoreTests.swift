import AlbumCore
import Foundation
import TestSupport
import XCTest

/// The thumbnail cache and its worker processes, in-process.
final class ThumbnailCoreTests: XCTestCase {
    var temp: TempDirectory!
    var library: Library!

    override func setUpWithError() throws {
        temp = TempDirectory()
        library = try Library.create(at: temp.sub("lib"))
    }

    override func tearDown() {
        library = nil
        temp.remove()
    }

    func testACrashingOrHangingDecoderCostsOneThumbnail() throws {
        let asset = try XCTUnwrap(try library.importFile(at: Samples.directory + "/photos/jpg/gps/DSCN0010.jpg",
                                                         originalName: "DSCN0010.jpg", destination: .library).asset)
        let blob = library.blobs.path(for: asset.sha256)
        let crashing = ThumbnailWorkerPool(executable: "/bin/sh", arguments: ["-c", "read line; kill -SEGV $$"], count: 1)
        XCTAssertThrowsError(try crashing.make(input: blob, kind: .photo, size: 64, output: temp.sub("x.jpg"))) { error in
            XCTAssertTrue("\(error)".contains("died"), "\(error)")
        }
        let hanging = ThumbnailWorkerPool(executable: "/bin/sh", arguments: ["-c", "read line; sleep 60"], count: 1, timeout: 1)
        let started = Date()
        XCTAssertThrowsError(try hanging.make(input: blob, kind: .photo, size: 64, output: temp.sub("y.jpg"))) { error in
            XCTAssertTrue("\(error)".contains("longer than"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)

        // Through the cache: no thumbnail, remembered, not tried again.
        let cache = ThumbnailCache(paths: library.paths, maker: crashing)
        XCTAssertNil(cache.thumbnail(for: asset, blob: blob, size: 64))
        XCTAssertTrue(cache.failed(sha256: asset.sha256, size: 64))
        // A working maker makes it at another size, and gc keeps it while the blob lives.
        let good = ThumbnailCache(paths: library.paths, maker: InProcessThumbnails())
        let thumbnail = try XCTUnwrap(good.thumbnail(for: asset, blob: blob, size: 96))
        XCTAssertEqual(thumbnail.size, Int64(try Data(contentsOf: URL(fileURLWithPath: thumbnail.path)).count))
        XCTAssertEqual(try library.gc().removedThumbnails, 0)
        try library.deletePermanently(asset.id)
        XCTAssertEqual(try library.gc().removedThumbnails, 2, "the thumbnail and the failure mark of a gone blob")
    }
}
