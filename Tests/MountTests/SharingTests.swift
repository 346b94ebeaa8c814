import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// The mount re-exported by real servers to real clients, on loopback only (issue 6):
/// smbd with smbclient and smbtorture, nfs-ganesha (FSAL_VFS) with libnfs's tools, and NFS file handles
/// that survive a restart of the daemon.
final class SharingTests: XCTestCase {
    var temp: TempDirectory!
    var mount: MountedLibrary!
    var lib: String!
    let gps = Samples.directory + "/photos/jpg/gps"

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-share")
        lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        XCTAssertTrue(try Processes.albumfs("import", lib, "--album", "Tuscany", gps + "/DSCN0010.jpg", gps + "/DSCN0012.jpg").ok)
        mount = try MountedLibrary(library: lib, temp: temp, options: ["allow_other"])
    }

    override func tearDown() {
        mount?.unmount()
        mount = nil
        temp?.remove()
    }

    func library() throws -> Library { try Library.open(at: lib, access: .reader) }

    /// Runs smbclient commands as a guest: each must succeed without an NT_STATUS error.
    @discardableResult
    func smb(_ samba: SambaServer, _ commands: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try samba.client(commands)
        XCTAssertEqual(result.status, 0, "\(commands): \(result.stdout) \(result.stderr)", file: file, line: line)
        XCTAssertFalse(result.stdout.contains("NT_STATUS"), "\(commands): \(result.stdout)", file: file, line: line)
        return result.stdout
    }

    func testSambaShare() throws {
        let samba = try SambaServer(sharing: mount.mountpoint, in: temp)
        defer { samba.stop() }
        let smb = { (commands: String) in try self.smb(samba, commands) }
        XCTAssertTrue(try smb("ls Albums\\*").contains("Tuscany"))
        XCTAssertTrue(try smb("cd Albums\\Tuscany; ls").contains("DSCN0012.jpg"))

        // put: imported into the album; get: the same bytes.
        _ = try smb("cd Albums\\Tuscany; put \(gps)/DSCN0021.jpg DSCN0021.jpg")
        let library = try library()
        let album = try XCTUnwrap(try library.album(path: ["Tuscany"]))
        XCTAssertEqual(try library.member(named: "DSCN0021.jpg", ofAlbum: album.id)?.1.sha256,
                       Samples.expected.first { $0.name == "DSCN0021.jpg" }?.sha256)
        let back = temp.sub("back.jpg")
        _ = try smb("cd Albums\\Tuscany; get DSCN0021.jpg \(back)")
        XCTAssertTrue(try Processes.run("cmp", [gps + "/DSCN0021.jpg", back]).ok)
        // Samba keeps its DOS attributes in user.DOSATTRIB, which the mount stores.
        XCTAssertTrue(try Processes.shell("getfattr -n user.DOSATTRIB '\(mount.path("Albums/Tuscany/DSCN0021.jpg"))'").ok)

        // mkdir, rename, utimes, del.
        _ = try smb("mkdir Albums\\Trip")
        XCTAssertNotNil(try library.album(path: ["Trip"]))
        _ = try smb("cd Albums\\Tuscany; rename DSCN0021.jpg Sunset.jpg")
        XCTAssertNotNil(try library.member(named: "Sunset.jpg", ofAlbum: album.id))
        _ = try smb("cd Albums\\Tuscany; utimes Sunset.jpg -1 -1 2010:05:06-07:08:09 -1")
        let mtime = try Processes.shell("TZ=UTC stat -c %y '\(mount.path("Albums/Tuscany/Sunset.jpg"))'").stdout
        XCTAssertTrue(mtime.hasPrefix("2010-05-06"), mtime)
        _ = try smb("cd Albums\\Tuscany; del Sunset.jpg")
        XCTAssertNil(try library.member(named: "Sunset.jpg", ofAlbum: album.id))
        XCTAssertNotNil(try library.asset(named: "DSCN0021.jpg"), "del in an album keeps the photo")

        // Junk a Mac client leaves stays a plain file of the folder, out of the library.
        _ = try smb("cd Albums\\Tuscany; put \(Samples.directory)/photos/.DS_Store .DS_Store")
        XCTAssertEqual(try library.stats().assets, 3)
        // A client's hard link (SMB2 FileLinkInformation) of a plain file: one file, two names.
        _ = try smb("cd Albums\\Tuscany; put /etc/hostname notes.txt; hardlink notes.txt notes-2.txt")
        XCTAssertEqual(try Processes.shell("stat -c '%i %h' '\(mount.path("Albums/Tuscany/notes.txt"))' '\(mount.path("Albums/Tuscany/notes-2.txt"))' | uniq | wc -l").stdout,
                       "1\n")
        XCTAssertEqual(try Processes.shell("stat -c %h '\(mount.path("Albums/Tuscany/notes-2.txt"))'").stdout, "2\n")

        // A second client reads while the first writes.
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/sh")
        let readLog = temp.sub("reads")
        reader.arguments = ["-c", "for i in $(seq 1 15); do smbclient //127.0.0.1/photos -p \(samba.port) -N -c 'cd Albums\\Tuscany; get DSCN0012.jpg \(temp.sub("r.jpg"))' >/dev/null 2>&1 && cmp -s \(temp.sub("r.jpg")) \(gps)/DSCN0012.jpg && echo ok >> \(readLog) || echo bad >> \(readLog); done"]
        try reader.run()
        for name in ["DSCN0025.jpg", "DSCN0027.jpg", "DSCN0029.jpg", "DSCN0038.jpg"] {
            _ = try smb("cd Albums\\Trip; put \(gps)/\(name) \(name)")
        }
        reader.waitUntilExit()
        let reads = try String(contentsOfFile: readLog, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(reads, Array(repeating: "ok", count: 15))
        XCTAssertEqual(try library.members(ofAlbum: try XCTUnwrap(try library.album(path: ["Trip"])).id).count, 4)
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
    }

    /// What Windows Explorer and macOS Finder do over SMB: a new folder tree, copies in
    /// (with the junk they leave: Thumbs.db, ._ files), a rename, then the photos of an
    /// album deleted and the album removed, and a whole tree deleted at once. smbd lists
    /// a folder itself before it removes it: it must find it empty.
    func testSambaClientsDeleteFoldersAndTrees() throws {
        let samba = try SambaServer(sharing: mount.mountpoint, in: temp)
        defer { samba.stop() }
        let smb = { (commands: String) in try self.smb(samba, commands) }
        let junk = temp.sub("junk")
        FileManager.default.createFile(atPath: junk, contents: Data("junk".utf8))
        _ = try smb("mkdir Albums\\Tree; mkdir Albums\\Tree\\Sub; cd Albums\\Tree; put \(gps)/DSCN0025.jpg DSCN0025.jpg; put \(junk) Thumbs.db; cd Sub; put \(gps)/DSCN0027.jpg DSCN0027.jpg; put \(junk) ._DSCN0027.jpg; rename DSCN0027.jpg Renamed.jpg")
        XCTAssertEqual(try Processes.shell("ls -A \(q(mount.path("Albums/Tree/Sub")))").stdout, "._DSCN0027.jpg\nRenamed.jpg\n")
        // The photos of an album deleted, then the album.
        _ = try smb("cd Albums\\Tree\\Sub; del *; cd ..; rmdir Sub")
        XCTAssertFalse(FileManager.default.fileExists(atPath: mount.path("Albums/Tree/Sub")))
        // A whole tree at once.
        _ = try smb("mkdir Albums\\Tree\\Deep; cd Albums\\Tree\\Deep; put \(gps)/DSCN0029.jpg DSCN0029.jpg")
        _ = try smb("cd Albums; deltree Tree")
        XCTAssertFalse(FileManager.default.fileExists(atPath: mount.path("Albums/Tree")))
        // The photos stay in the library (rm in an album keeps them).
        XCTAssertTrue(FileManager.default.fileExists(atPath: mount.path("All Photos/DSCN0029.jpg")))
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
    }

    /// The same over GNOME's client (gvfs's SMB backend, what Nautilus and every GIO
    /// application use): `gio remove` of an emptied album's photos and then the album,
    /// and a whole tree deleted the way a file manager does it (children first, through
    /// GIO's own enumeration).
    func testGioOverSambaDeletesAnEmptiedAlbumAndATree() throws {
        for tool in ["/usr/bin/gio", "/usr/bin/dbus-run-session", "/usr/libexec/gvfsd-smb", "/usr/bin/python3"] {
            XCTAssertTrue(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run mount-scripts/test, which installs it")
        }
        let samba = try SambaServer(sharing: mount.mountpoint, in: temp)
        defer { samba.stop() }
        let m = mount.mountpoint
        XCTAssertTrue(try Processes.shell("""
            mkdir -p \(q(m))/Albums/Tree/Sub/Deep \(q(m))/Albums/Emptied && cp \(q(gps))/DSCN0021.jpg \(q(m))/Albums/Tree/ \
            && cp \(q(gps))/DSCN0025.jpg \(q(m))/Albums/Tree/Sub/Deep/ && echo junk > \(q(m))/Albums/Tree/Thumbs.db \
            && echo junk > \(q(m))/Albums/Tree/Sub/._DSCN0025.jpg && cp \(q(gps))/DSCN0027.jpg \(q(m))/Albums/Emptied/
            """).ok)
        // A file manager's delete: depth first, each child through GIO, then the folder.
        let deleteTree = temp.sub("delete-tree.py")
        try """
            import sys
            from gi.repository import Gio
            def delete(f):
                if f.query_file_type(Gio.FileQueryInfoFlags.NOFOLLOW_SYMLINKS, None) == Gio.FileType.DIRECTORY:
                    for info in f.enumerate_children("standard::name", Gio.FileQueryInfoFlags.NOFOLLOW_SYMLINKS, None):
                        delete(f.get_child(info.get_name()))
                f.delete(None)
            delete(Gio.File.new_for_uri(sys.argv[1]))

            """.write(toFile: deleteTree, atomically: true, encoding: .utf8)
        let share = "smb://127.0.0.1:\(samba.port)/\(samba.share)"
        // One session bus for the whole client session (gvfsd-smb lives there). Services
        // the bus starts write to its output (gvfsd-smb's Kerberos note, the keyring's
        // variables), so the steps write what they did to a file of their own; the
        // keyring keeps its files in the test's folder.
        let steps = temp.sub("gio.steps"), home = temp.sub("gio-home")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let session = try Processes.shell("""
            HOME=\(home) XDG_CACHE_HOME=\(home)/cache XDG_RUNTIME_DIR=\(home) dbus-run-session -- sh -c '
              gio mount -a \(share) || exit 1
              gio remove \(share)/Albums/Emptied/DSCN0027.jpg && gio remove \(share)/Albums/Emptied && echo emptied-album-removed >> \(steps)
              /usr/bin/python3 \(deleteTree) \(share)/Albums/Tree && echo tree-removed >> \(steps)
              gio list \(share)/Albums >> \(steps)
            '
            """)
        let done = (try? String(contentsOfFile: steps, encoding: .utf8)) ?? ""
        XCTAssertEqual(done, "emptied-album-removed\ntree-removed\nTuscany\n", "\(session.stdout) \(session.stderr)")
        XCTAssertEqual(try Processes.shell("ls -A \(q(m))/Albums").stdout, "Tuscany\n")
        // rm in an album keeps the photo: all of them are still in the library.
        XCTAssertEqual(try Processes.shell("ls \(q(m))/'All Photos'").stdout,
                       "DSCN0010.jpg\nDSCN0012.jpg\nDSCN0021.jpg\nDSCN0025.jpg\nDSCN0027.jpg\n")
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
    }

    /// smbtorture's suites for what a file share does with files and folders, run by one
    /// smbd with the same share block against an album and against a plain directory on
    /// the library's disk: every test ends on the album as on the plain directory, but
    /// for the differences the contract makes, each of which fails on the album only.
    func testSmbtortureEndsOnAnAlbumAsOnAPlainDirectory() throws {
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: "/usr/bin/smbtorture"),
                      "smbtorture is missing: run mount-scripts/test, which installs samba-testsuite")
        let album = mount.path("Albums/Torture"), plain = temp.sub("plain-share")
        try FileManager.default.createDirectory(atPath: album, withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: false)
        let samba = try SambaServer(sharing: album, in: temp, others: [(name: "plain", path: plain)])
        defer { samba.stop() }
        let suites = ["smb2.create", "smb2.read", "smb2.rw", "smb2.getinfo", "smb2.setinfo", "smb2.delete-on-close-perms",
                      "smb2.streams", "smb2.ea", "smb2.dosmode", "smb2.mkdir", "smb2.fileid", "smb2.charset", "smb2.rename",
                      "smb2.timestamps", "smb2.lock", "smb2.sharemode", "smb2.dir", "smb2.ioctl"]
        func outcomes(_ share: String) throws -> [String: String] {
            let run = try Processes.run("smbtorture", ["//127.0.0.1/\(share)", "-p", String(samba.port), "-U%", "--fullname"] + suites,
                                        timeout: 900)
            var result: [String: String] = [:]
            for line in run.stdout.split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":"), ["success", "failure", "error", "skip"].contains(String(line[..<colon])) else { continue }
                var name = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if name.hasSuffix(" [") { name.removeLast(2) }
                result[name] = String(line[..<colon])
            }
            return result
        }
        let onAlbum = try outcomes(samba.share), onPlain = try outcomes("plain")
        XCTAssertGreaterThan(onPlain.values.filter { $0 == "success" }.count, 80, "\(onPlain)")
        // The contract's differences (PRODUCT.md section 6; docs/sharing.md): names are one
        // without case (smbd takes the name a client typed, which the mount finds, for
        // the normalized name) and without Unicode normalization (a decomposed twin is
        // the same name); times are kept from 1684 to 2255 (docs/namespace.md).
        let albumOnly = ["smb2.getinfo.normalized", "smb2.charset.Testing composite character (a umlaut)",
                         "smb2.timestamps.time_t_10000000000", "smb2.timestamps.time_t_15032385535"]
        for name in Set(onAlbum.keys).union(onPlain.keys).sorted() {
            if albumOnly.contains(name) {
                XCTAssertEqual([onAlbum[name], onPlain[name]], ["failure", "success"], name)
            } else {
                XCTAssertEqual(onAlbum[name], onPlain[name], name)
            }
        }
        XCTAssertTrue(mount.process?.isRunning == true, "the daemon is up: \(mount.log)")
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
    }

    func testNFSExportWithGanesha() throws {
        let nfs = try GaneshaServer(exporting: mount.mountpoint, in: temp)
        defer { nfs.stop() }
        let listing = try nfs.client(["nfs-ls", nfs.url("Albums/Tuscany")])
        XCTAssertEqual(listing.status, 0, listing.stderr)
        XCTAssertTrue(listing.stdout.contains("DSCN0010.jpg"), listing.stdout)
        XCTAssertTrue(try nfs.client(["nfs-ls", nfs.url("All Photos")]).stdout.contains("DSCN0012.jpg"))

        let read = temp.sub("read.jpg")
        let cat = try nfs.client(["sh", "-c", "nfs-cat '\(nfs.url("Albums/Tuscany/DSCN0010.jpg"))' > \(read)"])
        XCTAssertEqual(cat.status, 0, cat.stderr)
        XCTAssertTrue(try Processes.run("cmp", [gps + "/DSCN0010.jpg", read]).ok)

        // A photo read, then written over with another photo's bytes while the reader is
        // still open, as an editor saves in place: a new version of it. Read under NFSv3
        // and under NFSv4 (an open state: the server keeps its descriptor of the read open
        // while it opens one to write), written under NFSv3 (nfs-edit says why). The
        // server opens by handle, which the kernel does not look up again: an ESTALE for
        // that open (the thirtieth session sent a writer past cached readers, a file
        // server's too) failed the save.
        let edit = temp.sub("nfs-edit")
        let built = try Processes.run("gcc", ["-O1", "-o", edit, Samples.packageRoot + "/Tests/Clients/nfs-edit.c", "-lnfs"])
        XCTAssertTrue(built.ok, built.stderr)
        for (version, export, name, next) in [("3", nfs.mountpoint, "DSCN0010.jpg", "DSCN0025.jpg"), ("4", "/photos", "DSCN0012.jpg", "DSCN0027.jpg")] {
            let album = try XCTUnwrap(try library().album(path: ["Tuscany"]))
            let before = try XCTUnwrap(try library().member(named: name, ofAlbum: album.id)?.1)
            let saved = try nfs.client([edit, version, "127.0.0.1", export, nfs.mountpoint, "/Albums/Tuscany/" + name, gps + "/" + next])
            XCTAssertEqual(saved.status, 0, "NFSv\(version): " + saved.stderr + saved.stdout + "\nlog: " + mount.log)
            let read = temp.sub("saved-\(version).jpg")
            XCTAssertTrue(try nfs.client(["sh", "-c", "nfs-cat '\(nfs.url("Albums/Tuscany/" + name))' > \(read)"]).ok)
            XCTAssertTrue(try Processes.run("cmp", [gps + "/" + next, read]).ok, "NFSv\(version)")
            XCTAssertTrue(try Processes.run("cmp", [gps + "/" + next, mount.mountpoint + "/Albums/Tuscany/" + name]).ok)
            let after = try XCTUnwrap(try library().member(named: name, ofAlbum: album.id)?.1)
            XCTAssertEqual(after.id, before.id, "NFSv\(version): the same photo, a new version")
            XCTAssertEqual(after.sha256, Samples.expected.first { $0.name == next }?.sha256, "NFSv\(version)")
        }

        // A photo written over NFS is imported into the album.
        let copy = try nfs.client(["nfs-cp", gps + "/DSCN0021.jpg", nfs.url("Albums/Tuscany/DSCN0021.jpg")])
        XCTAssertEqual(copy.status, 0, copy.stderr + copy.stdout)
        let library = try library()
        let album = try XCTUnwrap(try library.album(path: ["Tuscany"]))
        XCTAssertEqual(try library.member(named: "DSCN0021.jpg", ofAlbum: album.id)?.1.sha256,
                       Samples.expected.first { $0.name == "DSCN0021.jpg" }?.sha256)
        let again = temp.sub("again.jpg")
        XCTAssertTrue(try nfs.client(["sh", "-c", "nfs-cat '\(nfs.url("Albums/Tuscany/DSCN0021.jpg"))' > \(again)"]).ok)
        XCTAssertTrue(try Processes.run("cmp", [gps + "/DSCN0021.jpg", again]).ok)
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
    }

    /// An NFS client opens a photo (an NFSv4 open: the server opens the file then, by its
    /// handle, and keeps it) while a local editor holds it open for writing and has
    /// written nothing yet. The editor writes part of the first page, the client reads
    /// the photo, the editor reads that page back, adds bytes at the end and closes. On
    /// a disk the two would share one file; here the client reads the version it opened,
    /// whole and at its size, before the save and after it (each reader one version), and
    /// the editor its own bytes. (Opens through the server by the same file handle read
    /// that version too while the client holds it, docs/namespace.md, "File servers";
    /// `testNFSExportWithGanesha` reads the new version once the reader has closed.)
    /// Before, the server's open shared the editor's kernel inode and its pages: its read
    /// filled the page the editor had written part of with the version's bytes, and the
    /// editor's `pread` returned them. On the default mount and without passthrough (the
    /// server's open is cached there too).
    func testAnNFSReaderOpenedBeforeAnEditorWritesLeavesTheEditorItsBytes() throws {
        let path = "/Albums/Tuscany/DSCN0010.jpg"
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0010.jpg")))
        var nfs = try GaneshaServer(exporting: mount.mountpoint, in: temp)
        defer { nfs.stop() }
        var version = original
        for kind in ["default", "nopassthrough"] {
            var target: MountedLibrary = mount
            if kind == "nopassthrough" {
                nfs.stop()
                mount.unmount()
                target = try MountedLibrary(library: lib, temp: temp, name: "mnt-nopassthrough", options: ["allow_other", "nopassthrough"])
                mount = target
                nfs = try GaneshaServer(exporting: target.mountpoint, in: temp)
            }
            let edit = Array("WRITTEN BY A LOCAL EDITOR, \(kind) mount".utf8)
            let editor = open(target.mountpoint + path, O_RDWR)
            XCTAssertGreaterThanOrEqual(editor, 0, "\(kind): open to write: \(errno)")
            var editorOpen = true
            defer { if editorOpen { close(editor) } }
            let client = try NFSHolder(nfs, paths: [path], options: ["-4", "-n"], export: "/photos", in: temp)
            defer { client.stop() }
            XCTAssertEqual(client.before.count, 1, "\(kind): \(client.before)")

            XCTAssertEqual(pwrite(editor, edit, edit.count, 3000), edit.count, "\(kind)")
            let read = client.readAgain()
            XCTAssertEqual(read.status, 0, "\(kind): \(read.lines)")
            XCTAssertEqual(read.lines.map { String($0.split(separator: " ").last ?? "") }, [String(Self.nfsHoldSum(version))],
                           "\(kind): the NFS client reads the version it opened, whole")
            var page = [UInt8](repeating: 0, count: 4096)
            XCTAssertEqual(pread(editor, &page, page.count, 0), page.count, "\(kind)")
            var edited = version
            edited.replaceSubrange(3000..<3000 + edit.count, with: edit)
            XCTAssertEqual(Data(page), Data(edited.prefix(4096)), "\(kind): the editor reads its own bytes")
            let trailer = Array("\(kind) trailer".utf8)
            XCTAssertEqual(pwrite(editor, trailer, trailer.count, off_t(edited.count)), trailer.count, "\(kind)")
            edited += trailer
            editorOpen = false
            XCTAssertEqual(close(editor), 0, "\(kind)")
            XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: target.mountpoint + path))), edited,
                           "\(kind): the editor's bytes saved")

            let after = client.readAgain()
            XCTAssertEqual(after.status, 0, "\(kind): \(after.lines)")
            XCTAssertEqual(after.lines.map { $0.split(separator: " ").suffix(2).joined(separator: " ") },
                           ["\(version.count) \(Self.nfsHoldSum(version))"],
                           "\(kind): after the save, the NFS client's open reads the version it opened, whole, at its size")
            version = edited
        }
        let photo = try XCTUnwrap(try library().member(named: "DSCN0010.jpg", ofAlbum: XCTUnwrap(try library().album(path: ["Tuscany"])).id)?.1)
        let versions = try library().versions(of: photo.id)
        XCTAssertEqual(versions.map(\.size), [original.count, original.count + 15, version.count].map(Int64.init),
                       "each save a version: \(versions)")
    }

    /// nfs-hold's sum of a file's bytes.
    static func nfsHoldSum(_ bytes: [UInt8]) -> UInt64 {
        bytes.reduce(UInt64(0)) { $0 &* 31 &+ UInt64($1) }
    }

    /// NFS clients keep their file handles across a daemon restart, even when the new
    /// mount gets another device number (nfs-ganesha names the filesystem in its handles
    /// by it, unless told otherwise: `fsid_type` in mount-scripts/sharing).
    func testNFSFileHandlesSurviveADaemonRestart() throws {
        let nfs = try GaneshaServer(exporting: mount.mountpoint, in: temp)
        defer { nfs.stop() }
        // A client opens two files (one photo seen in two places) and holds the handles.
        let holder = try NFSHolder(nfs, paths: ["/Albums/Tuscany/DSCN0010.jpg", "/All Photos/DSCN0010.jpg", "/Albums/Tuscany/DSCN0012.jpg"],
                                   in: temp)
        defer { holder.stop() }
        let before = holder.before
        XCTAssertEqual(before.count, 3, before.joined(separator: "\n"))

        // The daemon dies and comes back; ganesha, which held the old mount, restarts too.
        // Meanwhile another FUSE mount takes the device number the old mount had, as any
        // mount made in between would: the new mount has another one.
        var st = stat()
        XCTAssertEqual(stat(mount.mountpoint, &st), 0)
        let deviceBefore = st.st_dev
        nfs.stopGanesha()
        mount.crash()
        let otherLibrary = temp.sub("other-lib")
        XCTAssertTrue(try Processes.albumfs("init", otherLibrary).ok)
        let other = try MountedLibrary(library: otherLibrary, temp: temp, name: "other-mnt")
        defer { other.unmount() }
        try mount.start()
        XCTAssertEqual(stat(mount.mountpoint, &st), 0)
        XCTAssertNotEqual(st.st_dev, deviceBefore, "the restarted mount has the same device number: the case is not tested")
        try nfs.start()
        let after = holder.readAgain()
        XCTAssertEqual(after.status, 0, after.lines.joined(separator: "\n"))
        XCTAssertEqual(after.lines, before, "same inode numbers and bytes through the old handles")
        let inodes = Set(before.prefix(2).map(NFSHolder.inode))
        XCTAssertEqual(inodes.count, 1, "one photo, one inode, wherever it shows")
    }
}
