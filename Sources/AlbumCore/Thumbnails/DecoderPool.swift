import CSystem
import CVips
import Foundation
import Glibc

/// Why a decoder gave no result.
public enum DecoderError: Error, CustomStringConvertible, Equatable {
    /// The decoder's own verdict on the bytes: they cannot be decoded. Permanent.
    case refused(String)
    /// The decoder process died on these bytes (a crash, the memory limit).
    case crashed(String)
    /// Something that passes: the decoder ran out of time (the machine was busy), could
    /// not be started, or answered what this program does not understand (an upgrade).
    case transient(String)

    public var description: String {
        switch self {
        case .refused(let why): return why
        case .crashed(let why): return "the decoder process died (\(why))"
        case .transient(let why): return why
        }
    }

    /// Whether the failure is the bytes' and not the moment's.
    public var isPermanent: Bool {
        if case .refused = self { return true }
        return false
    }
}

/// Something that decodes files: thumbnails and metadata.
public protocol Decoding: MetadataReading {
    /// A JPEG of `file` at most `size` pixels on its longest side, upright.
    func thumbnail(of file: FileDescriptor, kind: ThumbnailMaker.Kind, size: Int) throws -> [UInt8]
    /// How many decodes it runs at once (more callers wait their turn).
    var lanes: Int { get }
}

extension Decoding {
    public var lanes: Int { 1 }
}

/// Decodes in this process (command-line tools, tests).
public struct InProcessDecoder: Decoding {
    public init() {}

    public func thumbnail(of file: FileDescriptor, kind: ThumbnailMaker.Kind, size: Int) throws -> [UInt8] {
        do {
            return try ThumbnailMaker.make(input: "/proc/self/fd/\(file.raw)", kind: kind, size: size)
        } catch LibraryError.refused(let why) {
            throw DecoderError.refused(why)
        }
    }

    public func metadata(of file: FileDescriptor, format: MediaFormat) throws -> MediaMetadata {
        try InProcessMetadata().metadata(of: file, format: format)
    }

    public func sidecar(of file: FileDescriptor) throws -> MediaMetadata {
        try InProcessMetadata().sidecar(of: file)
    }
}

/// Worker processes that run the decoders (`albumfs decoder-worker`), so that a decoder
/// that crashes, hangs or eats all memory costs one file and never the mount: libvips,
/// libheif, exiv2 and FFmpeg parse untrusted bytes only there. Each worker takes one
/// request at a time over a pipe; one that dies or overruns the time limit is killed and
/// replaced. Workers read the file the daemon opened (`/proc/PID/fd/N`), never a path of
/// their own, and send their results back over the pipe: they write no file.
///
/// Protocol: a request line `thumb<TAB>KIND<TAB>SIZE<TAB>PATH` or
/// `meta<TAB>FORMAT<TAB>PATH`; a reply line `ok<TAB>LENGTH` followed by LENGTH bytes (a
/// JPEG, or the metadata as `MediaMetadata.encoded`), or `refused<TAB>REASON`.
public final class DecoderPool: Decoding, @unchecked Sendable {
    let executable: String
    let arguments: [String]
    let timeout: Double
    private let slots: DispatchSemaphore
    private let idle = Locked<[Worker]>([])

    final class Worker {
        let pid: pid_t
        let input: FileDescriptor    // we write requests here
        let output: FileDescriptor   // we read replies here
        var buffer: [UInt8] = []

        init(pid: pid_t, input: FileDescriptor, output: FileDescriptor) {
            self.pid = pid
            self.input = input
            self.output = output
        }

        /// Ends the worker and reaps it; returns how it ended.
        @discardableResult
        func stop(kill signal: Int32? = nil) -> String {
            if let signal { Glibc.kill(pid, signal) }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            if status & 0x7f != 0 { return "killed by signal \(status & 0x7f)" }
            return "exited with status \((status >> 8) & 0xff)"
        }
    }

    /// `count` workers at most, each `executable arguments...`.
    public init(executable: String, arguments: [String], count: Int, timeout: Double = 60) {
        self.executable = executable
        self.arguments = arguments
        self.timeout = timeout
        lanes = max(1, count)
        slots = DispatchSemaphore(value: max(1, count))
    }

    public let lanes: Int

    /// Workers that are this very program (`albumfs decoder-worker`), one per core by
    /// default. The program is the running image (`/proc/self/exe`), so that a binary
    /// upgraded under a running daemon never answers it in another protocol. `nice`: a
    /// lower CPU priority, for work nobody waits for.
    public static func ofThisProgram(executable: String? = nil, count: Int? = nil, nice: Int = 0,
                                     timeout: Double = 60) -> DecoderPool {
        DecoderPool(executable: executable ?? "/proc/self/exe",
                    arguments: ["decoder-worker"] + (nice != 0 ? ["--nice", String(nice)] : []),
                    count: count ?? ProcessInfo.processInfo.activeProcessorCount, timeout: timeout)
    }

    deinit {
        for worker in idle.withLock({ $0 }) {
            _ = worker.input  // closing its stdin ends it
            worker.stop(kill: SIGKILL)
        }
    }

    public func thumbnail(of file: FileDescriptor, kind: ThumbnailMaker.Kind, size: Int) throws -> [UInt8] {
        try request("thumb\t\(kind.rawValue)\t\(size)\t\(file.procPath)", keeping: file)
    }

    public func metadata(of file: FileDescriptor, format: MediaFormat) throws -> MediaMetadata {
        let payload: [UInt8]
        do {
            payload = try request("meta\t\(format.rawValue)\t\(file.procPath)", keeping: file)
        } catch DecoderError.refused(let why) {
            throw LibraryError.refused(why)
        }
        guard let metadata = MediaMetadata(encoded: payload, format: format) else {
            throw DecoderError.transient("the decoder's metadata could not be read")
        }
        return metadata
    }

    public func sidecar(of file: FileDescriptor) throws -> MediaMetadata {
        let payload: [UInt8]
        do {
            payload = try request("side\txmp\t\(file.procPath)", keeping: file)
        } catch DecoderError.refused(let why) {
            throw LibraryError.refused(why)
        }
        guard let metadata = MediaMetadata(encoded: payload, format: .jpeg) else {
            throw DecoderError.transient("the decoder's reading of the sidecar could not be read")
        }
        return metadata
    }

    /// One request to an idle worker (or a new one) and its reply.
    private func request(_ line: String, keeping file: FileDescriptor) throws -> [UInt8] {
        slots.wait()
        defer { slots.signal() }
        let worker: Worker
        do {
            worker = try idle.withLock { $0.popLast() } ?? spawn()
        } catch let error as LibraryError where DescriptorLimit.isReached(error.errno) {
            throw error  // not the decoder's fault, nor the file's (`Library.classify`)
        } catch {
            throw DecoderError.transient("the decoder process could not be started: \(error)")
        }
        let reply: [UInt8]
        do {
            try Array((line + "\n").utf8).withUnsafeBytes { try worker.input.append($0) }
            reply = try withExtendedLifetime(file) { try readReply(worker) }
        } catch let error as DecoderError {
            let how = worker.stop(kill: SIGKILL)
            if case .crashed = error { throw DecoderError.crashed(how) }
            throw error
        } catch {
            // EPIPE: it died while idle (or at once). Stopped and reaped either way, or its
            // pipes and its zombie would leak.
            let how = worker.stop(kill: SIGKILL)
            throw DecoderError.crashed(how)
        }
        idle.withLock { $0.append(worker) }
        return reply
    }

    /// Reads one reply within the time limit.
    private func readReply(_ worker: Worker) throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        func fill() throws {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let remaining = deadline.timeIntervalSinceNow
                if remaining <= 0 { throw DecoderError.transient("the decoder took longer than \(Int(timeout)) s") }
                var descriptor = pollfd(fd: worker.output.raw, events: Int16(POLLIN), revents: 0)
                let ready = poll(&descriptor, 1, Int32(min(remaining, 1) * 1000))
                if ready < 0 && errno != EINTR { throw DecoderError.transient("poll failed: \(String(cString: strerror(errno)))") }
                if ready <= 0 { continue }
                let n = read(worker.output.raw, &chunk, chunk.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { throw DecoderError.crashed("it ended") }
                worker.buffer += chunk[0..<n]
                return
            }
        }
        while worker.buffer.firstIndex(of: 10) == nil { try fill() }
        let newline = worker.buffer.firstIndex(of: 10)!
        let line = String(decoding: worker.buffer[..<newline], as: UTF8.self)
        worker.buffer.removeSubrange(...newline)
        let fields = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        switch fields.first {
        case "ok":
            guard fields.count == 2, let length = Int(fields[1]), length >= 0 else {
                throw DecoderError.transient("the decoder answered in a protocol this albumfs does not know")
            }
            while worker.buffer.count < length { try fill() }
            let payload = Array(worker.buffer.prefix(length))
            worker.buffer.removeFirst(length)
            return payload
        case "refused":
            throw DecoderError.refused(fields.count == 2 ? fields[1] : "cannot be decoded")
        default:
            throw DecoderError.transient("the decoder answered in a protocol this albumfs does not know")
        }
    }

    /// A new worker, with its stdin and stdout on pipes and nothing else inherited.
    private func spawn() throws -> Worker {
        // A write to a worker that died must fail with EPIPE (handled in `request`), not
        // raise SIGPIPE, whose default ends this whole process.
        signal(SIGPIPE, SIG_IGN)
        let toWorker = try SystemCalls.pipe(), fromWorker = try SystemCalls.pipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toWorker.read.raw, 0)
        posix_spawn_file_actions_adddup2(&actions, fromWorker.write.raw, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else: a worker must hold no descriptor of the daemon's (a pipe its
        // caller waits on to see it end).
        _ = shim_spawn_close_from(&actions, 3)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        // A decoder that crashes dies at once: no Swift backtrace first (nobody reads it,
        // and it would hold the request until its time limit).
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard rc == 0 else { throw LibraryError.io("posix_spawn \(executable)", errno: rc) }
        // The child's ends close here with their FileDescriptors; ours stay.
        return Worker(pid: pid, input: toWorker.write, output: fromWorker.read)
    }
}

/// The loop of `albumfs decoder-worker`: requests on stdin, replies on stdout.
public enum DecoderWorker {
    /// Fault injection for the tests: a worker whose environment names a marker dies
    /// (SIGSEGV) on any file that holds it in its first 64 KiB, as a parser crashing on
    /// crafted bytes would; or hangs making its thumbnail, as a decoder looping forever
    /// would.
    static let crashMarker = ProcessInfo.processInfo.environment["ALBUMFS_TEST_CRASH_MARKER"]
    static let hangMarker = ProcessInfo.processInfo.environment["ALBUMFS_TEST_HANG_MARKER"]

    /// Whether this program was built with AddressSanitizer or ThreadSanitizer.
    static var runsUnderSanitizer: Bool {
        let handle = dlopen(nil, RTLD_NOW)
        defer { if let handle { dlclose(handle) } }
        return dlsym(handle, "__asan_init") != nil || dlsym(handle, "__tsan_init") != nil
    }

    public static func serve(nice: Int = 0) -> Int32 {
        // A worker never outlives the daemon that started it, even one stuck in a decoder
        // (a closed stdin ends the others). Not PR_SET_PDEATHSIG: that fires when the
        // thread that spawned the worker ends, and the daemon's threads come and go.
        let parent = getppid()
        Thread.detachNewThread {
            while getppid() == parent { sleep(1) }
            _exit(0)
        }
        if nice != 0 { setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, Int32(nice)) }
        // A decompression bomb fails here instead of taking the machine's memory. (Not in
        // a sanitizer build, whose shadow memory alone is terabytes of address space.)
        if !runsUnderSanitizer {
            var limit = rlimit(rlim_cur: 4 << 30, rlim_max: 4 << 30)
            setrlimit(Int32(RLIMIT_AS.rawValue), &limit)
        }
        // A worker holds a few files; the limit the daemon raised would make exiftool's
        // start (Foundation's `Process`) close up to a million descriptors.
        DescriptorLimit.lowered(to: 1024)
        signal(SIGPIPE, SIG_IGN)
        MetadataReader.initialize()
        vips_concurrency_set(1)  // parallelism comes from several workers
        let output = FileDescriptor(adopting: dup(1), label: "stdout")
        while let line = readLine(strippingNewline: true) {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            var reply: [UInt8]
            do {
                let payload = try answer(fields)
                reply = Array("ok\t\(payload.count)\n".utf8) + payload
            } catch {
                let reason = "\(error)".replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\t", with: " ")
                reply = Array("refused\t\(reason)\n".utf8)
            }
            do { try reply.withUnsafeBytes { try output.append($0) } } catch { return 1 }
        }
        return 0
    }

    private static func answer(_ fields: [String]) throws -> [UInt8] {
        guard let op = fields.first, let path = fields.last, fields.count >= 3 else {
            throw LibraryError.refused("malformed request")
        }
        if crashMarker != nil || hangMarker != nil,
           let head = try? SystemCalls.open(path, flags: O_RDONLY).read(count: 65536, at: 0) {
            let text = String(decoding: head, as: UTF8.self)
            if let marker = crashMarker, !marker.isEmpty, text.contains(marker) {
                signal(SIGSEGV, SIG_DFL)
                raise(SIGSEGV)
            }
            if let marker = hangMarker, !marker.isEmpty, op == "thumb", text.contains(marker) { while true { sleep(60) } }
        }
        switch op {
        case "thumb":
            guard fields.count == 4, let kind = ThumbnailMaker.Kind(rawValue: fields[1]), let size = Int(fields[2]) else {
                throw LibraryError.refused("malformed request")
            }
            return try ThumbnailMaker.make(input: path, kind: kind, size: size)
        case "meta":
            guard fields.count == 3, let format = MediaFormat(rawValue: fields[1]) else {
                throw LibraryError.refused("malformed request")
            }
            return try MetadataReader.read(path: path, format: format).encoded
        case "side":
            return try MetadataReader.readSidecar(path: path).encoded
        default:
            throw LibraryError.refused("unknown request \(op)")
        }
    }
}
