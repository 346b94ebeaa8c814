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

    /// One file of each supported format the samples lack (PRODUCT.md section 3), made in
    /// `folder` from the samples' Nikon JPEG and their H.264 clip; returns their paths.
    /// - `webp.webp`, `avif.avif`: the JPEG saved by libvips, its EXIF kept.
    /// - `clip.m4v`, `clip.3gp`: the clip's streams (AAC audio in the 3GP) with a
    ///   QuickTime creation time.
    /// - `clip.avi`: the clip's streams; AVI has no creation time FFmpeg writes.
    public static func makeOtherFormats(in folder: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        func path(_ name: String) -> String { folder + "/" + name }
        try run("vips", ["copy", source, path("webp.webp")])
        try run("vips", ["heifsave", source, path("avif.avif"), "--compression", "av1"])
        let clip = Samples.directory + "/videos/clip-2021-03-05.mp4"
        let created = ["-metadata", "creation_time=2021-03-05T09:08:07Z"]
        try run("ffmpeg", ["-v", "error", "-y", "-i", clip, "-c", "copy"] + created + [path("clip.m4v")])
        try run("ffmpeg", ["-v", "error", "-y", "-i", clip, "-c:v", "copy", "-c:a", "aac"] + created + [path("clip.3gp")])
        try run("ffmpeg", ["-v", "error", "-y", "-i", clip, "-c", "copy", path("clip.avi")])
        return ["webp.webp", "avif.avif", "clip.m4v", "clip.3gp", "clip.avi"].map(path)
    }

    /// Runs a tool that makes a file; its failure, with what it said, stops the test.
    private static func run(_ tool: String, _ arguments: [String]) throws {
        let result = try Processes.run(tool, arguments)
        guard result.ok else { throw GenerationError(message: "\(tool) \(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    public struct GenerationError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}
