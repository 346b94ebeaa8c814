/// Photo or video.
public enum MediaType: Int, Sendable {
    case photo = 1
    case video = 2
}

/// A supported file format, recognised from the bytes (see `Sniffer`).
public enum MediaFormat: String, Sendable, CaseIterable {
    case jpeg, heic, avif, png, webp, gif, tiff
    case raw    // camera RAW (CR2, CR3, NEF, ARW, DNG, ORF, RW2, RAF, ...)
    case mp4, mov, m4v, threeGP = "3gp", avi, mkv

    public var mediaType: MediaType {
        switch self {
        case .mp4, .mov, .m4v, .threeGP, .avi, .mkv: return .video
        default: return .photo
        }
    }

    /// Whether libvips reads the format (all photos but most RAW files, in this libvips).
    var decodedByVips: Bool { mediaType == .photo && self != .raw }

    /// The libvips loader of the format, asked directly (`shim_vips_open_header_with`).
    var vipsLoader: String? {
        switch self {
        case .jpeg: return "jpegload"
        case .png: return "pngload"
        case .webp: return "webpload"
        case .gif: return "gifload"
        case .tiff: return "tiffload"
        case .heic, .avif: return "heifload"
        default: return nil
        }
    }
}

/// The kinds of asset that smart albums collect, as bits in `assets.kinds`.
public struct MediaKinds: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let screenshot = MediaKinds(rawValue: 1 << 0)
    public static let panorama = MediaKinds(rawValue: 1 << 1)
    public static let animated = MediaKinds(rawValue: 1 << 2)
    public static let raw = MediaKinds(rawValue: 1 << 3)
    public static let selfie = MediaKinds(rawValue: 1 << 4)
    public static let live = MediaKinds(rawValue: 1 << 5)
}

/// Where a capture date came from.
public enum CaptureSource: Int, Sendable {
    case exif = 1        // EXIF DateTimeOriginal (or DateTimeDigitized)
    case video = 2       // the container's creation time
    case fileTime = 3    // the file's mtime: the bytes carry no date
    case user = 4        // an mtime set on an asset whose bytes carry no date
    case xmp = 5         // XMP embedded in the bytes (DateTimeOriginal, DateCreated, CreateDate)
    case sidecar = 6     // an XMP sidecar beside the photo
}

/// A capture date: the instant, and the UTC offset of the camera's clock when known.
public struct CaptureDate: Sendable, Equatable {
    /// Unix seconds.
    public var instant: Int64
    /// Minutes east of UTC; nil when the source gave a wall-clock time with no offset
    /// (then `instant` was computed in the importing machine's time zone).
    public var offsetMinutes: Int?
    public var source: CaptureSource

    public init(instant: Int64, offsetMinutes: Int?, source: CaptureSource) {
        self.instant = instant
        self.offsetMinutes = offsetMinutes
        self.source = source
    }
}

/// What import reads from a file.
public struct MediaMetadata: Sendable {
    public var format: MediaFormat
    public var mediaType: MediaType { format.mediaType }
    /// Stored (encoded) pixel size, before any orientation is applied, as exiftool
    /// reports it.
    public var width: Int?
    public var height: Int?
    /// EXIF orientation, 1...8.
    public var orientation: Int?
    /// Clockwise degrees a viewer turns the stored pixels (video display matrix, HEIF irot).
    public var rotation: Int?
    public var capture: CaptureDate?
    public var latitude: Double?
    public var longitude: Double?
    public var make: String?
    public var model: String?
    public var lens: String?
    public var duration: Double?
    public var pageCount: Int = 1
    public var userComment: String?
    /// What photo tools wrote into XMP (or IPTC): a rating 0...5, keywords, a caption.
    public var rating: Int?
    public var keywords: [String] = []
    public var caption: String?

    public init(format: MediaFormat) { self.format = format }
}

extension MediaMetadata {
    /// The metadata as `key<TAB>value` lines: how a decoder worker hands it back.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        // Tabs and newlines in a value become spaces, byte by byte (Foundation's
        // replacingOccurrences was a tenth of a worker's metadata request).
        func add(_ key: String, _ value: CustomStringConvertible?) {
            guard let value else { return }
            if !bytes.isEmpty { bytes.append(UInt8(ascii: "\n")) }
            bytes.append(contentsOf: key.utf8)
            bytes.append(UInt8(ascii: "\t"))
            for byte in "\(value)".utf8 {
                bytes.append(byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") ? UInt8(ascii: " ") : byte)
            }
        }
        add("width", width)
        add("height", height)
        add("orientation", orientation)
        add("rotation", rotation)
        if let capture {
            add("taken", capture.instant)
            add("offset", capture.offsetMinutes)
            add("source", capture.source.rawValue)
        }
        add("latitude", latitude.map { String($0) })
        add("longitude", longitude.map { String($0) })
        add("make", make)
        add("model", model)
        add("lens", lens)
        add("duration", duration.map { String($0) })
        add("pages", pageCount)
        add("comment", userComment)
        add("rating", rating)
        // Keywords may hold anything but the unit separator, which no tool writes.
        add("keywords", keywords.isEmpty ? nil : keywords.joined(separator: "\u{1F}"))
        add("caption", caption)
        return bytes
    }

    /// Reads `encoded` back; nil when the text is not that.
    public init?(encoded: [UInt8], format: MediaFormat) {
        self.init(format: format)
        var taken: Int64?, offset: Int?, source: CaptureSource?
        for line in String(decoding: encoded, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { return nil }
            let (key, value) = (parts[0], parts[1])
            switch key {
            case "width": width = Int(value)
            case "height": height = Int(value)
            case "orientation": orientation = Int(value)
            case "rotation": rotation = Int(value)
            case "taken": taken = Int64(value)
            case "offset": offset = Int(value)
            case "source": source = Int(value).flatMap(CaptureSource.init(rawValue:))
            case "latitude": latitude = Double(value)
            case "longitude": longitude = Double(value)
            case "make": make = value
            case "model": model = value
            case "lens": lens = value
            case "duration": duration = Double(value)
            case "pages": pageCount = Int(value) ?? 1
            case "comment": userComment = value
            case "rating": rating = Int(value)
            case "keywords": keywords = value.split(separator: "\u{1F}").map(String.init)
            case "caption": caption = value
            default: break  // a field a newer worker knows
            }
        }
        if let taken, let source { capture = CaptureDate(instant: taken, offsetMinutes: offset, source: source) }
    }
}
