import AlbumCore
import Foundation
import TestSupport
import XCTest

/// Imports every file of ../shared/samples and compares what the library read with what
/// exiftool says (expected.json).
final class SampleImportTests: NewLibraryTestCase {
    /// Every media sample is imported with its bytes; what was read from them is compared
    /// with exiftool in MetadataAgreementTests.
    func testEveryMediaSampleIsImported() throws {
        for sample in Samples.media {
            let outcome = try library.importFile(at: sample.absolutePath, originalName: sample.name, destination: .library)
            guard case .imported(let asset, _) = outcome else {
                XCTFail("\(sample.path): expected an import, got \(outcome)")
                continue
            }
            XCTAssertEqual(asset.sha256, sample.sha256, sample.path)
            XCTAssertEqual(asset.size, sample.size, sample.path)
            XCTAssertEqual(asset.mediaType, sample.kind == "video" ? .video : .photo, sample.path)
        }
    }

    func testNotMediaIsRefusedWithAReason() throws {
        for sample in Samples.notMedia {
            let outcome = try library.importFile(at: sample.absolutePath, originalName: sample.name, destination: .library)
            guard case .refused(let why) = outcome else {
                XCTFail("\(sample.path): expected a refusal, got \(outcome)")
                continue
            }
            XCTAssertFalse(why.isEmpty, sample.path)
        }
        XCTAssertEqual(try library.stats().assets, 0)
        XCTAssertTrue(try library.blobs.allFiles().map(\.name).isEmpty, "a refused file left a blob")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: library.files.absolute(.staging)), [])
    }

    func testSmartAlbumKindsOfSamples() throws {
        func importSample(_ path: String) throws -> Asset {
            let sample = try XCTUnwrap(Samples.expected.first { $0.path == path })
            return try XCTUnwrap(library.importFile(at: sample.absolutePath, originalName: sample.name, destination: .library).asset)
        }
        XCTAssertTrue(try importSample("extras/Screenshot 2024-05-01 at 10.00.00.png").kinds.contains(.screenshot))
        XCTAssertTrue(try importSample("extras/animated.gif").kinds.contains(.animated))
        XCTAssertTrue(try importSample("extras/panorama.jpg").kinds.contains(.panorama))
        let plain = try importSample("photos/jpg/gps/DSCN0010.jpg")
        XCTAssertEqual(plain.kinds, [])
        XCTAssertEqual(try importSample("videos/clip-2021-03-05.mp4").mediaType, .video)
    }
}
