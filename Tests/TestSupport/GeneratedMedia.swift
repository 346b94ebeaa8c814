import Foundation

/// Files the samples lack, made with the tools Debian ships (exiftool, libvips), so that
/// every way a photo carries its metadata has a file to test with. Each is compared with
/// exiftool's own reading by the tests, never with values written here.
public enum GeneratedMedia {
    /// The source all of them start from: a Nikon JPEG with EXIF and GPS.
    static var source: String { Samples.directory + "/photos/jpg/gps/DSCN0010.jpg" }

    /// Makes the files in `folder` and returns their paths.
    /// - `xmp-date.jpg`: no EXIF at all; the date (with an offset), rating, keywords and
    ///   caption only in embedded XMP.
    /// - `tiff-date.tif`: a TIFF with an EXIF DateTimeOriginal, offset, camera and GPS.
    /// - `png-exif.png`: a PNG whose EXIF is an `eXIf` chunk.
    /// - `bigtiff.tif`: a BigTIFF written by libvips.
    /// - `preview.dng`: a DNG (TIFF structure, DNG tags) whose first image is a
    ///   JPEG-compressed preview: what a thumbnail of a RAW is made from.
    /// - `junk-after-soi.jpg`: a JPEG with four stray bytes after its SOI marker, which
    ///   libjpeg skips with a warning.
    public static func make(in folder: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        func path(_ name: String) -> String { folder + "/" + name }
        func run(_ tool: String, _ arguments: [String]) throws {
            let result = try Processes.run(tool, arguments)
            guard result.ok else { throw GenerationError(message: "\(tool) \(arguments.joined(separator: " ")): \(result.stderr)") }
        }
        let exiftool = ["-q", "-q", "-overwrite_original"]

        try run("cp", [source, path("xmp-date.jpg")])
        try run("exiftool", exiftool + ["-all=", path("xmp-date.jpg")])
        try run("exiftool", exiftool + ["-XMP-exif:DateTimeOriginal=2019:07:04 12:30:00+02:00", "-XMP-xmp:Rating=4",
                                        "-XMP-dc:Subject=Paris", "-XMP-dc:Subject=Tower",
                                        "-XMP-dc:Description=At the tower", path("xmp-date.jpg")])

        try run("vips", ["copy", source, path("tiff-date.tif") + "[strip]"])
        try run("exiftool", exiftool + ["-DateTimeOriginal=2020:02:29 23:59:58", "-OffsetTimeOriginal=-05:00",
                                        "-Make=TestMake", "-Model=Test Model", "-Orientation#=6",
                                        "-GPSLatitude=48.8584", "-GPSLatitudeRef=N", "-GPSLongitude=2.2945",
                                        "-GPSLongitudeRef=E", path("tiff-date.tif")])

        try run("vips", ["copy", source, path("png-exif.png") + "[strip]"])
        try run("exiftool", exiftool + ["-DateTimeOriginal=2018:01:02 03:04:05", "-OffsetTimeOriginal=+09:00",
                                        "-Make=PngMake", "-Model=PngModel", path("png-exif.png")])

        try run("vips", ["tiffsave", source, path("bigtiff.tif"), "--bigtiff"])

        try run("vips", ["tiffsave", source, path("preview.dng"), "--compression", "jpeg", "--Q", "85"])
        try run("exiftool", exiftool + ["-SubfileType=Reduced-resolution image", "-DNGVersion=1.4.0.0",
                                        "-DNGBackwardVersion=1.1.0.0", "-UniqueCameraModel=Test Model",
                                        "-Make=TestMake", "-Model=Test Model", "-Orientation#=8",
                                        "-DateTimeOriginal=2021:06:01 08:00:00", path("preview.dng")])

        var jpeg = try Data(contentsOf: URL(fileURLWithPath: source))
        jpeg.insert(contentsOf: [0, 0, 0, 0], at: 2)
        try jpeg.write(to: URL(fileURLWithPath: path("junk-after-soi.jpg")))

        return ["xmp-date.jpg", "tiff-date.tif", "png-exif.png", "bigtiff.tif", "preview.dng", "junk-after-soi.jpg"].map(path)
    }

    public struct GenerationError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}
