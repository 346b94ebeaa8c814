import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// `.thumbnails/` folders through the mount (issue 5): every photo and video has one in
/// every folder it shows in, of the right size, upright, and broken files cost nothing
/// but their thumbnail.
final class ThumbnailTests: XCTestCase {
    var temp: TempDirectory!
    var mount: MountedLibrary!

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-thumbs")
    }

    override func tearDown() {
        mount?.unmount()
        mount = nil
        temp?.remove()
    }

    @discardableResult
    func sh(_ command: String, status: Int32 = 0) throws -> Processes.Result {
        let result = try Processes.shell(command, timeout: 900)
        XCTAssertEqual(result.status, status, "\(command): \(result.stderr)")
        return result
    }

    /// A library of the samples, its thumbnails left to the mount (made on first look).
    func mountSamples(options: [String] = []) throws {
        let lib = try SampleLibrary.make(in: temp)
        // Drop what `albumfs import` made, so that the mount makes them itself.
        try sh("rm -rf \(q(lib))/thumbnails/*")
        mount = try MountedLibrary(library: lib, temp: temp, options: options)
    }

    func testEveryAssetHasAThumbnailInEveryFolderItShowsIn() throws {
        try mountSamples(options: ["list_thumbnails"])
        let library = try Library.open(at: mount.library, access: .reader)
        // Every folder with a .thumbnails/ beside its files.
        let folders = try sh("cd \(q(mount.mountpoint)) && find . -name .thumbnails -type d").stdout
            .split(separator: "\n").map { String($0.dropFirst(2).dropLast(".thumbnails".count + 1)) }
        XCTAssertGreaterThan(folders.count, 40)
        var checked = 0
        for folder in folders {
            let dir = mount.path(folder)
            let names = try sh("ls -A \(q(dir)) | grep -v '^\\.thumbnails$' || true").stdout.split(separator: "\n").map(String.init)
                .filter { !Names.isScratch($0) && !FileManager.default.fileExists(atPath: "\(dir)/\($0)/.thumbnails") }
            let thumbs = try sh("ls \(q(dir + "/.thumbnails"))").stdout.split(separator: "\n").map(String.init)
            XCTAssertEqual(thumbs, names.map { $0 + ".jpg" }, folder)
            checked += thumbs.count
        }
        XCTAssertGreaterThan(checked, Samples.media.count * 3)

        // Each thumbnail of All Photos: stat size is the bytes read, libvips decodes it,
        // its longest side is 256 or the original's.
        let report = try sh("""
            cd \(q(mount.path("All Photos/.thumbnails"))) && for f in *; do
              printf '%s\\t%s\\t%s\\t%s\\n' "$f" "$(stat -c %s "$f")" "$(wc -c < "$f")" "$(vipsheader -f width "$f")x$(vipsheader -f height "$f")"
            done
            """).stdout
        var lines = 0
        for line in report.split(separator: "\n") {
            let f = line.split(separator: "\t").map(String.init)
            XCTAssertEqual(f[1], f[2], "\(f[0]): stat size and bytes read")
            let dims = f[3].split(separator: "x").compactMap { Int($0) }
            XCTAssertEqual(dims.count, 2, "\(f[0]) decodes")
            let name = String(f[0].dropLast(4))
            let asset = try XCTUnwrap(try library.asset(named: name), name)
            let longest = max(asset.width ?? 0, asset.height ?? 0)
            XCTAssertEqual(dims.max(), min(256, longest), "\(name): longest side")
            lines += 1
        }
        XCTAssertEqual(lines, Samples.media.count, "every photo and video has one, the broken ones included")
    }

    /// Thumbnail folders are reachable by path but not listed (by default), so that tools
    /// that walk or copy trees see photos only: find, du, tar, rsync out and back in.
    func testThumbnailFoldersAreNotInTheWay() throws {
        try mountSamples()
        let m = mount.mountpoint
        try sh("cp -r \(q(Samples.directory))/photos/jpg/gps \(q(m))/Albums/gps")
        XCTAssertEqual(try sh("cd \(q(m)) && find . -name .thumbnails | wc -l").stdout, "0\n")
        try sh("ls \(q(m))/Albums/gps/.thumbnails/DSCN0010.jpg.jpg > /dev/null && stat \(q(m))/Albums/gps/.thumbnails > /dev/null")
        XCTAssertFalse(try sh("ls -A \(q(m))/Albums/gps").stdout.contains(".thumbnails"))
        // Out with rsync, and back in to another album: exit 0 both ways, the same tree.
        let out = temp.sub("out")
        try sh("rsync -a \(q(m))/Albums/gps/ \(q(out))/")
        try sh("diff -r \(q(Samples.directory))/photos/jpg/gps \(q(out))")
        try sh("mkdir \(q(m))/Albums/Back && rsync -a \(q(out))/ \(q(m))/Albums/Back/")
        try sh("diff -r \(q(out)) \(q(m))/Albums/Back")
        let tarList = try sh("cd \(q(m))/Albums && tar cf - gps | tar tf - | sort").stdout
        XCTAssertFalse(tarList.contains(".thumbnails"), tarList)
    }

    /// The freedesktop.org shared thumbnail repository: `.sh_thumbnails/normal/` and
    /// `large/` beside the photos, each PNG named as a real consumer computes it (GLib's
    /// file-name escaping, then MD5 of the relative URI; names with a space and with
    /// non-ASCII letters), with Thumb::URI and Thumb::MTime equal to the photo's st_mtime,
    /// which changes when a new version is written.
    func testSharedThumbnailRepository() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        mount = try MountedLibrary(library: lib, temp: temp)
        let album = mount.path("Albums/Trip")
        let gps = Samples.directory + "/photos/jpg/gps"
        try sh("mkdir \(q(album)) && cp \(q(gps))/DSCN0010.jpg \(q(album + "/IMG 1.jpg")) && cp \(q(gps))/DSCN0012.jpg \(q(album + "/Été à Paris.jpg"))")
        XCTAssertFalse(try sh("ls -A \(q(album))").stdout.contains(".sh_thumbnails"))
        XCTAssertEqual(try sh("ls \(q(album))/.sh_thumbnails").stdout, "large\nnormal\n")
        func consumerName(_ name: String) throws -> (uri: String, file: String) {
            // GLib (what GNOME's thumbnail readers use) escapes the name; MD5 of "./" + it.
            let script = "import sys, hashlib; from gi.repository import GLib; u = './' + GLib.filename_to_uri('/x/' + sys.argv[1]).rsplit('/', 1)[1]; print(u); print(hashlib.md5(u.encode()).hexdigest() + '.png')"
            let lines = try Processes.run("/usr/bin/python3", ["-c", script, name]).stdout.split(separator: "\n").map(String.init)
            return (lines[0], lines[1])
        }
        for name in ["IMG 1.jpg", "Été à Paris.jpg"] {
            let (uri, file) = try consumerName(name)
            let mtime = try sh("stat -c %Y \(q(album + "/" + name))").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            for (size, side) in [("normal", 128), ("large", 256)] {
                let png = "\(album)/.sh_thumbnails/\(size)/\(file)"
                XCTAssertEqual(try sh("vipsheader -f width \(q(png)); vipsheader -f height \(q(png)); vipsheader -f vips-loader \(q(png))").stdout,
                               "\(side)\n\(side * 3 / 4)\npngload\n", "\(name) \(size)")
                XCTAssertEqual(try sh("exiftool -s3 -ThumbURI -ThumbMTime \(q(png))").stdout, "\(uri)\n\(mtime)\n", "\(name) \(size)")
                // As the specification says: 8-bit RGBA, not interlaced, the keys in tEXt
                // chunks (readers such as GLib's thumbnail-verify.c skip zTXt).
                let chunks = """
                    import struct, sys; d = open(sys.argv[1], 'rb').read(); i = 8
                    while i < len(d):
                        n, t = struct.unpack('>I4s', d[i:i + 8])
                        if t == b'IHDR': print('bits %d colour %d interlace %d' % (d[i + 16], d[i + 17], d[i + 20]))
                        if t in (b'tEXt', b'zTXt', b'iTXt'): print(t.decode(), d[i + 8:i + 8 + n].split(b'\\0')[0].decode())
                        i += 12 + n
                    """
                XCTAssertEqual(try sh("python3 -c \(q(chunks)) \(q(png))").stdout,
                               "bits 8 colour 6 interlace 0\ntEXt Thumb::URI\ntEXt Thumb::MTime\n", "\(name) \(size)")
            }
        }
        XCTAssertEqual(try sh("ls \(q(album))/.sh_thumbnails/normal | sort").stdout,
                       [try consumerName("IMG 1.jpg").file, try consumerName("Été à Paris.jpg").file].sorted().joined(separator: "\n") + "\n")
        // A new version: a new st_mtime, and the thumbnail says so.
        sleep(1)
        try sh("exiftool -q -overwrite_original -Artist=Someone \(q(album + "/IMG 1.jpg"))")
        let mtime = try sh("stat -c %Y \(q(album + "/IMG 1.jpg"))").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let png = "\(album)/.sh_thumbnails/large/\(try consumerName("IMG 1.jpg").file)"
        XCTAssertEqual(try sh("exiftool -s3 -ThumbMTime \(q(png))").stdout, "\(mtime)\n")
    }

    /// A tree with a `.thumbnails/` of its own (Android's DCIM) copied in with `cp -a`
    /// and `rsync -a`: the copy succeeds and nothing in it is lost; its files stay plain
    /// files (not photos), the thumbnails AlbumFS makes are still there, and `rm -r` of
    /// the album removes everything.
    func testACopiedTreeKeepsItsOwnThumbnailsFolder() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        mount = try MountedLibrary(library: lib, temp: temp)
        let m = mount.mountpoint
        let card = temp.sub("DCIM/Camera")
        let gps = Samples.directory + "/photos/jpg/gps"
        try sh("mkdir -p \(q(card))/.thumbnails && cp \(q(gps))/DSCN0010.jpg \(q(gps))/DSCN0012.jpg \(q(card))/")
        try sh("vips thumbnail \(q(gps))/DSCN0010.jpg \(q(card))/.thumbnails/1700000000001.jpg 96 && head -c 3000 /dev/urandom > \(q(card))/.thumbnails/.thumbdata4--1967290299")
        // A file of the card named as the thumbnail AlbumFS makes for a photo beside it.
        try sh("vips thumbnail \(q(gps))/DSCN0012.jpg \(q(card))/.thumbnails/DSCN0012.jpg.jpg 64")
        try sh("cp -a \(q(card)) \(q(m))/Albums/Camera")
        try sh("rsync -a \(q(card))/ \(q(m))/Albums/Camera2/")
        // cp's order, whatever the card's: the photo first, then the folder and the file
        // (O_EXCL), all by the process that made the album.
        try sh("""
            python3 -c 'import os, shutil, sys; a, c = sys.argv[1], sys.argv[2]
            os.mkdir(a); shutil.copyfile(c + "/DSCN0012.jpg", a + "/DSCN0012.jpg"); os.mkdir(a + "/.thumbnails")
            fd = os.open(a + "/.thumbnails/DSCN0012.jpg.jpg", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, open(c + "/.thumbnails/DSCN0012.jpg.jpg", "rb").read()); os.close(fd)' \(q(m))/Albums/Camera3 \(q(card))
            """)
        // tar: the photos first, then .thumbnails/DSCN0012.jpg.jpg, whose O_EXCL create
        // finds the made thumbnail; tar removes it and creates the file again.
        try sh("tar cf \(q(temp.sub("card.tar"))) -C \(q(card)) DSCN0010.jpg DSCN0012.jpg .thumbnails")
        try sh("mkdir \(q(m))/Albums/Camera4 && cd \(q(m))/Albums/Camera4 && timeout 60 tar xf \(q(temp.sub("card.tar")))")
        let copied = [".thumbnails/1700000000001.jpg", ".thumbnails/.thumbdata4--1967290299", ".thumbnails/DSCN0012.jpg.jpg"]
        func checkCopies() throws {
            for album in ["Camera", "Camera2", "Camera4"] {
                for file in ["DSCN0010.jpg", "DSCN0012.jpg"] + copied {
                    try sh("cmp \(q(card + "/" + file)) \(q(m))/Albums/\(album)/\(q(file))")
                }
                try sh("test -f \(q(m))/Albums/\(album)/.thumbnails/DSCN0010.jpg.jpg")
                XCTAssertEqual(try sh("ls -a \(q(m))/Albums/\(album)/.thumbnails | sort | uniq -d").stdout, "", "each name once")
                // Copied out again, the tree is the card's: its own .thumbnails/ with it,
                // none of the thumbnails AlbumFS makes.
                let out = temp.sub("out-\(album)")
                try sh("rm -rf \(q(out)) && rsync -a \(q(m))/Albums/\(album)/ \(q(out))/ && diff -r \(q(card)) \(q(out))")
            }
            try sh("cmp \(q(card))/.thumbnails/DSCN0012.jpg.jpg \(q(m))/Albums/Camera3/.thumbnails/DSCN0012.jpg.jpg")
        }
        try checkCopies()
        // The same after a restart, when the kernel knows nothing and lists afresh.
        mount.unmount()
        try mount.start()
        try sh("ls -laR \(q(m))/Albums > /dev/null")
        try checkCopies()
        XCTAssertEqual(try sh("ls \(q(m))/'All Photos'").stdout, "DSCN0010.jpg\nDSCN0012.jpg\n", "the card's own thumbnails are not photos")
        // Any other process finds a new album's .thumbnails/ at once (reachable by path).
        try sh("mkdir \(q(m))/Albums/Fresh && test -d \(q(m))/Albums/Fresh/.thumbnails")
        XCTAssertTrue(try sh("mkdir \(q(m))/Albums/Camera/.thumbnails 2>&1", status: 1).stdout.contains("File exists"), "made and holding files: EEXIST")
        try sh("rm -r \(q(m))/Albums/Camera \(q(m))/Albums/Camera2 \(q(m))/Albums/Camera3 \(q(m))/Albums/Camera4 \(q(m))/Albums/Fresh")
        XCTAssertEqual(try sh("ls \(q(m))/Albums").stdout, "")
    }

    /// An album whose `.thumbnails/` holds files copied in is not empty: `rmdir` of it or
    /// of that `.thumbnails/`, and `mv -T` of an empty album over it, are ENOTEMPTY as on a
    /// disk, and the files stay; once they are removed, each works. A review found the
    /// rename returning 0 and the files lost (their rows left pointing into a folder that
    /// was gone), and `rmdir` of the album removing them.
    func testAnAlbumWhoseThumbnailsHoldCopiedFilesIsNotEmpty() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        mount = try MountedLibrary(library: lib, temp: temp)
        let m = mount.mountpoint
        let card = temp.sub("D3")
        try sh("mkdir -p \(q(card))/.thumbnails && head -c 3000 /dev/urandom > \(q(card))/.thumbnails/t.jpg")
        try sh("cp -r \(q(card)) \(q(m))/Albums/D3 && mkdir \(q(m))/Albums/Y5")
        for refused in ["mv -T \(q(m))/Albums/Y5 \(q(m))/Albums/D3", "rmdir \(q(m))/Albums/D3", "rmdir \(q(m))/Albums/D3/.thumbnails"] {
            XCTAssertTrue(try sh("\(refused) 2>&1", status: 1).stdout.contains("Directory not empty"), refused)
        }
        try sh("cmp \(q(card))/.thumbnails/t.jpg \(q(m))/Albums/D3/.thumbnails/t.jpg")
        XCTAssertEqual(try sh("ls -A \(q(m))/Albums/D3/.thumbnails").stdout, "t.jpg\n")
        try sh("rm \(q(m))/Albums/D3/.thumbnails/t.jpg && rmdir \(q(m))/Albums/D3/.thumbnails")
        try sh("mv -T \(q(m))/Albums/Y5 \(q(m))/Albums/D3")
        XCTAssertEqual(try sh("ls -A \(q(m))/Albums").stdout, "D3\n")
        try sh("rmdir \(q(m))/Albums/D3")
        // The top of Albums/ lists no photos, so `.thumbnails` is a folder's name like any
        // there: a card's contents copied in whole (a review found EEXIST, the copy failing).
        try sh("cp -r \(q(card))/. \(q(m))/Albums/")
        try sh("cmp \(q(card))/.thumbnails/t.jpg \(q(m))/Albums/.thumbnails/t.jpg")
        try sh("rm -r \(q(m))/Albums/.thumbnails && mkdir \(q(m))/Albums/.thumbnails && mv -T \(q(m))/Albums/.thumbnails \(q(m))/Albums/T && mv -T \(q(m))/Albums/T \(q(m))/Albums/.thumbnails")
        XCTAssertEqual(try sh("ls -A \(q(m))/Albums").stdout, ".thumbnails\n")
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0)
    }

    func testThumbnailsAreUprightLikeVipsthumbnail() throws {
        try mountSamples()
        let orientation = Samples.media.filter { $0.path.hasPrefix("photos/jpg/orientation/") }
        XCTAssertEqual(orientation.count, 16)
        for sample in orientation {
            let ours = mount.path("Albums/photos/jpg/orientation/.thumbnails/\(sample.name).jpg")
            try assertLooksLike(ours, reference: sample.absolutePath, label: sample.path)
        }
        // HEIF: the picture's own rotation (`irot`), with an EXIF orientation that repeats
        // it (the iPhone's: turned once, not twice) or says nothing (Nokia's).
        let heif = Samples.media.filter { $0.path.hasPrefix("photos/heic/") }
        XCTAssertEqual(heif.count, 5)
        for sample in heif {
            let folder = (sample.path as NSString).deletingLastPathComponent
            try assertLooksLike(mount.path("Albums/\(folder)/.thumbnails/\(sample.name).jpg"), reference: sample.absolutePath, label: sample.path)
        }
        let iphone = mount.path("Albums/photos/heic/mobile/.thumbnails/iphone_13_pro_max.HEIC.jpg")
        XCTAssertEqual(try sh("vipsheader -f width \(q(iphone)); vipsheader -f height \(q(iphone))").stdout, "192\n256\n", "portrait")
        // The rotated video: FFmpeg's command line turns frames upright by default.
        let frame = temp.sub("frame.png")
        try sh("ffmpeg -loglevel error -y -ss 1 -i \(q(Samples.directory + "/videos/portrait-rotated-2022-12-24.mp4")) -frames:v 1 \(q(frame))")
        let ours = mount.path("Albums/videos/.thumbnails/portrait-rotated-2022-12-24.mp4.jpg")
        try assertLooksLike(ours, reference: frame, label: "rotated video")
        XCTAssertEqual(try sh("vipsheader -f width \(q(ours)); vipsheader -f height \(q(ours))").stdout, "192\n256\n", "portrait")
    }

    /// Same size as `vipsthumbnail` of the reference, and close in every pixel.
    func assertLooksLike(_ ours: String, reference: String, label: String) throws {
        let theirs = temp.sub("ref-\(UUID().uuidString).jpg")
        try sh("vipsthumbnail \(q(reference)) -s 256 -o \(q(theirs))")
        let dims = try sh("vipsheader -f width \(q(ours)); vipsheader -f height \(q(ours)); vipsheader -f width \(q(theirs)); vipsheader -f height \(q(theirs))").stdout
            .split(separator: "\n")
        XCTAssertEqual(dims[0], dims[2], "\(label): width")
        XCTAssertEqual(dims[1], dims[3], "\(label): height")
        let diff = temp.sub("d.v"), abs = temp.sub("a.v")
        let mean = try sh("vips subtract \(q(ours)) \(q(theirs)) \(q(diff)) && vips abs \(q(diff)) \(q(abs)) && vips avg \(q(abs))").stdout
        // Re-encoded copies of one picture differ by about 15 (JPEG blocks); a wrong turn or flip by 45 or more.
        XCTAssertLessThan(Double(mean.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 255, 25, "\(label): mean difference")
    }

    func testConfiguredSizeAndBrokenFilesAndBombs() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        mount = try MountedLibrary(library: lib, temp: temp, options: ["thumbnail_size=128"])
        let m = mount.mountpoint
        try sh("mkdir \(q(m))/Albums/Broken && cd \(q(Samples.directory)) && cp extras/truncated.jpg photos/jpg/corrupted.jpg photos/jpg/invalid/*.jpg photos/jpg/tests/* \(q(m))/Albums/Broken/")
        // A decompression bomb: a PNG and a JPEG that claim billions of pixels in a few bytes.
        let script = """
            import struct, zlib
            def chunk(kind, data):
                return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
            png = b'\\\\x89PNG\\\\r\\\\n\\\\x1a\\\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 50000, 50000, 8, 2, 0, 0, 0))
            png += chunk(b'IDAT', zlib.compress(b'\\\\x00' * 150001 * 4)) + chunk(b'IEND', b'')
            open('\(temp.sub("bomb.png"))', 'wb').write(png)
            sof = b'\\\\xff\\\\xc0' + struct.pack('>HBHHB', 17, 8, 65000, 65000, 3) + b'\\\\x01\\\\x22\\\\x00\\\\x02\\\\x11\\\\x01\\\\x03\\\\x11\\\\x01'
            open('\(temp.sub("bomb.jpg"))', 'wb').write(b'\\\\xff\\\\xd8' + sof + b'\\\\xff\\\\xd9')
            """
        XCTAssertTrue(try Processes.run("python3", ["-c", script]).ok)
        try sh("cp \(q(temp.sub("bomb.png"))) \(q(temp.sub("bomb.jpg"))) \(q(m))/Albums/Broken/")
        // Every photo of the album, broken or not, has its thumbnail when asked for (a stat
        // waits for it), at most 128 pixels: what libvips gives up on, FFmpeg's concealing
        // decoders make. The bombs are not photos (below) and have none.
        let library = try Library.open(at: lib, access: .reader)
        let album = try XCTUnwrap(try library.album(path: ["Broken"]))
        let photos = try library.members(ofAlbum: album.id).map(\.0.name)
        XCTAssertEqual(photos.count, 21, "\(photos)")
        // The bombs' headers claim billions of pixels that libvips will not read: they are
        // plain files of the album, not photos, and have no thumbnail.
        for bomb in ["bomb.png", "bomb.jpg"] {
            XCTAssertFalse(photos.contains(bomb), bomb)
            XCTAssertNotNil(try library.plainFile(named: bomb, in: UInt64(album.id)), bomb)
            XCTAssertTrue(mount.log.contains("kept \(bomb) as a plain file"), mount.log)
        }
        for name in photos {
            let path = "\(m)/Albums/Broken/.thumbnails/\(name).jpg"
            let dims = try sh("vipsheader -f width \(q(path)); vipsheader -f height \(q(path))").stdout.split(separator: "\n").compactMap { Int($0) }
            XCTAssertEqual(dims.count, 2, name)
            XCTAssertLessThanOrEqual(dims.max() ?? 999, 128, name)
        }
        // Once known, the listing shows exactly the thumbnails there are.
        let listing = try sh("ls \(q(m))/Albums/Broken/.thumbnails").stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(Set(listing), Set(photos.map { $0 + ".jpg" }))
        XCTAssertTrue(mount.process?.isRunning == true, "the daemon is still up")
        try sh("ls -l \(q(m))/Albums/Broken > /dev/null")
        // The shared repository's PNGs keep the sides the specification gives its folders
        // (a review found large/ ones of 128 pixels with this mount's size).
        try sh("mkdir \(q(m))/Albums/Sized && cp \(q(Samples.directory))/photos/jpg/gps/DSCN0010.jpg \(q(m))/Albums/Sized/")
        for (folder, side) in [("normal", 128), ("large", 256)] {
            let png = try XCTUnwrap(try sh("ls \(q(m))/Albums/Sized/.sh_thumbnails/\(folder)").stdout.split(separator: "\n").first)
            XCTAssertEqual(try sh("vipsheader -f width \(q("\(m)/Albums/Sized/.sh_thumbnails/\(folder)/\(png)"))").stdout, "\(side)\n", folder)
        }
    }

    /// PRODUCT.md section 1: `thumbnails/` "can be deleted and rebuilt at any time", the
    /// folder itself too, while the library is mounted (it was made only when the library
    /// opened, and every thumbnail failed until the next mount).
    func testTheThumbnailsFolderDeletedWhileMountedIsMadeAgain() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        mount = try MountedLibrary(library: lib, temp: temp)
        let album = mount.path("Albums/A")
        try sh("mkdir \(q(album)) && cp \(q(Samples.directory))/photos/jpg/gps/DSCN0010.jpg \(q(album))/")
        try sh("vipsheader \(q(album))/.thumbnails/DSCN0010.jpg.jpg")
        try sh("rm -rf \(q(lib))/thumbnails")
        // The thumbnail looked at before is made again at its next open (the mount
        // remembers which thumbnails it found made, and must not trust that here), and
        // its shared-repository PNG, made from it, once the folder went again.
        XCTAssertEqual(try sh("vipsheader -f width \(q(album))/.thumbnails/DSCN0010.jpg.jpg").stdout, "256\n", mount.log)
        try sh("rm -rf \(q(lib))/thumbnails")
        let first = try XCTUnwrap(try sh("ls \(q(album))/.sh_thumbnails/normal").stdout.split(separator: "\n").first, mount.log)
        XCTAssertEqual(try sh("vipsheader -f width \(q("\(album)/.sh_thumbnails/normal/\(first)"))").stdout, "128\n", mount.log)
        // A photo copied in afterwards gets its thumbnail and its shared-repository PNG.
        try sh("cp \(q(Samples.directory))/photos/jpg/gps/DSCN0012.jpg \(q(album))/")
        XCTAssertEqual(try sh("vipsheader -f width \(q(album))/.thumbnails/DSCN0012.jpg.jpg").stdout, "256\n", mount.log)
        let pngs = try sh("ls \(q(album))/.sh_thumbnails/normal").stdout.split(separator: "\n")
        XCTAssertEqual(pngs.count, 2, mount.log)
        for png in pngs {
            XCTAssertEqual(try sh("vipsheader -f width \(q("\(album)/.sh_thumbnails/normal/\(png)"))").stdout, "128\n")
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(lib)/thumbnails/256"), "the folder is back")
        XCTAssertFalse(mount.log.contains("no thumbnail for"), mount.log)
    }

    func testThumbnailsAreMadeAheadAfterACopy() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        mount = try MountedLibrary(library: lib, temp: temp)
        try sh("mkdir \(q(mount.path("Albums/New"))) && cp \(q(Samples.directory))/photos/jpg/gps/*.jpg \(q(mount.path("Albums/New")))/")
        // Without looking at .thumbnails/, they appear in the cache.
        var made = 0
        for _ in 0..<100 {
            made = (try? FileManager.default.subpathsOfDirectory(atPath: lib + "/thumbnails/256").filter { $0.hasSuffix(".jpg") }.count) ?? 0
            if made == 9 { break }
            usleep(100_000)
        }
        XCTAssertEqual(made, 9)
    }
}
