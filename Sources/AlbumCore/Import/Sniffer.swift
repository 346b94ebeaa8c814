/// Recognises a supported photo or video format from the first bytes of a file; the
/// name is consulted only to tell a TIFF-structured camera RAW from a plain TIFF, which
/// the bytes alone cannot.
public enum Sniffer {
    /// How many leading bytes `sniff` wants.
    public static let headerLength = 64

    public enum Result: Equatable, Sendable {
        case media(MediaFormat)
        case unsupported(String)
    }

    static let rawTIFFExtensions: Set<String> = [
        "nef", "nrw", "arw", "srf", "sr2", "dng", "pef", "srw", "erf", "kdc", "dcr",
        "mos", "raw", "rwl", "3fr", "iiq", "mef", "cr2",
    ]

    public static func sniff(_ header: [UInt8], name: String) -> Result {
        let h = header
        func at(_ offset: Int, _ ascii: String) -> Bool {
            let bytes = Array(ascii.utf8)
            guard h.count >= offset + bytes.count else { return false }
            return Array(h[offset..<(offset + bytes.count)]) == bytes
        }
        func starts(_ bytes: [UInt8]) -> Bool {
            h.count >= bytes.count && Array(h[0..<bytes.count]) == bytes
        }

        if h.isEmpty { return .unsupported("empty file (0 bytes)") }
        // SOI is all libjpeg needs: it skips junk before the next marker (with a warning),
        // and libvips decodes such a file; the header read decides whether it is one.
        if starts([0xFF, 0xD8]) { return .media(.jpeg) }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .media(.png) }
        if at(0, "GIF87a") || at(0, "GIF89a") { return .media(.gif) }
        if at(0, "RIFF") && at(8, "WEBP") { return .media(.webp) }
        if at(0, "RIFF") && at(8, "AVI ") { return .media(.avi) }
        if starts([0x1A, 0x45, 0xDF, 0xA3]) { return .media(.mkv) }
        if at(0, "FUJIFILMCCD-RAW") || at(0, "FOVb") { return .media(.raw) }
        if at(0, "IIRO") || at(0, "IIRS") || at(0, "MMOR") || starts([0x49, 0x49, 0x55, 0x00]) {
            return .media(.raw)  // Olympus ORF, Panasonic RW2
        }
        // TIFF, and BigTIFF (43 instead of 42), which libtiff reads as well.
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A])
            || starts([0x49, 0x49, 0x2B, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2B]) {
            if at(8, "CR") { return .media(.raw) }  // Canon CR2
            let ext = Names.split(name).ext.dropFirst().lowercased()
            return .media(rawTIFFExtensions.contains(ext) ? .raw : .tiff)
        }
        if at(4, "ftyp") { return isoMedia(h) }
        // QuickTime files without ftyp start with one of these atoms.
        for atom in ["moov", "mdat", "wide", "free", "skip", "pnot"] where at(4, atom) {
            return .media(.mov)
        }
        return .unsupported("not a supported photo or video (\(describe(h)))")
    }

    /// ISO base media files: HEIF, AVIF, CR3, MP4, MOV, M4V, 3GP, told apart by brands.
    private static func isoMedia(_ h: [UInt8]) -> Result {
        func brand(_ offset: Int) -> String? {
            guard h.count >= offset + 4 else { return nil }
            return String(decoding: h[offset..<(offset + 4)], as: UTF8.self)
        }
        guard let major = brand(8) else { return .unsupported("truncated ISO media header") }
        let boxSize = Int(h[0]) << 24 | Int(h[1]) << 16 | Int(h[2]) << 8 | Int(h[3])
        var brands = [major]
        var offset = 16
        while offset + 4 <= min(boxSize, h.count) {
            if let b = brand(offset) { brands.append(b) }
            offset += 4
        }
        let set = Set(brands)
        if major == "avif" || major == "avis" { return .media(.avif) }
        if major == "crx " { return .media(.raw) }
        if ["heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs"].contains(major) { return .media(.heic) }
        if major == "mif1" || major == "msf1" {
            return .media(set.contains("avif") || set.contains("avis") ? .avif : .heic)
        }
        if major == "qt  " { return .media(.mov) }
        if major.hasPrefix("M4V") { return .media(.m4v) }
        if major.hasPrefix("3gp") || major.hasPrefix("3g2") { return .media(.threeGP) }
        if ["M4A ", "M4B ", "M4P ", "F4A ", "F4B "].contains(major) {
            return .unsupported("audio, not a photo or video (ISO media brand '\(major.trimmingSpaces)')")
        }
        if ["isom", "iso2", "iso3", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "dash",
            "MSNV", "mmp4", "f4v ", "XAVC", "NDAS", "kddi"].contains(major) || set.contains("isom") || set.contains("mp42") {
            return .media(.mp4)
        }
        return .unsupported("unsupported ISO media brand '\(major.trimmingSpaces)'")
    }

    /// Why bytes are no photo, in a word a user knows: what common documents they are.
    private static func describe(_ h: [UInt8]) -> String {
        for (magic, what) in [("%PDF-", "a PDF document"), ("PK\u{3}\u{4}", "a ZIP archive (or an office document)"),
                              ("<?xml", "an XML document"), ("<x:xmpmeta", "XMP metadata")]
        where h.starts(with: Array(magic.utf8)) {
            return what
        }
        let printable = h.prefix(16).allSatisfy { $0 == 9 || $0 == 10 || $0 == 13 || (32...126).contains($0) }
        if printable { return "looks like text" }
        return "starts with " + h.prefix(8).map { String($0, radix: 16).leftPadded(2) }.joined(separator: " ")
    }
}

extension String {
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.last == " " { s.removeLast() }
        return String(s)
    }

    func leftPadded(_ width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
