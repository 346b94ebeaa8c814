import AlbumCore
import Foundation
import TestSupport
import XCTest

/// Imports every file of ../shared/samples and compares what the library read with what
/// exiftool says (expected.json).
final class SampleImportTests: XCTestCase {
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

    /// Files whose date or camera exiftool finds outside the EXIF block, in proprietary
    /// segments that libvips and libexif do not read (see docs/storage-format.md). For
    /// them the capture date falls back to the file's mtime.
    static let dateOutsideEXIF: [String: String] = [
        "photos/jpg/Reconyx_HC500_Hyperfire.jpg": "Reconyx maker note",
        "photos/jpg/exif-org/olympus-d320l.jpg": "Olympus PictureInfo segment",
        "photos/jpg/exif-org/sony-powershota5.jpg": "Canon CIFF segment",
    ]

    func testEveryMediaSampleIsImportedWithExiftoolsMetadata() throws {
        for sample in Samples.media {
            let outcome = try library.importFile(at: sample.absolutePath, originalName: sample.name, destination: .library)
            guard case .imported(let asset, _) = outcome else {
                XCTFail("\(sample.path): expected an import, got \(outcome)")
                continue
            }
            XCTAssertEqual(asset.sha256, sample.sha256, sample.path)
            XCTAssertEqual(asset.size, sample.size, sample.path)
            XCTAssertEqual(asset.mediaType, sample.kind == "video" ? .video : .photo, sample.path)
            let exif = sample.exif
            if let w = exif["ImageWidth"]?.number, let h = exif["ImageHeight"]?.number {
                XCTAssertEqual(asset.width, Int(w), "\(sample.path) width")
                XCTAssertEqual(asset.height, Int(h), "\(sample.path) height")
            }
            if let o = exif["Orientation"]?.number {
                XCTAssertEqual(asset.orientation, Int(o), "\(sample.path) orientation")
            }
            if Self.dateOutsideEXIF[sample.path] != nil {
                XCTAssertEqual(asset.takenSource, .fileTime, sample.path)
                continue
            }
            if let make = exif["Make"]?.text { XCTAssertEqual(asset.make, make, "\(sample.path) make") }
            if let model = exif["Model"]?.text { XCTAssertEqual(asset.model, model, "\(sample.path) model") }
            if let lat = exif["GPSLatitude"]?.number, let lon = exif["GPSLongitude"]?.number {
                // exiftool prints the QuickTime location with one more (rounded) digit
                // than the file holds; 1e-5 plus rounding slack.
                XCTAssertEqual(asset.latitude ?? .nan, lat, accuracy: 1.0001e-5, "\(sample.path) latitude")
                XCTAssertEqual(asset.longitude ?? .nan, lon, accuracy: 1.0001e-5, "\(sample.path) longitude")
            }
            if let original = exif["DateTimeOriginal"]?.text {
                XCTAssertEqual(asset.takenSource, .exif, sample.path)
                let offset = exif["OffsetTimeOriginal"]?.text
                let wall = String(original.prefix(19))
                XCTAssertEqual(wallClock(of: asset), wall, "\(sample.path) capture date")
                if let offset {
                    XCTAssertEqual(asset.takenOffset, Dates.parseOffset(offset), "\(sample.path) offset")
                }
            } else if sample.kind == "video", let created = exif["CreateDate"]?.text {
                // QuickTime CreateDate is UTC.
                XCTAssertEqual(asset.takenSource, .video, sample.path)
                let (wall, _) = try XCTUnwrap(Dates.parse(created))
                XCTAssertEqual(asset.takenAt, Dates.unixSeconds(utc: wall), "\(sample.path) capture date")
            }
            if sample.kind == "video", let d = exif["Duration"]?.number {
                XCTAssertEqual(asset.duration ?? 0, d, accuracy: 0.1, "\(sample.path) duration")
            }
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

    /// The wall clock of the capture, on its own clock, as EXIF writes it.
    private func wallClock(of asset: Asset) -> String {
        let offset = asset.takenOffset ?? Dates.localOffsetMinutes(atInstant: asset.takenAt)
        let w = Dates.wallClock(asset.takenAt, offsetMinutes: offset)
        func p(_ v: Int, _ n: Int) -> String { String(format: "%0\(n)d", v) }
        return "\(p(w.year, 4)):\(p(w.month, 2)):\(p(w.day, 2)) \(p(w.hour, 2)):\(p(w.minute, 2)):\(p(w.second, 2))"
    }
}
