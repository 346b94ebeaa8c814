import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// Photos and thumbnails opened to be read are read by the kernel from their files (FUSE
/// passthrough), on every mount by root on a kernel that has it: no READ request reaches
/// the daemon. Writers are never kept out by readers: a photo held by readers of its old
/// bytes moves to a new kernel inode (docs/performance.md, "Reads in passthrough").
final class PassthroughTests: XCTestCase {
    var temp: TempDirectory!
    var mount: MountedLibrary!
    var lib: String!
    let gps = Samples.directory + "/photos/jpg/gps"

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-passthrough")
        lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        XCTAssertTrue(try Processes.albumfs("import", lib, "--album", "A", gps + "/DSCN0010.jpg", gps + "/DSCN0012.jpg").ok)
    }

    override func tearDown() {
        mount?.unmount()
        mount = nil
        temp?.remove()
    }

    /// Runs `command` in the mountpoint; it must succeed.
    func sh(_ command: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try Processes.shell("cd \(mount.mountpoint.shellQuoted) && \(command)")
        XCTAssertEqual(result.status, 0, "\(command): \(result.stdout) \(result.stderr)\nlog: \(mount.log)", file: file, line: line)
    }

    /// Root on a kernel built with CONFIG_FUSE_PASSTHROUGH (6.9 and later).
    var kernelOffersPassthrough: Bool {
        guard getuid() == 0 else { return false }
        if FileManager.default.fileExists(atPath: "/proc/config.gz") {
            let config = try? Processes.shell("zcat /proc/config.gz | grep -q '^CONFIG_FUSE_PASSTHROUGH=y'")
            return config?.status == 0
        }
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        return parts.count == 2 && (parts[0], parts[1]) >= (6, 9)
    }

    func testReadsOnTheDefaultMountNeverReachTheDaemon() throws {
        let passthrough = kernelOffersPassthrough
        mount = try MountedLibrary(library: lib, temp: temp, requests: true)
        XCTAssertEqual(mount.log.contains("reads in passthrough"), passthrough, mount.log)
        let p1 = (gps + "/DSCN0010.jpg").shellQuoted
        // Plain reads, by two paths, several readers at once, and mmap.
        try sh("""
            cmp \(p1) Albums/A/DSCN0010.jpg && cmp \(p1) 'All Photos/DSCN0010.jpg'
            for i in 1 2 3 4; do cat Albums/A/DSCN0012.jpg > /dev/null & done; wait
            /usr/bin/python3 -c "
            import mmap, sys
            f = open('Albums/A/DSCN0010.jpg', 'rb')
            m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            sys.exit(0 if m[:] == open('\(gps)/DSCN0010.jpg', 'rb').read() else 1)
            "
            """)
        let photoReads = mount.requestCount("READ")
        // A text file of the album is read through the daemon: the count sees reads.
        try sh("echo notes > Albums/A/notes.txt")
        try sh("cat Albums/A/notes.txt > /dev/null && echo 3 > /proc/sys/vm/drop_caches && cat Albums/A/notes.txt > /dev/null")
        let textReads = mount.requestCount("READ") - photoReads
        if passthrough {
            XCTAssertEqual(photoReads, 0, "photos read in passthrough reach the daemon")
        } else {
            XCTAssertGreaterThan(photoReads, 0)
        }
        XCTAssertGreaterThan(textReads, 0, "the request count sees no reads at all")
        // -o nopassthrough: every read is the daemon's.
        mount.unmount()
        mount = try MountedLibrary(library: lib, temp: temp, name: "mnt2", options: ["nopassthrough"], requests: true)
        XCTAssertFalse(mount.log.contains("reads in passthrough"), mount.log)
        try sh("cmp \(p1) Albums/A/DSCN0010.jpg")
        XCTAssertGreaterThan(mount.requestCount("READ"), 0)
    }

    /// A thumbnail is read into the kernel's page cache, not in passthrough: read again,
    /// with a `stat` before and after as a viewer does, it costs its OPEN and nothing
    /// else. In passthrough, every read made the kernel drop the file's atime, and the
    /// next `stat` asked the daemon (docs/namespace.md, "Reads in passthrough").
    func testAThumbnailReadAgainCostsNoRequestButItsOpen() throws {
        mount = try MountedLibrary(library: lib, temp: temp, requests: true)
        let thumbnail = "Albums/A/.thumbnails/DSCN0010.jpg.jpg"
        let look = "stat -c %s \(thumbnail) > /dev/null && head -c 2 \(thumbnail) | od -An -tx1 | grep -q 'ff d8' && cat \(thumbnail) > /dev/null && stat \(thumbnail) > /dev/null"
        try sh(look)
        let before = ["READ", "GETATTR", "OPEN", "LOOKUP"].map { mount.requestCount($0) }
        try sh("\(look) && \(look)")
        let after = ["READ", "GETATTR", "OPEN", "LOOKUP"].map { mount.requestCount($0) }
        XCTAssertEqual(after[0] - before[0], 0, "reads of a thumbnail read before reached the daemon")
        XCTAssertEqual(after[1] - before[1], 0, "a stat of a thumbnail read before reached the daemon")
        XCTAssertEqual(after[2] - before[2], 4, "each open is asked of the daemon")
        XCTAssertEqual(after[3] - before[3], 0)
    }

    /// A plain file (not a photo: read through the daemon, not in passthrough) read again
    /// is read from the kernel's page cache: its open is asked of the daemon, its reads
    /// are not. Once its bytes change, written through the mount or behind the kernel's
    /// back (in the library's `plain/`, as another host writes them), the next open reads
    /// the new ones (docs/namespace.md, "Caching"). Before, every open dropped its pages.
    func testAPlainFileReadAgainComesFromThePageCacheUntilItsBytesChange() throws {
        mount = try MountedLibrary(library: lib, temp: temp, requests: true)
        let source = temp.sub("notes.bin").shellQuoted
        try sh("head -c 4000000 /dev/urandom > \(source) && cp \(source) Albums/A/notes.bin")
        // Bytes changed in the last two seconds are read again at each open (a write may
        // be under way); the first open after drops the pages, and its reads witness them.
        // Returns the daemon's count of READs from there.
        func settleAndReadTwice() throws -> Int {
            Thread.sleep(forTimeInterval: 2.5)
            try sh("cat Albums/A/notes.bin > /dev/null && cat Albums/A/notes.bin > /dev/null")
            return mount.requestCount("READ")
        }
        let before = try settleAndReadTwice()
        try sh("cmp \(source) Albums/A/notes.bin && cat Albums/A/notes.bin > /dev/null")
        XCTAssertEqual(mount.requestCount("READ") - before, 0, "a plain file read before was read through the daemon again")
        // Same size, other bytes in the middle: behind the kernel's back (read after they
        // settled: only the bytes file's times tell), then through the mount.
        let backing = try XCTUnwrap(FileManager.default.contentsOfDirectory(atPath: lib + "/plain").first {
            (try? FileManager.default.attributesOfItem(atPath: lib + "/plain/" + $0)[.size] as? Int) == 4_000_000
        })
        let poke = { (bytes: String, offset: Int, file: String) in
            "printf \(bytes) | dd of=\(file) bs=1 seek=\(offset) conv=notrunc status=none"
        }
        try sh(poke("CHANGED", 2_000_000, (lib + "/plain/" + backing).shellQuoted) + " && " + poke("CHANGED", 2_000_000, source))
        Thread.sleep(forTimeInterval: 2.5)
        try sh("cmp \(source) Albums/A/notes.bin")
        try sh(poke("AGAIN", 3_000_000, "Albums/A/notes.bin") + " && " + poke("AGAIN", 3_000_000, source))
        try sh("cmp \(source) Albums/A/notes.bin && cmp \(source) Albums/A/notes.bin")
        // Settled again, the pages are kept again.
        let settled = try settleAndReadTwice()
        try sh("cmp \(source) Albums/A/notes.bin")
        XCTAssertEqual(mount.requestCount("READ") - settled, 0, "a plain file read since its change was read through the daemon again")
        XCTAssertEqual(try Processes.shell("cmp \(source) \((lib + "/plain/" + backing).shellQuoted)").status, 0)
    }

    /// A reader and a writer of one photo, in either order, each read their own bytes on
    /// the default mount and with `-o nopassthrough` (where every reader is cached): the
    /// reader the version it opened, the writer what it wrote; a reader opened while the
    /// writer has bytes pending reads those; the photo deleted for good, each handle
    /// keeps its bytes (and, without passthrough, an open of the reader's descriptor
    /// through `/proc` reads the removed file's bytes now, the writer's, as on a disk);
    /// a new open after the writer's close reads what it closed. Before,
    /// a reader cached beside a writer shared the kernel inode's pages with it (the
    /// reader read the writer's "abc" every time without passthrough, and on the default
    /// mount while the open that created the photo was still held). Python's `os.pread`,
    /// as a program reads.
    func testAReaderAndAWriterOfOnePhotoEachReadTheirOwnBytes() throws {
        let script = temp.sub("handles.py")
        try """
            import os, sys
            photo = open(sys.argv[1], 'rb').read()
            failures = []
            def expect(what, got, wanted):
                if got != wanted: failures.append('%s: read %d bytes beginning %r' % (what, len(got), got[:6]))
            for i in range(3):
                p = 'Albums/A/W%d.jpg' % i
                creator = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(creator, photo)
                kept = os.dup(creator)  # the creating open held past its close
                os.close(creator)
                # The writer first, then the reader.
                w = os.open(p, os.O_RDWR)
                r = os.open(p, os.O_RDONLY)
                expect('reader before the write', os.pread(r, 4096, 0), photo[:4096])
                os.pwrite(w, b'abc', 0)
                expect('writer', os.pread(w, 3, 0), b'abc')
                expect('reader after the write', os.pread(r, 1 << 20, 0), photo)
                os.close(r)
                pending = os.open(p, os.O_RDONLY)
                expect('reader of the pending bytes', os.pread(pending, 3, 0), b'abc')
                os.close(pending)
                os.pwrite(w, photo[:3], 0)
                os.close(w)
                expect('open after the close', open(p, 'rb').read(), photo)
                # The reader first, then the writer, and the photo deleted for good.
                r = os.open(p, os.O_RDONLY)
                expect('reader', os.pread(r, 4, 0), photo[:4])
                w = os.open(p, os.O_RDWR)
                os.pwrite(w, b'abc', 0)
                os.unlink('All Photos/W%d.jpg' % i)
                os.unlink('Smart Albums/Recently Deleted/W%d.jpg' % i)
                expect('writer after the deletion', os.pread(w, 3, 0), b'abc')
                expect('reader after the deletion', os.pread(r, 1 << 20, 0), photo)
                if sys.argv[2] == 'cached':
                    # Opened again through /proc, as a removed file is: its bytes now,
                    # the writer's (the open stays on the reader's kernel inode).
                    again = os.open('/proc/self/fd/%d' % r, os.O_RDONLY)
                    expect('reopened through /proc', os.pread(again, 3, 0), b'abc')
                    expect('reader beside it', os.pread(r, 1 << 20, 0), photo)
                    os.close(again)
                os.close(r); os.close(w); os.close(kept)
            print('; '.join(failures))
            sys.exit(1 if failures else 0)
            """.write(toFile: script, atomically: true, encoding: .utf8)
        for options in [[], ["nopassthrough"]] {
            mount = try MountedLibrary(library: lib, temp: temp, name: "mnt" + options.joined(), options: options)
            try sh("/usr/bin/python3 \(script.shellQuoted) \((gps + "/DSCN0021.jpg").shellQuoted) \(options.isEmpty ? "passthrough" : "cached")")
            XCTAssertEqual(try Processes.shell("ls \((mount.mountpoint + "/Albums/A").shellQuoted)").stdout, "DSCN0010.jpg\nDSCN0012.jpg\n")
            mount.unmount()
            mount = nil
        }
    }

    /// An open that comes between a save's commit and the kernel dropping the photo's
    /// attributes reads the new version, and `fstat` on it must say that version's size:
    /// `mmap` of the whole file maps that size. The save is held there by the daemon's
    /// test hook (`ALBUMFS_TEST_HOLD_SAVES`); under load the suite met this moment by
    /// itself, and an mmap reader got the first 150,085 bytes of a photo of 157,569.
    /// The same with `-o nopassthrough`, where the kernel cuts reads at the size it has.
    func testAnOpenDuringASavesCommitSeesTheSizeOfWhatItReads() throws {
        // Each round saves the photo's next version, larger than the one before, so that
        // a mapping of the old size is short rather than past the end of the file.
        try saveHeldAfterItsCommit(options: [], from: gps + "/DSCN0012.jpg", to: gps + "/DSCN0010.jpg")
        mount.unmount()
        try saveHeldAfterItsCommit(options: ["nopassthrough"], from: gps + "/DSCN0010.jpg",
                                   to: Samples.directory + "/photos/jpg/xmp/no_exif.jpg")
    }

    func saveHeldAfterItsCommit(options: [String], from current: String, to nextVersion: String) throws {
        let holds = temp.sub("holds\(options.joined())")
        try FileManager.default.createDirectory(atPath: holds, withIntermediateDirectories: true)
        mount = try MountedLibrary(library: lib, temp: temp, name: "mnt\(options.joined())", options: options,
                                   environment: ["ALBUMFS_TEST_HOLD_SAVES": holds])
        let photo = mount.path("Albums/A/DSCN0012.jpg")
        let before = try Data(contentsOf: URL(fileURLWithPath: current))
        let next = try Data(contentsOf: URL(fileURLWithPath: nextVersion))
        XCTAssertGreaterThan(next.count, before.count, "the new version must be the larger one for a short mapping to show")
        // The kernel keeps the photo's size, as any program that looked at it leaves it.
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: photo)[.size] as? Int, before.count)
        let ino = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: photo)[.systemFileNumber] as? Int)
        let tmp = mount.path("Albums/A/.DSCN0012.jpg.tmp")
        try next.write(to: URL(fileURLWithPath: tmp))
        try "\(ino)".write(toFile: holds + "/hold", atomically: true, encoding: .utf8)
        // Saved by rename, as editors save: held after its commit.
        let save = Thread { _ = rename(tmp, photo) }
        save.start()
        let deadline = Date().addingTimeInterval(20)
        while access(holds + "/held-1", F_OK) != 0 && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(access(holds + "/held-1", F_OK), 0, "the save reached the daemon and was held")
        let read = try Processes.run("/usr/bin/python3", ["-c", """
            import mmap, os, sys
            with open(sys.argv[1], 'rb') as f:
                size = os.fstat(f.fileno()).st_size
                with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                    mapped = m[:]
                read = f.read()
            want = open(sys.argv[2], 'rb').read()
            print(size, len(mapped), mapped == want, read == want)
            """, photo, nextVersion], timeout: 20)
        FileManager.default.createFile(atPath: holds + "/release-1", contents: nil)
        while !save.isFinished { usleep(10_000) }
        // fstat's size, the bytes mapped, whether they and the bytes read are the new
        // version whole.
        XCTAssertEqual(read.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "\(next.count) \(next.count) True True",
                       "\(options): \(read.stderr)\nlog: \(mount.log)")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: photo)), next)
    }

    /// A photo opened for writing while the last release of its previous writer is under
    /// way keeps what the new handle writes. The release is held by the daemon's test
    /// hook (`ALBUMFS_TEST_HOLD_RELEASES`) after it counted the writer's last handle gone
    /// and before it dropped what no handle held: the new open joined the writer there
    /// and wrote, and the release then saved what it had written as a version (half of
    /// the new bytes); written a moment later, after the release looked, the copy the new
    /// handle wrote into was thrown away instead (a review found it).
    func testAWriterOpenedDuringAnotherWritersLastReleaseKeepsItsBytes() throws {
        let holds = temp.sub("holds")
        try FileManager.default.createDirectory(atPath: holds, withIntermediateDirectories: true)
        mount = try MountedLibrary(library: lib, temp: temp, environment: ["ALBUMFS_TEST_HOLD_RELEASES": holds])
        let photo = mount.path("Albums/A/DSCN0010.jpg")
        let ino = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: photo)[.systemFileNumber] as? Int)
        try "\(ino)".write(toFile: holds + "/hold", atomically: true, encoding: .utf8)
        let first = open(photo, O_RDWR)
        XCTAssertGreaterThanOrEqual(first, 0, String(cString: strerror(errno)))
        close(first)
        let deadline = Date().addingTimeInterval(20)
        while access(holds + "/held-1", F_OK) != 0 && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(access(holds + "/held-1", F_OK), 0, "the release reached the daemon and was held")

        let next = [UInt8](try Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0025.jpg")))
        let half = next.count / 2
        let second = open(photo, O_RDWR)
        XCTAssertGreaterThanOrEqual(second, 0, String(cString: strerror(errno)))
        XCTAssertEqual(next[0..<half].withUnsafeBytes { pwrite(second, $0.baseAddress, half, 0) }, half)
        XCTAssertTrue(FileManager.default.createFile(atPath: holds + "/release-1", contents: nil))
        // The held release goes on now; nothing tells when it is done.
        usleep(500_000)
        XCTAssertEqual(next[half...].withUnsafeBytes { pwrite(second, $0.baseAddress, next.count - half, off_t(half)) },
                       next.count - half)
        XCTAssertEqual(ftruncate(second, off_t(next.count)), 0)
        XCTAssertEqual(close(second), 0, String(cString: strerror(errno)))
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: photo))), next, "log: \(mount.log)")
        // One save: the held release saved nothing of the bytes the new handle was writing.
        let library = try Library.open(at: lib, access: .reader)
        let asset = try XCTUnwrap(try library.member(named: "DSCN0010.jpg", ofAlbum: XCTUnwrap(try library.album(path: ["A"])).id)?.1)
        XCTAssertEqual(try library.versions(of: asset.id).count, 2, "the imported version and the one saved")
    }

    /// Readers (plain and mmap, by every path, some holding the photos open throughout),
    /// a saver by rename of one photo and an in-place writer of the other, all at once.
    /// No open or read fails (no ETXTBSY, EIO, ENODEV or ESTALE); every read of the photo
    /// saved by rename is the whole bytes of one version; a reader keeps the version it
    /// opened, through read() and through a mapping; an open after a save, by any path,
    /// sees it. (A read that overlaps an in-place write sees some of the bytes being
    /// written, as on any disk: those reads are only counted.)
    func testReadersMmapReadersAndWritersAtOnce() throws {
        try readersAndWritersAtOnce(options: [])
    }

    /// The same with every open cached (as on a mount without root): a reader of the old
    /// version keeps filling the pages of the kernel inode it opened, so the photo (and
    /// its thumbnail, which is never read in passthrough) moves to a new one at a save.
    func testReadersMmapReadersAndWritersAtOnceWithoutPassthrough() throws {
        try readersAndWritersAtOnce(options: ["nopassthrough"])
    }

    func readersAndWritersAtOnce(options: [String]) throws {
        mount = try MountedLibrary(library: lib, temp: temp, options: options)
        XCTAssertEqual(mount.log.contains("reads in passthrough"), kernelOffersPassthrough && options.isEmpty, mount.log)
        let ino = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: mount.path("Albums/A/DSCN0010.jpg"))[.systemFileNumber] as? Int)
        let script = temp.sub("clients.py")
        try """
        import hashlib, mmap, os, struct, sys, threading, time, zlib
        root, samples = sys.argv[1], sys.argv[2]
        IN_PLACE, RENAMED = 'DSCN0010.jpg', 'DSCN0012.jpg'
        pools = {
            IN_PLACE: ['DSCN0010.jpg', 'DSCN0021.jpg', 'DSCN0025.jpg', 'DSCN0027.jpg'],
            RENAMED: ['DSCN0012.jpg', 'DSCN0029.jpg', 'DSCN0038.jpg', 'DSCN0040.jpg'],
        }
        data = {name: [open(os.path.join(samples, v), 'rb').read() for v in pool] for name, pool in pools.items()}
        failures = []
        reads = {'whole': 0, 'during in-place writes': 0}
        done = threading.Event()

        def paths(name):
            return [os.path.join(root, 'Albums/A', name), os.path.join(root, 'All Photos', name)]

        def describe(name, got):
            # What the bytes are, to tell a stale size from mixed versions.
            for v, version in enumerate(data[name]):
                if len(got) < len(version) and version.startswith(got):
                    return 'the first %d bytes of version %d (%d bytes)' % (len(got), v, len(version))
                if len(got) > len(version) and got.startswith(version):
                    return 'version %d (%d bytes) and %d bytes more' % (v, len(version), len(got) - len(version))
            return '%d bytes that are no version' % len(got)

        def check(name, path, got, how):
            if name == IN_PLACE:
                reads['during in-place writes'] += 1
            elif got in data[name]:
                reads['whole'] += 1
            else:
                failures.append('%s %s: %s' % (how, path, describe(name, got)))

        def whole_png(b):
            if b[:8] != b'\\x89PNG\\r\\n\\x1a\\n':
                return False
            at = 8
            while at + 12 <= len(b):
                length, kind = struct.unpack('>I4s', b[at:at + 8])
                body = b[at + 4:at + 8 + length]
                if len(body) != 4 + length or struct.unpack('>I', b[at + 8 + length:at + 12 + length])[0] != zlib.crc32(body):
                    return False
                at += 12 + length
                if kind == b'IEND':
                    return at == len(b)
            return False

        def reader(name, use_mmap):
            while not done.is_set():
                for path in paths(name):
                    try:
                        with open(path, 'rb') as f:
                            if use_mmap:
                                with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                                    got = m[:]
                            else:
                                got = f.read()
                        check(name, path, got, 'mmap' if use_mmap else 'read')
                    except OSError as e:
                        failures.append('%s %s: %s' % ('mmap' if use_mmap else 'read', path, e))
                try:
                    with open(os.path.join(root, 'Albums/A/.thumbnails', name + '.jpg'), 'rb') as f:
                        thumb = f.read()
                    if name == RENAMED and (thumb[:2] != b'\\xff\\xd8' or thumb[-2:] != b'\\xff\\xd9'):
                        failures.append('thumbnail of %s: not a whole JPEG' % name)
                except OSError as e:
                    failures.append('thumbnail of %s: %s' % (name, e))
                # The shared repository's PNG (named by the MD5 of its relative URI): whole,
                # every chunk's CRC right, so that pages of two versions cannot pass.
                try:
                    png = hashlib.md5(('./' + name).encode()).hexdigest() + '.png'
                    with open(os.path.join(root, 'Albums/A/.sh_thumbnails/large', png), 'rb') as f:
                        shared = f.read()
                    if name == RENAMED and not whole_png(shared):
                        failures.append('shared thumbnail of %s: not a whole PNG (%d bytes)' % (name, len(shared)))
                except OSError as e:
                    failures.append('shared thumbnail of %s: %s' % (name, e))

        def saved(name, version):
            for path in paths(name):
                with open(path, 'rb') as f:
                    if f.read() != data[name][version]:
                        failures.append('%s: an open after the save does not see version %d' % (path, version))

        def writer(name, by_rename):
            for i in range(1, 13):
                v = i % 4
                try:
                    if by_rename:
                        temp = os.path.join(root, 'Albums/A', '.%s.tmp' % name)
                        with open(temp, 'wb') as f:
                            f.write(data[name][v])
                        os.replace(temp, paths(name)[0])
                    else:
                        with open(paths(name)[0], 'wb') as f:
                            f.write(data[name][v])
                    saved(name, v)
                except OSError as e:
                    failures.append('save %s: %s' % (name, e))
                time.sleep(0.05)

        # Held open from before the first save to after the last: the version they opened,
        # through read() and through a mapping made before the saves.
        held = [(n, k, open(paths(n)[k], 'rb')) for n in pools for k in (0, 1)]
        maps = [(n, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)) for n, k, f in held if k == 1]
        # Readers of the photo written in place do not map it: a mapping made while a
        # writer truncates the file faults (SIGBUS), on any disk.
        readers = [threading.Thread(target=reader, args=a) for a in
                   [(RENAMED, False), (RENAMED, False), (RENAMED, True), (RENAMED, True), (IN_PLACE, False), (IN_PLACE, False)]]
        writers = [threading.Thread(target=writer, args=(IN_PLACE, False)), threading.Thread(target=writer, args=(RENAMED, True))]
        for t in readers + writers:
            t.start()
        for t in writers:
            t.join()
        done.set()
        for t in readers:
            t.join()
        for name, k, f in held:
            if f.read() != data[name][0]:
                failures.append('%s held open: not the version it opened' % paths(name)[k])
            f.close()
        for name, m in maps:
            if m[:] != data[name][0]:
                failures.append('%s mapped: not the version it mapped' % name)
            m.close()
        for f in sorted(set(failures))[:20]:
            print(f)
        print(reads)
        sys.exit(1 if failures or 0 in reads.values() else 0)
        """.write(toFile: script, atomically: true, encoding: .utf8)
        let result = try Processes.run("/usr/bin/python3", [script, mount.mountpoint, gps], timeout: 300)
        XCTAssertEqual(result.status, 0, "\(result.stdout)\(result.stderr)\nlog: \(mount.log)")
        // Both photos: the same number, twelve new versions each, one asset each.
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: mount.path("All Photos/DSCN0010.jpg"))[.systemFileNumber] as? Int, ino)
        mount.unmount()
        let library = try Library.open(at: lib, access: .reader)
        for name in ["DSCN0010.jpg", "DSCN0012.jpg"] {
            let asset = try XCTUnwrap(try library.asset(named: name))
            XCTAssertEqual(try library.versions(of: asset.id).count, 13, name)
        }
        XCTAssertEqual(try library.stats().assets, 2)
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 0, check.stdout)
    }
}
