import CAV
import CVips
import Foundation
import Glibc

/// Makes one thumbnail JPEG in this process: libvips for photos (shrink-on-load, upright
/// by the EXIF orientation, sRGB, metadata stripped), FFmpeg for a video frame (rotated
/// by the container's display matrix). The mount runs this in worker processes (see
/// `ThumbnailWorkerPool`), so that a decoder that crashes or hangs costs one thumbnail.
public enum ThumbnailMaker {
    /// Images with more pixels than this are not decoded (decompression bombs).
    public static let maxPixels = 400_000_000
    public static let quality: Int32 = 80

    public enum Kind: String, Sendable {
        case photo, raw, video
    }

    /// A JPEG of at most `size` pixels on its longest side (never enlarged) of the file at
    /// `input`. Throws `LibraryError.refused` with the reason when the input cannot be
    /// decoded.
    public static func make(input: String, kind: Kind, size: Int) throws -> [UInt8] {
        MetadataReader.initialize()
        switch kind {
        case .photo: return try photo(input, size: size)
        case .raw: return try raw(input, size: size)
        case .video: return try video(input, size: size)
        }
    }

    static func photo(_ path: String, size: Int) throws -> [UInt8] {
        // The header first: refuse what would decode to too many pixels.
        guard let header = shim_vips_open_header(path) else {
            throw LibraryError.refused("cannot read the image: \(MetadataReader.takeVipsError())")
        }
        let width = Int(vips_image_get_width(header)), height = Int(vips_image_get_page_height(header))
        var orientation: Int32 = 1
        _ = shim_vips_image_get_int(header, "orientation", &orientation)
        shim_g_object_unref(header)
        if width * height > maxPixels {
            throw LibraryError.refused("\((width * height) / 1_000_000) megapixels is over the \(maxPixels / 1_000_000) MP limit for thumbnails")
        }
        var thumbnail: UnsafeMutablePointer<VipsImage>?
        if shim_vips_thumbnail(path, Int32(size), &thumbnail) == 0, let thumbnail {
            defer { shim_g_object_unref(thumbnail) }
            if let jpeg = try? encode(thumbnail) { return jpeg }
        }
        // A damaged file libvips gives up on: FFmpeg's decoders conceal errors and go on.
        let vipsError = MetadataReader.takeVipsError()
        do {
            return try frame(path, size: size, seekSeconds: 0, orientation: orientation)
        } catch {
            throw LibraryError.refused("cannot decode the image: \(vipsError); FFmpeg: \(error)")
        }
    }

    /// A camera RAW: its embedded preview (exiv2 finds it), upright by the RAW's
    /// orientation; without one (or one that does not decode), what libvips reads of it
    /// (TIFF-based RAW files).
    static func raw(_ path: String, size: Int) throws -> [UInt8] {
        if let file = try? Exiv2File(path: path), let preview = file.preview(side: size) {
            let orientation = Int32(file.number("Exif.Image.Orientation") ?? 1)
            var thumbnail: UnsafeMutablePointer<VipsImage>?
            let made = preview.withUnsafeBytes { shim_vips_thumbnail_preview($0.baseAddress, $0.count, Int32(size), orientation, &thumbnail) }
            if made == 0, let thumbnail {
                defer { shim_g_object_unref(thumbnail) }
                // libvips decodes lazily: a preview it cannot read fails here.
                if let jpeg = try? encode(thumbnail) { return jpeg }
            }
            _ = MetadataReader.takeVipsError()
        }
        return try photo(path, size: size)
    }

    static func encode(_ image: UnsafeMutablePointer<VipsImage>) throws -> [UInt8] {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard shim_vips_jpegsave_buffer(image, &buffer, &length, quality) == 0, let buffer else {
            throw LibraryError.refused("cannot encode the thumbnail: \(MetadataReader.takeVipsError())")
        }
        defer { g_free(buffer) }
        return Array(UnsafeRawBufferPointer(start: buffer, count: length))
    }

    // MARK: videos

    /// A frame about a second in (or half-way, for shorter clips), upright.
    static func video(_ path: String, size: Int) throws -> [UInt8] {
        try frame(path, size: size, seekSeconds: 1, orientation: 1)
    }

    /// The first frame at or after `seekSeconds` (at most half-way) decoded by FFmpeg,
    /// turned upright by the stream's display matrix and by an EXIF `orientation`.
    static func frame(_ path: String, size: Int, seekSeconds: Double, orientation: Int32) throws -> [UInt8] {
        var context: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_open_input(&context, path, nil, nil) == 0, let format = context else {
            throw LibraryError.refused("cannot open the video")
        }
        defer { avformat_close_input(&context) }
        guard avformat_find_stream_info(format, nil) >= 0 else { throw LibraryError.refused("cannot read the video's streams") }
        let index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard index >= 0, let stream = format.pointee.streams[Int(index)], let parameters = stream.pointee.codecpar,
              let codec = avcodec_find_decoder(parameters.pointee.codec_id) else {
            throw LibraryError.refused("no video stream this FFmpeg can decode")
        }
        var decoder = avcodec_alloc_context3(codec)
        guard let decoderContext = decoder else { throw LibraryError.refused("out of memory") }
        defer { avcodec_free_context(&decoder) }
        guard avcodec_parameters_to_context(decoderContext, parameters) >= 0,
              avcodec_open2(decoderContext, codec, nil) >= 0 else {
            throw LibraryError.refused("cannot open the video decoder")
        }
        decoderContext.pointee.thread_count = 1

        // Seek a second in, or half-way for short clips.
        let duration = format.pointee.duration > 0 ? Double(format.pointee.duration) / Double(AV_TIME_BASE) : 0
        let target = duration > 0 ? min(seekSeconds, duration / 2) : 0
        let timeBase = stream.pointee.time_base
        let targetTS = timeBase.num > 0 ? Int64(target * Double(timeBase.den) / Double(timeBase.num)) : 0
        if targetTS > 0 { av_seek_frame(format, index, targetTS, AVSEEK_FLAG_BACKWARD) }

        var packet = av_packet_alloc()
        var frame = av_frame_alloc()
        defer { av_packet_free(&packet); av_frame_free(&frame) }
        guard let packet, let frame else { throw LibraryError.refused("out of memory") }
        var got = false
        var packets = 0
        decode: while !got && packets < 2000 {
            let rc = av_read_frame(format, packet)
            if rc < 0 {
                avcodec_send_packet(decoderContext, nil)  // drain at the end
            } else {
                defer { av_packet_unref(packet) }
                packets += 1
                guard packet.pointee.stream_index == index else { continue }
                if avcodec_send_packet(decoderContext, packet) < 0 { continue }
            }
            while true {
                let r = avcodec_receive_frame(decoderContext, frame)
                if r == shim_averror_eagain() { break }
                if r < 0 { break decode }
                let pts = frame.pointee.best_effort_timestamp
                if pts == shim_av_nopts_value() || pts >= targetTS || rc < 0 {
                    got = true
                    break decode
                }
                av_frame_unref(frame)
            }
            if rc < 0 { break }
        }
        guard got else { throw LibraryError.refused("no frame could be decoded") }

        // Scale to fit twice the size (libvips does the last, good-quality step) in RGB.
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        guard width > 0, height > 0 else { throw LibraryError.refused("the frame has no size") }
        let scale = min(1.0, Double(size * 2) / Double(max(width, height)))
        let outWidth = max(1, Int(Double(width) * scale)), outHeight = max(1, Int(Double(height) * scale))
        guard let sws = sws_getContext(Int32(width), Int32(height), AVPixelFormat(frame.pointee.format),
                                       Int32(outWidth), Int32(outHeight), AV_PIX_FMT_RGB24, SWS_BILINEAR, nil, nil, nil) else {
            throw LibraryError.refused("cannot convert the frame's pixel format")
        }
        defer { sws_freeContext(sws) }
        var rgb = [UInt8](repeating: 0, count: outWidth * outHeight * 3)
        rgb.withUnsafeMutableBufferPointer { out in
            var destination: UnsafeMutablePointer<UInt8>? = out.baseAddress
            var stride = Int32(outWidth * 3)
            withUnsafePointer(to: &frame.pointee.data) { data in
                withUnsafePointer(to: &frame.pointee.linesize) { lines in
                    data.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 8) { planes in
                        lines.withMemoryRebound(to: Int32.self, capacity: 8) { strides in
                            _ = sws_scale(sws, planes, strides, 0, Int32(height), &destination, &stride)
                        }
                    }
                }
            }
        }
        guard let image = rgb.withUnsafeBytes({
            vips_image_new_from_memory_copy($0.baseAddress, $0.count, Int32(outWidth), Int32(outHeight), 3, VIPS_FORMAT_UCHAR)
        }) else {
            throw LibraryError.refused("cannot hand the frame to libvips: \(MetadataReader.takeVipsError())")
        }
        defer { shim_g_object_unref(image) }
        var upright = image
        var rotated: UnsafeMutablePointer<VipsImage>?
        let rotation = Int(shim_stream_rotation_cw(stream))
        if rotation != 0 {
            guard shim_vips_rot(image, &rotated, Int32(rotation)) == 0, let rotated else {
                throw LibraryError.refused("cannot rotate the frame: \(MetadataReader.takeVipsError())")
            }
            upright = rotated
        } else if orientation > 1 {
            vips_image_set_int(image, "orientation", orientation)
            guard shim_vips_autorot(image, &rotated) == 0, let rotated else {
                throw LibraryError.refused("cannot turn the image upright: \(MetadataReader.takeVipsError())")
            }
            upright = rotated
        }
        defer { if let rotated { shim_g_object_unref(rotated) } }
        var thumbnail: UnsafeMutablePointer<VipsImage>?
        guard shim_vips_thumbnail_image(upright, Int32(size), &thumbnail) == 0, let thumbnail else {
            throw LibraryError.refused("cannot shrink the frame: \(MetadataReader.takeVipsError())")
        }
        defer { shim_g_object_unref(thumbnail) }
        return try encode(thumbnail)
    }
}
