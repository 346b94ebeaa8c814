import Foundation
import CVips
import Glibc

/// Photos made with libvips for tests and benchmarks: any size, JPEG, HEIC or PNG, with
/// EXIF fields written by libvips' own EXIF writer (`exif-ifd0-Make`,
/// `exif-ifd2-DateTimeOriginal`, ...). The pixels are a gradient with noise, so that they
/// compress like a photo.
public enum SyntheticMedia {
    public enum Format: Sendable { case jpeg, heic, png }

    /// `noise`: the standard deviation of the noise; 40 gives incompressible files, 6
    /// about the size of a camera's JPEG.
    public static func image(at path: String, width: Int, height: Int, format: Format = .jpeg,
                             exif: [String: String] = [:], quality: Int = 85, noise: Double = 40) throws {
        MetadataReader.initialize()
        guard let base = shim_vips_test_image(Int32(width), Int32(height), noise) else {
            throw LibraryError.io("cannot make a test image: \(MetadataReader.takeVipsError())", errno: EIO)
        }
        defer { shim_g_object_unref(base) }
        guard let image = shim_vips_copy(base) else {
            throw LibraryError.io("cannot copy the test image", errno: EIO)
        }
        defer { shim_g_object_unref(image) }
        for (field, value) in exif.sorted(by: { $0.key < $1.key }) {
            vips_image_set_string(image, field, value)
        }
        let rc: Int32
        switch format {
        case .jpeg: rc = shim_vips_jpegsave_file(image, path, Int32(quality))
        case .heic: rc = shim_vips_heifsave_file(image, path, Int32(quality))
        case .png: rc = shim_vips_pngsave_file(image, path)
        }
        if rc != 0 {
            throw LibraryError.io("cannot save \(path): \(MetadataReader.takeVipsError())", errno: EIO)
        }
    }

    /// A copy of a JPEG or HEIF file with different bytes and the same picture: a JPEG
    /// comment segment after the start marker, or a `free` box at the end of a HEIF file,
    /// carrying `tag`. Many distinct large photos without encoding each one.
    public static func variant(of source: String, at path: String, tag: String) throws {
        guard var bytes = FileManager.default.contents(atPath: source).map(Array.init) else {
            throw LibraryError.io("cannot read \(source)", errno: ENOENT)
        }
        let payload = Array(tag.utf8)
        if bytes.starts(with: [0xFF, 0xD8]) {
            let length = payload.count + 2
            bytes.insert(contentsOf: [0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)] + payload, at: 2)
        } else {
            let size = UInt32(payload.count + 8)
            bytes += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
                + Array("free".utf8) + payload
        }
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw LibraryError.io("cannot write \(path)", errno: EIO)
        }
    }
}
