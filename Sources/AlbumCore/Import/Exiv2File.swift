import CExiv2
import Glibc

/// One file's EXIF, IPTC and XMP as exiv2 reads them (through the C face in CExiv2, so
/// that no Swift module needs C++). Keys are exiv2's: `Exif.Photo.DateTimeOriginal`,
/// `Xmp.dc.subject`, `Iptc.Application2.Keywords`.
final class Exiv2File {
    private let file: OpaquePointer

    /// Reads `path` (a photo, a camera RAW or an XMP sidecar). Throws
    /// `LibraryError.refused` with exiv2's reason when it cannot.
    init(path: String) throws {
        var reason = [CChar](repeating: 0, count: 512)
        guard let file = albumfs_exiv2_open(path, &reason, reason.count) else {
            throw LibraryError.refused("exiv2: " + String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.file = file
    }

    deinit { albumfs_exiv2_close(file) }

    static func initialize() { albumfs_exiv2_initialize() }

    /// The pixel size in the file's structure, if exiv2 found one.
    var pixelSize: (width: Int, height: Int)? {
        var width = 0, height = 0
        albumfs_exiv2_pixel_size(file, &width, &height)
        return width > 0 && height > 0 ? (width, height) : nil
    }

    func count(_ key: String) -> Int { Int(albumfs_exiv2_count(file, key)) }

    /// Value `index` of `key` as text, trimmed of spaces and NULs; nil when absent or empty.
    func text(_ key: String, _ index: Int = 0) -> String? {
        var buffer = [CChar](repeating: 0, count: 1024)
        var length = albumfs_exiv2_text(file, key, Int32(index), &buffer, buffer.count)
        guard length >= 0 else { return nil }
        if length >= buffer.count {
            buffer = [CChar](repeating: 0, count: length + 1)
            length = albumfs_exiv2_text(file, key, Int32(index), &buffer, buffer.count)
        }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let text = String(decoding: bytes, as: UTF8.self).trimmed(of: " \t\r\n")
        return text.isEmpty ? nil : text
    }

    /// Every value of `key` as text (an XMP bag, repeated IPTC datasets).
    func texts(_ key: String) -> [String] {
        (0..<count(key)).compactMap { text(key, $0) }
    }

    /// Value `index` of `key` as a number; nil when absent, not a number, or not finite.
    func number(_ key: String, _ index: Int = 0) -> Double? {
        var value = 0.0
        guard albumfs_exiv2_number(file, key, Int32(index), &value) == 0, value.isFinite else { return nil }
        return value
    }

    /// The embedded preview to make a thumbnail of `side` pixels from, if any.
    func preview(side: Int) -> [UInt8]? {
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        var width: Int32 = 0, height: Int32 = 0
        guard albumfs_exiv2_preview(file, Int32(side), &bytes, &length, &width, &height) == 0, let bytes else { return nil }
        defer { free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }
}
