import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// Browsing and reading a mounted library of the sample media with the real tools
/// (issue 3): ls, find, stat, du, getfattr, cp, cmp, sha256sum.
final class BrowseTests: XCTestCase {
    var temp: TempDirectory!
    var mount: MountedLibrary!
    var library: Library!

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-browse")
        let lib = try SampleLibrary.make(in: temp)
        // One photo in a second album, so that it has two memberships.
        XCTAssertTrue(try Processes.albumfs("import", lib, "--album", "Best of", Samples.directory + "/photos/jpg/gps/DSCN0010.jpg").ok)
        mount = try MountedLibrary(library: lib, temp: temp)
        library = try Library.open(at: lib, access: .reader)
    }

    override func tearDown() {
        mount?.unmount()
        mount = nil
        library = nil
        temp?.remove()
    }

    func sh(_ command: String) throws -> String {
        let result = try Processes.shell(command)
        XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)")
        return result.stdout
    }

    /// `df` and `stat -f` of the mount tell the library's disk: its size and files, and its
    /// free space less what the daemon keeps for the library itself (1% of the disk, 1 to
    /// 64 MiB), so that a copy that `df` says fits is not refused for room.
    func testDfOfTheMountTellsTheLibrarysDisk() throws {
        var mounted = statvfs(), disk = statvfs()
        XCTAssertEqual(statvfs(mount.mountpoint, &mounted), 0)
        XCTAssertEqual(statvfs(library.root, &disk), 0)
        XCTAssertEqual(mounted.f_frsize, disk.f_frsize)
        XCTAssertEqual(mounted.f_blocks, disk.f_blocks)
        XCTAssertEqual(mounted.f_files, disk.f_files)
        XCTAssertEqual(mounted.f_namemax, 255)
        let reserve = UInt(64 << 20) / disk.f_frsize
        // Other writers on the disk move its free space between the two calls: 64 MiB of slack.
        XCTAssertLessThanOrEqual(mounted.f_bavail, disk.f_bavail + reserve)
        XCTAssertGreaterThanOrEqual(mounted.f_bavail + 2 * reserve, disk.f_bavail)
        // What df prints: the same size as the disk's.
        let sizes = try sh("df -B1 --output=size \(q(mount.mountpoint)) \(q(library.root)) | tail -n 2")
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertEqual(sizes.count, 2)
        XCTAssertEqual(sizes.first, sizes.last)
    }

    func testFindStatLsDuAndGetfattrShowWhatTheCoreHolds() throws {
        // find: every file of every folder, with size, mtime and inode as the core has them.
        let lines = try sh("cd \(q(mount.mountpoint)) && find . -type f -not -path '*/.thumbnails/*' -printf '%s %T@ %i %n %p\\n'")
        var checked = 0
        for line in lines.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 4).map(String.init)
            let path = String(fields[4].dropFirst(2))
            let asset = try XCTUnwrap(try asset(at: path), path)
            XCTAssertEqual(Int64(fields[0]), asset.size, path)
            XCTAssertEqual(Double(fields[1])!, Double(asset.mtimeNanoseconds) / 1e9, accuracy: 1e-6, path)
            XCTAssertEqual(UInt64(fields[2]), UInt64(asset.id), path)
            XCTAssertEqual(Int(fields[3]), max(1, asset.links), path)
            checked += 1
        }
        let visible = try library.assets(in: .allPhotos).count
        XCTAssertGreaterThan(checked, visible * 3, "albums, All Photos and date views were all walked")

        // ls -lR and stat work on the whole tree.
        let ls = try sh("ls -lR \(q(mount.mountpoint))")
        XCTAssertTrue(ls.contains("DSCN0010.jpg"))
        let stat = try sh("stat -c '%F %s %h' \(q(mount.path("Albums/photos/jpg/gps/DSCN0010.jpg")))")
        XCTAssertEqual(stat, "regular file 161713 2\n")

        // du: All Photos holds exactly the visible assets' bytes (and its folder): the
        // unlisted .thumbnails/ count for nothing, as on a plain tree of photos.
        let du = try sh("du -sb \(q(mount.path("All Photos")))")
        let total = try library.assets(in: .allPhotos).reduce(Int64(0)) { $0 + $1.size }
        XCTAssertEqual(Int64(du.split(separator: "\t")[0]), total + 4096)

        // getfattr: the metadata of section 4.
        let attrs = try sh("getfattr -d -m - \(q(mount.path("All Photos/IMG_5195.HEIC")))")
        XCTAssertTrue(attrs.contains("user.albumfs.capture_date=\"2021-04-11T15:47:53-05:00\""), attrs)
        XCTAssertTrue(attrs.contains("user.albumfs.camera=\"Apple iPhone 11 Pro Max\""), attrs)
        XCTAssertTrue(attrs.contains("user.albumfs.width=\"2566\""), attrs)
        XCTAssertTrue(attrs.contains("user.albumfs.height=\"3313\""), attrs)
        XCTAssertTrue(attrs.contains("user.albumfs.latitude=\"39.0513444\""), attrs)
        XCTAssertTrue(attrs.contains("user.albumfs.longitude=\"-94.2887722\""), attrs)
        XCTAssertTrue(attrs.contains("user.albumfs.sha256=\"d9b9ebe21c4127080414f2b86f6ecb900dc2ca902be82b39be93b61ccb622680\""), attrs)
    }

    func testEverySmartAlbumAndDateViewListsItsQuery() throws {
        for smart in SmartAlbum.allCases {
            let listed = try sh("ls -U \(q(mount.path("Smart Albums/\(smart.folderName)")))").split(separator: "\n").map(String.init)
            XCTAssertEqual(listed, try library.assets(in: .smart(smart)).map(\.name), smart.folderName)
        }
        XCTAssertFalse(try library.assets(in: .smart(.videos)).isEmpty)
        var days = 0
        for year in try library.years() {
            for month in try library.months(ofYear: year) {
                for day in try library.days(ofMonth: month) {
                    let path = String(format: "By Date/%04d/%04d-%02d/%04d-%02d-%02d", year, year, month % 100, year, month % 100, day % 100)
                    let listed = try sh("ls -U \(q(mount.path(path)))").split(separator: "\n").map(String.init)
                    XCTAssertEqual(listed, try library.assets(in: .day(day)).map(\.name), path)
                    days += 1
                }
            }
        }
        XCTAssertGreaterThan(days, 20)
        let allPhotos = try sh("ls -U \(q(mount.path("All Photos")))").split(separator: "\n").map(String.init)
        XCTAssertEqual(allPhotos, try library.assets(in: .allPhotos).map(\.name), "oldest capture first")
    }

    func testCopiesOutAreTheSampleBytes() throws {
        let out = temp.sub("out")
        _ = try sh("mkdir -p \(q(out)) && cp -r \(q(mount.path("Albums"))) \(q(out))/")
        var compared = 0
        for sample in Samples.media {
            let copy = "\(out)/Albums/\(sample.path)"
            _ = try sh("cmp \(q(sample.absolutePath)) \(q(copy))")
            compared += 1
        }
        XCTAssertEqual(compared, Samples.media.count)

        let sums = try sh("cd \(q(mount.path("All Photos"))) && sha256sum -- *")
        let hashes = Set(sums.split(separator: "\n").map { String($0.prefix(64)) })
        XCTAssertEqual(hashes, Set(Samples.media.map(\.sha256)))
    }

    func testOneInodePerAssetAcrossAlbumsRemountsAndRestarts() throws {
        let paths = ["Albums/photos/jpg/gps/DSCN0010.jpg", "Albums/Best of/DSCN0010.jpg", "All Photos/DSCN0010.jpg",
                     "By Date/2008/2008-10/2008-10-22/DSCN0010.jpg"]
        func inodes() throws -> [String] {
            try paths.map { try sh("stat -c '%i %h' \(q(mount.path($0)))") }
        }
        let before = try inodes()
        XCTAssertEqual(Set(before).count, 1, "\(before)")
        XCTAssertTrue(before[0].hasSuffix(" 2\n"), before[0])
        let folders = try sh("cd \(q(mount.mountpoint)) && stat -c '%i' Albums 'Albums/Best of' 'All Photos' 'By Date/2008' 'Smart Albums/Favorites'")

        mount.unmount()
        try mount.start()
        XCTAssertEqual(try inodes(), before, "after unmount and remount")
        mount.crash()
        try mount.start()
        XCTAssertEqual(try inodes(), before, "after the daemon was killed and started again")
        XCTAssertEqual(try sh("cd \(q(mount.mountpoint)) && stat -c '%i' Albums 'Albums/Best of' 'All Photos' 'By Date/2008' 'Smart Albums/Favorites'"), folders)
    }

    func testSeekdirAtEveryOffsetAndLookupsInAnyCase() throws {
        for folder in ["All Photos", "Albums/photos/jpg", "By Date", "Smart Albums"] {
            let path = mount.path(folder)
            guard let dir = opendir(path) else { return XCTFail("opendir \(path)") }
            defer { closedir(dir) }
            var entries: [(position: Int, name: String)] = []
            while true {
                let position = telldir(dir)
                guard let entry = readdir(dir) else { break }
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                entries.append((position, name))
            }
            XCTAssertGreaterThan(entries.count, 3, folder)
            for (index, entry) in entries.enumerated() {
                seekdir(dir, entry.position)
                var rest: [String] = []
                while let next = readdir(dir) {
                    rest.append(withUnsafePointer(to: next.pointee.d_name) {
                        $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                    })
                }
                XCTAssertEqual(rest, entries[index...].map(\.name), "\(folder) from \(entry.name)")
            }
        }
        // Another case, and NFD, find the same file.
        XCTAssertTrue(try Processes.albumfs("init", temp.sub("unused")).ok)
        let exact = try sh("stat -c %i \(q(mount.path("Albums/photos/jpg/gps/DSCN0010.jpg")))")
        XCTAssertEqual(try sh("stat -c %i \(q(mount.path("albums/PHOTOS/Jpg/GPS/dscn0010.JPG")))"), exact)
        XCTAssertEqual(try sh("stat -c %i \(q(mount.path("Albums/photos/jpg/orientation/landscape_1.jpg")))"),
                       try sh("stat -c %i \(q(mount.path("Albums/Photos/JPG/Orientation/LANDSCAPE_1.JPG")))"))
    }

    /// An album lists its sub-albums and plain files before its photos and videos, those
    /// oldest capture first whatever their names (PRODUCT.md section 2; what `ls -U`
    /// and unsorted file managers show).
    func testAnAlbumListsSubAlbumsThenItsPhotosOldestFirst() throws {
        let album = mount.path("Albums/Order")
        try sh("""
            mkdir \(q(album)) && cd \(q(album)) && cp \(q(Samples.directory))/extras/panorama.jpg a-2023.jpg \
            && cp \(q(Samples.directory))/videos/clip-2021-03-05.mp4 b-2021.mp4 \
            && cp \(q(Samples.directory))/photos/jpg/gps/DSCN0010.jpg c-2008.jpg && mkdir z-sub && echo x > notes.txt
            """)
        let names = try sh("ls -f \(q(album))").split(separator: "\n").map(String.init).filter { $0 != "." && $0 != ".." }
        XCTAssertEqual(names.suffix(3), ["c-2008.jpg", "b-2021.mp4", "a-2023.jpg"], "\(names)")
        XCTAssertEqual(Set(names.prefix(2)), ["z-sub", "notes.txt"], "\(names)")
    }

    func testNFDNamesFindNFCAlbums() throws {
        mount.unmount()
        XCTAssertTrue(try Processes.albumfs("import", mount.library, "--album", "Caf\u{E9} \u{C9}t\u{E9}", Samples.directory + "/photos/jpg/gps/DSCN0012.jpg").ok)
        try mount.start()
        let nfc = try sh("stat -c %i \(q(mount.path("Albums/Caf\u{E9} \u{C9}t\u{E9}/DSCN0012.jpg")))")
        let nfd = try sh("stat -c %i \(q(mount.path("Albums/Cafe\u{301} E\u{301}te\u{301}/DSCN0012.jpg")))")
        XCTAssertEqual(nfc, nfd)
    }

    /// A large folder reaches the kernel in a few large pieces: a folder's block size is
    /// the buffer `opendir` reads it with, and the kernel asks the daemon for that much at
    /// once (docs/performance.md, "Listing buffers"). 3,000 names in 32 KiB pieces would
    /// take 17 READDIRPLUS requests; in 256 KiB pieces they take 3 (the last one empty).
    func testALargeFolderIsListedInAFewLargeRequests() throws {
        try sh("mkdir \(q(mount.path("Albums/Notes")))")
        let made = try Processes.shell("""
            /usr/bin/python3 -c "
            import os
            for i in range(3000):
                os.close(os.open('\(mount.path("Albums/Notes"))/note-%05d.txt' % i, os.O_CREAT | os.O_WRONLY, 0o644))
            "
            """, timeout: 300)
        XCTAssertEqual(made.status, 0, made.stderr)
        XCTAssertEqual(try sh("stat -c %o \(q(mount.path("Albums/Notes")))"), "262144\n")
        // A fresh mount: nothing of the folder is in the kernel's caches.
        mount.unmount()
        mount = try MountedLibrary(library: mount.library, temp: temp, name: "mnt-requests", requests: true)
        let names = try sh("ls -f \(q(mount.path("Albums/Notes")))").split(separator: "\n")
        XCTAssertEqual(names.filter { $0.hasPrefix("note-") }.count, 3000)
        XCTAssertEqual(Set(names).count, names.count, "a name listed twice")
        let requests = mount.requestCount("READDIRPLUS") + mount.requestCount("READDIR")
        XCTAssertGreaterThan(requests, 0, "the request trace saw no listing")
        XCTAssertLessThanOrEqual(requests, 4, "3,000 names took \(requests) listing requests")
    }

    func testEightReadersWhileListingLoops() throws {
        let script = """
            cd \(q(mount.mountpoint)) || exit 9
            ( while [ ! -e \(q(temp.sub("stop"))) ]; do ls -lR . >/dev/null || echo LSFAIL; done ) &
            lister=$!
            find 'All Photos' -maxdepth 1 -type f -print0 | xargs -0 -P 8 -n 3 sh -c 'for f; do cat "$f" | sha256sum | sed "s|-|$f|"; done' _ > \(q(temp.sub("sums")))
            status=$?
            touch \(q(temp.sub("stop")))
            wait $lister
            exit $status
            """
        let result = try Processes.shell(script, timeout: 600)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertFalse(result.stdout.contains("LSFAIL"), result.stdout)
        XCTAssertTrue(result.stderr.isEmpty, result.stderr)
        let sums = try String(contentsOfFile: temp.sub("sums"), encoding: .utf8).split(separator: "\n")
        let visible = try library.assets(in: .allPhotos)
        XCTAssertEqual(sums.count, visible.count)
        for line in sums {
            let name = String(line.dropFirst(66).dropFirst("All Photos/".count))
            XCTAssertEqual(String(line.prefix(64)), try library.asset(named: name)?.sha256, name)
        }
    }

    /// The asset a mount path names, from the core.
    func asset(at path: String) throws -> Asset? {
        var parts = path.split(separator: "/").map(String.init)
        let name = parts.removeLast()
        switch parts.first {
        case "Albums":
            guard let album = try library.album(path: Array(parts.dropFirst())) else { return nil }
            return try library.member(named: name, ofAlbum: album.id)?.1
        default:
            return try library.asset(named: name)
        }
    }
}
