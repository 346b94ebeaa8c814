import AlbumCore
import Foundation
import Glibc
import XCTest

/// A library mounted for a test: `albumfs mount -f` as a child process, logging to a
/// file. `unmount()` (also run by `deinit`) unmounts and waits for the daemon; if the
/// test runner dies, the daemon gets SIGTERM (prctl) and unmounts itself.
public final class MountedLibrary: @unchecked Sendable {
    public let library: String
    public let mountpoint: String
    public let logPath: String
    /// With `requests`: libfuse's trace of every request (`-d`), one line per request.
    public let requestLogPath: String?
    public private(set) var process: Process?
    public private(set) var options: [String]
    /// Added to the daemon's environment (the test hooks of the decoder workers).
    public var environment: [String: String]
    /// The daemon's limit of open files at its start (soft, hard), set by `prlimit`
    /// before it runs; nil: the test runner's.
    public let fileLimit: (soft: Int, hard: Int)?
    /// Whether the mount on `mountpoint` is this object's to unmount (a later object may
    /// mount the same folder after this one unmounted it).
    private var ownsMount = false
    /// How a descriptor leak found at unmount is reported: XCTFail unless a Swift Testing
    /// suite says otherwise.
    public var reportLeak: @Sendable (String) -> Void = { XCTFail($0) }
    /// Paths (prefixes) a test lets the daemon hold at its end, each for a reason the test
    /// gives (decoders it left hanging on purpose hold the blobs they decode).
    public var mayHoldAtEnd: [String] = []
    /// The daemon's own files (database, journal, log) as they were when it mounted.
    private var ownFiles: Set<FileIdentity> = []
    /// The mount's FUSE connection (its device number: its name under fusectl).
    private var connection: UInt64?

    /// Mounts `library` (which must exist) on a fresh folder in `temp`.
    /// `requests`: trace every FUSE request (`-d`) to `requestLogPath`.
    public init(library: String, temp: TempDirectory, name: String = "mnt", options: [String] = [],
                environment: [String: String] = [:], requests: Bool = false,
                fileLimit: (soft: Int, hard: Int)? = nil) throws {
        self.library = library
        self.mountpoint = temp.sub(name)
        self.logPath = temp.sub("\(name).log")
        self.requestLogPath = requests ? temp.sub("\(name).requests") : nil
        self.options = options
        self.environment = environment
        self.fileLimit = fileLimit
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        try start()
    }

    /// Starts the daemon and waits until the mount answers.
    public func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Processes.albumfs)
        process.arguments = ["mount", library, mountpoint, "-f", "-o", (["log=\(logPath)"] + options).joined(separator: ",")]
            + (requestLogPath != nil ? ["-d"] : [])
        if let fileLimit {
            // prlimit sets the limit and execs the daemon: the child is still the daemon.
            process.arguments = ["--nofile=\(fileLimit.soft):\(fileLimit.hard)", "--", Processes.albumfs] + process.arguments!
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        }
        var environment = ProcessInfo.processInfo.environment
        environment["ALBUMFS_EXIT_WITH_PARENT"] = "1"
        environment.merge(self.environment) { $1 }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        if let requestLogPath {
            _ = FileManager.default.createFile(atPath: requestLogPath, contents: nil)
            process.standardError = try Processes.writingHandle(requestLogPath)
        } else {
            process.standardError = errors
        }
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if MountedLibrary.isMounted(mountpoint) {
                ownsMount = true
                var st = stat()
                connection = stat(mountpoint, &st) == 0 ? UInt64(st.st_dev) : nil
                ownFiles = Set(([library + "/library.db", library + "/library.db-wal", library + "/library.db-shm", logPath]
                    + (requestLogPath.map { [$0] } ?? [])).compactMap(Self.identity))
                return
            }
            if !process.isRunning {
                let message = requestLogPath != nil ? requests
                    : String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                self.process = nil
                throw MountFailure(message: "albumfs mount exited with \(process.terminationStatus): \(message)")
            }
            usleep(20_000)
        }
        killDaemon(process)
        self.process = nil
        _ = try? Processes.run("fusermount3", ["-u", "-z", mountpoint], timeout: 30)
        throw MountFailure(message: "the mount did not come up within 20 s; log: \(log)")
    }

    public struct MountFailure: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    public static func isMounted(_ path: String) -> Bool {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
        let wanted = URL(fileURLWithPath: path).standardizedFileURL.path
        return mounts.split(separator: "\n").contains {
            $0.split(separator: " ").dropFirst().first.map { String($0).replacingOccurrences(of: "\\040", with: " ") } == wanted
        }
    }

    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The request trace so far (empty without `requests`).
    public var requests: String { requestLogPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? "" }

    /// How many requests of `opcode` (READ, OPEN, ...) the daemon got so far.
    public func requestCount(_ opcode: String) -> Int {
        requests.split(separator: "\n").filter { $0.contains("opcode: \(opcode) (") }.count
    }

    /// Unmounts (fusermount3 -u, then lazily if busy) and waits for the daemon to exit.
    /// First, as gocryptfs's tests do, it checks that the daemon holds no descriptor of a
    /// file it has no business holding once every program is done with the mount.
    public func unmount() {
        guard ownsMount else { return }
        ownsMount = false
        let process = self.process
        self.process = nil
        if let process, process.isRunning {
            let leaked = heldFiles(pid: process.processIdentifier)
            if !leaked.isEmpty {
                reportLeak("the daemon still holds \(leaked.count) descriptor(s) after the test: \(leaked.joined(separator: ", "))")
            }
        }
        if MountedLibrary.isMounted(mountpoint) {
            _ = try? Processes.run("fusermount3", ["-u", mountpoint], timeout: 30)
            if MountedLibrary.isMounted(mountpoint) {
                _ = try? Processes.run("fusermount3", ["-u", "-z", mountpoint], timeout: 30)
            }
        }
        guard let process else { return }
        let deadline = Date().addingTimeInterval(20)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { killDaemon(process) }
    }

    /// SIGKILL, then the FUSE connection aborted (fusectl), then the wait. A daemon killed
    /// while one of its threads sends an entry invalidation may never exit: that thread
    /// waits in the kernel for a folder's lock, held by a program whose request (a
    /// create in that folder) only the dead daemon could answer, and the connection
    /// lives as long as the thread. Aborting ends every request, as a kernel does when
    /// the last descriptor of /dev/fuse closes (docs/reliability.md, "A crash").
    private func killDaemon(_ process: Process) {
        kill(process.processIdentifier, SIGKILL)
        if let connection {
            let connections = "/sys/fs/fuse/connections"
            if (try? FileManager.default.contentsOfDirectory(atPath: connections))?.isEmpty ?? true {
                _ = try? Processes.run("mount", ["-t", "fusectl", "none", connections], timeout: 10)
            }
            // Until the process is gone: the abort is a no-op once the connection is.
            let deadline = Date().addingTimeInterval(30)
            while process.isRunning && Date() < deadline {
                if let abort = FileHandle(forWritingAtPath: "\(connections)/\(connection)/abort") {
                    abort.write(Data("1\n".utf8))
                    try? abort.close()
                }
                usleep(50_000)
            }
        }
        process.waitUntilExit()
    }

    /// Regular files the daemon holds open other than its own database, lock and log:
    /// blobs, staging and plain files, thumbnails, files outside the library, each one
    /// held through the whole wait. Releases reach the daemon after close(2) returns, so a
    /// few seconds are given for them; and a descriptor that comes and goes meanwhile is
    /// work, not a leak: thumbnails are made ahead in the background two seconds after an
    /// import, each decode holding its photo's blob for a moment, one photo after the
    /// other (on a loaded machine, a test that ends at once after copying eight photos
    /// still had them decoding past five seconds). Blobs get longer than other files for
    /// that reason, 30 s: a decode takes well under a second, a leak holds on forever.
    public func heldFiles(pid: Int32) -> [String] {
        // By identity, not by path: a descriptor's path reads differently once its
        // filesystem is lazily unmounted or seen from another namespace.
        // A library on PostgreSQL has a lock file per host instead of library.db.
        let hostLocks = ((try? FileManager.default.contentsOfDirectory(atPath: library + "/hosts")) ?? []).map { library + "/hosts/" + $0 }
        let own = Set(([library + "/library.db", library + "/library.db-wal", library + "/library.db-shm", logPath] + hostLocks)
            .compactMap(Self.identity))
            .union(ownFiles)
        /// Descriptor number and target: the same number opened again on another file
        /// is another descriptor.
        struct Held: Hashable {
            let fd: String
            let target: String
            let isBlob: Bool
        }
        let blobs = library + "/originals/"
        func held() -> Set<Held> {
            let folder = "/proc/\(pid)/fd"
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
            return Set(names.compactMap { name -> Held? in
                var st = stat()
                guard stat(folder + "/" + name, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG,
                      !own.contains(FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))),
                      let target = try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + name)
                else { return nil }
                return mayHoldAtEnd.contains { target.hasPrefix($0) } ? nil : Held(fd: name, target: target, isBlob: target.hasPrefix(blobs))
            })
        }
        let started = Date()
        var found = held()
        var others: Set<Held>?  // the verdict on files other than blobs, at 5 s
        while true {
            let waited = Date().timeIntervalSince(started)
            if others == nil && (waited >= 5 || found.allSatisfy(\.isBlob)) { others = found.filter { !$0.isBlob } }
            let blobsHeld = found.filter(\.isBlob)
            if let others, blobsHeld.isEmpty || waited >= 30 {
                return others.union(blobsHeld).map(\.target).sorted()
            }
            usleep(50_000)
            found.formIntersection(held())
        }
    }

    struct FileIdentity: Hashable { let device: UInt64; let inode: UInt64 }

    static func identity(_ path: String) -> FileIdentity? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    /// Kills the daemon with SIGKILL (a crash), then clears the dead mount.
    public func crash() {
        guard let process else { return }
        self.process = nil
        ownsMount = false
        killDaemon(process)
        _ = try? Processes.run("fusermount3", ["-u", "-z", mountpoint], timeout: 30)
    }

    public var pid: Int32? { process?.processIdentifier }

    public func path(_ relative: String) -> String { mountpoint + "/" + relative }

    deinit { unmount() }
}

/// A library with the sample media imported by the real command line.
public enum SampleLibrary {
    /// `albumfs init` and `albumfs import` of the sample folders (photos, videos, extras).
    public static func make(in temp: TempDirectory, name: String = "lib") throws -> String {
        let library = temp.sub(name)
        let created = try Processes.albumfs("init", library)
        guard created.ok else { throw MountedLibrary.MountFailure(message: created.stderr) }
        let imported = try Processes.albumfs("import", library, Samples.directory + "/photos",
                                             Samples.directory + "/videos", Samples.directory + "/extras")
        // Status 1: the samples include files that are refused on purpose.
        guard imported.status == 0 || imported.status == 1 else {
            throw MountedLibrary.MountFailure(message: imported.stderr)
        }
        return library
    }
}

/// Fails a test loudly when FUSE cannot be used, whoever runs it: a mount test never
/// skips.
public func requireFUSE(file: StaticString = #filePath, line: UInt = #line) throws {
    let ok = FileManager.default.fileExists(atPath: "/dev/fuse") && (try? Processes.which("fusermount3")) != nil
    if !ok {
        XCTFail("FUSE is not available (/dev/fuse or fusermount3 missing): the mount tests need it", file: file, line: line)
        throw MountedLibrary.MountFailure(message: "no FUSE")
    }
}
