import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// Bad input through the mount (issue 8): broken and hostile files are refused with
/// EINVAL or imported without a thumbnail, never a crash or a long hang; odd names get
/// their errno, or work.
final class BadInputTests: XCTestCase {
    var temp: TempDirectory!
    var mount: MountedLibrary!
    var lib: String!

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-bad")
        lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        mount = try MountedLibrary(library: lib, temp: temp)
        XCTAssertTrue(try Processes.shell("mkdir '\(mount.path("Albums/Bad"))'").ok)
    }

    override func tearDown() {
        mount?.unmount()
        mount = nil
        temp?.remove()
    }

    /// Hostile files, made here.
    func makeBadFiles() throws -> [String] {
        let dir = temp.sub("bad")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var files: [String] = []
        func write(_ name: String, _ bytes: [UInt8]) throws {
            try Data(bytes).write(to: URL(fileURLWithPath: "\(dir)/\(name)"))
            files.append("\(dir)/\(name)")
        }
        try write("zero.jpg", [])
        let jpeg = Array(try Data(contentsOf: URL(fileURLWithPath: Samples.directory + "/photos/jpg/gps/DSCN0010.jpg")))
        for cut in [1, 2, 3, 4, 20, 100, 400, 1000, 5000, 20000, 80000, jpeg.count - 2] {
            try write("cut-\(cut).jpg", Array(jpeg.prefix(cut)))
        }
        var random = SplitMix(seed: 7)
        func noise(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: random.next()) } }
        try write("noise-jpeg.jpg", [0xFF, 0xD8, 0xFF, 0xE0] + noise(50_000))
        try write("noise-heic.heic", [0, 0, 0, 0x18] + Array("ftypheic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8) + noise(50_000))
        try write("noise-mp4.mp4", [0, 0, 0, 0x18] + Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isomiso2".utf8) + noise(50_000))
        try write("noise-png.png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + noise(20_000))
        // EXIF with absurd values: an IFD claiming 65535 entries, huge counts and offsets.
        var exif: [UInt8] = Array("Exif".utf8) + [0, 0] + [0x49, 0x49, 0x2A, 0x00, 0x08, 0, 0, 0] + [0xFF, 0xFF]
        for tag: UInt16 in [0x010F, 0x0110, 0x0112, 0x8769, 0x8825, 0x9003] {
            exif += [UInt8(tag & 0xFF), UInt8(tag >> 8), 2, 0, 0xFF, 0xFF, 0xFF, 0x7F, 0xF0, 0xFF, 0xFF, 0x7F]
        }
        exif += noise(200)
        let app1 = [0xFF, 0xE1, UInt8((exif.count + 2) >> 8), UInt8((exif.count + 2) & 0xFF)] + exif
        try write("absurd-exif.jpg", [0xFF, 0xD8] + app1 + Array(jpeg.dropFirst(2)))
        // A 1-gigapixel decompression bomb: a PNG that claims 40000 x 25000 pixels.
        let bomb = """
            import struct, zlib
            def chunk(kind, data):
                return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
            rows = zlib.compress(b'\\\\x00' * (40001 * 3) * 200, 9)
            png = b'\\\\x89PNG\\\\r\\\\n\\\\x1a\\\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 40000, 25000, 8, 2, 0, 0, 0))
            open('\(dir)/bomb.png', 'wb').write(png + chunk(b'IDAT', rows) + chunk(b'IEND', b''))
            """
        XCTAssertTrue(try Processes.run("python3", ["-c", bomb]).ok)
        files.append("\(dir)/bomb.png")
        // A video with a broken index: the sample with its moov box mangled.
        var video = Array(try Data(contentsOf: URL(fileURLWithPath: Samples.directory + "/videos/clip-2021-03-05.mp4")))
        if let moov = (0..<(video.count - 4)).first(where: { video[$0..<($0 + 4)].elementsEqual("moov".utf8) }) {
            for i in stride(from: moov + 40, to: min(moov + 4000, video.count), by: 7) { video[i] = UInt8(truncatingIfNeeded: random.next()) }
        }
        try write("broken-index.mp4", video)
        try write("truncated-video.mp4", Array(video.prefix(video.count / 3)))
        return files
    }

    func testHostileFilesAreRefusedOrImportedNeverACrash() throws {
        var files = try makeBadFiles()
        let broken = ["extras/truncated.jpg", "photos/jpg/corrupted.jpg", "extras/empty.jpg", "extras/fake-photo.jpg"]
        files += broken.map { Samples.directory + "/" + $0 }
        files += try FileManager.default.contentsOfDirectory(atPath: Samples.directory + "/photos/jpg/invalid").map { Samples.directory + "/photos/jpg/invalid/" + $0 }
        files += try FileManager.default.contentsOfDirectory(atPath: Samples.directory + "/photos/jpg/tests").map { Samples.directory + "/photos/jpg/tests/" + $0 }
        for file in files {
            let started = Date()
            let copy = try Processes.shell("cp \(q(file)) \(q(mount.path("Albums/Bad")))/", timeout: 120)
            XCTAssertLessThan(Date().timeIntervalSince(started), 60, "\(file) took too long")
            // Kept whatever it is: a photo, or a plain file of the album; the same bytes.
            XCTAssertEqual(copy.status, 0, "\(file): \(copy.stderr)")
            XCTAssertTrue(try Processes.run("cmp", [file, mount.path("Albums/Bad/" + (file as NSString).lastPathComponent)]).ok, file)
            XCTAssertTrue(mount.process?.isRunning == true, "the daemon died on \(file)")
        }
        let library = try Library.open(at: lib, access: .reader)
        let album = try XCTUnwrap(try library.album(path: ["Bad"]))
        let imported = try library.members(ofAlbum: album.id).count
        let plain = try library.plainFiles(in: UInt64(album.id)).count
        XCTAssertEqual(imported + plain, Set(files.map { ($0 as NSString).lastPathComponent }).count)
        XCTAssertGreaterThan(plain, 10, "not photos: plain files")
        XCTAssertGreaterThan(imported, 10, "damaged photos whose header parses are photos")
        // Their thumbnails: made, or absent; never a crash.
        let thumbs = try Processes.shell("ls -l \(q(mount.path("Albums/Bad/.thumbnails")))", timeout: 600)
        XCTAssertEqual(thumbs.status, 0, thumbs.stderr)
        XCTAssertFalse(thumbs.stdout.contains("bomb.png.jpg"))
        XCTAssertTrue(mount.process?.isRunning == true)
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
        // The command line reads the same files (in its decoder workers): it ends normally
        // too, with status 1 because some of them are not photos and are refused.
        XCTAssertTrue(try Processes.albumfs("init", temp.sub("cli-lib")).ok)
        let cli2 = try Processes.run(Processes.albumfs, ["import", temp.sub("cli-lib")] + files, timeout: 300)
        XCTAssertEqual(cli2.status, 1, "albumfs import: \(cli2.stderr)")
        XCTAssertTrue(cli2.stderr.contains("not a supported photo or video"), cli2.stderr)
    }

    /// Times the library cannot hold are held to its range, as the kernel does for every
    /// disk: it keeps times as nanoseconds since 1970 in 64 bits, from 1684-10-19 to
    /// 2255-03-14 (`storedNanosecondsRange`), and `touch -d 2400-01-01` of a photo
    /// (smbtorture sets the year 30828) stopped the daemon with an arithmetic overflow. A
    /// plain file's time is then also its bytes' file's, which the disk may hold to a
    /// narrower range (ext4: from 1901), as a plain directory there would. A photo without
    /// a date of its own takes the held time as its capture date.
    func testTimesOutsideTheLibrarysRangeAreHeldToIt() throws {
        let album = mount.path("Albums/Bad"), plain = temp.sub("plain")
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        func run(_ command: String) throws -> String {
            let result = try Processes.shell(command)
            XCTAssertTrue(result.ok, "\(command): \(result.stderr)")
            return result.stdout
        }
        try run("cp \(q(Samples.directory))/photos/jpg/gps/DSCN0010.jpg \(q(album))/p.jpg")
        try run("cp \(q(Samples.directory))/extras/\(q("Screenshot 2024-05-01 at 10.00.00.png")) \(q(album))/undated.png")
        try run("echo text > \(q(album))/t.txt && echo text > \(q(plain))/t.txt")
        for (date, seconds) in [("2400-01-01 UTC", "9000000000"), ("1500-01-01 UTC", "-9000000000"), ("2100-05-05 10:00:00.5 UTC", "4113194400")] {
            try run("touch -d \(q(date)) \(q(album))/p.jpg \(q(album))/undated.png \(q(album))/t.txt \(q(plain))/t.txt")
            XCTAssertEqual(try run("stat -c %Y \(q(album))/p.jpg \(q(album))/undated.png"), "\(seconds)\n\(seconds)\n", date)
            let text = try run("stat -c %Y \(q(album))/t.txt"), plainText = try run("stat -c %Y \(q(plain))/t.txt")
            XCTAssertEqual(text, date.hasPrefix("2400") ? "\(seconds)\n" : plainText, date)
            XCTAssertTrue(try run("ls -R \(q(mount.path("By Date")))").contains("undated.png"), date)
        }
        XCTAssertEqual(try run("TZ=UTC stat -c %y \(q(album))/p.jpg"), "2100-05-05 10:00:00.500000000 +0000\n")
        XCTAssertTrue(mount.process?.isRunning == true, "the daemon is up: \(mount.log)")
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
    }

    func testOddNames() throws {
        let album = mount.path("Albums/Bad")
        let gps = Samples.directory + "/photos/jpg/gps"
        func run(_ command: String) throws -> Processes.Result { try Processes.shell("cd \(q(album)) && \(command)") }
        XCTAssertTrue(try run("touch \"$(printf 'x\\377y.jpg')\" 2>&1").stdout.contains("Invalid or incomplete multibyte"))
        XCTAssertTrue(try run("touch \(String(repeating: "n", count: 256)) 2>&1").stdout.contains("File name too long"))
        // . and .. games: the kernel and the mount keep them what they are.
        XCTAssertFalse(try run("mkdir . 2>&1").ok)
        XCTAssertFalse(try run("mkdir .. 2>&1").ok)
        XCTAssertFalse(try run("mv ../Bad ../Bad/inner 2>&1").ok)
        XCTAssertFalse(try run("rmdir . 2>&1").ok)
        XCTAssertTrue(try run("ls ../../Albums/Bad/../Bad").ok)
        // Twins in case or Unicode normalization are one name: refused as duplicates.
        XCTAssertTrue(try run("mkdir 'Caf\u{E9}'").ok)
        XCTAssertTrue(try run("mkdir 'Cafe\u{301}' 2>&1").stdout.contains("File exists"))
        XCTAssertTrue(try run("mkdir 'CAF\u{C9}' 2>&1").stdout.contains("File exists"))
        XCTAssertTrue(try run("cp \(gps)/DSCN0010.jpg 'R\u{E9}sum\u{E9}.jpg'").ok)
        let exclusive = "import os\ntry:\n  os.open('Re\u{301}sume\u{301}.jpg', os.O_CREAT | os.O_EXCL | os.O_WRONLY)\n  print('created')\nexcept FileExistsError:\n  print('exists')"
        XCTAssertEqual(try Processes.run("python3", ["-c", exclusive], currentDirectory: album).stdout, "exists\n")
        XCTAssertTrue(try run("ln 'R\u{E9}sum\u{E9}.jpg' 'r\u{E9}sum\u{E9}.JPG' 2>&1").stdout.contains("File exists"))
        // Names with newlines, stars, colons and question marks work.
        for name in ["new\nline.jpg", "star*.jpg", "colon:.jpg", "what?.jpg", "tab\there.jpg"] {
            let copy = try Processes.run("cp", [gps + "/DSCN0012.jpg", album + "/" + name])
            XCTAssertTrue(copy.ok, "\(name): \(copy.stderr)")
            XCTAssertTrue(FileManager.default.fileExists(atPath: album + "/" + name), name)
        }
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
    }

    /// `renameat2` flags the mount does not offer (docs/namespace.md, "Errors"): each is
    /// EINVAL with its reason in the log, and both names keep their bytes; the flag a
    /// rename does honour (RENAME_NOREPLACE) still answers EEXIST.
    func testRenameFlagsNotOfferedAreRefusedAndChangeNothing() throws {
        let album = mount.path("Albums/Swap")
        let gps = Samples.directory + "/photos/jpg/gps"
        XCTAssertEqual(mkdir(album, 0o755), 0)
        XCTAssertTrue(try Processes.shell("cd \(q(album)) && cp \(gps)/DSCN0010.jpg \(gps)/DSCN0012.jpg . && printf one > a.txt && printf two > b.txt").ok)
        let script = """
            import ctypes, os, sys
            libc = ctypes.CDLL(None, use_errno=True)
            for a, b, flags in [('DSCN0010.jpg', 'DSCN0012.jpg', 2), ('a.txt', 'b.txt', 2), ('a.txt', 'b.txt', 4), ('a.txt', 'b.txt', 1)]:
                r = libc.renameat2(-100, a.encode(), -100, b.encode(), flags)
                print(a, flags, r, os.strerror(ctypes.get_errno()) if r else 'ok')
            """
        let result = try Processes.run("python3", ["-c", script], currentDirectory: album)
        XCTAssertEqual(result.stdout, """
            DSCN0010.jpg 2 -1 Invalid argument
            a.txt 2 -1 Invalid argument
            a.txt 4 -1 Invalid argument
            a.txt 1 -1 File exists

            """, result.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: album + "/DSCN0010.jpg")),
                       try Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0010.jpg")))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: album + "/DSCN0012.jpg")),
                       try Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0012.jpg")))
        XCTAssertEqual(try String(contentsOfFile: album + "/a.txt", encoding: .utf8), "one")
        XCTAssertEqual(try String(contentsOfFile: album + "/b.txt", encoding: .utf8), "two")
        XCTAssertTrue(mount.log.contains("RENAME_EXCHANGE is not supported"), mount.log)
        XCTAssertTrue(mount.log.contains("RENAME_WHITEOUT is not supported"), mount.log)
    }
}
