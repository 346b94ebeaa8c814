import AlbumCore
import Foundation
import TestSupport
import XCTest

/// Every media sample and every generated file (TestSupport/GeneratedMedia) imported, and
/// what the library read compared with exiftool's reading of the same file, run here:
/// capture date (wall clock, offset, and whether EXIF or XMP gave it), GPS, camera, pixel
/// size, orientation; for videos the creation time and duration.
final class MetadataAgreementTests: XCTestCase {
    /// Where exiftool reads what exiv2 and FFmpeg do not, one by one, with the reason.
    static let exceptions: [String: String] = [:]

    struct Reading {
        var values: [String: Any]
        var groups: [String: Any]
        func number(_ key: String) -> Double? { (values[key] as? NSNumber)?.doubleValue }
        func text(_ key: String) -> String? {
            if let s = values[key] as? String { return s.trimmingCharacters(in: .whitespaces) }
            if let n = values[key] as? NSNumber { return n.stringValue }
            return nil
        }
    }

    /// exiftool's reading of `files`: numeric values (-n), and the group each date came from.
    static func exiftool(_ files: [String]) throws -> [String: Reading] {
        func run(_ arguments: [String]) throws -> [String: [String: Any]] {
            let result = try Processes.run("exiftool", arguments + files, timeout: 600)
            let rows = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]], result.stderr)
            return Dictionary(uniqueKeysWithValues: rows.map { ($0["SourceFile"] as! String, $0) })
        }
        let values = try run(["-j", "-n", "-q", "-q"])
        let groups = try run(["-j", "-G1", "-q", "-q", "-DateTimeOriginal"])
        return values.mapValues { Reading(values: $0, groups: [:]) }.merging(groups.mapValues { Reading(values: [:], groups: $0) }) {
            Reading(values: $0.values, groups: $1.groups)
        }
    }

    func testEveryFileAgreesWithExiftool() throws {
        let temp = TempDirectory()
        defer { temp.remove() }
        let library = try Library.create(at: temp.sub("lib"))
        let files = Samples.media.map(\.absolutePath) + (try GeneratedMedia.make(in: temp.sub("generated")))
            + (try GeneratedMedia.makeOtherFormats(in: temp.sub("formats")))
        let readings = try Self.exiftool(files)
        for path in files {
            let name = (path as NSString).lastPathComponent
            let outcome = try library.importFile(at: path, originalName: name, destination: .library)
            guard case .imported(let asset, _) = outcome else {
                XCTFail("\(path): every photo and video libvips, libheif or FFmpeg decodes is imported; got \(outcome)")
                continue
            }
            let exif = try XCTUnwrap(readings[path], path)
            if let reason = Self.exceptions[name] {
                print("\(name): not compared with exiftool: \(reason)")
                continue
            }
            if let w = exif.number("ImageWidth"), let h = exif.number("ImageHeight") {
                XCTAssertEqual(asset.width, Int(w), "\(name) width")
                XCTAssertEqual(asset.height, Int(h), "\(name) height")
            }
            if asset.mediaType == .photo {
                XCTAssertEqual(asset.orientation, Int(exif.number("Orientation") ?? 1), "\(name) orientation")
            }
            XCTAssertEqual(asset.make, exif.text("Make"), "\(name) make")
            XCTAssertEqual(asset.model, exif.text("Model"), "\(name) model")
            if let lat = exif.number("GPSLatitude"), let lon = exif.number("GPSLongitude") {
                // exiftool prints the QuickTime location with one more (rounded) digit
                // than the file holds; 1e-5 plus rounding slack.
                XCTAssertEqual(asset.latitude ?? .nan, lat, accuracy: 1.0001e-5, "\(name) latitude")
                XCTAssertEqual(asset.longitude ?? .nan, lon, accuracy: 1.0001e-5, "\(name) longitude")
            } else {
                XCTAssertNil(asset.latitude, "\(name): exiftool finds no position")
            }
            if asset.mediaType == .photo, let original = exif.text("DateTimeOriginal") {
                // exiftool reports the date of every group (-G1); the one it prints without
                // groups is the one it prefers, and says where it came from.
                let group = exif.groups.keys.sorted().first {
                    $0.hasSuffix(":DateTimeOriginal") && (exif.groups[$0] as? String) == original
                } ?? ""
                XCTAssertEqual(asset.takenSource, group.hasPrefix("XMP") ? .xmp : .exif, "\(name) date from \(group)")
                XCTAssertEqual(wallClock(of: asset), String(original.prefix(19)), "\(name) capture date")
                let offset = Dates.parse(original)?.offsetMinutes ?? exif.text("OffsetTimeOriginal").flatMap(Dates.parseOffset)
                XCTAssertEqual(asset.takenOffset, offset, "\(name) offset")
            } else if asset.mediaType == .video, let created = exif.text("CreateDate"), let (wall, _) = Dates.parse(created) {
                // QuickTime CreateDate is UTC.
                XCTAssertEqual(asset.takenSource, .video, name)
                XCTAssertEqual(asset.takenAt, Dates.unixSeconds(utc: wall), "\(name) capture date")
                XCTAssertEqual(asset.duration ?? 0, exif.number("Duration") ?? -1, accuracy: 0.1, "\(name) duration")
            }
        }
    }

    /// A photo whose only date is one of XMP's other two (PRODUCT.md section 1, "XMP
    /// `DateTimeOriginal`/`CreateDate` embedded"; Photoshop's `DateCreated` too) is dated
    /// by it, as exiftool reads it, with its offset.
    func testXMPsOtherDatesDateAPhotoWithoutEXIF() throws {
        let temp = TempDirectory()
        defer { temp.remove() }
        let library = try Library.create(at: temp.sub("lib"))
        for (tag, name) in [("-XMP-xmp:CreateDate", "xmp-create.jpg"), ("-XMP-photoshop:DateCreated", "photoshop-created.jpg")] {
            let path = temp.sub(name)
            try FileManager.default.copyItem(atPath: Samples.directory + "/photos/jpg/gps/DSCN0010.jpg", toPath: path)
            XCTAssertTrue(try Processes.run("exiftool", ["-q", "-q", "-overwrite_original", "-all=", path]).ok)
            XCTAssertTrue(try Processes.run("exiftool", ["-q", "-q", "-overwrite_original", "\(tag)=2017:03:04 05:06:07+05:30", path]).ok)
            XCTAssertEqual(try Processes.run("exiftool", ["-s3", "-DateTimeOriginal", path]).stdout, "", "\(name) has no DateTimeOriginal")
            let asset = try XCTUnwrap(try library.importFile(at: path, originalName: name, destination: .library).asset, name)
            XCTAssertEqual(asset.takenSource, .xmp, name)
            XCTAssertEqual(wallClock(of: asset), "2017:03:04 05:06:07", name)
            XCTAssertEqual(asset.takenOffset, 330, name)
        }
    }

    /// The wall clock of the capture, on its own clock, as EXIF writes it.
    private func wallClock(of asset: Asset) -> String {
        let offset = asset.takenOffset ?? Dates.localOffsetMinutes(atInstant: asset.takenAt)
        let w = Dates.wallClock(asset.takenAt, offsetMinutes: offset)
        func p(_ v: Int, _ n: Int) -> String { String(format: "%0\(n)d", v) }
        return "\(p(w.year, 4)):\(p(w.month, 2)):\(p(w.day, 2)) \(p(w.hour, 2)):\(p(w.minute, 2)):\(p(w.second, 2))"
    }
}
