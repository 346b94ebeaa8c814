import CVips

/// Typed reads from an EXIF block, parsed by libexif.
struct ExifReader: ~Copyable {
    private let data: UnsafeMutablePointer<ExifData>
    private let order: ExifByteOrder

    // IFD indexes (libexif's ExifIfd) and the tags we read.
    static let ifd0: Int32 = 0, ifdExif: Int32 = 2, ifdGPS: Int32 = 3

    /// `block` is a TIFF structure, with or without the "Exif\0\0" header of a JPEG
    /// APP1 segment (some HEIF writers leave it out; libexif wants it).
    init?(block: UnsafeRawBufferPointer) {
        guard block.count > 8 else { return nil }
        let tiffFirst = (block[0] == 0x49 && block[1] == 0x49 && block[2] == 0x2A)
            || (block[0] == 0x4D && block[1] == 0x4D && block[3] == 0x2A)
        var bytes = tiffFirst ? [0x45, 0x78, 0x69, 0x66, 0, 0] : [UInt8]()
        bytes.append(contentsOf: block)
        guard let data = bytes.withUnsafeBufferPointer({ shim_exif_parse($0.baseAddress, UInt32($0.count)) }) else {
            return nil
        }
        self.data = data
        self.order = exif_data_get_byte_order(data)
    }

    deinit { exif_data_unref(data) }

    private func entry(_ ifd: Int32, _ tag: Int32) -> UnsafeMutablePointer<ExifEntry>? {
        shim_exif_entry(data, ifd, tag)
    }

    /// An ASCII tag, up to its first NUL, trimmed; nil when absent or empty.
    func string(_ ifd: Int32, _ tag: Int32) -> String? {
        guard let e = entry(ifd, tag), let bytes = e.pointee.data, e.pointee.size > 0 else { return nil }
        let buffer = UnsafeBufferPointer(start: bytes, count: Int(e.pointee.size))
        let text = buffer.prefix { $0 != 0 }
        let string = String(decoding: text, as: UTF8.self)
        let trimmed = string.trimmed(of: " \t\r\n")
        return trimmed.isEmpty ? nil : trimmed
    }

    /// A SHORT or LONG tag's first value.
    func integer(_ ifd: Int32, _ tag: Int32) -> Int? {
        guard let e = entry(ifd, tag), let bytes = e.pointee.data, e.pointee.components > 0 else { return nil }
        switch e.pointee.format {
        case EXIF_FORMAT_SHORT where e.pointee.size >= 2: return Int(exif_get_short(bytes, order))
        case EXIF_FORMAT_LONG where e.pointee.size >= 4: return Int(exif_get_long(bytes, order))
        case EXIF_FORMAT_SLONG where e.pointee.size >= 4: return Int(exif_get_slong(bytes, order))
        default: return nil
        }
    }

    /// A RATIONAL tag's values; nil if any denominator is zero.
    func rationals(_ ifd: Int32, _ tag: Int32) -> [Double]? {
        guard let e = entry(ifd, tag), let bytes = e.pointee.data,
              e.pointee.format == EXIF_FORMAT_RATIONAL || e.pointee.format == EXIF_FORMAT_SRATIONAL
        else { return nil }
        let count = min(Int(e.pointee.components), Int(e.pointee.size) / 8)
        var values: [Double] = []
        for i in 0..<count {
            if e.pointee.format == EXIF_FORMAT_RATIONAL {
                let r = exif_get_rational(bytes + 8 * i, order)
                guard r.denominator != 0 else { return nil }
                values.append(Double(r.numerator) / Double(r.denominator))
            } else {
                let r = exif_get_srational(bytes + 8 * i, order)
                guard r.denominator != 0 else { return nil }
                values.append(Double(r.numerator) / Double(r.denominator))
            }
        }
        return values
    }

    /// UserComment: an 8-byte character-code prefix, then the text.
    func userComment() -> String? {
        guard let e = entry(Self.ifdExif, 0x9286), let bytes = e.pointee.data, e.pointee.size > 8 else { return nil }
        let buffer = UnsafeBufferPointer(start: bytes + 8, count: Int(e.pointee.size) - 8)
        let text = String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self).trimmed(of: " \t\r\n")
        return text.isEmpty ? nil : text
    }

    /// Reads what import keeps into `metadata`.
    func fill(_ metadata: inout MediaMetadata) {
        metadata.make = string(Self.ifd0, 0x010F)
        metadata.model = string(Self.ifd0, 0x0110)
        if let orientation = integer(Self.ifd0, 0x0112), (1...8).contains(orientation) {
            metadata.orientation = orientation
        }
        metadata.lens = string(Self.ifdExif, 0xA434)
        metadata.userComment = userComment()

        // DateTimeOriginal with OffsetTimeOriginal; else DateTimeDigitized with its offset.
        for (dateTag, offsetTag) in [(Int32(0x9003), Int32(0x9011)), (Int32(0x9004), Int32(0x9012))] {
            guard let text = string(Self.ifdExif, dateTag), let (wall, inlineOffset) = Dates.parse(text) else { continue }
            let offset = inlineOffset ?? string(Self.ifdExif, offsetTag).flatMap(Dates.parseOffset)
                ?? string(Self.ifdExif, 0x9010).flatMap(Dates.parseOffset)
            let resolved = offset ?? Dates.localOffsetMinutes(at: wall)
            let instant = Dates.unixSeconds(utc: wall) - Int64(resolved) * 60
            metadata.capture = CaptureDate(instant: instant, offsetMinutes: offset, source: .exif)
            break
        }

        if let lat = rationals(Self.ifdGPS, 2), let lon = rationals(Self.ifdGPS, 4),
           lat.count >= 1, lon.count >= 1 {
            func degrees(_ v: [Double]) -> Double {
                v[0] + (v.count > 1 ? v[1] / 60 : 0) + (v.count > 2 ? v[2] / 3600 : 0)
            }
            var latitude = degrees(lat)
            var longitude = degrees(lon)
            if string(Self.ifdGPS, 1)?.uppercased().hasPrefix("S") == true { latitude = -latitude }
            if string(Self.ifdGPS, 3)?.uppercased().hasPrefix("W") == true { longitude = -longitude }
            if latitude.isFinite, longitude.isFinite, abs(latitude) <= 90, abs(longitude) <= 180 {
                metadata.latitude = latitude
                metadata.longitude = longitude
            }
        }
    }
}

extension String {
    func trimmed(of set: String) -> String {
        let chars = Set(set)
        var s = Substring(self)
        while let f = s.first, chars.contains(f) { s.removeFirst() }
        while let l = s.last, chars.contains(l) { s.removeLast() }
        return String(s)
    }
}
