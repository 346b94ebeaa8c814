import AlbumCore
import AlbumFSCore
import CFuse
import CFuseInit
import CFuseRing
import Foundation
import Glibc

/// Everything `albumfs mount` was asked for.
public struct MountRequest: Sendable {
    public var library: String
    public var mountpoint: String
    public var foreground = false
    public var debug = false
    public var options = MountOptions()
    /// Options handed to libfuse and mount(2): allow_other, default_permissions, ro, ...
    public var kernelOptions: [String] = []
    public var logPath: String?
    /// The program that runs `decoder-worker` (default: this one).
    public var workerExecutable: String?
    /// Whether `umask=` was given (with `allow_other` the default is stricter).
    public var umaskGiven = false

    public init(library: String, mountpoint: String) {
        self.library = library
        self.mountpoint = mountpoint
    }
}

/// A mount that could not start: one line saying what is wrong and what to do.
public struct MountError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

public enum FuseMount {
    /// Mounts and serves until unmounted (fusermount3 -u, umount) or signalled (SIGTERM,
    /// SIGINT, SIGHUP). Without `foreground`, returns in the parent once the mount is up
    /// and keeps serving in a background child.
    public static func run(_ request: MountRequest) throws {
        // Descriptors the caller left open (a pipe of a shell or a test harness): the
        // background daemon must not hold them, or the caller never sees end-of-file.
        let inherited = openDescriptors()
        try checkMountpoint(request.mountpoint)
        // The lock is taken before the fork (flock survives it); the database is opened
        // once to check it, closed, and opened again in the serving process, because
        // SQLite connections must not cross a fork.
        let lock: LibraryLock
        do {
            lock = try LibraryLock(path: request.library, host: request.options.host)
            _ = try Library.open(at: request.library, access: .exclusive, lock: lock, host: request.options.host)
        } catch let error as LibraryError {
            throw MountError(error.description)
        }

        var args = ["albumfs"]
        if request.debug { args.append("-d") }
        var kernel = ["fsname=\(request.library)", "subtype=albumfs"] + request.kernelOptions
        var options = request.options
        // Set-id bits and device files mean nothing in a photo library: never honoured.
        for forced in ["nosuid", "nodev"] where !kernel.contains(forced) { kernel.append(forced) }
        if kernel.contains("allow_other") {
            // Other users get exactly what the modes allow, never more: the kernel checks
            // them on every access.
            options.allowOther = true
            if !kernel.contains("default_permissions") { kernel.append("default_permissions") }
            if !request.umaskGiven { options.umask = 0o027 }
        }
        if options.readOnly && !kernel.contains("ro") { kernel.append("ro") }
        try checkWhatFusermountAllows(request.mountpoint, kernel)
        args += ["-o", kernel.map { $0.replacingOccurrences(of: ",", with: "\\,") }.joined(separator: ",")]

        let placeholder = FileSystemBox()
        let userdata = Unmanaged.passRetained(placeholder).toOpaque()
        var ops = makeOperations()
        let session: OpaquePointer? = withCStrings(args) { argv in
            shim_session_new(Int32(args.count), argv, &ops, userdata)
        }
        guard let session else {
            throw MountError("cannot start a FUSE session (options: \(kernel.joined(separator: ","))); see the message above")
        }
        defer { fuse_session_destroy(session) }
        guard fuse_session_mount(session, request.mountpoint) == 0 else {
            throw MountError("cannot mount on \(request.mountpoint); is /dev/fuse there and fusermount3 installed? (see the message above)")
        }
        if !request.foreground && request.logPath == nil && !Log.syslogListens() {
            // No syslog here: say once, while a terminal may still see it, where the
            // reasons for refusals go.
            FileHandle.standardError.write(Data("albumfs: no syslog daemon here; the log (the reason for every refusal) is \(logDescription(request))\n".utf8))
        }
        if fuse_daemonize(request.foreground ? 1 : 0) != 0 {
            fuse_session_unmount(session)
            throw MountError("cannot go to the background")
        }

        // From here on: the serving process.
        if !request.foreground {
            for fd in inherited { close(fd) }
        }
        if request.foreground && ProcessInfo.processInfo.environment["ALBUMFS_EXIT_WITH_PARENT"] != nil {
            // Tests run the daemon as a child: if the test runner dies, the daemon gets
            // SIGTERM and unmounts instead of leaving a mount behind.
            _ = shim_exit_with_parent(SIGTERM)
        }
        configureLog(request)
        // The serving process builds the whole core (library, decoders, schedule) and
        // hands it to the bridge, which only translates.
        let fs: FileSystem
        do {
            fs = try FileSystem.forMount(library: request.library, lock: lock, options: options,
                                         workerExecutable: request.workerExecutable)
        } catch {
            Log.error("cannot open the library \(request.library): \(error)")
            fuse_session_unmount(session)
            throw MountError("cannot open the library: \(error)")
        }
        let bridge = Bridge(fs: fs)
        placeholder.bridge = bridge

        guard fuse_set_signal_handlers(session) == 0 else {
            fuse_session_unmount(session)
            throw MountError("cannot install signal handlers")
        }
        // INIT is answered here rather than by the loop (see CFuseInit/init.c): lookups of
        // one folder run side by side, and with passthrough wanted read-only opens of
        // photos are read by the kernel from the blob itself.
        let fault: Int32 = switch ProcessInfo.processInfo.environment["ALBUMFS_TEST_INIT_FAULT"] {
        case "restore": 1
        case "reply": 2
        default: 0
        }
        // Backing files need CAP_SYS_ADMIN: without it, asking would only cost a refused
        // ioctl at every open.
        let wantsPassthrough = request.options.passthrough ?? (geteuid() == 0)
        // FUSE over io_uring: its rings are made before INIT is answered, because once
        // the reply asks for it the kernel holds every request until they are registered.
        let offered = albumfs_ring_offered() != 0
        var ring: OpaquePointer?
        if request.options.ioUring != false && offered {
            ring = albumfs_ring_prepare(session)
            if ring == nil { Log.warning("the kernel offers FUSE over io_uring, but no io_uring could be made (\(String(cString: strerror(errno)))); requests go through /dev/fuse") }
        } else if request.options.ioUring == true {
            Log.warning("io_uring asked for, but this kernel does not offer FUSE over io_uring (Linux 6.14 or later, with /sys/module/fuse/parameters/enable_uring set to Y); requests go through /dev/fuse")
        }
        var maxPayload = 0
        let granted = albumfs_answer_init(session, wantsPassthrough ? 1 : 0, ring != nil ? 1 : 0, fault, &maxPayload)
        guard granted >= 0 else {
            let reason = errno == EPROTO ? "the kernel and libfuse do not agree on a protocol" : String(cString: strerror(errno))
            Log.error("the kernel's INIT could not be answered: \(reason)")
            if let ring { albumfs_ring_discard(ring) }
            fuse_remove_signal_handlers(session)
            fuse_session_unmount(session)
            throw MountError("cannot start the FUSE session: INIT failed (\(reason))")
        }
        let passthrough = granted & ALBUMFS_INIT_PASSTHROUGH.rawValue != 0
        // Whether requests come through the ring (its threads may have started even when
        // the ring did not, and are stopped at the end either way).
        var ringServes = false
        if let prepared = ring {
            if granted & ALBUMFS_INIT_URING.rawValue == 0 {
                albumfs_ring_discard(prepared)
                ring = nil
            } else if albumfs_ring_start(prepared, maxPayload) != 0 {
                // The kernel has been told the registration failed: it serves /dev/fuse.
                Log.warning("FUSE over io_uring could not start (\(String(cString: strerror(errno)))); requests go through /dev/fuse")
            } else {
                ringServes = true
            }
        }
        // INIT is answered: from here the notifier may write to /dev/fuse.
        bridge.session = session
        if passthrough {
            fs.enablePassthrough(SessionBackingFiles(session: session))
        } else if request.options.passthrough == true {
            Log.warning("passthrough asked for, but this kernel does not offer FUSE passthrough; reads go through the daemon")
        }
        let modes = [passthrough ? "reads in passthrough" : nil, ringServes ? "requests through io_uring" : nil].compactMap { $0 }
        Log.info("mounted \(request.library) on \(request.mountpoint)" + (modes.isEmpty ? "" : " (\(modes.joined(separator: ", ")))"))
        if DescriptorLimit.current < DescriptorLimit.enough {
            Log.warning("albumfs may hold only \(DescriptorLimit.current) files open (its hard limit, RLIMIT_NOFILE), one for each file open through the mount: beyond that, opens fail with ENFILE; start it with a higher hard limit (ulimit -Hn, LimitNOFILE= in a systemd unit)")
        }
        let rc = shim_loop_mt(session, 1, 8, 16)
        if let ring {
            let refused = albumfs_ring_refused(ring)
            if refused != 0 {
                Log.warning("the kernel refused the io_uring queues (\(String(cString: strerror(refused)))); every request went through /dev/fuse")
            } else if ringServes {
                Log.info("\(albumfs_ring_served(ring)) requests were served through io_uring")
            }
            albumfs_ring_stop(ring)
        }
        if let durable = fs.library.durableCommits, durable.commits > 0 {
            Log.info("\(durable.commits) durable changes were written to disk in \(durable.syncs) syncs of the database log")
        }
        fs.stopSchedule()
        bridge.stopWaits()
        fuse_remove_signal_handlers(session)
        fuse_session_unmount(session)
        Log.info("unmounted \(request.mountpoint)\(rc != 0 ? " (loop ended with \(rc))" : "")")
        withExtendedLifetime(lock) {}
    }

    /// A missing, non-folder, busy or non-empty mountpoint is refused before anything
    /// is mounted.
    static func checkMountpoint(_ path: String) throws {
        let found: stat?
        do {
            found = try SystemCalls.status(path)
        } catch LibraryError.io(_, let code) where code == ENOTCONN {
            throw MountError("\(path) is a dead FUSE mount (its daemon is gone); unmount it first: fusermount3 -u \(path)")
        } catch {
            throw MountError("cannot use mountpoint \(path): \(error)")
        }
        guard let st = found else { throw MountError("mountpoint \(path) does not exist; create it first: mkdir -p \(path)") }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw MountError("mountpoint \(path) is not a folder") }
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        if let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) {
            for line in mounts.split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count > 1 else { continue }
                let target = String(fields[1]).replacingOccurrences(of: "\\040", with: " ")
                if target == real {
                    throw MountError("\(path) is busy: something is already mounted there (\(fields[0])); unmount it first")
                }
            }
        }
        let names: [[UInt8]]
        do { names = try SystemCalls.names(in: path) } catch { throw MountError("cannot read mountpoint \(path): \(error)") }
        guard names.isEmpty else { throw MountError("mountpoint \(path) is not empty; mount on an empty folder") }
    }

    /// A user without root mounts through fusermount3, which refuses what that user may
    /// not do in a message that names no fix (and then libfuse's own line): said here
    /// first, in one line.
    static func checkWhatFusermountAllows(_ mountpoint: String, _ kernel: [String]) throws {
        guard geteuid() != 0, !hasCapSysAdmin() else { return }  // libfuse then mounts by itself
        if kernel.contains("allow_other") || kernel.contains("allow_root"), !fuseConfAllowsOther() {
            throw MountError("allow_other needs the line user_allow_other in /etc/fuse.conf (the administrator adds it), or a mount by root")
        }
        if access(mountpoint, W_OK) != 0 {
            throw MountError("cannot mount on \(mountpoint): a mount without root needs a folder you may write to (make it yours, or pick one of yours)")
        }
    }

    /// Whether this process may mount by itself (CAP_SYS_ADMIN, bit 21 of its effective
    /// capabilities), without fusermount3.
    static func hasCapSysAdmin() -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let bits = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
        return bits & (1 << 21) != 0
    }

    /// Whether /etc/fuse.conf lets users mount with allow_other.
    static func fuseConfAllowsOther() -> Bool {
        guard let text = try? String(contentsOfFile: "/etc/fuse.conf", encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "user_allow_other" }
    }

    /// Open file descriptors above stderr.
    static func openDescriptors() -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
        // The listing's own descriptor is in it, and closed by now: keep only live ones.
        return entries.compactMap { Int32($0) }.filter { $0 > 2 && fcntl($0, F_GETFD) != -1 }
    }

    /// The library's own log file, `LIBRARY/logs/albumfs.log`.
    static func libraryLog(_ library: String) throws -> Log.Destination {
        let folder = Library.absolute(.logs, inLibrary: library)
        if mkdir(folder, 0o700) != 0 && errno != EEXIST { throw LibraryError.io("mkdir \(folder)", errno: errno) }
        return try Log.openRotating(Library.absolute(.log("albumfs.log"), inLibrary: library))
    }

    /// Where a mount logs.
    static func logDescription(_ request: MountRequest) -> String {
        if let path = request.logPath { return path }
        if request.foreground { return "stderr" }
        return Log.syslogListens() ? "syslog" : Library.absolute(.log("albumfs.log"), inLibrary: request.library)
    }

    static func configureLog(_ request: MountRequest) {
        let level: Log.Level = request.debug ? .debug : .info
        if let path = request.logPath, let fd = try? Log.openFile(path) {
            Log.configure(destination: .file(fd), minimum: level)
        } else if request.foreground {
            Log.configure(destination: .stderr, minimum: level)
        } else if Log.syslogListens() {
            Log.configure(destination: .syslog, minimum: level)
        } else if let destination = try? libraryLog(request.library) {
            // No syslog daemon (most containers): reasons sent there would be lost.
            Log.configure(destination: destination, minimum: level)
        } else {
            Log.configure(destination: .syslog, minimum: level)
        }
        guard !request.foreground else { return }
        // A trap's reason and backtrace go to stderr, which the daemon's is no longer: to
        // the log file, or with syslog to the library's log file (else they were lost).
        Log.sendStandardErrorHere()
        if Log.isSyslog, case .rotating(_, let fd, _)? = try? libraryLog(request.library) {
            _ = dup2(fd, 2)
            close(fd)
        }
    }
}

/// The userdata given to libfuse before the filesystem exists (the session must be
/// created, and the process forked, before the library is opened).
final class FileSystemBox: @unchecked Sendable {
    var bridge: Bridge?
}

/// Runs `body` with a C argv for `strings`.
func withCStrings<R>(_ strings: [String], _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return pointers.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
}

/// Backing files registered on the session's /dev/fuse descriptor. The kernel refuses
/// them without CAP_SYS_ADMIN: a mount by an ordinary user reads through the daemon.
final class SessionBackingFiles: BackingFiles, @unchecked Sendable {
    let session: OpaquePointer
    private let refusedOnce = Locked(false)

    init(session: OpaquePointer) { self.session = session }

    func register(_ file: FileDescriptor) -> Int32? {
        let id = shim_backing_open(session, file.raw)
        if id > 0 { return id }
        let reason = String(cString: strerror(errno))
        let first = refusedOnce.withLock { seen -> Bool in
            defer { seen = true }
            return !seen
        }
        if first { Log.warning("FUSE passthrough refused by the kernel (\(reason)); reads go through the daemon") }
        return nil
    }

    func unregister(_ id: Int32) {
        if shim_backing_close(session, id) != 0 {
            Log.warning("closing passthrough backing file \(id): \(String(cString: strerror(errno)))")
        }
    }
}
