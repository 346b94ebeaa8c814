import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// What the command line prints (PRODUCT.md section 5), with the real binary.
final class CommandLineTests: XCTestCase {
    var temp: TempDirectory!

    override func setUp() { temp = TempDirectory() }
    override func tearDown() { temp.remove() }

    /// "Errors print one line that names what was wrong and what to do, and exit
    /// non-zero": nothing on stdout, one line on stderr.
    func testEveryMistakeIsOneLineAndANonZeroExit() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        let photo = Samples.directory + "/photos/jpg/gps/DSCN0010.jpg"
        let mistakes: [([String], String)] = [
            ([], "missing a command"),
            (["frobnicate"], "unknown command"),
            (["info", lib], "missing PATH"),
            (["mount", lib, temp.sub("mnt"), "-o", "umask=999"], "octal"),
            (["import", lib, temp.sub("nowhere/x.jpg"), photo], "nothing was imported"),
        ]
        for (arguments, says) in mistakes {
            let result = try Processes.run(Processes.albumfs, arguments)
            XCTAssertNotEqual(result.status, 0, "\(arguments)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
            let lines = result.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(says), "\(arguments): \(result.stderr)")
        }
        // The mistyped path stopped the import before the good file.
        let library = try Library.open(at: lib, access: .reader)
        XCTAssertEqual(try library.assets(in: .allPhotos).count, 0)
    }

    /// "--help on every command": each command the overview names prints its usage and
    /// exits 0, changing nothing; in the fstab form too, which mounted instead.
    func testEveryCommandHasHelp() throws {
        let overview = try Processes.run(Processes.albumfs, ["--help"])
        XCTAssertEqual(overview.status, 0)
        let commands = overview.stdout.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ")
            guard words.count > 1, words[0] == "albumfs", words[1].first?.isLowercase == true else { return nil }
            return String(words[1])
        }
        XCTAssertEqual(Set(commands), ["init", "mount", "import", "albums", "info", "stats", "thumbnails", "check", "gc", "migrate", "versions", "revert"])
        let lib = temp.sub("lib"), mountpoint = temp.sub("mnt")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        for arguments in commands.map({ [$0, "--help"] }) + [[lib, mountpoint, "--help"], [lib, mountpoint, "-o", "ro", "-h"]] {
            let result = try Processes.run(Processes.albumfs, arguments)
            XCTAssertEqual(result.status, 0, "\(arguments): \(result.stderr)")
            let command = arguments[0] == lib ? "mount" : arguments[0]
            XCTAssertTrue(result.stdout.hasPrefix("usage: albumfs \(command)"), "\(arguments): \(result.stdout)")
        }
        XCTAssertFalse(try String(contentsOfFile: "/proc/mounts", encoding: .utf8).contains(mountpoint), "help mounted nothing")
    }

    /// `albums`, `stats` and `thumbnails` say what the library holds, and `revert` without
    /// a version brings back the one before the current one (PRODUCT.md section 5).
    func testAlbumsStatsThumbnailsAndRevertWithoutAVersion() throws {
        let lib = temp.sub("lib"), gps = Samples.directory + "/photos/jpg/gps"
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        XCTAssertTrue(try Processes.albumfs("import", "--no-thumbnails", lib, "--album", "Trip/Day 1", gps + "/DSCN0010.jpg", gps + "/DSCN0012.jpg").ok)
        XCTAssertTrue(try Processes.albumfs("import", "--no-thumbnails", lib, "--album", "Trip", gps + "/DSCN0021.jpg").ok)
        XCTAssertEqual(try Processes.albumfs("albums", lib).stdout, "Trip/\t1\nTrip/Day 1/\t2\n")
        let stats = try Processes.albumfs("stats", lib).stdout
        XCTAssertTrue(stats.contains("assets:           3 (3 photos, 0 videos)"), stats)
        XCTAssertTrue(stats.contains("albums:           2 (3 memberships)"), stats)
        XCTAssertTrue(stats.contains("captured:         2008-10-22T16:28:39Z to "), stats)
        XCTAssertEqual(try Processes.albumfs("thumbnails", lib).stdout, "made 3 thumbnail(s); 0 were there; 0 file(s) cannot be decoded\n")
        XCTAssertEqual(try Processes.run("sh", ["-c", "ls \(q(lib))/thumbnails/256/*/*.jpg | wc -l"]).stdout, "3\n")
        XCTAssertEqual(try Processes.albumfs("thumbnails", lib).stdout, "made 0 thumbnail(s); 3 were there; 0 file(s) cannot be decoded\n")

        // A second version, then revert with no version named: the first one's bytes again.
        do {
            let library = try Library.open(at: lib, access: .exclusive)
            let photo = try XCTUnwrap(try library.asset(named: "DSCN0010.jpg"))
            let staged = try Staging(files: library.files).copy(from: gps + "/DSCN0025.jpg")
            let metadata = try InProcessMetadata().metadata(of: staged.descriptor, format: .jpeg)
            _ = try library.blobs.place(staged.path, descriptor: staged.descriptor, sha256: staged.sha256)
            _ = try library.write { tx -> Asset in try tx.addVersion(of: photo.id, sha256: staged.sha256, size: staged.size, metadata: metadata, mtimeNs: 1) }
        }
        let photo = try XCTUnwrap(try Library.open(at: lib, access: .reader).asset(named: "DSCN0010.jpg"))
        XCTAssertEqual(photo.version, 2)
        let first = try XCTUnwrap(try Library.open(at: lib, access: .reader).versions(of: photo.id).first?.sha256)
        let revert = try Processes.albumfs("revert", lib, "Albums/Trip/Day 1/DSCN0010.jpg")
        XCTAssertEqual(revert.stdout, "DSCN0010.jpg: version 3 is now current, with the bytes of version 1\n", revert.stderr)
        XCTAssertEqual(try Library.open(at: lib, access: .reader).asset(id: photo.id)?.sha256, first)
    }

    /// `info`, `versions` and `revert` take a path in the mount, also through the
    /// mountpoint; a path that leads to no photo is an error, never the photo of the same
    /// name elsewhere (a review found `info /mnt/Albums/B/P.jpg` printing album A's P.jpg,
    /// and `revert` of such a path reverting it).
    func testAPathNamesThePhotoThereOrNone() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        let gps = Samples.directory + "/photos/jpg/gps"
        for (album, sample) in [("A", "DSCN0010.jpg"), ("B", "DSCN0012.jpg")] {
            let card = temp.sub("card-\(album)")
            try FileManager.default.createDirectory(atPath: card, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: gps + "/" + sample, toPath: card + "/P.jpg")
            XCTAssertTrue(try Processes.albumfs("import", "--no-thumbnails", lib, "--album", album, card + "/P.jpg").ok)
        }
        let library = try Library.open(at: lib, access: .reader)
        let a = try XCTUnwrap(try library.member(named: "P.jpg", ofAlbum: try XCTUnwrap(try library.album(path: ["A"])).id)?.1)
        let b = try XCTUnwrap(try library.member(named: "P.jpg", ofAlbum: try XCTUnwrap(try library.album(path: ["B"])).id)?.1)
        XCTAssertNotEqual(a.id, b.id)
        for (path, id) in [("Albums/B/P.jpg", b.id), ("/mnt/photos/Albums/B/P.jpg", b.id), ("/mnt/photos/Albums/A/P.jpg", a.id),
                           ("/home/me/Albums/mnt/Albums/B/P.jpg", b.id), ("P.jpg", a.id)] {
            let info = try Processes.run(Processes.albumfs, ["info", lib, path])
            XCTAssertEqual(info.status, 0, "\(path): \(info.stderr)")
            XCTAssertTrue(info.stdout.contains("inode:          \(id)\n"), "\(path): \(info.stdout)")
        }
        for path in ["/mnt/photos/Albums/C/P.jpg", "Trips/B/P.jpg", "/mnt/photos/P.jpg", "All Photos/x/P.jpg"] {
            for command in [["info", lib, path], ["versions", lib, path], ["revert", lib, path]] {
                let result = try Processes.run(Processes.albumfs, command)
                XCTAssertEqual(result.status, 66, "\(command): \(result.stdout)")
                XCTAssertEqual(result.stdout, "", "\(command)")
                XCTAssertTrue(result.stderr.contains("no such photo"), "\(command): \(result.stderr)")
            }
        }
    }

    /// A capture date that is the file's mtime is an instant: shown with an offset, the
    /// same moment whatever the zone (Tokyo: +09:00; UTC: Z). Binary attribute values
    /// (Samba's user.DOSATTRIB) are shown in hex, not written raw to the terminal.
    func testInfoShowsInstantsWithAnOffsetAndBinaryValuesInHex() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        let source = temp.sub("undated.mkv")
        XCTAssertTrue(FileManager.default.createFile(atPath: source,
                                                     contents: FileManager.default.contents(atPath: Samples.directory + "/videos/no-date.mkv")))
        var times = [timespec(tv_sec: 1_600_000_000, tv_nsec: 0), timespec(tv_sec: 1_600_000_000, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, source, &times, 0), 0)
        XCTAssertTrue(try Processes.albumfs("import", "--no-thumbnails", lib, source).ok)
        do {
            let library = try Library.open(at: lib, access: .exclusive)
            let asset = try XCTUnwrap(try library.asset(named: "undated.mkv"))
            try library.write { try $0.setXattr(ino: asset.id, name: "user.DOSATTRIB", value: [0x62, 0x69, 0x6e, 0x00, 0x61, 0xff]) }
            try library.write { try $0.setXattr(ino: asset.id, name: "user.xdg.comment", value: Array("Two\nlines\tand a tab".utf8)) }
        }
        func captured(zone: String) throws -> String {
            let info = try Processes.run(Processes.albumfs, ["info", lib, "All Photos/undated.mkv"], environment: ["TZ": zone])
            XCTAssertEqual(info.status, 0, info.stderr)
            XCTAssertTrue(info.stdout.contains("0x62696e0061ff"), info.stdout)
            XCTAssertFalse(info.stdout.utf8.contains(0), "no raw bytes on the terminal")
            XCTAssertTrue(info.stdout.contains("Two\\nlines\\tand a tab"), "a caption of two lines is text, on one line: \(info.stdout)")
            return try XCTUnwrap(info.stdout.split(separator: "\n").first { $0.contains("captured") }.map(String.init))
        }
        XCTAssertTrue(try captured(zone: "UTC").contains("2020-09-13T12:26:40Z"))
        XCTAssertTrue(try captured(zone: "Asia/Tokyo").contains("2020-09-13T21:26:40+09:00"))
    }
}
