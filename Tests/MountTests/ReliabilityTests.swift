import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// The defects of issue 12, each on a real mount: no byte lost when an import fails, a
/// close that returns 0 is durable, slow NFS writers are imported once and whole, damaged
/// originals heal, decoders that fail for a moment are tried again, a crashing parser
/// costs one file, listings never wait for decoders, numbers handed out stay true, and
/// names in another case are not kept after the file goes.
final class ReliabilityTests: MountTestCase {
    override var folderPrefix: String { "albumfs-reliability" }

    func start(_ environment: [String: String] = [:]) throws {
        try mountLibrary(environment: environment)
        try sh("mkdir Albums/A")
    }

    /// A copy of a sample with other bytes (a JPEG comment carrying `tag`).
    func variant(_ name: String, _ tag: String) throws -> String {
        let path = temp.sub("\(tag)-\(name)")
        try MediaFactory.variant(of: gps + "/" + name, at: path, tag: tag)
        return path
    }

    func sha256(_ path: String) throws -> String { try SystemCalls.open(path, flags: O_RDONLY).sha256() }

    // MARK: data

    /// An import that fails at a rename or a close (here: the blob's folder cannot be
    /// made, as an I/O error would) loses nothing: the file is exactly as it went in.
    func testAnImportThatFailsLosesNothing() throws {
        try start()
        let photo = try variant("DSCN0021.jpg", "blocked")
        let prefix = String(try sha256(photo).prefix(2))
        // A file where the blob's folder would go.
        XCTAssertTrue(FileManager.default.createFile(atPath: "\(lib!)/originals/\(prefix)", contents: Data("x".utf8)))
        try sh("cp \(q(photo)) Albums/A/.x.tmp")
        let renamed = try sh("mv Albums/A/.x.tmp Albums/A/x.jpg", status: 1)
        XCTAssertTrue(renamed.stderr.contains("Not a directory"), renamed.stderr)
        try sh("cmp \(q(photo)) Albums/A/.x.tmp")
        XCTAssertFalse(FileManager.default.fileExists(atPath: m + "/Albums/A/x.jpg"))
        let closed = try sh("cp \(q(photo)) Albums/A/y.jpg", status: 1)
        XCTAssertTrue(closed.stderr.contains("Not a directory"), closed.stderr)
        try sh("cmp \(q(photo)) Albums/A/y.jpg")
        XCTAssertEqual(try library().stats().assets, 0, "nothing half-imported")
        // Once the obstacle is gone, both become the photo they are.
        unlink("\(lib!)/originals/\(prefix)")
        try sh("mv Albums/A/.x.tmp Albums/A/x.jpg && cmp \(q(photo)) Albums/A/x.jpg")
        XCTAssertEqual(try sh("ls 'All Photos'").stdout, "x.jpg\n")
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0)
    }

    /// close() returning 0 means durable, whatever other handles are open; and a refusal
    /// is that close's.
    func testCloseIsDurableWithOtherHandlesOpen() throws {
        try start()
        try sh("cp \(q(gps))/DSCN0010.jpg Albums/A/P.jpg")
        let script = """
            import errno, os, sqlite3, sys
            lib, photo, text = sys.argv[1], sys.argv[2], sys.argv[3]
            def assets():
                db = sqlite3.connect('file:' + lib + '/library.db?mode=ro', uri=True)
                n = db.execute('select count(*) from assets').fetchone()[0]
                db.close()
                return n
            w = open('Albums/A/new.jpg', 'wb')
            r = open('Albums/A/new.jpg', 'rb')
            w.write(open(photo, 'rb').read())
            w.close()
            assert assets() == 2, 'imported at the close, with a reader still open'
            r.close()
            w = open('Albums/A/P.jpg', 'r+b')
            r = open('Albums/A/P.jpg', 'rb')
            w.truncate(0)
            w.write(open(text, 'rb').read())
            try:
                w.close()
                sys.exit('the close of text written into a photo returned 0')
            except OSError as e:
                assert e.errno == errno.EINVAL, e
            r.close()
            """
        let result = try Processes.run("python3", ["-c", script, lib, gps + "/DSCN0012.jpg", Samples.directory + "/extras/notes.txt"],
                                       currentDirectory: m)
        XCTAssertTrue(result.ok, result.stderr)
        try sh("cmp \(q(gps))/DSCN0010.jpg Albums/A/P.jpg")
    }

    /// A plain file is as durable as a photo: at its close (a hidden name that can never
    /// be a photo, a visible one that is no photo) and at an mknod, its bytes, its name in
    /// `plain/` and its row (the database's log) are on disk before the call returns (the
    /// daemon's own syncs, traced, started before the caller saw the return); and a file
    /// fsynced and still open survives a crash. A review found a hidden file's close
    /// syncing nothing, every plain file's row committed without waiting for the disk,
    /// and a file fsynced before its first close thrown away at the next start. A photo
    /// the same: its bytes and their name in `originals/` on disk before its row, and its
    /// row before the close returns.
    func testAPlainFileAndAPhotoAreDurableAtTheirCloseAndAnMknodAndAnFsync() throws {
        try start()
        let pid = try XCTUnwrap(mount.pid)
        let traceFile = temp.sub("syncs")
        let tracer = Process()
        tracer.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        tracer.arguments = ["-f", "-qq", "-y", "-ttt", "-e", "trace=fsync,fdatasync", "-o", traceFile, "-p", String(pid)]
        try tracer.run()
        defer { if tracer.isRunning { tracer.interrupt(); tracer.waitUntilExit() } }
        // Every thread of the daemon is traced before anything is done.
        let traced = { () -> Bool in
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            return !tasks.isEmpty && tasks.allSatisfy { task in
                let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
                return status.split(separator: "\n").contains { $0.hasPrefix("TracerPid:") && !$0.hasSuffix("\t0") }
            }
        }
        var tries = 0
        while !traced() && tries < 200 {
            usleep(20_000)
            tries += 1
        }
        XCTAssertTrue(traced(), "strace attached to every thread")
        let script = """
            import os, stat, time
            def close_of(name, text):
                with open(name, 'w') as f: f.write(text)
                return time.time()
            print('hidden', close_of('Albums/A/.draft.swp', 'a draft'))
            print('visible', close_of('Albums/A/notes.txt', 'some notes'))
            os.mknod('Albums/A/made', 0o644 | stat.S_IFREG)
            print('mknod', time.time())
            with open('Albums/A/photo.jpg', 'wb') as f: f.write(open('\(gps)/DSCN0025.jpg', 'rb').read())
            print('photo', time.time())
            """
        let ran = try Processes.run("python3", ["-c", script], currentDirectory: m)
        XCTAssertTrue(ran.ok, ran.stderr)
        tracer.interrupt()
        tracer.waitUntilExit()
        var returned: [String: Double] = [:]
        for line in ran.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ")
            returned[String(fields[0])] = Double(fields.last!)
        }
        // (time, path) of each sync the daemon made.
        let syncs: [(Double, String)] = try String(contentsOfFile: traceFile, encoding: .utf8).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3, let time = Double(fields[1]), let open = fields[2].firstIndex(of: "<"),
                  let close = fields[2][open...].firstIndex(of: ">") else { return nil }
            return (time, String(fields[2][fields[2].index(after: open)..<close]))
        }
        let plainFolder = lib + "/plain", log = lib + "/library.db-wal"
        func ino(_ name: String) throws -> String { try sh("stat -c %i \(q("Albums/A/" + name))").stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
        var previous = 0.0
        for (name, step) in [(".draft.swp", "hidden"), ("notes.txt", "visible"), ("made", "mknod")] {
            let done = try XCTUnwrap(returned[step], ran.stdout)
            let mine = syncs.filter { $0.0 > previous && $0.0 < done }
            let bytes = "\(plainFolder)/\(try ino(name))"
            if step != "mknod" {
                XCTAssertTrue(mine.contains { $0.1 == bytes }, "\(name): its bytes synced before the return; \(syncs)")
            }
            XCTAssertTrue(mine.contains { $0.1 == plainFolder }, "\(name): plain/ synced before the return; \(syncs)")
            let lastLog = try XCTUnwrap(mine.lastIndex { $0.1 == log }, "\(name): its row synced before the return; \(syncs)")
            XCTAssertTrue(mine[..<lastLog].contains { $0.1 == plainFolder }, "\(name): the row after the bytes' name; \(syncs)")
            previous = done
        }
        // The photo: its bytes (through the descriptor its create opened in plain/, whose
        // bytes are linked into originals/ under their hash), then that folder, then its row.
        let done = try XCTUnwrap(returned["photo"], ran.stdout)
        let mine = syncs.filter { $0.0 > previous && $0.0 < done }
        let hash = try sha256(gps + "/DSCN0025.jpg")
        let blobFolder = "\(lib!)/originals/\(hash.prefix(2))", blob = "\(blobFolder)/\(hash)"
        let lastLog = try XCTUnwrap(mine.lastIndex { $0.1 == log }, "the photo's row synced before the return; \(mine)")
        let bytes = [blob, "\(plainFolder)/\(try ino("photo.jpg"))"]
        let bytesSynced = try XCTUnwrap(mine[..<lastLog].firstIndex { bytes.contains($0.1) }, "the photo's bytes synced before its row; \(mine)")
        XCTAssertTrue(mine[bytesSynced..<lastLog].contains { $0.1 == blobFolder }, "\(blobFolder) synced after the bytes, before the row; \(mine)")

        // fsynced, not closed, then a crash: the file is there, whole, after the restart.
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        writer.arguments = ["-c", """
            import os, sys, time
            f = open('Albums/A/kept.txt', 'w'); f.write('fsynced words'); f.flush(); os.fsync(f.fileno())
            print('synced', flush=True); time.sleep(60)
            """]
        writer.currentDirectoryURL = URL(fileURLWithPath: m)
        let out = Pipe()
        writer.standardOutput = out
        try writer.run()
        defer { if writer.isRunning { kill(writer.processIdentifier, SIGKILL); writer.waitUntilExit() } }
        var said = ""
        while !said.hasSuffix("\n") {
            let more = out.fileHandleForReading.availableData
            if more.isEmpty { break }
            said += String(decoding: more, as: UTF8.self)
        }
        XCTAssertEqual(said, "synced\n")
        mount.crash()
        kill(writer.processIdentifier, SIGKILL)
        writer.waitUntilExit()
        try mount.start()
        XCTAssertEqual(try sh("cat Albums/A/kept.txt").stdout, "fsynced words")
    }

    /// A plain file whose bytes file went missing fails every lookup (EIO, "run albumfs
    /// check"), so its name cannot be removed through the mount: `check` names it (a
    /// review found it saying "ok") and `check --repair` removes the name.
    func testAPlainFileWhoseBytesAreGoneIsNamedAndRemovedByCheck() throws {
        try start()
        try sh("echo words > Albums/A/notes.txt")
        let ino = try sh("stat -c %i Albums/A/notes.txt").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        mount.unmount()
        XCTAssertEqual(unlink("\(lib!)/plain/\(ino)"), 0)
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 1, check.stdout)
        XCTAssertTrue(check.stdout.contains("problem: plain file notes.txt (\(ino)): its bytes"), check.stdout)
        let repair = try Processes.albumfs("check", "--repair", lib)
        XCTAssertEqual(repair.status, 0, repair.stdout)
        XCTAssertTrue(repair.stdout.contains("removed plain file notes.txt"), repair.stdout)
        try mount.start()
        XCTAssertEqual(try sh("ls -A Albums/A").stdout, "")
        XCTAssertEqual(try sh("echo again > Albums/A/notes.txt && cat Albums/A/notes.txt").stdout, "again\n")
    }

    /// A plain file's count of its names (hard links) that disagrees with its names, and a
    /// name whose file is gone (rows edited by hand, or a library restored in part): named
    /// by `check`, set right by `check --repair`.
    func testAPlainFilesCountOfNamesIsCheckedAndRepaired() throws {
        try start()
        try sh("echo words > Albums/A/notes.txt && ln Albums/A/notes.txt Albums/A/again.txt")
        let ino = try sh("stat -c %i Albums/A/notes.txt").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let folder = try sh("stat -c %i Albums/A").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        mount.unmount()
        try Processes.shell("""
            sqlite3 \(q(lib + "/library.db")) "UPDATE plain_files SET links = 5 WHERE id = \(ino); \
            INSERT INTO plain_files(id, dir_ino, name, name_key, mode, mtime_ns, changed_ns, link_of) VALUES (99999999, \(folder), 'ghost.txt', 'ghost.txt', 0, 0, 0, 88888888)"
            """)
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 1, check.stdout)
        XCTAssertTrue(check.stdout.contains("plain file \(ino): link count 5, but 2 names"), check.stdout)
        XCTAssertTrue(check.stdout.contains("the name ghost.txt (99999999) is a link to a plain file that is gone"), check.stdout)
        let repair = try Processes.albumfs("check", "--repair", lib)
        XCTAssertEqual(repair.status, 0, repair.stdout)
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
        try mount.start()
        XCTAssertEqual(try sh("ls -A Albums/A && stat -c %h Albums/A/notes.txt && cat Albums/A/again.txt").stdout, "again.txt\nnotes.txt\n2\nwords\n")
    }

    /// A photo whose original is missing, renamed over another photo: EIO, as its reads
    /// are, and the other photo unchanged (a review found EAGAIN, "try again", which
    /// cannot help with one host).
    func testAPhotoWhoseOriginalIsMissingRenamedOverAnotherIsAnIOError() throws {
        try start()
        try sh("cp \(q(gps))/DSCN0010.jpg \(q(gps))/DSCN0012.jpg Albums/A/")
        let library = try library()
        XCTAssertEqual(unlink(library.files.absolute(.blob(try XCTUnwrap(try library.asset(named: "DSCN0010.jpg")).sha256))), 0)
        let moved = try sh("mv Albums/A/DSCN0010.jpg Albums/A/DSCN0012.jpg", status: 1)
        XCTAssertTrue(moved.stderr.contains("Input/output error"), moved.stderr)
        try sh("cmp \(q(gps))/DSCN0012.jpg Albums/A/DSCN0012.jpg")
        XCTAssertTrue(mount.log.contains("is missing from originals/; run albumfs check"), mount.log)
    }

    /// A damaged original is healed by good bytes with its hash: a copy into the mount, or
    /// `albumfs import`. What `check` finds and cannot see cheaply is marked by
    /// `check --repair`, which says how to heal it.
    func testADamagedOriginalIsHealedByItsBytes() throws {
        try start()
        try sh("cp \(q(gps))/DSCN0010.jpg \(q(gps))/DSCN0012.jpg Albums/A/")
        let library = try library()
        func blob(_ name: String) throws -> String { library.files.absolute(.blob(try XCTUnwrap(try library.asset(named: name)).sha256)) }
        // Cut short: reads fail at once, until the intact file is copied in again.
        let cut = try blob("DSCN0010.jpg")
        chmod(cut, 0o600)
        XCTAssertEqual(truncate(cut, 1000), 0)
        try sh("cat Albums/A/DSCN0010.jpg > /dev/null", status: 1)
        try sh("mkdir Albums/B && cp \(q(gps))/DSCN0010.jpg Albums/B/")
        try sh("cmp \(q(gps))/DSCN0010.jpg Albums/A/DSCN0010.jpg")
        XCTAssertTrue(mount.log.contains("repaired the original"), mount.log)
        // Missing altogether: copied in again, the file is its original again (a review
        // found every read failing after that, and check saying all was well).
        let missing = try blob("DSCN0010.jpg")
        XCTAssertEqual(unlink(missing), 0)
        try sh("cat Albums/A/DSCN0010.jpg > /dev/null", status: 1)
        try sh("mkdir Albums/C && cp \(q(gps))/DSCN0010.jpg Albums/C/")
        try sh("cmp \(q(gps))/DSCN0010.jpg Albums/A/DSCN0010.jpg && cmp \(q(gps))/DSCN0010.jpg Albums/C/DSCN0010.jpg")
        // And copied over the photo itself, the same bytes as its version.
        XCTAssertEqual(unlink(try blob("DSCN0010.jpg")), 0)
        try sh("cat Albums/A/DSCN0010.jpg > /dev/null", status: 1)
        try sh("cp \(q(gps))/DSCN0010.jpg Albums/A/DSCN0010.jpg && cmp \(q(gps))/DSCN0010.jpg Albums/A/DSCN0010.jpg")
        XCTAssertEqual(try library.versions(of: try XCTUnwrap(try library.asset(named: "DSCN0010.jpg")).id).count, 1)
        // Altered with its size and mtime kept: only check sees it, and --repair marks it.
        let altered = try blob("DSCN0012.jpg")
        let stamp = try XCTUnwrap(try SystemCalls.status(altered)).modificationNanoseconds
        chmod(altered, 0o600)
        let file = try XCTUnwrap(FileHandle(forUpdatingAtPath: altered))
        try file.seek(toOffset: 3000)
        file.write(Data([0x55, 0x55]))
        try file.close()
        try SystemCalls.setModificationTime(path: altered, nanoseconds: stamp)
        mount.unmount()
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 1)
        XCTAssertTrue(check.stdout.contains("DSCN0012.jpg") && check.stdout.contains("copy the intact file"), check.stdout)
        let repair = try Processes.albumfs("check", lib, "--repair")
        XCTAssertTrue(repair.stdout.contains("marked 1 damaged original"), repair.stdout)
        XCTAssertEqual(try Processes.albumfs("import", lib, gps + "/DSCN0012.jpg").status, 0)
        XCTAssertEqual(try Processes.albumfs("check", lib).status, 0, "healed")
        try mount.start()
        try sh("cmp \(q(gps))/DSCN0012.jpg Albums/A/DSCN0012.jpg")
    }

    /// The same new bytes closed in two folders at the same moment (a sync tool copying
    /// in parallel): one photo in both albums, readable in each, and nothing for check
    /// to find. (The second close waits for the first to land, `BlobsInFlight`, rather
    /// than taking its blob, not yet named by a row, for a crash's leftover.)
    func testTheSameNewBytesClosedTwiceAtOnce() throws {
        try start()
        try sh("mkdir Albums/B")
        for round in 0..<8 {
            let photo = try variant("DSCN0012.jpg", "twice\(round)")
            try sh("{ cp \(q(photo)) Albums/A/P\(round).jpg & cp \(q(photo)) Albums/B/P\(round).jpg & wait; }")
            try sh("cmp \(q(photo)) Albums/A/P\(round).jpg && cmp \(q(photo)) Albums/B/P\(round).jpg")
        }
        let library = try library()
        XCTAssertEqual(try library.stats().assets, 8, "one asset for each pair of copies")
        mount.unmount()
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 0, check.stdout)
    }

    /// A blob file that no row names (what a crash leaves when it comes after a close
    /// named the bytes by their hash and before they were synced: short, or empty) is
    /// never taken for the bytes of its name: the same photo copied in replaces it.
    func testABlobFileThatNoRowNamesIsNeverTrusted() throws {
        let library = try Library.open(at: lib, access: .reader)
        let orphan = library.files.absolute(.blob(try sha256(gps + "/DSCN0010.jpg")))
        try FileManager.default.createDirectory(atPath: (orphan as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let source = try Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0010.jpg"))
        try source.prefix(4096).write(to: URL(fileURLWithPath: orphan))
        try start()
        try sh("cp \(q(gps))/DSCN0010.jpg Albums/A/ && cmp \(q(gps))/DSCN0010.jpg Albums/A/DSCN0010.jpg")
        mount.unmount()
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: orphan)), source)
        // Read-only, as every blob is (a review found the bytes that replaced an orphan
        // left writable).
        XCTAssertEqual(try XCTUnwrap(try SystemCalls.status(orphan)).st_mode & 0o777, 0o400)
        // A healing's second name that a crash left: a note of check, removed by gc.
        let leftover = (orphan as NSString).deletingLastPathComponent + "/.\((orphan as NSString).lastPathComponent).heal"
        XCTAssertEqual(link(orphan, leftover), 0)
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 0, check.stdout)
        XCTAssertTrue(check.stdout.contains(".heal: healing bytes a crash left"), check.stdout)
        XCTAssertTrue(try Processes.albumfs("gc", lib).ok)
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: orphan)), source)
    }

    /// Numbers handed out stay true: a file whose bytes were a photo the library had keeps
    /// its number for whoever created it (an NFS client's handle), and the name finds the
    /// photo.
    func testAFileThatWasADuplicateKeepsItsNumberForItsHandle() throws {
        try start()
        try sh("cp \(q(gps))/DSCN0010.jpg Albums/A/P.jpg && mkdir Albums/B")
        let photo = try sh("stat -c %i Albums/A/P.jpg").stdout
        let script = """
            import os, sys
            fd = os.open('Albums/B/again.jpg', os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            held = os.open('Albums/B/again.jpg', os.O_RDONLY)
            mine = os.fstat(fd).st_ino
            os.write(fd, open(sys.argv[1], 'rb').read())
            os.close(fd)
            print(mine, os.fstat(held).st_ino)
            """
        let result = try Processes.run("python3", ["-c", script, gps + "/DSCN0010.jpg"], currentDirectory: m)
        XCTAssertTrue(result.ok, result.stderr)
        XCTAssertEqual(try library().stats().assets, 1, "the same photo, now in B too")
        let numbers = result.stdout.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        XCTAssertEqual(numbers.count, 2)
        XCTAssertEqual(numbers.first, numbers.last, "a handle held since the create keeps its number")
        XCTAssertEqual(try sh("ls -i Albums/B | cut -d' ' -f1").stdout, photo, "the listing shows the photo's number")
    }

    /// NFS writers that write slowly (COMMIT after each part, pauses longer than the
    /// settle time): a TIFF and a Matroska video are imported once, whole; and a file
    /// whose bytes are a photo the library has keeps its handle's number.
    func testSlowNFSWritersAreImportedOnceWhole() throws {
        try start()
        let client = temp.sub("nfs-write")
        let built = try Processes.run("gcc", ["-O1", "-o", client, Samples.packageRoot + "/Tests/Clients/nfs-write.c", "-lnfs"])
        XCTAssertTrue(built.ok, built.stderr)
        let tiff = temp.sub("slow.tif"), mkv = temp.sub("slow.mkv")
        XCTAssertTrue(try Processes.run("vips", ["copy", gps + "/DSCN0010.jpg", tiff]).ok)
        XCTAssertTrue(try Processes.run("ffmpeg", ["-v", "error", "-i", Samples.directory + "/videos/clip-2021-03-05.mp4", "-c", "copy", mkv]).ok)
        try sh("cp \(q(gps))/DSCN0012.jpg Albums/A/")
        let nfs = try GaneshaServer(exporting: m, in: temp)
        defer { nfs.stop() }
        func write(_ source: String, as path: String, parts: Int, pauseMs: Int) throws -> [String] {
            let output = temp.sub("nfs-write.out")
            FileManager.default.createFile(atPath: output, contents: nil)
            let writer = Process()
            writer.executableURL = URL(fileURLWithPath: try Processes.which("nsenter"))
            writer.arguments = ["--net=/proc/\(nfs.namespacePID)/ns/net", client, "127.0.0.1", m, path, source,
                                String(parts), String(pauseMs)]
            let input = Pipe()
            writer.standardInput = input
            writer.standardOutput = FileHandle(forWritingAtPath: output)
            writer.standardError = FileHandle(forWritingAtPath: output)
            try writer.run()
            func lines() -> [String] { ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
            let deadline = Date().addingTimeInterval(60)
            while !lines().contains(where: { $0.hasPrefix("WRITTEN") }) && writer.isRunning && Date() < deadline { usleep(100_000) }
            // Quiet for longer than the settle time, holding the file open.
            sleep(3)
            input.fileHandleForWriting.write(Data("go\n".utf8))
            writer.waitUntilExit()
            XCTAssertEqual(writer.terminationStatus, 0, lines().joined(separator: "\n"))
            return lines()
        }
        for (source, name) in [(tiff, "slow.tif"), (mkv, "slow.mkv")] {
            _ = try write(source, as: "/Albums/A/\(name)", parts: 4, pauseMs: 3500)
            let library = try library()
            let asset = try XCTUnwrap(try library.member(named: name, ofAlbum: try XCTUnwrap(try library.album(path: ["A"])).id)?.1, name)
            XCTAssertEqual(asset.sha256, try sha256(source), "\(name): whole")
            XCTAssertEqual(try library.versions(of: asset.id).count, 1, "\(name): imported once")
        }
        let lines = try write(gps + "/DSCN0012.jpg", as: "/Albums/A/copy-of-12.jpg", parts: 1, pauseMs: 0)
        let written = lines.first { $0.hasPrefix("WRITTEN") }?.split(separator: " ").last
        let after = lines.first { $0.hasPrefix("AFTER") }?.split(separator: " ")
        XCTAssertNotNil(written)
        XCTAssertEqual(after?[1], written, "the handle's number is the same after the import: \(lines)")
        XCTAssertEqual(after.map { String($0[2]) }, String(try XCTUnwrap(try SystemCalls.status(gps + "/DSCN0012.jpg")).st_size))
        XCTAssertTrue(try Processes.albumfs("check", lib).ok)
    }

    // MARK: robustness

    /// `script` run by sh while the test goes on, its output into `label.out`.
    func inBackground(_ label: String, _ script: String) throws -> (Process, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        let out = temp.sub(label + ".out")
        FileManager.default.createFile(atPath: out, contents: nil)
        process.arguments = ["-c", script]
        process.standardOutput = FileHandle(forWritingAtPath: out)
        try process.run()
        return (process, out)
    }

    /// A file that makes a metadata parser die costs that one file's metadata: it is kept
    /// (a photo without metadata, and the log says so), and the mount stays up. Its
    /// decoder dies too: it gets no thumbnail entry and a log line (PRODUCT.md section 2),
    /// and listings of the album and of its thumbnails go on.
    func testACrashingParserCostsOneFile() throws {
        try start(["ALBUMFS_TEST_CRASH_MARKER": "marker-crash-me"])
        let crafted = try variant("DSCN0010.jpg", "marker-crash-me")
        try sh("cp \(q(crafted)) Albums/A/crafted.jpg && cp \(q(gps))/DSCN0012.jpg Albums/A/")
        XCTAssertTrue(mount.process?.isRunning == true)
        try sh("cmp \(q(crafted)) Albums/A/crafted.jpg")
        XCTAssertTrue(mount.log.contains("crafted.jpg: its metadata could not be read"), mount.log)
        try sh("getfattr -n user.albumfs.width Albums/A/crafted.jpg", status: 1)
        XCTAssertEqual(try sh("getfattr --only-values -n user.albumfs.width Albums/A/DSCN0012.jpg").stdout, "640")

        let failed = try sh("stat Albums/A/.thumbnails/crafted.jpg.jpg", status: 1)
        XCTAssertTrue(failed.stderr.contains("No such file"), failed.stderr)
        XCTAssertTrue(mount.log.contains("no thumbnail for crafted.jpg"), mount.log)
        XCTAssertEqual(try sh("ls Albums/A/.thumbnails").stdout, "DSCN0012.jpg.jpg\n")
        XCTAssertEqual(Set(try sh("ls Albums/A").stdout.split(separator: "\n")), ["DSCN0012.jpg", "crafted.jpg"])
        try sh("ls -l Albums/A > /dev/null")
        XCTAssertTrue(mount.process?.isRunning == true)
    }

    /// A thumbnail that failed for a moment (the decoder out of time) is not marked for
    /// good: after a remount with decoders that work, it is made.
    func testThumbnailsThatFailForAMomentAreTriedAgain() throws {
        try start(["ALBUMFS_TEST_HANG_MARKER": "marker-hang-me", "ALBUMFS_TEST_DECODER_SECONDS": "2"])
        let slow = try variant("DSCN0010.jpg", "marker-hang-me")
        try sh("cp \(q(slow)) Albums/A/slow.jpg")
        // Not made for now: not there to a lookup by name (so that a file may be created
        // under that name: a card's own .thumbnails/ copied in).
        XCTAssertTrue(try sh("stat Albums/A/.thumbnails/slow.jpg.jpg", status: 1).stderr.contains("No such file"))
        try sh("echo mine > Albums/A/.thumbnails/slow.jpg.jpg && cat Albums/A/.thumbnails/slow.jpg.jpg")
        try sh("rm Albums/A/.thumbnails/slow.jpg.jpg")
        XCTAssertTrue(mount.log.contains("it is tried again on the next look"), mount.log)
        mount.unmount()
        mount = try MountedLibrary(library: lib, temp: temp)
        try sh("stat Albums/A/.thumbnails/slow.jpg.jpg > /dev/null")
    }

    /// Handles of thumbnails that an NFS server holds, opened again after a restart while
    /// the thumbnails are made anew by decoders that hang: the kernel looks "." up in each
    /// handle's node, and those lookups wait off libfuse's threads (more of them than
    /// libfuse has), so that listings and stats are answered meanwhile (a review found
    /// every libfuse thread held). The kernel answers ESTALE for any failed lookup of a
    /// handle; a stat of a thumbnail whose decoder failed for now is EIO
    /// (`testThumbnailsThatFailForAMomentAreTriedAgain`).
    func testThumbnailHandlesOpenedWhileDecodersHangHoldNothingUp() throws {
        try start()
        let client = temp.sub("handles")
        let built = try Processes.run("gcc", ["-O1", "-o", client, Samples.packageRoot + "/Tests/Clients/handles.c"])
        XCTAssertTrue(built.ok, built.stderr)
        let count = 17  // libfuse's threads are 16
        for i in 0..<count {
            try sh("cp \(q(try variant("DSCN0010.jpg", "marker-hang-me-\(i)"))) Albums/A/slow\(i).jpg")
        }
        let handles = temp.sub("handles.txt")
        try sh("\(q(client)) save \(q(handles)) " + (0..<count).map { "Albums/A/.thumbnails/slow\($0).jpg.jpg" }.joined(separator: " "))
        mount.unmount()
        try sh("rm -rf \(q(lib))/thumbnails/*", in: lib)
        try mountLibrary(environment: ["ALBUMFS_TEST_HANG_MARKER": "marker-hang-me", "ALBUMFS_TEST_DECODER_SECONDS": "4"])
        let (opens, out) = try inBackground("opens", "for i in $(seq 0 \(count - 1)); do \(q(client)) open \(q(m)) \(q(handles)) $i & done; wait")
        defer { if opens.isRunning { opens.terminate() } }
        sleep(1)
        let started = Date()
        try sh("ls -l Albums/A > /dev/null && stat Albums/A/slow0.jpg > /dev/null && ls -l 'All Photos' > /dev/null")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2.5, "the mount answers while the handles' thumbnails wait (held, it waited 3 s and more)")
        opens.waitUntilExit()
        let outcomes = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(outcomes.count, count)
        XCTAssertFalse(outcomes.contains("ok"), "every decoder hung and ran out of time: \(outcomes)")
        mount.mayHoldAtEnd = [lib + "/originals/"]
    }

    /// Listing a folder, or its `.thumbnails/`, never waits for a decoder; stats of
    /// thumbnails wait for theirs, as many at once as programs ask (none is told to try
    /// again), and everything else is answered meanwhile: they wait off libfuse's threads.
    func testListingsNeverWaitForDecoders() throws {
        try start(["ALBUMFS_TEST_HANG_MARKER": "marker-hang-me", "ALBUMFS_TEST_DECODER_SECONDS": "6"])
        try sh("cp \(q(gps))/DSCN0012.jpg Albums/A/ready.jpg && stat Albums/A/.thumbnails/ready.jpg.jpg > /dev/null")
        for i in 0..<8 {
            try sh("cp \(q(try variant("DSCN0010.jpg", "marker-hang-me-\(i)"))) Albums/A/slow\(i).jpg")
        }
        var started = Date()
        try sh("ls -l Albums/A > /dev/null && ls Albums/A/.thumbnails > /dev/null")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "listings do not wait for thumbnails")
        // Eight stats of thumbnails at once (more than libfuse's idle threads): all wait.
        let (waits, out) = try inBackground("waits", "cd \(q(m)) && for i in 0 1 2 3 4 5 6 7; do (stat Albums/A/.thumbnails/slow$i.jpg.jpg > /dev/null 2>&1; echo $?) & done; wait")
        sleep(2)
        started = Date()
        try sh("ls -l Albums 'All Photos' > /dev/null && cat Albums/A/slow0.jpg > /dev/null")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "the mount answers while decoders hang")
        // Every thread that waits for thumbnails is taken: what needs no decoder (a made
        // thumbnail, the folder itself) is answered at once, not in line behind them.
        started = Date()
        try sh("stat Albums/A/.thumbnails Albums/A/.thumbnails/Ready.JPG.jpg > /dev/null && cat Albums/A/.thumbnails/READY.jpg.jpg > /dev/null")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "a made thumbnail waits for no other")
        waits.waitUntilExit()
        XCTAssertFalse(mount.log.contains("try again"), mount.log)
        // Each hung decoder ran out of time: each stat failed with the thumbnail, none early.
        XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").sorted(), Array(repeating: "1", count: 8))
        // The decoders hang on purpose, and a hanging one holds the blob it decodes.
        mount.mayHoldAtEnd = [lib + "/originals/"]
    }

    /// A name looked up in another case than the file has is not kept by the kernel: once
    /// the file goes, that spelling is gone too.
    func testANameInAnotherCaseGoesWithTheFile() throws {
        try start()
        try sh("cp \(q(gps))/DSCN0010.jpg Albums/A/")
        try sh("stat Albums/A/dscn0010.JPG > /dev/null")
        try sh("rm Albums/A/DSCN0010.jpg")
        try sh("stat Albums/A/dscn0010.JPG", status: 1)
    }

    // MARK: the suite itself

    /// The descriptor-leak check every mount test runs at unmount (MountedLibrary.unmount)
    /// sees a file the daemon holds: a plain file open in a program, and a photo being
    /// saved; and sees nothing once they are closed.
    func testTheLeakCheckSeesHeldFiles() throws {
        try start()
        try sh("cp \(q(gps))/DSCN0010.jpg Albums/A/")
        // Its thumbnail made now: made ahead in the background instead (two seconds after
        // the import), its decoding held the photo's blob open as well, a third file, when
        // a decoder was slow to start (seen once in a CI-like run).
        try sh("cat Albums/A/.thumbnails/DSCN0010.jpg.jpg > /dev/null")
        let pid = try XCTUnwrap(mount.pid)
        let notes = open(mount.path("Albums/A/notes.txt"), O_WRONLY | O_CREAT, 0o644)
        let photo = open(mount.path("Albums/A/DSCN0010.jpg"), O_WRONLY)
        XCTAssertTrue(notes >= 0 && photo >= 0)
        XCTAssertEqual(write(notes, "notes", 5), 5)
        var first: UInt8 = 0xFF  // what the photo's first byte is: a save of the same bytes
        XCTAssertEqual(pwrite(photo, &first, 1, 0), 1)
        let held = mount.heldFiles(pid: pid)
        XCTAssertEqual(held.count, 2, "\(held)")
        XCTAssertTrue(held.contains { $0.contains("/lib/plain/") }, "\(held)")
        XCTAssertEqual(close(notes), 0)
        XCTAssertEqual(close(photo), 0)
        XCTAssertEqual(mount.heldFiles(pid: pid), [])
    }
}
