/// What a photo's own bytes say about it, as exiv2 reads their EXIF, XMP and IPTC: the
/// one place that decides which tag wins (PRODUCT.md section 1 gives the order of dates).
extension MediaMetadata {
    mutating func fill(from file: Exiv2File) {
        make = file.text("Exif.Image.Make") ?? file.text("Xmp.tiff.Make")
        model = file.text("Exif.Image.Model") ?? file.text("Xmp.tiff.Model")
        if let value = file.number("Exif.Image.Orientation") ?? file.number("Xmp.tiff.Orientation"),
           (1...8).contains(Int(value)) {
            orientation = Int(value)
        }
        lens = file.text("Exif.Photo.LensModel") ?? file.text("Xmp.exifEX.LensModel")
        userComment = file.text("Exif.Photo.UserComment")
        capture = Self.captureDate(in: file)
        if let (lat, lon) = Self.position(in: file) {
            latitude = lat
            longitude = lon
        }
        fillDescriptive(from: file)
    }

    /// Rating, keywords and caption: what photo tools write into XMP (and older ones into
    /// IPTC). Shared with sidecars, which carry nothing else that matters here.
    mutating func fillDescriptive(from file: Exiv2File) {
        if let value = file.number("Xmp.xmp.Rating") ?? file.number("Exif.Image.Rating"), (0...5).contains(value) {
            rating = Int(value)
        }
        let subjects = file.texts("Xmp.dc.subject")
        keywords = subjects.isEmpty ? file.texts("Iptc.Application2.Keywords") : subjects
        caption = file.text("Xmp.dc.description") ?? file.text("Iptc.Application2.Caption")
    }

    /// The capture date, first found of: EXIF DateTimeOriginal (with OffsetTimeOriginal),
    /// XMP DateTimeOriginal, XMP/Photoshop DateCreated, XMP CreateDate, EXIF
    /// DateTimeDigitized. An EXIF date keeps only EXIF's offset, as exiftool reads it, even
    /// when an XMP copy of the same date carries one.
    static func captureDate(in file: Exiv2File) -> CaptureDate? {
        func date(_ key: String, offsets: [String], source: CaptureSource) -> CaptureDate? {
            guard let text = file.text(key), let (wall, inline) = Dates.parse(text) else { return nil }
            let offset = inline ?? offsets.lazy.compactMap { file.text($0).flatMap(Dates.parseOffset) }.first
            let resolved = offset ?? Dates.localOffsetMinutes(at: wall)
            return CaptureDate(instant: Dates.unixSeconds(utc: wall) - Int64(resolved) * 60, offsetMinutes: offset, source: source)
        }
        return date("Exif.Photo.DateTimeOriginal", offsets: ["Exif.Photo.OffsetTimeOriginal", "Exif.Photo.OffsetTime"], source: .exif)
            ?? date("Xmp.exif.DateTimeOriginal", offsets: [], source: .xmp)
            ?? date("Xmp.photoshop.DateCreated", offsets: [], source: .xmp)
            ?? date("Xmp.xmp.CreateDate", offsets: [], source: .xmp)
            ?? date("Exif.Photo.DateTimeDigitized", offsets: ["Exif.Photo.OffsetTimeDigitized", "Exif.Photo.OffsetTime"], source: .exif)
    }

    /// GPS position in degrees: EXIF's rationals and references, else XMP's
    /// `DDD,MM.mmmk` / `DDD,MM,SSk` text.
    static func position(in file: Exiv2File) -> (Double, Double)? {
        func exif(_ key: String, _ ref: String, negative: String) -> Double? {
            let parts = (0..<3).map { file.number("Exif.GPSInfo.\(key)", $0) }
            guard let degrees = parts[0] else { return nil }
            var value = degrees + (parts[1] ?? 0) / 60 + (parts[2] ?? 0) / 3600
            if file.text("Exif.GPSInfo.\(ref)")?.uppercased().hasPrefix(negative) == true { value = -value }
            return value
        }
        func xmp(_ key: String) -> Double? {
            guard var text = file.text("Xmp.exif.\(key)"), let hemisphere = text.last, "NSEW".contains(hemisphere) else { return nil }
            text.removeLast()
            let numbers = text.split(separator: ",").compactMap { Double($0) }
            guard let degrees = numbers.first else { return nil }
            let value = degrees + (numbers.count > 1 ? numbers[1] / 60 : 0) + (numbers.count > 2 ? numbers[2] / 3600 : 0)
            return hemisphere == "S" || hemisphere == "W" ? -value : value
        }
        guard let lat = exif("GPSLatitude", "GPSLatitudeRef", negative: "S") ?? xmp("GPSLatitude"),
              let lon = exif("GPSLongitude", "GPSLongitudeRef", negative: "W") ?? xmp("GPSLongitude"),
              lat.isFinite, lon.isFinite, abs(lat) <= 90, abs(lon) <= 180
        else { return nil }
        return (lat, lon)
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
