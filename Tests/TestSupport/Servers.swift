import Foundation
import Glibc

/// A process a test started and must stop by its own PID, even when the test fails.
public final class OwnedProcess: @unchecked Sendable {
    public let pid: pid_t
    let name: String

    /// Starts `arguments` (the first is the program) with stdio on /dev/null or `log`.
    public init(_ name: String, _ arguments: [String], log: String? = nil) throws {
        self.name = name
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let program = arguments[0].hasPrefix("/") ? arguments[0] : try Processes.which(arguments[0])
        let rc = posix_spawn(&pid, program, &actions, nil, argv, environ)
        guard rc == 0 else { throw Processes.ProcessError.notFound("\(name) (posix_spawn: \(rc))") }
        self.pid = pid
    }

    public var isRunning: Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// SIGTERM, then SIGKILL after `grace` seconds; reaps it.
    public func stop(grace: Double = 5) {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while isRunning && Date() < deadline { usleep(20_000) }
        if isRunning {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    deinit { stop() }
}

/// smbd on a private configuration (its own state, lock, pid and log folders; loopback
/// only; a high port), sharing a mount with the share block of
/// `mount-scripts/sharing/smb.conf.snippet`.
public final class SambaServer: @unchecked Sendable {
    public let port: Int
    public let share = "photos"
    let directory: String
    var process: OwnedProcess?

    /// smbd sharing `mountpoint` as `photos`, and each of `others` (name: folder) with
    /// the same share block.
    public init(sharing mountpoint: String, in temp: TempDirectory, others: [(name: String, path: String)] = []) throws {
        directory = temp.sub("samba")
        for sub in ["state", "lock", "pid", "cache", "private", "log", "ncalrpc"] {
            try FileManager.default.createDirectory(atPath: "\(directory)/\(sub)", withIntermediateDirectories: true)
        }
        port = Int.random(in: 20000...40000)
        let block = try String(contentsOfFile: Samples.packageRoot + "/mount-scripts/sharing/smb.conf.snippet", encoding: .utf8)
        let snippet = ([(name: "photos", path: mountpoint)] + others).map { share in
            block.replacingOccurrences(of: "[photos]", with: "[\(share.name)]").replacingOccurrences(of: "/srv/photos", with: share.path)
                + "  guest ok = yes\n"
        }.joined(separator: "\n")
        let config = """
            [global]
              server role = standalone server
              interfaces = lo
              bind interfaces only = yes
              smb ports = \(port)
              state directory = \(directory)/state
              lock directory = \(directory)/lock
              pid directory = \(directory)/pid
              cache directory = \(directory)/cache
              private dir = \(directory)/private
              ncalrpc dir = \(directory)/ncalrpc
              log file = \(directory)/log/smbd.log
              map to guest = Bad User
              guest account = root
              load printers = no
              printing = bsd
              printcap name = /dev/null
              disable spoolss = yes
              passdb backend = tdbsam:\(directory)/private/passdb.tdb
            \(snippet)

            """
        try config.write(toFile: "\(directory)/smb.conf", atomically: true, encoding: .utf8)
        // Without --no-process-group: smbd makes its own process group, so that its stop
        // never signals the test runner.
        process = try OwnedProcess("smbd", ["/usr/sbin/smbd", "--foreground", "-s", "\(directory)/smb.conf"],
                                   log: "\(directory)/log/smbd.out")
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if (try? client("ls"))?.status == 0 { return }
            usleep(100_000)
        }
        throw Processes.ProcessError.notFound("smbd did not answer on port \(port): \(log)")
    }

    public var log: String {
        ((try? String(contentsOfFile: "\(directory)/log/smbd.log", encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: "\(directory)/log/smbd.out", encoding: .utf8)) ?? "")
    }

    /// Runs smbclient commands against the share, as a guest.
    public func client(_ commands: String) throws -> Processes.Result {
        try Processes.run("smbclient", ["//127.0.0.1/\(share)", "-p", String(port), "-N", "-c", commands], timeout: 120)
    }

    public func stop() {
        process?.stop()
        process = nil
    }

    deinit { stop() }
}

/// nfs-ganesha (FSAL_VFS) and rpcbind in a private network namespace with only loopback,
/// exporting a mount with the block of `mount-scripts/sharing/ganesha.conf.snippet`.
/// Clients run in the namespace through nsenter.
public final class GaneshaServer: @unchecked Sendable {
    let directory: String
    /// The mount exported (another after `failOver(to:)`).
    public private(set) var mountpoint: String
    var namespace: OwnedProcess?
    var rpcbind: OwnedProcess?
    var ganesha: OwnedProcess?

    public init(exporting mountpoint: String, in temp: TempDirectory) throws {
        self.mountpoint = mountpoint
        directory = temp.sub("ganesha")
        try FileManager.default.createDirectory(atPath: directory + "/recovery", withIntermediateDirectories: true)
        try writeConfig()
        namespace = try OwnedProcess("network namespace", ["unshare", "--net", "sleep", "86400"])
        usleep(200_000)
        guard try client(["ip", "link", "set", "lo", "up"]).ok else {
            throw Processes.ProcessError.notFound("a loopback in the network namespace")
        }
        rpcbind = try OwnedProcess("rpcbind", ["nsenter", "--net=/proc/\(namespace!.pid)/ns/net", "rpcbind", "-w", "-f"],
                                   log: "\(directory)/rpcbind.log")
        usleep(300_000)
        try start()
    }

    /// ganesha.conf: the export block of mount-scripts/sharing for `mountpoint`.
    private func writeConfig() throws {
        let snippet = try String(contentsOfFile: Samples.packageRoot + "/mount-scripts/sharing/ganesha.conf.snippet", encoding: .utf8)
            .replacingOccurrences(of: "/srv/photos", with: mountpoint)
        let config = """
            NFS_CORE_PARAM {
                Protocols = 3, 4;
                NFS_Port = 2049;
                Enable_NLM = false;
                Enable_RQUOTA = false;
            }
            NFSV4 {
                Graceless = true;
                RecoveryBackend = fs;
                RecoveryRoot = \(directory)/recovery;
            }
            LOG { Default_Log_Level = EVENT; }
            \(snippet)
            """
        try config.write(toFile: "\(directory)/ganesha.conf", atomically: true, encoding: .utf8)
    }

    /// Starts ganesha (again, after a restart of the mount it exports).
    public func start() throws {
        ganesha = try OwnedProcess("ganesha", ["nsenter", "--net=/proc/\(namespace!.pid)/ns/net", "ganesha.nfsd", "-F",
                                               "-L", "\(directory)/ganesha.log", "-f", "\(directory)/ganesha.conf",
                                               "-p", "\(directory)/ganesha.pid"])
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if (try? client(["nfs-ls", url("")]))?.status == 0 { return }
            usleep(200_000)
        }
        throw Processes.ProcessError.notFound("ganesha did not answer: \(log)")
    }

    /// Another host takes over the service address: this ganesha stops, and one with the
    /// same export block (same Export_Id) starts on the same address exporting `other`,
    /// as the second host's ganesha would behind a moved service address.
    public func failOver(to other: String) throws {
        stopGanesha()
        mountpoint = other
        try writeConfig()
        try start()
    }

    public func stopGanesha() {
        ganesha?.stop(grace: 10)
        ganesha = nil
    }

    public var log: String { (try? String(contentsOfFile: "\(directory)/ganesha.log", encoding: .utf8)) ?? "" }

    /// An NFSv3 URL of a path inside the export (libnfs takes the path as it is, spaces
    /// included; it does not decode %20).
    public func url(_ path: String) -> String {
        "nfs://127.0.0.1\(mountpoint)\(path.isEmpty ? "" : "/" + path)"
    }

    /// Runs a client (nfs-ls, nfs-cat, nfs-cp, ...), or any command, in the namespace.
    public func client(_ arguments: [String], timeout: Double = 120) throws -> Processes.Result {
        try Processes.run("nsenter", ["--net=/proc/\(namespace!.pid)/ns/net"] + arguments, timeout: timeout)
    }

    /// The pid of the namespace, for clients started otherwise.
    public var namespacePID: pid_t { namespace!.pid }

    public func stop() {
        stopGanesha()
        rpcbind?.stop()
        rpcbind = nil
        namespace?.stop()
        namespace = nil
    }

    deinit { stop() }
}
