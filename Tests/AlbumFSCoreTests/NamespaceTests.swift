import AlbumCore
import AlbumFSCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// The filesystem core in-process: what each inode is, lookups, listings and cookies,
/// with a real library of sample photos.
final class NamespaceTests: XCTestCase {
    var temp: TempDirectory!
    var library: Library!
    var fs: FileSystem!
    var trip: Album!
    var family: Album!

    override func setUpWithError() throws {
        temp = TempDirectory()
        library = try Library.create(at: temp.sub("lib"))
        let trips = try library.write { try $0.createAlbum(named: "Trips", in: 0) }
        trip = try library.write { try $0.createAlbum(named: "Tuscany 2008", in: trips.id) }
        family = try library.write { try $0.createAlbum(named: "Family", in: 0) }
        for name in ["DSCN0010.jpg", "DSCN0012.jpg", "DSCN0021.jpg"] {
            _ = try library.importFile(at: Samples.directory + "/photos/jpg/gps/" + name, originalName: name,
                                       destination: ImportDestination(album: trip.id))
        }
        _ = try library.importFile(at: Samples.directory + "/photos/jpg/gps/DSCN0010.jpg", originalName: "DSCN0010.jpg",
                                   destination: ImportDestination(album: family.id))
        _ = try library.importFile(at: Samples.directory + "/videos/clip-2021-03-05.mp4", originalName: "clip-2021-03-05.mp4",
                                   destination: .library)
        fs = FileSystem(library: library, options: MountOptions())
    }

    override func tearDown() {
        fs?.stop()
        fs = nil
        library = nil
        let failure = temp.remove()
        // Background work the core started (thumbnails made ahead) must have ended with
        // `stop()`: one still writing leaves the library half removed.
        XCTAssertFalse(FileManager.default.fileExists(atPath: temp.path), "\(temp.path) was not removed whole: \(failure ?? "")")
    }

    func lookup(_ path: String) throws -> Attributes {
        var ino = FixedInode.root
        var attributes = try fs.getattr(ino)
        for part in path.split(separator: "/") {
            attributes = try fs.lookup(parent: ino, name: Array(part.utf8)).attributes
            ino = attributes.ino
        }
        return attributes
    }

    func names(_ path: String) throws -> [String] {
        try fs.readdir(try lookup(path).ino, after: 0, limit: 10_000).map(\.name)
    }

    func errno(_ body: () throws -> Any) -> Int32? {
        do { _ = try body(); return nil } catch { return FSError.from(error).errno }
    }

    func testTheTree() throws {
        XCTAssertEqual(try names(""), [".", "..", "Albums", "All Photos", "By Date", "Smart Albums"])
        XCTAssertEqual(try names("Albums"), [".", "..", "Trips", "Family"])
        XCTAssertEqual(try names("Albums/Trips"), [".", "..", "Tuscany 2008"])
        XCTAssertEqual(try names("Albums/Trips/Tuscany 2008"), [".", "..", "DSCN0010.jpg", "DSCN0012.jpg", "DSCN0021.jpg"])
        XCTAssertEqual(try names("All Photos"), [".", "..", "DSCN0010.jpg", "DSCN0012.jpg", "DSCN0021.jpg", "clip-2021-03-05.mp4"])
        XCTAssertEqual(try names("By Date"), [".", "..", "2008", "2021"])
        XCTAssertEqual(try names("By Date/2008"), [".", "..", "2008-10"])
        XCTAssertEqual(try names("By Date/2008/2008-10"), [".", "..", "2008-10-22"])
        XCTAssertEqual(try names("By Date/2008/2008-10/2008-10-22"), [".", "..", "DSCN0010.jpg", "DSCN0012.jpg", "DSCN0021.jpg"])
        XCTAssertEqual(try names("Smart Albums"), [".", ".."] + SmartAlbum.allCases.map(\.folderName))
        XCTAssertEqual(try names("Smart Albums/Videos"), [".", "..", "clip-2021-03-05.mp4"])
        XCTAssertEqual(try lookup("Albums/Trips").kind, .directory)
        XCTAssertEqual(try lookup("Smart Albums/Videos").permissions, 0o555)
        // Thumbnail folders: reachable by path, listed only with list_thumbnails.
        XCTAssertEqual(try names("Albums/Trips/Tuscany 2008/.thumbnails"), [".", "..", "DSCN0010.jpg.jpg", "DSCN0012.jpg.jpg", "DSCN0021.jpg.jpg"])
        var options = MountOptions()
        options.listThumbnails = true
        fs.stop()
        fs = FileSystem(library: library, options: options)
        XCTAssertEqual(try names("Albums/Trips/Tuscany 2008"), [".", "..", ".thumbnails", ".sh_thumbnails", "DSCN0010.jpg", "DSCN0012.jpg", "DSCN0021.jpg"])
    }

    func testOneAssetOneInodeEverywhere() throws {
        let inAlbum = try lookup("Albums/Trips/Tuscany 2008/DSCN0010.jpg")
        let inOther = try lookup("Albums/Family/DSCN0010.jpg")
        let inAll = try lookup("All Photos/DSCN0010.jpg")
        let inDay = try lookup("By Date/2008/2008-10/2008-10-22/DSCN0010.jpg")
        XCTAssertEqual(Set([inAlbum.ino, inOther.ino, inAll.ino, inDay.ino]).count, 1)
        XCTAssertEqual(inAlbum.nlink, 2)
        XCTAssertEqual(inAlbum.size, 161713)
        XCTAssertEqual(inAlbum.blocks, (161713 + 4095) / 4096 * 8)
        XCTAssertEqual(inAlbum.mtimeNs / 1_000_000_000, try XCTUnwrap(try library.asset(named: "DSCN0010.jpg")).takenAt)
        // d_ino == st_ino: readdir entries carry the inode that lookup gives.
        let entry = try XCTUnwrap(try fs.readdir(try lookup("All Photos").ino, after: 0, limit: 100).first { $0.name == "DSCN0010.jpg" })
        XCTAssertEqual(entry.attributes?.ino, inAll.ino)
        XCTAssertEqual(entry.ino, inAll.ino)
    }

    func testInodesSurviveARestart() throws {
        let paths = ["Albums", "Albums/Trips", "Albums/Trips/Tuscany 2008", "Albums/Trips/Tuscany 2008/DSCN0012.jpg",
                     "All Photos", "By Date/2008/2008-10/2008-10-22", "Smart Albums/Videos",
                     "Albums/Trips/Tuscany 2008/.thumbnails", "By Date/2008/2008-10/2008-10-22/.thumbnails"]
        let before = try paths.map { try lookup($0).ino }
        fs.stop()
        fs = nil
        library = nil
        library = try Library.open(at: temp.sub("lib"), access: .exclusive)
        fs = FileSystem(library: library, options: MountOptions())
        XCTAssertEqual(try paths.map { try lookup($0).ino }, before)
        // NFS after a restart: getattr, "." and ".." of numbers handed out before.
        for ino in before {
            XCTAssertEqual(try fs.getattr(ino).ino, ino)
            XCTAssertEqual(try fs.lookup(parent: ino, name: Array(".".utf8)).attributes.ino, ino)
        }
        XCTAssertEqual(try fs.lookup(parent: try lookup("Albums/Trips/Tuscany 2008").ino, name: Array("..".utf8)).attributes.ino,
                       try lookup("Albums/Trips").ino)
        XCTAssertEqual(try fs.lookup(parent: try lookup("By Date/2008/2008-10/2008-10-22").ino, name: Array("..".utf8)).attributes.ino,
                       try lookup("By Date/2008/2008-10").ino)
        XCTAssertEqual(try fs.lookup(parent: try lookup("Albums/Trips").ino, name: Array("..".utf8)).attributes.ino, FixedInode.albums)
        XCTAssertEqual(try fs.lookup(parent: FixedInode.root, name: Array("..".utf8)).attributes.ino, FixedInode.root)
        // Numbers never handed out, and objects that are gone, are ENOENT (ESTALE on NFS).
        XCTAssertEqual(errno { try self.fs.getattr(999_999) }, ENOENT)
        XCTAssertEqual(errno { try self.fs.getattr(12345 | (7 << 56)) }, ENOENT)
        XCTAssertEqual(errno { try self.fs.getattr((1 << 56) | 19990101) }, ENOENT)
    }

    func testNamesInAnyCaseAndNormalization() throws {
        let exact = try lookup("All Photos/DSCN0010.jpg")
        XCTAssertEqual(try lookup("all photos/dscn0010.JPG").ino, exact.ino)
        XCTAssertEqual(try lookup("ALBUMS/trips/TUSCANY 2008/dscn0010.jpg").ino, exact.ino)

        let cafe = try library.write { try $0.createAlbum(named: "Caf\u{E9}", in: 0) }
        XCTAssertEqual(try lookup("Albums/Cafe\u{301}").ino, UInt64(cafe.id))
        XCTAssertEqual(try lookup("Albums/CAFE\u{301}").ino, UInt64(cafe.id))

        let albums = FixedInode.albums
        XCTAssertEqual(errno { try self.fs.lookup(parent: albums, name: [0x66, 0xFF, 0x6F]) }, EILSEQ)
        XCTAssertEqual(errno { try self.fs.lookup(parent: albums, name: Array(repeating: 0x61, count: 256)) }, ENAMETOOLONG)
        XCTAssertEqual(errno { try self.fs.lookup(parent: albums, name: Array("missing".utf8)) }, ENOENT)
    }

    func testListingsResumeAtEveryCookie() throws {
        for path in ["", "Albums", "Albums/Trips/Tuscany 2008", "All Photos", "By Date", "Smart Albums"] {
            let ino = try lookup(path).ino
            let all = try fs.readdir(ino, after: 0, limit: 10_000)
            XCTAssertEqual(all.map(\.cookie), all.map(\.cookie).sorted(), path)
            XCTAssertEqual(Set(all.map(\.cookie)).count, all.count, path)
            for (index, entry) in all.enumerated() {
                let rest = try fs.readdir(ino, after: entry.cookie, limit: 10_000)
                XCTAssertEqual(rest, Array(all[(index + 1)...]), "\(path) after \(entry.name)")
                XCTAssertEqual(try fs.readdir(ino, after: entry.cookie, limit: 1).first, all.dropFirst(index + 1).first)
            }
        }
        // A listing resumed after an entry that was removed meanwhile goes on with the next.
        let album = try lookup("Albums/Trips/Tuscany 2008").ino
        let all = try fs.readdir(album, after: 0, limit: 100)
        let second = try XCTUnwrap(all.first { $0.name == "DSCN0012.jpg" })
        try library.write { try $0.removeMembership(album: trip.id, name: "DSCN0012.jpg") }
        XCTAssertEqual(try fs.readdir(album, after: second.cookie, limit: 100).map(\.name), ["DSCN0021.jpg"])
    }

    /// The bridge has the page after a full one read ahead of its request; it answers
    /// that request only while nothing changed since, however the change came.
    func testAPageReadAheadIsServedOnlyWhileNothingChanged() throws {
        let album = try lookup("Albums/Trips/Tuscany 2008").ino
        let all = try fs.readdir(album, after: 0, limit: 100)
        let first = try XCTUnwrap(all.first { $0.name == "DSCN0010.jpg" })
        func rest() throws -> [String] { try fs.readdir(album, after: first.cookie, limit: 100).map(\.name) }
        func readAhead() {
            fs.listAhead(album, after: first.cookie, limit: 100)
            fs.settleListingsAhead()
        }

        // Nothing changed: the page read ahead is the page.
        readAhead()
        XCTAssertEqual(try fs.readdir(album, after: first.cookie, limit: 100), Array(all.drop { $0.cookie <= first.cookie }))
        XCTAssertEqual(fs.listingPagesReadAhead, 1)
        XCTAssertEqual(try rest(), ["DSCN0012.jpg", "DSCN0021.jpg"], "each page answers one request")
        XCTAssertEqual(fs.listingPagesReadAhead, 1)

        // A change through the mount.
        readAhead()
        try fs.rename(parent: album, name: Array("DSCN0021.jpg".utf8), newParent: album, newName: Array("Siena.jpg".utf8), flags: 0)
        XCTAssertEqual(try rest(), ["DSCN0012.jpg", "Siena.jpg"])

        // A change made in the library without the mount (another command, a test).
        readAhead()
        try library.write { try $0.removeMembership(album: trip.id, name: "DSCN0012.jpg") }
        XCTAssertEqual(try rest(), ["Siena.jpg"])

        // A file open for writing grows without a change: no page is read or served.
        let (created, output) = try fs.create(parent: album, name: Array("notes.txt".utf8), mode: 0o644, flags: O_WRONLY)
        let out = try XCTUnwrap(output)
        let ten = [UInt8](repeating: 0x61, count: 10)
        _ = try ten.withUnsafeBytes { try fs.write(handle: out.handle, bytes: $0, offset: 0) }
        let dotdot = try XCTUnwrap(all.first { $0.name == ".." }).cookie  // plain files come before photos
        fs.listAhead(album, after: dotdot, limit: 100)
        fs.settleListingsAhead()
        _ = try ten.withUnsafeBytes { try fs.write(handle: out.handle, bytes: $0, offset: 10) }
        XCTAssertEqual(try fs.readdir(album, after: dotdot, limit: 100).first { $0.ino == created.ino }?.attributes?.size, 20)
        try fs.flush(handle: out.handle)
        fs.release(handle: out.handle)

        // A file opened, written and closed between the read and the request: its bytes
        // changed, and it stays a plain file (no row moves).
        fs.listAhead(album, after: dotdot, limit: 100)
        fs.settleListingsAhead()
        let again = try fs.open(created.ino, flags: O_WRONLY)
        _ = try ten.withUnsafeBytes { try fs.write(handle: again.handle, bytes: $0, offset: 20) }
        try fs.flush(handle: again.handle)
        fs.release(handle: again.handle)
        XCTAssertEqual(try fs.readdir(album, after: dotdot, limit: 100).first { $0.ino == created.ino }?.attributes?.size, 30)

        // Cut short by its path, with nothing open.
        fs.listAhead(album, after: dotdot, limit: 100)
        fs.settleListingsAhead()
        _ = try fs.setattr(created.ino, FileSystem.AttributeChanges(size: 5))
        XCTAssertEqual(try fs.readdir(album, after: dotdot, limit: 100).first { $0.ino == created.ino }?.attributes?.size, 5)

        // A page left unasked for (a listing stopped half way) is not served later.
        fs.listAhead(album, after: dotdot, limit: 100)
        fs.settleListingsAhead()
        Thread.sleep(forTimeInterval: 1.2)
        _ = try fs.readdir(album, after: dotdot, limit: 100)
        XCTAssertEqual(fs.listingPagesReadAhead, 1, "only the first page read ahead was served")
    }

    /// One setattr that cuts a plain file and sets its mode and mtime, as an NFS SETATTR
    /// may: the cut changes the file's row (its ctime), and the mode and times that
    /// follow, which check that the row is as it was found (another host's change
    /// would make them look again), must expect the row as the cut left it.
    func testOneSetattrCutsAPlainFileAndSetsItsModeAndMtime() throws {
        let album = try lookup("Albums/Trips/Tuscany 2008").ino
        let (created, output) = try fs.create(parent: album, name: Array("notes.txt".utf8), mode: 0o644, flags: O_WRONLY)
        let out = try XCTUnwrap(output)
        let ten = [UInt8](repeating: 0x61, count: 10)
        _ = try ten.withUnsafeBytes { try fs.write(handle: out.handle, bytes: $0, offset: 0) }
        try fs.flush(handle: out.handle)
        fs.release(handle: out.handle)
        let mtime: Int64 = 1_000_000_000_000_000_000
        let after = try fs.setattr(created.ino, FileSystem.AttributeChanges(size: 3, mode: 0o600, mtimeNs: mtime))
        XCTAssertEqual(after.size, 3)
        XCTAssertEqual(after.mode & 0o7777, 0o600)
        XCTAssertEqual(after.mtimeNs, mtime)
    }

    func testReadsServeTheOriginalBytes() throws {
        let attributes = try lookup("All Photos/DSCN0021.jpg")
        let opened = try fs.open(attributes.ino, flags: O_RDONLY)
        defer { fs.release(handle: opened.handle) }
        XCTAssertTrue(opened.keepCache)
        let source = try fs.read(handle: opened.handle, size: 1 << 20, offset: 0)
        var bytes = [UInt8](repeating: 0, count: Int(attributes.size) + 10)
        let n = pread(source.file.raw, &bytes, bytes.count, 0)
        XCTAssertEqual(n, Int(attributes.size))
        let original = try Data(contentsOf: URL(fileURLWithPath: Samples.directory + "/photos/jpg/gps/DSCN0021.jpg"))
        XCTAssertEqual(Data(bytes.prefix(n)), original)
        XCTAssertEqual(errno { try self.fs.open(try self.lookup("Albums").ino, flags: O_RDONLY) }, EISDIR)
    }

    func testExtendedAttributes() throws {
        let ino = try lookup("All Photos/DSCN0010.jpg").ino
        XCTAssertEqual(String(decoding: try fs.getxattr(ino, name: "user.albumfs.camera"), as: UTF8.self), "NIKON COOLPIX P6000")
        XCTAssertEqual(String(decoding: try fs.getxattr(ino, name: "user.albumfs.capture_date"), as: UTF8.self), "2008-10-22T16:28:39")
        XCTAssertTrue(try fs.listxattr(ino).contains("user.albumfs.latitude"))
        XCTAssertEqual(errno { try self.fs.getxattr(ino, name: "user.albumfs.duration") }, ENODATA)
        let video = try lookup("All Photos/clip-2021-03-05.mp4").ino
        XCTAssertEqual(String(decoding: try fs.getxattr(video, name: "user.albumfs.duration"), as: UTF8.self), "2.000")
        XCTAssertFalse(try fs.listxattr(video).contains("user.albumfs.latitude"))
    }

    func testStatfsReportsTheLibrarysDisk() throws {
        let s = try fs.statfs()
        var v = statvfs()
        XCTAssertEqual(statvfs(library.root, &v), 0)
        XCTAssertEqual(s.blocks, UInt64(v.f_blocks))
        XCTAssertEqual(s.blockSize, UInt64(v.f_bsize))
        XCTAssertEqual(s.nameMax, 255)
        // Free for users: the disk's, less the reserve writes are refused in (1 to 64 MiB,
        // a hundredth of the disk), give or take what others wrote meanwhile.
        let reserve = max(1 << 20, min(64 << 20, Int64(v.f_blocks) * Int64(v.f_frsize) / 100))
        let expected = (Int64(v.f_bavail) * Int64(v.f_frsize) - reserve) / Int64(v.f_frsize)
        XCTAssertLessThan(abs(Int64(s.blocksAvailable) - expected), 4096, "\(s.blocksAvailable) against \(expected)")
        XCTAssertLessThan(s.blocksAvailable, UInt64(v.f_bavail))
    }

    func testCopyFileRangeOfAWholeAssetClonesIt() throws {
        let source = try lookup("All Photos/DSCN0012.jpg")
        let family = try lookup("Albums/Family")
        let input = try fs.open(source.ino, flags: O_RDONLY)
        let (created, output) = try fs.create(parent: family.ino, name: Array("copy.jpg".utf8), mode: 0o644, flags: O_WRONLY)
        let out = try XCTUnwrap(output)
        XCTAssertEqual(try fs.copyFileRange(from: input.handle, offset: 0, to: out.handle, offset: 0, length: 1 << 30), Int(source.size))
        XCTAssertEqual(try fs.getattr(created.ino).size, source.size, "the copy has the source's size before close")
        try fs.flush(handle: out.handle)
        fs.release(handle: out.handle)
        fs.release(handle: input.handle)
        let copy = try lookup("Albums/Family/copy.jpg")
        XCTAssertEqual(copy.ino, source.ino, "the same asset, now also in Family")
        XCTAssertEqual(try library.stats().assets, 4)
        XCTAssertTrue(try FileManager.default.contentsOfDirectory(atPath: library.files.absolute(.staging)).isEmpty)
    }
}
