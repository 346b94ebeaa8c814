import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// Sidecars on a real mount (PRODUCT.md sections 3 and 4): written by the tools that
/// write them (exiftool), read into the photo's attributes where its own bytes are silent,
/// values set through the mount winning, trashed and restored with their photo, and rsync
/// of JPEG+XMP folders in and out.
final class SidecarTests: MountTestCase {
    override var folderPrefix: String { "albumfs-sidecars" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try mountLibrary()
        try sh("mkdir Albums/Trip")
    }

    func attribute(_ path: String, _ name: String) throws -> String? {
        let result = try Processes.shell("getfattr --only-values -n \(name) \(q(m + "/" + path)) 2>/dev/null")
        return result.ok ? result.stdout : nil
    }

    /// A photo without any date, camera or XMP of its own, named `name`, in `folder`.
    func bareCopy(_ name: String) throws -> String {
        let path = temp.sub("bare-\(UUID().uuidString.prefix(8))-\(name)")
        try MediaFactory.variant(of: Samples.directory + "/photos/jpg/gps/DSCN0010.jpg", at: path, tag: "bare-\(name)-\(UUID().uuidString)")
        XCTAssertTrue(try Processes.run("exiftool", ["-q", "-q", "-overwrite_original", "-all=", path]).ok)
        return path
    }

    func testSidecarsFillWhatThePhotoLacksAndTheMountWins() throws {
        try sh("cp \(q(try bareCopy("IMG_1.jpg"))) Albums/Trip/IMG_1.jpg")
        XCTAssertNil(try attribute("Albums/Trip/IMG_1.jpg", "user.albumfs.rating"))
        // exiftool -o %d%f.xmp beside the photo, then exiftool editing the sidecar in place
        // (a temporary file renamed over it, the original kept as IMG_1.xmp_original).
        try sh("exiftool -q -o %d%f.xmp Albums/Trip/IMG_1.jpg")
        try sh("exiftool -q -XMP-xmp:Rating=3 -XMP-dc:Subject=Paris -XMP-dc:Subject=Tower -XMP-dc:Description='At the tower' '-XMP-exif:DateTimeOriginal=2019:07:04 12:30:00+02:00' Albums/Trip/IMG_1.xmp")
        XCTAssertEqual(try sh("ls Albums/Trip").stdout, "IMG_1.jpg\nIMG_1.xmp\nIMG_1.xmp_original\n")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_1.jpg", "user.albumfs.rating"), "3")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_1.jpg", "user.xdg.tags"), "Paris,Tower")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_1.jpg", "user.xdg.comment"), "At the tower")
        // The date the photo lacks, with its offset: the photo moves to its day.
        XCTAssertEqual(try attribute("Albums/Trip/IMG_1.jpg", "user.albumfs.capture_date"), "2019-07-04T12:30:00+02:00")
        try sh("test -f 'By Date/2019/2019-07/2019-07-04/IMG_1.jpg'")
        // The same everywhere the photo shows.
        XCTAssertEqual(try attribute("All Photos/IMG_1.jpg", "user.albumfs.rating"), "3")

        // Values set through the mount win, and outlive the sidecar's next edit.
        try sh("setfattr -n user.albumfs.rating -v 1 Albums/Trip/IMG_1.jpg && setfattr -n user.xdg.comment -v Mine Albums/Trip/IMG_1.jpg")
        try sh("exiftool -q -overwrite_original -XMP-xmp:Rating=2 -XMP-dc:Description=Theirs Albums/Trip/IMG_1.xmp")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_1.jpg", "user.albumfs.rating"), "1")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_1.jpg", "user.xdg.comment"), "Mine")
        try sh("setfattr -x user.albumfs.rating Albums/Trip/IMG_1.jpg")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_1.jpg", "user.albumfs.rating"), "2")
        try sh("setfattr -n user.albumfs.rating -v 9 Albums/Trip/IMG_1.jpg 2>&1", status: 1)

        // A darktable-style NAME.EXT.xmp belongs to that photo only.
        try sh("cp \(q(try bareCopy("IMG_2.jpg"))) Albums/Trip/IMG_2.jpg && exiftool -q -XMP-xmp:Rating=5 -o Albums/Trip/IMG_2.jpg.xmp Albums/Trip/IMG_2.jpg")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_2.jpg", "user.albumfs.rating"), "5")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_1.jpg", "user.albumfs.rating"), "2")

        // A photo's own XMP wins over its sidecar's.
        let generated = try GeneratedMedia.make(in: temp.sub("generated"))
        try sh("cp \(q(generated[0])) Albums/Trip/IMG_3.jpg && exiftool -q -XMP-xmp:Rating=1 -o Albums/Trip/IMG_3.xmp Albums/Trip/IMG_3.jpg")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_3.jpg", "user.albumfs.rating"), "4")
        // Without a sidecar, its caption and keywords are those of its own XMP too.
        try sh("cp \(q(generated[0])) Albums/Trip/IMG_4.jpg")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_4.jpg", "user.xdg.comment"), "At the tower")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_4.jpg", "user.xdg.tags"), "Paris,Tower")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_4.jpg", "user.albumfs.capture_date"), "2019-07-04T12:30:00+02:00")

        // The sidecar goes: what it gave goes with it (the date falls back to the mtime).
        try sh("rm Albums/Trip/IMG_1.xmp")
        XCTAssertNil(try attribute("Albums/Trip/IMG_1.jpg", "user.xdg.tags"))
        XCTAssertNotEqual(try attribute("Albums/Trip/IMG_1.jpg", "user.albumfs.capture_date"), "2019-07-04T12:30:00+02:00")
        try sh("test ! -e 'By Date/2019/2019-07/2019-07-04/IMG_1.jpg'")
        // Sidecar files are never photos, even with photo bytes (a camera's .THM).
        try sh("cp \(q(try bareCopy("x.jpg"))) Albums/Trip/IMG_2.THM")
        try sh("test ! -e 'All Photos/IMG_2.THM'")
    }

    /// A camera's `.THM` (its JPEG preview of a video, with the camera's EXIF) dates the
    /// video whose container carries no date (an AVI), whichever arrives first; removed,
    /// the date goes with it.
    func testACamerasTHMDatesItsVideo() throws {
        let clip = temp.sub("clip.avi")
        XCTAssertTrue(try Processes.run("ffmpeg", ["-v", "error", "-i", Samples.directory + "/videos/clip-2021-03-05.mp4", "-c", "copy", clip]).ok)
        let thm = temp.sub("preview.thm")
        try FileManager.default.copyItem(atPath: Samples.directory + "/photos/jpg/gps/DSCN0010.jpg", toPath: thm)
        XCTAssertTrue(try Processes.run("exiftool", ["-q", "-overwrite_original", "-DateTimeOriginal=2012:05:06 07:08:09",
                                                     "-OffsetTimeOriginal=+01:00", thm]).ok)
        try sh("cp \(q(clip)) Albums/Trip/MVI_1.AVI && cp \(q(thm)) Albums/Trip/MVI_1.THM")
        try sh("cp \(q(thm)) Albums/Trip/MVI_2.THM && cp \(q(clip)) Albums/Trip/MVI_2.AVI")
        for name in ["MVI_1.AVI", "MVI_2.AVI"] {
            XCTAssertEqual(try attribute("Albums/Trip/\(name)", "user.albumfs.capture_date"), "2012-05-06T07:08:09+01:00", name)
            try sh("test -f 'By Date/2012/2012-05/2012-05-06/\(name)'")
        }
        try sh("test ! -e 'All Photos/MVI_1.THM'")
        try sh("rm Albums/Trip/MVI_1.THM")
        XCTAssertNotEqual(try attribute("Albums/Trip/MVI_1.AVI", "user.albumfs.capture_date"), "2012-05-06T07:08:09+01:00")
        try sh("test ! -e 'By Date/2012/2012-05/2012-05-06/MVI_1.AVI'")
    }

    /// `rm` of the photo in the album where its sidecar is: the sidecar stays there, a
    /// plain file, and no longer belongs to the photo, so the date it gave goes too (a
    /// review found the tags gone but the date and its By Date folder kept).
    func testRemovedFromTheSidecarsFolderThePhotoLosesTheDateItGave() throws {
        try sh("mkdir Albums/Other && cp \(q(try bareCopy("IMG_6.jpg"))) Albums/Trip/IMG_6.jpg && ln Albums/Trip/IMG_6.jpg Albums/Other/IMG_6.jpg")
        try sh("exiftool -q -XMP-dc:Subject=Rome '-XMP-exif:DateTimeOriginal=2019:07:04 12:30:00+02:00' -o Albums/Trip/IMG_6.xmp Albums/Trip/IMG_6.jpg")
        XCTAssertEqual(try attribute("All Photos/IMG_6.jpg", "user.albumfs.capture_date"), "2019-07-04T12:30:00+02:00")
        try sh("test -f 'By Date/2019/2019-07/2019-07-04/IMG_6.jpg'")
        try sh("rm Albums/Trip/IMG_6.jpg")
        XCTAssertEqual(try sh("ls Albums/Trip").stdout, "IMG_6.xmp\n", "the sidecar stays, as on a disk")
        XCTAssertNil(try attribute("All Photos/IMG_6.jpg", "user.xdg.tags"))
        XCTAssertNotEqual(try attribute("All Photos/IMG_6.jpg", "user.albumfs.capture_date"), "2019-07-04T12:30:00+02:00")
        try sh("test ! -e 'By Date/2019/2019-07/2019-07-04/IMG_6.jpg'")
        // Back in that album, beside its sidecar: the date comes back.
        try sh("ln Albums/Other/IMG_6.jpg Albums/Trip/IMG_6.jpg")
        XCTAssertEqual(try attribute("All Photos/IMG_6.jpg", "user.albumfs.capture_date"), "2019-07-04T12:30:00+02:00")
    }

    func testSidecarsGoToRecentlyDeletedWithTheirPhotoAndComeBack() throws {
        try sh("cp \(q(try bareCopy("IMG_4.jpg"))) Albums/Trip/IMG_4.jpg && printf 'apple adjustments' > Albums/Trip/IMG_4.AAE")
        try sh("exiftool -q -XMP-xmp:Rating=4 -o Albums/Trip/IMG_4.xmp Albums/Trip/IMG_4.jpg")
        // rm in an album leaves the sidecars there, as on a disk.
        try sh("mkdir Albums/Other && ln Albums/Trip/IMG_4.jpg Albums/Other/IMG_4.jpg && rm Albums/Other/IMG_4.jpg")
        // Trashed: its sidecars leave every folder with it.
        try sh("rm 'All Photos/IMG_4.jpg'")
        XCTAssertEqual(try sh("ls -A Albums/Trip").stdout, "")
        try sh("test ! -e Albums/Trip/IMG_4.AAE && test ! -e Albums/Trip/IMG_4.xmp")
        // A new file may take a name meanwhile.
        try sh("printf 'newer' > Albums/Trip/IMG_4.AAE")
        // Restored: they come back, bytes and all; the name taken meanwhile keeps its file.
        try sh("mv 'Smart Albums/Recently Deleted/IMG_4.jpg' 'All Photos/'")
        XCTAssertEqual(try sh("ls Albums/Trip").stdout, "IMG_4 (2).AAE\nIMG_4.AAE\nIMG_4.jpg\nIMG_4.xmp\n")
        XCTAssertEqual(try sh("cat 'Albums/Trip/IMG_4 (2).AAE'").stdout, "apple adjustments")
        XCTAssertEqual(try sh("cat Albums/Trip/IMG_4.AAE").stdout, "newer")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_4.jpg", "user.albumfs.rating"), "4")

        // A RAW+JPEG pair shares IMG_5.xmp: trashing one half leaves it to the other.
        try sh("cp \(q(try bareCopy("IMG_5.jpg"))) Albums/Trip/IMG_5.JPG && cp \(q(try GeneratedMedia.make(in: temp.sub("gen"))[4])) Albums/Trip/IMG_5.DNG")
        try sh("exiftool -q -XMP-xmp:Rating=2 -o Albums/Trip/IMG_5.xmp Albums/Trip/IMG_5.JPG")
        XCTAssertEqual(try attribute("Albums/Trip/IMG_5.DNG", "user.albumfs.rating"), "2")
        try sh("rm 'All Photos/IMG_5.DNG'")
        try sh("test -f Albums/Trip/IMG_5.xmp")
        try sh("rm 'All Photos/IMG_5.JPG'")
        try sh("test ! -e Albums/Trip/IMG_5.xmp")
        // Deleted for good: its sidecars go for good too.
        try sh("rm 'Smart Albums/Recently Deleted/IMG_5.JPG'")
        try sh("mv 'Smart Albums/Recently Deleted/IMG_5.DNG' 'All Photos/' && test ! -e Albums/Trip/IMG_5.xmp")
    }

    /// rsync of a folder of JPEG+XMP pairs, sidecars first (rsync sends `IMG_1.AAE` before
    /// `IMG_1.HEIC`; here a first pass of the sidecars alone), into an album and back out:
    /// no error, and the same names and bytes as the source.
    func testRsyncOfJPEGAndXMPInAndOut() throws {
        let source = temp.sub("card")
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        for i in 1...4 {
            let photo = "\(source)/DSC_000\(i).jpg"
            XCTAssertTrue(try Processes.run("cp", [try bareCopy("DSC_000\(i).jpg"), photo]).ok)
            let made = try Processes.run("exiftool", ["-q", "-q", "-XMP-xmp:Rating=\(i)", "-XMP-dc:Subject=card",
                                                      "-XMP-exif:DateTimeOriginal=2022:05:0\(i) 10:00:00", "-o", "\(source)/DSC_000\(i).xmp", photo])
            XCTAssertTrue(made.ok, made.stderr)
        }
        try sh("rsync -a --include='*.xmp' --exclude='*' \(q(source))/ Albums/Card/ 2>&1 || mkdir -p Albums/Card")
        try sh("rsync -a \(q(source))/ Albums/Card/")
        for i in 1...4 {
            XCTAssertEqual(try attribute("Albums/Card/DSC_000\(i).jpg", "user.albumfs.rating"), "\(i)")
            XCTAssertEqual(try attribute("Albums/Card/DSC_000\(i).jpg", "user.albumfs.capture_date")?.prefix(19), "2022-05-0\(i)T10:00:00")
        }
        let back = temp.sub("back")
        try sh("rsync -a Albums/Card/ \(q(back))/")
        XCTAssertEqual(try Processes.run("diff", ["-r", source, back]).status, 0)
        XCTAssertEqual(try Processes.run("diff", ["-r", source, mount.path("Albums/Card")]).status, 0)
    }

    /// A DNG (a RAW of TIFF structure) gets its thumbnail from its embedded preview,
    /// turned by the RAW's orientation.
    func testRawThumbnailFromItsPreview() throws {
        let dng = try GeneratedMedia.make(in: temp.sub("generated"))[4]
        try sh("cp \(q(dng)) Albums/Trip/IMG_9.DNG")
        let thumb = mount.path("Albums/Trip/.thumbnails/IMG_9.DNG.jpg")
        let dims = try Processes.shell("vipsheader -f width \(q(thumb)) && vipsheader -f height \(q(thumb))").stdout
        // The 640x480 preview, turned a quarter (orientation 8): 192x256.
        XCTAssertEqual(dims, "192\n256\n")
    }
}
