import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// Faults (issue 8): the daemon killed at random moments, a full disk, blobs altered or
/// removed or replaced by links by hand. Nothing that was reported done is lost, and
/// `albumfs check` passes after every restart.
final class FaultTests: XCTestCase {
    var temp: TempDirectory!
    var mount: MountedLibrary!
    var lib: String!

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-fault")
        lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
    }

    override func tearDown() {
        mount?.unmount()
        mount = nil
        temp?.remove()
    }

    func check(_ label: String) throws {
        let result = try Processes.albumfs("check", lib)
        XCTAssertEqual(result.status, 0, "\(label): \(result.stdout)")
    }

    /// Rounds of work on distinct objects, each step logged once it returned success; the
    /// daemon is killed at a random moment in each round. After every restart each
    /// logged step must show.
    func testKillsDuringImportsRenamesTrashAndRestore() throws {
        let photos = temp.sub("photos")
        try FileManager.default.createDirectory(atPath: photos, withIntermediateDirectories: true)
        let rounds = 14
        for r in 0..<rounds {
            for i in 0..<3 {
                try MediaFactory.image(at: "\(photos)/P\(r)_\(i).jpg", width: 900, height: 600, exif: [
                    "exif-ifd2-DateTimeOriginal": String(format: "2021:%02d:%02d 12:00:00", 1 + r % 12, 1 + i),
                ])
            }
        }
        mount = try MountedLibrary(library: lib, temp: temp)
        let log = temp.sub("done")
        FileManager.default.createFile(atPath: log, contents: nil)
        var generator = SystemRandomNumberGenerator()
        for r in 0..<rounds {
            let m = mount.mountpoint
            let script = """
                cd \(q(m)) || exit 1
                mkdir Albums/R\(r) && echo "mkdir \(r)" >> \(q(log)) || exit 1
                for i in 0 1 2; do cp \(q(photos))/P\(r)_$i.jpg Albums/R\(r)/ && echo "cp \(r) $i" >> \(q(log)) || exit 1; done
                mv Albums/R\(r) Albums/R\(r)-done && echo "rename \(r)" >> \(q(log)) || exit 1
                rm 'All Photos/P\(r)_0.jpg' && echo "trash \(r)" >> \(q(log)) || exit 1
                mv 'Smart Albums/Recently Deleted/P\(r)_0.jpg' 'All Photos/' && echo "restore \(r)" >> \(q(log)) || exit 1
                rm 'All Photos/P\(r)_1.jpg' && echo "trash1 \(r)" >> \(q(log)) || exit 1
                """
            let worker = Process()
            worker.executableURL = URL(fileURLWithPath: "/bin/sh")
            worker.arguments = ["-c", script]
            worker.standardError = FileHandle.nullDevice
            try worker.run()
            usleep(UInt32.random(in: 10_000...250_000, using: &generator))
            mount.crash()
            worker.waitUntilExit()
            try mount.start()
            try check("round \(r)")
            try verify(log: log, photos: photos)
        }
        // At least a few rounds got everywhere, and a few were cut short.
        let steps = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        XCTAssertGreaterThan(steps.count, rounds)
    }

    /// Everything the log says was done is there. The step that was in flight when the
    /// daemon died (the one after the last logged step of its round) may or may not have
    /// been done: either outcome is accepted for it, and only for it.
    func verify(log: String, photos: String) throws {
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let library = try Library.open(at: lib, access: .reader)
        let order = ["mkdir", "cp0", "cp1", "cp2", "rename", "trash", "restore", "trash1"]
        var done: [Int: Set<String>] = [:]
        for line in lines {
            let step = line[0] == "cp" ? "cp\(line[2])" : line[0]
            done[Int(line[1])!, default: []].insert(step)
        }
        for (r, steps) in done {
            let last = steps.compactMap { order.firstIndex(of: $0) }.max() ?? -1
            let inFlight = last + 1 < order.count ? order[last + 1] : nil
            func happened(_ step: String) -> Bool? {
                if steps.contains(step) { return true }
                return step == inFlight ? nil : false  // nil: either
            }
            var album: Album?
            switch happened("rename") {
            case true?: album = try library.album(path: ["R\(r)-done"])
            case false?: album = try library.album(path: ["R\(r)"])
            case nil: album = try library.album(path: ["R\(r)-done"]) ?? library.album(path: ["R\(r)"])
            }
            guard let album else {
                XCTFail("round \(r): its album is missing after \(steps.sorted())")
                continue
            }
            for i in 0..<3 where steps.contains("cp\(i)") {
                let name = "P\(r)_\(i).jpg"
                guard let asset = try library.asset(named: name) else {
                    XCTFail("round \(r): \(name) was copied but is not in the library")
                    continue
                }
                XCTAssertEqual(try library.memberships(ofAsset: asset.id).map(\.albumID), [album.id], name)
                let trashed: Bool?
                switch i {
                case 0:
                    switch (happened("trash"), happened("restore")) {
                    case (_, true?): trashed = false
                    case (true?, nil): trashed = nil
                    case (true?, false?): trashed = true
                    case (nil, _): trashed = nil
                    case (false?, _): trashed = false
                    }
                case 1: trashed = happened("trash1")
                default: trashed = false
                }
                if let trashed {
                    XCTAssertEqual(asset.isTrashed, trashed, "round \(r): \(name) trashed after \(steps.sorted()) (in flight: \(inFlight ?? "none"))")
                }
                let bytes = try Data(contentsOf: URL(fileURLWithPath: library.files.absolute(.blob(asset.sha256))))
                XCTAssertEqual(bytes, try Data(contentsOf: URL(fileURLWithPath: "\(photos)/\(name)")), name)
            }
        }
    }

    func testKillsDuringGC() throws {
        // Photos trashed long ago (gc purges them) and photos that stay.
        let library = try Library.open(at: lib, access: .exclusive)
        var kept: [String] = [], purged: [String] = []
        for i in 0..<24 {
            let path = temp.sub("g\(i).jpg")
            try MediaFactory.image(at: path, width: 400, height: 300, exif: ["exif-ifd2-DateTimeOriginal": "2020:01:01 10:00:\(String(format: "%02d", i))"])
            let asset = try XCTUnwrap(try library.importFile(at: path, originalName: "g\(i).jpg", destination: .library).asset)
            if i % 2 == 0 {
                try library.write { try $0.trash(asset.id) }
                purged.append(asset.sha256)
            } else {
                kept.append(asset.sha256)
            }
        }
        // Age the trash by 31 days through the library's own database.
        XCTAssertTrue(try Processes.run("sqlite3", [lib + "/library.db", "UPDATE assets SET trashed_at = trashed_at - 31*86400 WHERE trashed_at IS NOT NULL"]).ok)
        _ = consume library
        var generator = SystemRandomNumberGenerator()
        for round in 0..<8 {
            let gc = Process()
            gc.executableURL = URL(fileURLWithPath: Processes.albumfs)
            gc.arguments = ["gc", lib]
            gc.standardOutput = FileHandle.nullDevice
            gc.standardError = FileHandle.nullDevice
            try gc.run()
            usleep(UInt32.random(in: 1_000...60_000, using: &generator))
            kill(gc.processIdentifier, SIGKILL)
            gc.waitUntilExit()
            try check("gc round \(round)")
            let after = try Library.open(at: lib, access: .reader)
            for sha in kept {
                XCTAssertEqual(try after.assets(withSHA256: sha).count, 1, "a photo that stays is never touched by gc")
                XCTAssertTrue(after.blobs.exists(sha))
            }
        }
        XCTAssertTrue(try Processes.albumfs("gc", lib).ok)
        let final = try Library.open(at: lib, access: .reader)
        for sha in purged { XCTAssertFalse(final.blobs.exists(sha)) }
        XCTAssertEqual(try final.stats().assets, kept.count)
    }

    func testFullDiskIsENOSPCAndLosesNothing() throws {
        // A library on a small filesystem of its own.
        let small = temp.sub("small")
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        XCTAssertTrue(try Processes.run("mount", ["-t", "tmpfs", "-o", "size=40m,mode=0700", "tmpfs", small]).ok)
        defer { _ = try? Processes.run("umount", ["-l", small]) }
        let smallLib = small + "/lib"
        XCTAssertTrue(try Processes.albumfs("init", smallLib).ok)
        lib = smallLib
        mount = try MountedLibrary(library: smallLib, temp: temp, name: "smallmnt")
        let big = temp.sub("big")
        try FileManager.default.createDirectory(atPath: big, withIntermediateDirectories: true)
        for i in 0..<6 {
            try MediaFactory.image(at: "\(big)/B\(i).jpg", width: 3000, height: 2000, exif: [:], quality: 95)
        }
        XCTAssertTrue(try Processes.shell("mkdir \(q(mount.path("Albums/Big")))").ok)
        var copied: [String] = [], failed = false
        for i in 0..<6 {
            let result = try Processes.shell("cp \(q(big))/B\(i).jpg \(q(mount.path("Albums/Big")))/")
            if result.ok { copied.append("B\(i).jpg") } else {
                XCTAssertTrue(result.stderr.contains("No space left on device"), result.stderr)
                failed = true
                break
            }
        }
        XCTAssertTrue(failed, "the disk filled up")
        XCTAssertFalse(copied.isEmpty)
        try check("full disk")
        // The copy that failed left what a full disk leaves: a partial file, here a plain
        // file of the album, never a photo.
        let partial = "B\(copied.count).jpg"
        let listed = try Processes.shell("ls \(q(mount.path("Albums/Big")))").stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(listed, copied + [partial])
        XCTAssertEqual(try Processes.shell("ls \(q(mount.path("All Photos")))").stdout.split(separator: "\n").map(String.init), copied,
                       "nothing half-imported")
        XCTAssertEqual(try Library.open(at: smallLib, access: .reader).stats().assets, copied.count)
        // Space comes back (the partial file removed, one photo deleted for good, gc): the
        // library works again.
        let gone = copied[0]
        XCTAssertTrue(try Processes.shell("cd \(q(mount.mountpoint)) && rm Albums/Big/\(partial) Albums/Big/\(gone) && rm 'All Photos/\(gone)' && rm 'Smart Albums/Recently Deleted/\(gone)'").ok)
        mount.unmount()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: smallLib + "/staging"), [], "the failed copy left nothing")
        XCTAssertTrue(try Processes.albumfs("gc", smallLib).ok)
        try mount.start()
        let again = try Processes.shell("cp \(q(big))/B5.jpg \(q(mount.path("Albums/Big")))/")
        XCTAssertTrue(again.ok, again.stderr)
        try check("after freeing space")
    }

    /// A plain directory of the nine GPS sample photos and a text file, and an album of
    /// the mount holding the same files (copied in with `cp`).
    private func photosInAPlainDirectoryAndAnAlbum() throws -> (plain: String, album: String) {
        let plain = temp.sub("plain")
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        let gps = Samples.directory + "/photos/jpg/gps"
        for name in try FileManager.default.contentsOfDirectory(atPath: gps) where name.hasSuffix(".jpg") {
            try FileManager.default.copyItem(atPath: gps + "/" + name, toPath: plain + "/" + name)
        }
        try "notes kept beside the photos\n".write(toFile: plain + "/notes.txt", atomically: false, encoding: .utf8)
        let album = mount.path("Albums/Many")
        let copied = try Processes.shell("mkdir \(q(album)) && cp \(q(plain))/* \(q(album))/")
        XCTAssertTrue(copied.ok, copied.stderr)
        return (plain, album)
    }

    /// Tests/Clients/hold-open.py on `folder`: its JSON output, parsed.
    /// `writes`: files opened to be written before the others are held, written and
    /// closed while they are (a name and the file whose bytes it gets).
    private func holdOpen(_ folder: String, _ count: Int, create: String? = nil,
                          writes: [(name: String, source: String)] = []) throws -> [String: Any] {
        let run = try Processes.run("python3", [Samples.packageRoot + "/Tests/Clients/hold-open.py", folder, String(count)]
                                    + (create.map { ["--create", $0] } ?? []) + writes.flatMap { ["--write", $0.name, $0.source] })
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], run.stdout)
    }

    /// The soft and hard limits of open files of process `pid`.
    private func fileLimits(of pid: Int32) throws -> (soft: String, hard: String) {
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = try XCTUnwrap(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let fields = line.dropFirst("Max open files".count).split(separator: " ")
        return (String(fields[0]), String(fields[1]))
    }

    /// A program holding thousands of files of an album open at once (an indexer, a file
    /// server with many clients) gets every one, as on a disk, although the daemon was
    /// started with a soft limit of 256 open files: it holds a descriptor for each file
    /// open through the mount, and raises its soft limit to the hard one at start
    /// (`DescriptorLimit`). Before, the 230th file held open failed with EIO and two log
    /// lines telling to run `albumfs check`. Its decoder workers keep 1,024 for what they
    /// start. Compared with the same program on a plain directory of the same files.
    func testThousandsOfFilesHeldOpenAtOnceAllOpenWhateverTheDaemonsSoftLimit() throws {
        var own = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &own)
        let hard = own.rlim_max == rlim_t.max ? 1 << 20 : Int(own.rlim_max)
        let count = 3000
        guard hard >= count + 500 else {
            return XCTFail("this machine lets a process hold only \(hard) files open; the test needs \(count + 500)")
        }
        mount = try MountedLibrary(library: lib, temp: temp, fileLimit: (soft: 256, hard: hard))
        let (plain, album) = try photosInAPlainDirectoryAndAnAlbum()
        let daemon = try XCTUnwrap(mount.pid)
        XCTAssertEqual(try fileLimits(of: daemon).soft, String(hard), "the daemon raised its soft limit to the hard one")
        // The copies' metadata came from decoder workers, children of the daemon.
        let workers = try FileManager.default.contentsOfDirectory(atPath: "/proc").compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let end = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(end, offsetBy: 2)...].split(separator: " ").dropFirst().first == Substring(String(daemon))
        }
        XCTAssertFalse(workers.isEmpty, "a decoder worker runs")
        for worker in workers {
            // A worker spawned a moment ago (the background thumbnails) lowers its
            // limit when it starts serving.
            let deadline = Date().addingTimeInterval(10)
            var soft = try? fileLimits(of: worker).soft
            while soft != nil && soft != "1024" && Date() < deadline {
                usleep(50_000)
                soft = try? fileLimits(of: worker).soft
            }
            if let soft { XCTAssertEqual(soft, "1024", "worker \(worker)") }  // nil: it has ended
        }

        let onTheMount = try holdOpen(album, count)
        XCTAssertEqual(onTheMount["opened"] as? Int, count, "\(onTheMount["refused"] ?? "")")
        XCTAssertEqual(onTheMount as NSDictionary, try holdOpen(plain, count) as NSDictionary)
        XCTAssertFalse(mount.log.contains("run albumfs check"), mount.log)
    }

    /// Near the daemon's hard limit (128 here, which it cannot raise), an open through
    /// the mount fails with ENFILE, "too many open files in system" (before: EIO, and two
    /// log lines a file telling to run `albumfs check` on a library that had nothing
    /// wrong); the log says which limit was reached and how to raise it, once a minute and
    /// once at the mount; a file created there is refused and leaves nothing; every file
    /// opened reads whole; files opened before are written and closed whole (a new photo
    /// and a save: before, both closes failed, and the new photo, kept as an unfinished
    /// plain file, was discarded at the next mount); once the program closes its files,
    /// everything opens again.
    func testAtTheDaemonsHardLimitOpensFailWithENFILEAndLoseNothing() throws {
        mount = try MountedLibrary(library: lib, temp: temp, fileLimit: (soft: 128, hard: 128))
        let (plain, album) = try photosInAPlainDirectoryAndAnAlbum()
        let names = try FileManager.default.contentsOfDirectory(atPath: album).sorted()
        let oracle = try holdOpen(plain, 30)
        let oracleDigests = try XCTUnwrap(oracle["digests"] as? [String: [String]])
        let jpg = Samples.directory + "/photos/jpg"
        let newPhoto = jpg + "/Canon_40D.jpg", savedBytes = jpg + "/Nikon_D70.jpg"

        let atTheLimit = try holdOpen(album, 400, create: "made-at-the-limit.txt",
                                      writes: [("new.jpg", newPhoto), ("DSCN0010.jpg", savedBytes)])
        let opened = try XCTUnwrap(atTheLimit["opened"] as? Int)
        XCTAssertGreaterThan(opened, 20, "the daemon holds a few files of its own, not 100")
        XCTAssertLessThan(opened, 128)
        XCTAssertEqual(atTheLimit["refused"] as? [String: Int], ["ENFILE": 400 - opened])
        XCTAssertEqual(atTheLimit["created"] as? String, "ENFILE")
        XCTAssertEqual(atTheLimit["read_errors"] as? [String: Int], [:])
        XCTAssertEqual(atTheLimit["writes"] as? [String: String], ["new.jpg": "closed", "DSCN0010.jpg": "closed"])
        let digests = try XCTUnwrap(atTheLimit["digests"] as? [String: [String]])
        XCTAssertFalse(digests.isEmpty)
        for (name, read) in digests where name != "DSCN0010.jpg" { XCTAssertEqual(read, oracleDigests[name], name) }

        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: album).sorted(), (names + ["new.jpg"]).sorted(),
                       "the refused create left nothing")
        let log = mount.log
        XCTAssertTrue(log.contains("albumfs may hold only 128 files open"), log)
        XCTAssertEqual(log.components(separatedBy: "holds nearly as many files open as its limit allows (128").count - 1, 1, log)
        XCTAssertFalse(log.contains("run albumfs check"), log)
        XCTAssertFalse(log.contains("Input/output error"), log)
        // What was written is in the library, and stays there after a new mount.
        mount.unmount()
        try mount.start()
        XCTAssertTrue(FileManager.default.contentsEqual(atPath: mount.path("Albums/Many/new.jpg"), andPath: newPhoto))
        XCTAssertTrue(FileManager.default.contentsEqual(atPath: mount.path("All Photos/new.jpg"), andPath: newPhoto), "a photo")
        XCTAssertTrue(FileManager.default.contentsEqual(atPath: mount.path("Albums/Many/DSCN0010.jpg"), andPath: savedBytes))
        let versions = try Processes.albumfs("versions", lib, "Albums/Many/DSCN0010.jpg")
        XCTAssertTrue(versions.stdout.hasPrefix("DSCN0010.jpg: 2 version(s)"), versions.stdout)
        try FileManager.default.removeItem(atPath: album + "/new.jpg")
        try FileManager.default.copyItem(atPath: savedBytes, toPath: plain + "/DSCN0010.jpg.saved")
        try FileManager.default.removeItem(atPath: plain + "/DSCN0010.jpg")
        try FileManager.default.moveItem(atPath: plain + "/DSCN0010.jpg.saved", toPath: plain + "/DSCN0010.jpg")
        // Once the files are closed, everything opens again.
        XCTAssertEqual(try holdOpen(album, 30) as NSDictionary, try holdOpen(plain, 30) as NSDictionary)
        try check("after the limit")
    }

    /// A sync of the database's log that fails (the disk reports a write error; here the
    /// daemon's test hook fails every sync once a marker file exists) stops the daemon as
    /// a crash would, with a line that says so. The close in flight does not return 0;
    /// every copy that returned before is in the library whole; the one in flight is
    /// whole or absent; and nothing that a row names was removed (`albumfs check`).
    func testAFailedSyncOfTheDatabaseLogStopsTheDaemonAndLosesNothingThatReturned() throws {
        let marker = temp.sub("fail-log-sync")
        mount = try MountedLibrary(library: lib, temp: temp, environment: ["ALBUMFS_TEST_FAIL_LOG_SYNC": marker])
        let photos = temp.sub("photos")
        try FileManager.default.createDirectory(atPath: photos, withIntermediateDirectories: true)
        for i in 0..<3 {
            try MediaFactory.image(at: "\(photos)/S\(i).jpg", width: 320, height: 240,
                                   exif: ["exif-ifd2-DateTimeOriginal": "2019:03:0\(i + 1) 08:00:00"])
        }
        let album = mount.path("Albums/S")
        XCTAssertTrue(try Processes.shell("mkdir \(q(album)) && cp \(q(photos))/S0.jpg \(q(photos))/S1.jpg \(q(album))/").ok)
        XCTAssertTrue(FileManager.default.createFile(atPath: marker, contents: nil))
        let failed = try Processes.shell("cp \(q(photos))/S2.jpg \(q(album))/")
        XCTAssertNotEqual(failed.status, 0, "a close whose commit could not be made durable reported success")
        let deadline = Date().addingTimeInterval(10)
        while !mount.log.contains("could not be written to disk") && Date() < deadline { usleep(50_000) }
        XCTAssertTrue(mount.log.contains("the library's database log could not be written to disk"), mount.log)
        XCTAssertTrue(mount.log.contains("albumfs stops here, as after a crash"), mount.log)
        mount.unmount()
        try FileManager.default.removeItem(atPath: marker)
        try check("after a failed sync of the log")
        try mount.start()
        let listed = try Processes.shell("ls \(q(album))").stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(Array(listed.prefix(2)), ["S0.jpg", "S1.jpg"], "the copies that returned are there")
        XCTAssertTrue(listed.count == 2 || listed == ["S0.jpg", "S1.jpg", "S2.jpg"], "\(listed)")
        for name in listed {
            XCTAssertTrue(try Processes.shell("cmp \(q(photos))/\(name) \(q(album))/\(name)").ok, "\(name) is whole")
        }
        XCTAssertEqual(try Library.open(at: lib, access: .reader).stats().assets, listed.count)
    }

    func testAlteredRemovedOrLinkedBlobsFailWithEIOAndNothingElse() throws {
        let gps = Samples.directory + "/photos/jpg/gps"
        XCTAssertTrue(try Processes.albumfs("import", lib, "--album", "A", gps + "/DSCN0010.jpg", gps + "/DSCN0012.jpg",
                                            gps + "/DSCN0021.jpg", gps + "/DSCN0025.jpg").ok)
        let library = try Library.open(at: lib, access: .reader)
        func blob(_ name: String) throws -> String { library.files.absolute(.blob(try XCTUnwrap(try library.asset(named: name)).sha256)) }
        let altered = try blob("DSCN0010.jpg"), removed = try blob("DSCN0012.jpg"), linked = try blob("DSCN0021.jpg")
        chmod(altered, 0o600)
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: altered))
        try handle.seek(toOffset: 5000)
        handle.write(Data([1, 2, 3]))
        try handle.close()
        unlink(removed)
        // A blob replaced by a link to a file outside the library, with the same bytes.
        let outside = temp.sub("outside.jpg")
        try FileManager.default.copyItem(atPath: gps + "/DSCN0021.jpg", toPath: outside)
        unlink(linked)
        symlink(outside, linked)

        mount = try MountedLibrary(library: lib, temp: temp)
        for name in ["DSCN0010.jpg", "DSCN0012.jpg", "DSCN0021.jpg"] {
            let read = try Processes.shell("cat \(q(mount.path("Albums/A/" + name))) > /dev/null")
            XCTAssertNotEqual(read.status, 0, name)
            XCTAssertTrue(read.stderr.contains("Input/output error"), "\(name): \(read.stderr)")
        }
        XCTAssertTrue(try Processes.shell("cmp \(q(gps))/DSCN0025.jpg \(q(mount.path("Albums/A/DSCN0025.jpg")))").ok, "the others are fine")
        XCTAssertTrue(try Processes.shell("ls -l \(q(mount.path("Albums/A")))").ok)
        let log = mount.log
        XCTAssertTrue(log.contains("DSCN0010.jpg") && log.contains("changed on disk"), log)
        XCTAssertTrue(log.contains("DSCN0012.jpg"), log)
        XCTAssertTrue(log.contains("symbolic link"), log)
        let check = try Processes.albumfs("check", lib)
        XCTAssertEqual(check.status, 1)
        for name in ["DSCN0010.jpg", "DSCN0012.jpg", "DSCN0021.jpg"] {
            XCTAssertTrue(check.stdout.contains(name), "check names \(name): \(check.stdout)")
        }
        XCTAssertFalse(check.stdout.contains("DSCN0025.jpg"))
    }
}
