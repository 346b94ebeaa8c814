import Foundation

/// The shared test media (`../shared/samples`) and what exiftool says about each file.
public enum Samples {
    /// The package root, found from this file's path.
    public static let packageRoot: String = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }()

    /// `$ALBUMFS_SAMPLES`, else `shared/samples` beside the checkout or beside one of its
    /// parents (the checkout is `work/main`, the media `work/shared/samples`), else
    /// `/work/shared/samples`.
    public static let directory: String = {
        if let env = ProcessInfo.processInfo.environment["ALBUMFS_SAMPLES"] { return env }
        var dir = URL(fileURLWithPath: packageRoot)
        while dir.path != "/" {
            dir.deleteLastPathComponent()
            let candidate = dir.appendingPathComponent("shared/samples").path
            if FileManager.default.fileExists(atPath: candidate + "/expected.json") { return candidate }
        }
        return "/work/shared/samples"
    }()

    public struct Expected: Sendable {
        public let path: String      // relative to the samples directory
        public let size: Int64
        public let sha256: String
        public let kind: String      // photo, video, not-media
        public let vipsDecodes: Bool
        public let exif: [String: ExifValue]

        public var absolutePath: String { Samples.directory + "/" + path }
        public var name: String { (path as NSString).lastPathComponent }
    }

    public enum ExifValue: Sendable, Equatable {
        case number(Double)
        case text(String)

        public var number: Double? { if case .number(let v) = self { return v }; return nil }
        public var text: String? {
            switch self {
            case .text(let t): return t
            case .number(let v): return v == v.rounded() ? String(Int(v)) : String(v)
            }
        }
    }

    public static let expected: [Expected] = {
        let url = URL(fileURLWithPath: directory + "/expected.json")
        guard let data = try? Data(contentsOf: url),
              let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let files = root["files"] as? [[String: Any]] else {
            fatalError("cannot read \(url.path): the sample media are missing")
        }
        return files.map { file in
            var exif: [String: ExifValue] = [:]
            for (key, value) in (file["exiftool"] as? [String: Any]) ?? [:] {
                if let n = value as? NSNumber { exif[key] = .number(n.doubleValue) }
                else if let s = value as? String { exif[key] = .text(s) }
            }
            return Expected(path: file["path"] as! String, size: (file["size"] as! NSNumber).int64Value,
                            sha256: file["sha256"] as! String, kind: file["kind"] as! String,
                            vipsDecodes: (file["vips_decodes"] as? Bool) ?? false, exif: exif)
        }
    }()

    public static var media: [Expected] { expected.filter { $0.kind != "not-media" } }
    public static var notMedia: [Expected] { expected.filter { $0.kind == "not-media" } }
}
