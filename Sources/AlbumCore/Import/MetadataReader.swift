import CAV
import CVips
import Glibc

/// Reads the metadata of a photo (libvips for its pixel size and whether it decodes,
/// exiv2 for EXIF, XMP and IPTC, libheif for HEIF sizes) or a video (libavformat). A
/// file that the right library cannot open is refused with the library's reason. Runs
/// in decoder worker processes: these parsers read untrusted bytes.
public enum MetadataReader {
    /// Sets up libvips and FFmpeg once per process.
    static let ready: Bool = {
        // libvips warns on stderr about harmless things (an ignored nclx profile); the
        // errors that matter come back through vips_error_buffer.
        setenv("VIPS_WARNING", "0", 0)
        let ok = vips_init("albumfs") == 0
        // Keep no decoded images or open files around between operations.
        vips_cache_set_max(0)
        vips_cache_set_max_files(0)
        av_log_set_level(AV_LOG_QUIET)
        Exiv2File.initialize()
        return ok
    }()

    public static func initialize() { _ = ready }

    /// Reads `path`, whose format the sniffer found. Throws `LibraryError.refused` with a
    /// one-line reason when the file is not readable as that format.
    public static func read(path: String, format: MediaFormat) throws -> MediaMetadata {
        initialize()
        var metadata = MediaMetadata(format: format)
        switch format.mediaType {
        case .video: try readVideo(path: path, into: &metadata)
        case .photo:
            if format.decodedByVips { try readPixels(path: path, into: &metadata) }
            // What exiv2 cannot read (a GIF, a BigTIFF, a damaged header) has no tags:
            // the photo is kept with what libvips read.
            if let file = try? Exiv2File(path: path) {
                metadata.fill(from: file)
                if metadata.width == nil, let (w, h) = file.pixelSize {
                    metadata.width = w
                    metadata.height = h
                }
            }
            if metadata.capture == nil, let maker = MakerDates.read(path: path) {
                metadata.capture = maker.capture
                if metadata.make == nil { metadata.make = maker.make }
                if metadata.model == nil { metadata.model = maker.model }
            }
            // No Orientation tag means the stored pixels are upright (EXIF's default).
            if metadata.orientation == nil { metadata.orientation = 1 }
        }
        return metadata
    }

    /// A sidecar's rating, keywords, caption and dates: an XMP packet, or the EXIF (and
    /// any XMP) of a camera's `.THM` JPEG, whichever exiv2 finds.
    public static func readSidecar(path: String) throws -> MediaMetadata {
        initialize()
        let file = try Exiv2File(path: path)
        var metadata = MediaMetadata(format: .jpeg)
        metadata.fillDescriptive(from: file)
        metadata.capture = MediaMetadata.captureDate(in: file).map {
            CaptureDate(instant: $0.instant, offsetMinutes: $0.offsetMinutes, source: .sidecar)
        }
        return metadata
    }

    // MARK: photos

    /// The stored pixel size (and pages) as libvips reads the header: a file libvips
    /// cannot open is not a photo of its format. A JPEG's header is libjpeg's alone
    /// (`shim_jpeg_header` says why).
    private static func readPixels(path: String, into metadata: inout MediaMetadata) throws {
        if metadata.format == .jpeg {
            var width: Int32 = 0, height: Int32 = 0
            var reason = [CChar](repeating: 0, count: 256)
            guard shim_jpeg_header(path, &width, &height, &reason, reason.count) == 0 else {
                let text = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw LibraryError.refused("not a readable JPEG image: \(text)")
            }
            metadata.width = Int(width)
            metadata.height = Int(height)
            return
        }
        guard let image = shim_vips_open_header_with(path, metadata.format.vipsLoader) else {
            throw LibraryError.refused("not a readable \(metadata.format.rawValue.uppercased()) image: \(takeVipsError())")
        }
        defer { shim_g_object_unref(image) }
        metadata.width = Int(vips_image_get_width(image))
        metadata.height = Int(vips_image_get_page_height(image))
        var pages: Int32 = 1
        if shim_vips_image_get_int(image, "n-pages", &pages) == 0 { metadata.pageCount = max(1, Int(pages)) }
        if metadata.format == .heic || metadata.format == .avif {
            // libheif applies the container's rotation when decoding, so libvips reports
            // the turned size; the stored size is the 'ispe' box.
            if let (w, h) = heifStoredSize(path: path) {
                metadata.width = w
                metadata.height = h
            }
        }
    }

    private static func heifStoredSize(path: String) -> (Int, Int)? {
        guard let context = heif_context_alloc() else { return nil }
        defer { heif_context_free(context) }
        guard heif_context_read_from_file(context, path, nil).code == heif_error_Ok else { return nil }
        var handle: OpaquePointer?
        guard heif_context_get_primary_image_handle(context, &handle).code == heif_error_Ok, let handle else { return nil }
        defer { heif_image_handle_release(handle) }
        let w = Int(heif_image_handle_get_ispe_width(handle))
        let h = Int(heif_image_handle_get_ispe_height(handle))
        return w > 0 && h > 0 ? (w, h) : nil
    }

    /// The libvips error buffer as one line, cleared.
    static func takeVipsError() -> String {
        let text = vips_error_buffer().map { String(cString: $0) } ?? ""
        vips_error_clear()
        let line = text.split(separator: "\n").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }.joined(separator: "; ")
        return line.isEmpty ? "unknown libvips error" : line
    }

    // MARK: videos

    private static func readVideo(path: String, into metadata: inout MediaMetadata) throws {
        var context: UnsafeMutablePointer<AVFormatContext>?
        var rc = avformat_open_input(&context, path, nil, nil)
        guard rc == 0, let ctx = context else {
            throw LibraryError.refused("not a readable \(metadata.format.rawValue.uppercased()) video: \(avError(rc))")
        }
        defer { avformat_close_input(&context) }
        rc = avformat_find_stream_info(ctx, nil)
        guard rc >= 0 else {
            throw LibraryError.refused("not a readable \(metadata.format.rawValue.uppercased()) video: \(avError(rc))")
        }
        let index = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard index >= 0, let stream = ctx.pointee.streams[Int(index)] else {
            throw LibraryError.refused("no video stream in this \(metadata.format.rawValue.uppercased()) file")
        }
        if let parameters = stream.pointee.codecpar {
            metadata.width = Int(parameters.pointee.width)
            metadata.height = Int(parameters.pointee.height)
        }
        metadata.rotation = Int(shim_stream_rotation_cw(stream))
        if ctx.pointee.duration != shim_av_nopts_value() && ctx.pointee.duration > 0 {
            metadata.duration = Double(ctx.pointee.duration) / Double(AV_TIME_BASE)
        }

        let tags = ctx.pointee.metadata
        func tag(_ key: String) -> String? { shim_dict_get(tags, key).map { String(cString: $0) } }
        let streamTags = stream.pointee.metadata

        // Apple's creation date carries the local offset; creation_time is UTC.
        if let text = tag("com.apple.quicktime.creationdate"), let (wall, offset) = Dates.parse(text) {
            let resolved = offset ?? Dates.localOffsetMinutes(at: wall)
            metadata.capture = CaptureDate(instant: Dates.unixSeconds(utc: wall) - Int64(resolved) * 60,
                                           offsetMinutes: offset, source: .video)
        } else if let text = tag("creation_time") ?? shim_dict_get(streamTags, "creation_time").map({ String(cString: $0) }),
                  let (wall, offset) = Dates.parse(text), wall.year > 1904 {
            // QuickTime stores UTC; a missing date is often written as 1904-01-01.
            let resolved = offset ?? 0
            metadata.capture = CaptureDate(instant: Dates.unixSeconds(utc: wall) - Int64(resolved) * 60,
                                           offsetMinutes: resolved, source: .video)
        }
        if let location = tag("com.apple.quicktime.location.ISO6709") ?? tag("location"),
           let (lat, lon) = parseISO6709(location) {
            metadata.latitude = lat
            metadata.longitude = lon
        }
        metadata.make = tag("com.apple.quicktime.make") ?? tag("make")
        metadata.model = tag("com.apple.quicktime.model") ?? tag("model")
    }

    /// `+37.7749-122.4194+010.000/` → (37.7749, -122.4194).
    static func parseISO6709(_ text: String) -> (Double, Double)? {
        var numbers: [Double] = []
        var current = ""
        for ch in text {
            if ch == "+" || ch == "-" || ch == "/" {
                if !current.isEmpty, let v = Double(current) { numbers.append(v) }
                current = ch == "/" ? "" : String(ch)
            } else {
                current.append(ch)
            }
        }
        if !current.isEmpty, let v = Double(current) { numbers.append(v) }
        guard numbers.count >= 2, abs(numbers[0]) <= 90, abs(numbers[1]) <= 180 else { return nil }
        return (numbers[0], numbers[1])
    }

    static func avError(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
