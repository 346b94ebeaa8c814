import CVips
import Foundation

/// Makes photos for tests and benchmarks with libvips: any size, with EXIF fields
/// written by libvips' own EXIF writer (`exif-ifd0-Make`, `exif-ifd2-DateTimeOriginal`,
/// ...).
public enum MediaFactory {
    static let ready: Bool = { setenv("VIPS_WARNING", "0", 0); return vips_init("albumfs-tests") == 0 }()

    public enum Format: Sendable { case jpeg, heic, png }

    /// Writes an image to `path`. `exif` maps libvips field names to values, for example
    /// `["exif-ifd2-DateTimeOriginal": "2024:06:15 10:00:00"]`.
    public static func image(at path: String, width: Int, height: Int, format: Format = .jpeg,
                             exif: [String: String] = [:], quality: Int = 85) throws {
        precondition(ready, "libvips did not start")
        guard let base = shim_vips_test_image(Int32(width), Int32(height)) else {
            throw FactoryError.vips("cannot make a test image")
        }
        defer { shim_g_object_unref(base) }
        guard let image = shim_vips_copy(base) else { throw FactoryError.vips("cannot copy the image") }
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
            let message = vips_error_buffer().map { String(cString: $0) } ?? "?"
            vips_error_clear()
            throw FactoryError.vips("cannot save \(path): \(message)")
        }
    }

    public enum FactoryError: Error { case vips(String) }
}
