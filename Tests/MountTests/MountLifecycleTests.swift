import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// Mounting like a FUSE filesystem: background by default, the mount.fuse3 form, clean
/// unmounts on fusermount3 -u, umount, SIGTERM and SIGINT, and clear refusals.
final class MountLifecycleTests: XCTestCase {
    var temp: TempDirectory!
    var library: String!

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-life")
        library = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", library).ok)
        // Status 1: the folder's README is refused, as it should be.
        XCTAssertEqual(try Processes.albumfs("import", library, Samples.directory + "/photos/jpg/gps").status, 1)
    }

    override func tearDown() {
        // Whatever a test left: unmount, and end daemons serving this test's folders.
        guard let temp else { return }
        if let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) {
            for line in mounts.split(separator: "\n") where line.contains(temp.path) {
                let target = String(line.split(separator: " ")[1])
                _ = try? Processes.run("fusermount3", ["-u", "-z", target])
            }
        }
        for pid in daemons() { kill(pid, SIGKILL) }
        temp.remove()
    }

    /// PIDs of albumfs processes serving this test's library.
    func daemons() -> [pid_t] {
        guard let result = try? Processes.run("pgrep", ["-f", "albumfs.* \(temp.path)"]) else { return [] }
        return result.stdout.split(separator: "\n").compactMap { pid_t($0) }
    }

    func mountpoint(_ name: String = "mnt") throws -> String {
        let path = temp.sub(name)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func waitUntil(_ timeout: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    func testBackgroundMountAndEveryWayToStopIt() throws {
        let mnt = try mountpoint()
        let ways: [(String, () throws -> Void)] = [
            ("fusermount3 -u", { XCTAssertTrue(try Processes.run("fusermount3", ["-u", mnt]).ok) }),
            ("umount", { XCTAssertTrue(try Processes.run("umount", [mnt]).ok) }),
            ("SIGTERM", { for pid in self.daemons() { kill(pid, SIGTERM) } }),
            ("SIGINT", { for pid in self.daemons() { kill(pid, SIGINT) } }),
        ]
        for (way, stop) in ways {
            let mounted = try Processes.albumfs("mount", library, mnt, "-o", "log=\(temp.sub("log"))")
            XCTAssertEqual(mounted.status, 0, "\(way): \(mounted.stderr)")
            // The command returned: the mount is up and served from the background.
            XCTAssertTrue(MountedLibrary.isMounted(mnt), way)
            XCTAssertEqual(daemons().count, 1, way)
            XCTAssertTrue(try Processes.shell("ls '\(mnt)/All Photos' | grep -q DSCN0010.jpg").ok, way)
            try stop()
            XCTAssertTrue(waitUntil { !MountedLibrary.isMounted(mnt) && self.daemons().isEmpty }, "\(way) left a mount or a daemon")
        }
        let log = try String(contentsOfFile: temp.sub("log"), encoding: .utf8)
        XCTAssertEqual(log.components(separatedBy: "unmounted").count - 1, 4, log)
    }

    /// The daemon in the background holds none of the descriptors its caller left open
    /// without O_CLOEXEC (a shell's redirection, a script's output file): held, they
    /// would keep a deleted file's space or a pipe's reader waiting as long as the mount.
    /// (A daemon in the foreground keeps them, as any program does: the caller started
    /// it and waits for it; Foundation's `Process` even learns of its child's exit by a
    /// socket the child inherits.)
    func testTheBackgroundDaemonHoldsNoneOfItsCallersDescriptors() throws {
        let callers = temp.sub("callers-file")
        FileManager.default.createFile(atPath: callers, contents: Data())
        var st = stat()
        XCTAssertEqual(stat(callers, &st), 0)
        let mnt = try mountpoint()
        let command = "exec 7>>\(q(callers)); exec \(q(Processes.albumfs)) mount \(q(library)) \(q(mnt)) -o log=\(q(temp.sub("log")))"
        XCTAssertTrue(try Processes.shell(command).ok)
        XCTAssertTrue(MountedLibrary.isMounted(mnt))
        let pids = daemons()
        XCTAssertEqual(pids.count, 1)
        for pid in pids {
            let folder = "/proc/\(pid)/fd"
            let held = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).contains { name in
                var target = stat()
                return stat(folder + "/" + name, &target) == 0 && target.st_dev == st.st_dev && target.st_ino == st.st_ino
            }
            XCTAssertFalse(held, "the daemon holds its caller's descriptor 7")
        }
        XCTAssertTrue(try Processes.run("fusermount3", ["-u", mnt]).ok)
        XCTAssertTrue(waitUntil { !MountedLibrary.isMounted(mnt) && self.daemons().isEmpty })
    }

    func testMountFuse3FormAsFstabUsesIt() throws {
        let mnt = try mountpoint()
        // mount.fuse3 runs "albumfs LIBRARY MOUNTPOINT -o OPTIONS", as an fstab line
        // `LIBRARY MOUNTPOINT fuse.albumfs defaults 0 0` makes mount(8) do.
        let path = Processes.productsDirectory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try Processes.run("/bin/sh", ["-c", "PATH='\(path)' mount.fuse3 'albumfs#\(library!)' '\(mnt)' -o rw,nosuid,nodev,log=\(temp.sub("log"))"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(MountedLibrary.isMounted(mnt))
        XCTAssertTrue(try Processes.shell("test -f '\(mnt)/All Photos/DSCN0010.jpg'").ok)
        XCTAssertTrue(try Processes.run("umount", [mnt]).ok)
        XCTAssertTrue(waitUntil { self.daemons().isEmpty })
    }

    func testRefusalsAreClearAndLeaveNothingBehind() throws {
        let mnt = try mountpoint()
        func refused(_ args: [String], _ expected: String) throws {
            let result = try Processes.run(Processes.albumfs, args)
            XCTAssertNotEqual(result.status, 0, args.joined(separator: " "))
            XCTAssertTrue(result.stderr.contains(expected), "\(args): \(result.stderr)")
            XCTAssertEqual(result.stderr.split(separator: "\n").filter { $0.hasPrefix("albumfs:") }.count, 1, result.stderr)
        }
        try refused(["mount", library, temp.sub("missing")], "does not exist")
        let full = try mountpoint("full")
        FileManager.default.createFile(atPath: full + "/file", contents: Data())
        try refused(["mount", library, full], "is not empty")
        try refused(["mount", temp.sub("nolibrary"), mnt], "is not an AlbumFS library")
        try refused(["mount", library, mnt, "-o", "bogus_option"], "unknown mount option")
        try refused(["mount", library], "missing MOUNTPOINT")

        XCTAssertTrue(try Processes.albumfs("mount", library, mnt).ok)
        try refused(["mount", library, mnt], "is busy")
        let second = try mountpoint("second")
        try refused(["mount", library, second], "in use by another albumfs process")
        try refused(["import", library, Samples.directory + "/photos/jpg/gps"], "in use by another albumfs process")
        XCTAssertFalse(MountedLibrary.isMounted(second))
        XCTAssertEqual(daemons().count, 1)
        XCTAssertTrue(try Processes.run("fusermount3", ["-u", mnt]).ok)
        XCTAssertTrue(waitUntil { self.daemons().isEmpty })
    }

    /// A user without root mounts through fusermount3: the mount works (reads through the
    /// daemon, no passthrough), and what fusermount3 would refuse is refused first in one
    /// line that says what to do: allow_other without user_allow_other in /etc/fuse.conf,
    /// a mountpoint the user may not write to.
    func testAMountWithoutRoot() throws {
        let home = temp.sub("nobody")
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        XCTAssertEqual(chmod(temp.path, 0o755), 0)
        XCTAssertEqual(chown(home, 65534, 65534), 0)
        func asNobody(_ arguments: [String]) throws -> Processes.Result {
            try Processes.run("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME=\(home)"] + arguments)
        }
        let lib = home + "/lib", mnt = home + "/mnt"
        XCTAssertTrue(try asNobody([Processes.albumfs, "init", lib]).ok)
        XCTAssertTrue(try asNobody(["mkdir", mnt]).ok)
        let mounted = try asNobody([Processes.albumfs, "mount", lib, mnt, "-o", "log=\(home)/log"])
        XCTAssertEqual(mounted.status, 0, mounted.stderr)
        let photo = Samples.directory + "/photos/jpg/gps/DSCN0010.jpg"
        let copied = try asNobody(["sh", "-c", "mkdir \(q(mnt))/Albums/A && cp \(q(photo)) \(q(mnt))/Albums/A/P.jpg && cmp \(q(mnt))/Albums/A/P.jpg \(q(photo)) && ls \(q(mnt))/'All Photos'"])
        XCTAssertEqual(copied.stdout, "P.jpg\n", copied.stderr)
        XCTAssertTrue(try asNobody(["fusermount3", "-u", mnt]).ok)
        XCTAssertTrue(waitUntil { self.daemons().isEmpty })
        let log = try String(contentsOfFile: home + "/log", encoding: .utf8)
        XCTAssertTrue(log.contains("mounted \(lib) on \(mnt)"), log)
        XCTAssertFalse(log.contains("(reads in passthrough)"), log)

        func refused(_ arguments: [String], _ expected: String) throws {
            let result = try asNobody([Processes.albumfs] + arguments)
            XCTAssertNotEqual(result.status, 0, "\(arguments)")
            XCTAssertEqual(result.stderr.split(separator: "\n").filter { !$0.contains("no syslog daemon") }, ["albumfs: " + Substring(expected)], "\(arguments)")
            XCTAssertFalse(MountedLibrary.isMounted(arguments[2]))
        }
        let fuseConf = (try? String(contentsOfFile: "/etc/fuse.conf", encoding: .utf8)) ?? ""
        if !fuseConf.split(separator: "\n").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "user_allow_other" }) {
            try refused(["mount", lib, mnt, "-o", "allow_other"],
                        "allow_other needs the line user_allow_other in /etc/fuse.conf (the administrator adds it), or a mount by root")
        }
        let rootOwned = try mountpoint("root-owned")
        try refused(["mount", lib, rootOwned],
                    "cannot mount on \(rootOwned): a mount without root needs a folder you may write to (make it yours, or pick one of yours)")
        XCTAssertTrue(daemons().isEmpty)
    }

    /// INIT that cannot be answered (the device cannot be restored after libfuse's reply
    /// was diverted, or libfuse answers with an error) ends the mount with one clear
    /// line: no hung mount, no daemon left.
    func testAFailedInitEndsTheMountClearly() throws {
        for fault in ["restore", "reply"] {
            let mnt = try mountpoint("mnt-\(fault)")
            let result = try Processes.run(Processes.albumfs, ["mount", "-f", library, mnt], environment: ["ALBUMFS_TEST_INIT_FAULT": fault], timeout: 30)
            XCTAssertNotEqual(result.status, 0, fault)
            XCTAssertTrue(result.stderr.contains("albumfs: cannot start the FUSE session: INIT failed"), "\(fault): \(result.stderr)")
            XCTAssertFalse(MountedLibrary.isMounted(mnt), "\(fault) left a mount")
            XCTAssertTrue(waitUntil { self.daemons().isEmpty }, fault)
        }
        // And the library mounts as usual afterwards.
        let mnt = try mountpoint()
        XCTAssertTrue(try Processes.albumfs("mount", library, mnt).ok)
        XCTAssertTrue(try Processes.shell("test -f '\(mnt)/All Photos/DSCN0010.jpg'").ok)
        XCTAssertTrue(try Processes.run("fusermount3", ["-u", mnt]).ok)
        XCTAssertTrue(waitUntil { self.daemons().isEmpty })
    }

    /// Without a syslog daemon (this machine, most containers), a background mount logs
    /// to the library's own log file and says so: a refusal's reason is found there.
    func testWithoutSyslogTheReasonsGoToTheLibrarysLog() throws {
        XCTAssertFalse(Log.syslogListens(), "this test is about machines without a syslog daemon")
        let mnt = try mountpoint()
        let mounted = try Processes.albumfs("mount", library, mnt)
        XCTAssertEqual(mounted.status, 0, mounted.stderr)
        let log = library + "/logs/albumfs.log"
        XCTAssertTrue(mounted.stderr.contains("the log (the reason for every refusal) is \(log)"), mounted.stderr)
        let refused = try Processes.shell("mkdir '\(mnt)/Smart Albums/Mine' 2>&1")
        XCTAssertTrue(refused.stdout.contains("Operation not permitted"), refused.stdout)
        XCTAssertTrue(try Processes.run("fusermount3", ["-u", mnt]).ok)
        XCTAssertTrue(waitUntil { self.daemons().isEmpty })
        let text = try String(contentsOfFile: log, encoding: .utf8)
        XCTAssertTrue(text.contains("cannot make folder Mine in Smart Albums/"), text)
    }

    /// A crash of the daemon in the background says why in the library's log: its stderr,
    /// where the Swift runtime writes a trap's reason and backtrace, was /dev/null, and
    /// the arithmetic overflow that smbtorture's timestamps caused left no word anywhere.
    /// (A SIGSEGV sent from outside is reported as a fault is; the runtime then returns
    /// to the thread it stopped, since nothing faults again, and tearDown ends the daemon.)
    func testACrashInTheBackgroundSaysWhyInTheLog() throws {
        let mnt = try mountpoint()
        let mounted = try Processes.albumfs("mount", library, mnt)
        XCTAssertEqual(mounted.status, 0, mounted.stderr)
        let serving = daemons()
        XCTAssertEqual(serving.count, 1)
        for pid in serving { kill(pid, SIGSEGV) }
        let log = library + "/logs/albumfs.log"
        func text() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        XCTAssertTrue(waitUntil(60) { text().contains("Backtrace took") }, text())
        XCTAssertTrue(text().contains("Program crashed"), text())
        XCTAssertTrue(text().contains("mounted \(library!)"), text())
    }

    /// The README's fstab line and the systemd unit in mount-scripts/sharing work as
    /// written, with albumfs where albumfs-up installs it (/usr/local/bin): here a private
    /// mount namespace puts this build there and a private /etc/fstab holds the line.
    func testTheFstabLineAndTheSystemdUnitWorkAsWritten() throws {
        let mnt = try mountpoint()
        let bin = temp.sub("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Processes.albumfs, toPath: bin + "/albumfs")
        let fstab = temp.sub("fstab")
        try Data("\(library!)  \(mnt)  fuse.albumfs  defaults  0  0\n".utf8).write(to: URL(fileURLWithPath: fstab))
        let script = """
            mount --bind \(q(fstab)) /etc/fstab && mount --bind \(q(bin)) /usr/local/bin && mount \(q(mnt)) \
            && test -f \(q(mnt))'/All Photos/DSCN0010.jpg' && grep -q ' \(mnt) fuse.albumfs ' /proc/self/mounts && umount \(q(mnt))
            """
        let result = try Processes.run("unshare", ["-m", "sh", "-c", script], timeout: 60)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(waitUntil { self.daemons().isEmpty }, "the daemon ends with its mount")

        // The unit: systemd's own check, with the command where this build is.
        let unit = try String(contentsOfFile: Samples.packageRoot + "/mount-scripts/sharing/albumfs@.service", encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/albumfs", with: bin + "/albumfs")
        let unitPath = temp.sub("albumfs@srv-photos.service")
        try Data(unit.utf8).write(to: URL(fileURLWithPath: unitPath))
        let verified = try Processes.run("systemd-analyze", ["verify", unitPath])
        XCTAssertEqual(verified.status, 0, verified.stdout + verified.stderr)
    }

    func testReadOnlyMountRefusesChanges() throws {
        let mnt = try mountpoint()
        XCTAssertTrue(try Processes.albumfs("mount", library, mnt, "-o", "ro").ok)
        defer { _ = try? Processes.run("fusermount3", ["-u", mnt]) }
        // Each change, on its own, is refused with EROFS.
        for command in ["mkdir '\(mnt)/Albums/New'", "touch '\(mnt)/Albums/x'"] {
            let result = try Processes.shell("\(command) 2>&1")
            XCTAssertNotEqual(result.status, 0, command)
            XCTAssertTrue(result.stdout.contains("Read-only file system"), "\(command): \(result.stdout)")
        }
        XCTAssertTrue(try Processes.shell("cat '\(mnt)/All Photos/DSCN0010.jpg' > /dev/null").ok)
    }

    func testOwnerAndModeOptions() throws {
        let mnt = try mountpoint()
        XCTAssertTrue(try Processes.albumfs("mount", library, mnt, "-o", "uid=1234,gid=4321,umask=027,allow_other").ok)
        defer { _ = try? Processes.run("fusermount3", ["-u", mnt]) }
        let result = try Processes.shell("stat -c '%u %g %a' '\(mnt)/Albums' '\(mnt)/All Photos/DSCN0010.jpg' '\(mnt)/Smart Albums/Videos'")
        XCTAssertEqual(result.stdout, "1234 4321 750\n1234 4321 640\n1234 4321 550\n", result.stderr)
    }
}
