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

    /// `albumfs import` runs a file per core: a folder that holds the same bytes under
    /// several names imports them at once. Every import must succeed, and the library
    /// end with one photo of those bytes and a healthy blob. Before imports of one hash
    /// were kept apart (`BlobsInFlight`), a placement took the first one's file for a
    /// crash's leftover and replaced it: two doing so at once failed ("link ... .heal",
    /// "rename ... .heal": 400 rounds of 8 failed in each of 3 runs), and the blob's row
    /// could keep the other file's mtime (reads failed until `check --repair`).
    func testTheSameBytesImportedOnEveryCoreAtOnceMakeOneHealthyPhoto() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Samples.directory + "/photos/jpg/Olympus_C8080WZ.jpg"))
        let folder = temp.sub("card")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let rounds = 400, copies = 8
        for round in 0..<rounds {
            // New bytes each round: a tail after the JPEG's end.
            let these = bytes + Data("\(round)".utf8)
            for copy in 0..<copies { try these.write(to: URL(fileURLWithPath: "\(folder)/\(round)-\(copy).jpg")) }
        }
        let failures = Locked<[String]>([])
        let library: Library = library
        for round in 0..<rounds {
            DispatchQueue.concurrentPerform(iterations: copies) { copy in
                do {
                    _ = try library.importFile(at: "\(folder)/\(round)-\(copy).jpg", originalName: "\(round)-\(copy).jpg",
                                               destination: .library)
                } catch {
                    failures.withLock { $0.append("\(round)-\(copy): \(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(try library.read { try $0.count(in: .allPhotos) }, rounds)
        let report = try library.check()
        XCTAssertTrue(report.isHealthy, "\(report)")
    }
}
