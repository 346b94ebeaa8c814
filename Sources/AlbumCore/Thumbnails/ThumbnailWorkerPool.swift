import CVips
import Foundation
import Glibc

/// Something that makes a thumbnail file.
public protocol ThumbnailMaking: Sendable {
    func make(input: String, kind: ThumbnailMaker.Kind, size: Int, output: String) throws
}

/// Makes thumbnails in this process (command-line use, tests).
public struct InProcessThumbnails: ThumbnailMaking {
    public init() {}
    public func make(input: String, kind: ThumbnailMaker.Kind, size: Int, output: String) throws {
        try ThumbnailMaker.make(input: input, kind: kind, size: size, output: output)
    }
}

/// Worker processes that run the decoders (`albumfs thumbnail-worker`), so that a decoder
/// that crashes, hangs or eats all memory costs one thumbnail and never the mount. Each
/// worker takes one request at a time over a pipe; a worker that dies or overruns the
/// time limit is killed and replaced.
///
/// Protocol, one line each way: `KIND<TAB>SIZE<TAB>INPUT<TAB>OUTPUT` in, `ok` or
/// `fail<TAB>REASON` out.
public final class ThumbnailWorkerPool: ThumbnailMaking, @unchecked Sendable {
    let executable: String
    let arguments: [String]
    let timeout: Double
    private let slots: DispatchSemaphore
    private let idle = Locked<[Worker]>([])

    final class Worker {
        let pid: pid_t
        let input: Int32   // we write requests here
        let output: Int32  // we read replies here
        var buffer: [UInt8] = []

        init(pid: pid_t, input: Int32, output: Int32) {
            self.pid = pid
            self.input = input
            self.output = output
        }

        /// Ends the worker and reaps it; returns how it ended.
        @discardableResult
        func stop(kill signal: Int32? = nil) -> String {
            if let signal { Glibc.kill(pid, signal) }
            close(input)
            close(output)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            if status & 0x7f != 0 { return "killed by signal \(status & 0x7f)" }
            return "exited with status \((status >> 8) & 0xff)"
        }
    }

    /// `count` workers at most, each `executable arguments...`.
    public init(executable: String, arguments: [String], count: Int, timeout: Double = 60) {
        self.executable = executable
        self.arguments = arguments
        self.timeout = timeout
        slots = DispatchSemaphore(value: max(1, count))
    }

    /// Workers that are this very program (`albumfs thumbnail-worker`), one per core by
    /// default. `nice`: a lower CPU priority, for work nobody waits for.
    public static func ofThisProgram(executable: String? = nil, count: Int? = nil, nice: Int = 0) -> ThumbnailWorkerPool {
        let me = executable ?? (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return ThumbnailWorkerPool(executable: me, arguments: ["thumbnail-worker"] + (nice != 0 ? ["--nice", String(nice)] : []),
                                   count: count ?? ProcessInfo.processInfo.activeProcessorCount)
    }

    deinit {
        for worker in idle.withLock({ $0 }) { worker.stop() }
    }

    public func make(input: String, kind: ThumbnailMaker.Kind, size: Int, output: String) throws {
        slots.wait()
        defer { slots.signal() }
        let worker = try idle.withLock { $0.popLast() } ?? spawn()
        let request = "\(kind.rawValue)\t\(size)\t\(input)\t\(output)\n"
        let reply: String
        do {
            try request.utf8CString.withUnsafeBytes { raw in
                try FileIO.writeAll(worker.input, UnsafeRawBufferPointer(rebasing: raw.dropLast()), path: "thumbnail worker")
            }
            reply = try readLine(worker)
        } catch let error as WorkerFailure {
            let how = worker.stop(kill: SIGKILL)
            throw LibraryError.refused("\(error.reason) (the decoder process was \(how))")
        } catch {
            // Any other failure to talk to the worker (EPIPE: it died while idle) leaves
            // it useless too; stopped and reaped, or its pipes and its zombie would leak.
            worker.stop(kill: SIGKILL)
            throw error
        }
        idle.withLock { $0.append(worker) }
        if reply == "ok" { return }
        let reason = reply.hasPrefix("fail\t") ? String(reply.dropFirst(5)) : "unexpected reply from the thumbnail worker"
        throw LibraryError.refused(reason)
    }

    struct WorkerFailure: Error { let reason: String }

    /// One reply line, within the time limit.
    private func readLine(_ worker: Worker) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = worker.buffer.firstIndex(of: 10) {
                let line = String(decoding: worker.buffer[..<newline], as: UTF8.self)
                worker.buffer.removeSubrange(...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { throw WorkerFailure(reason: "the decoder took longer than \(Int(timeout)) s") }
            var descriptor = pollfd(fd: worker.output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining, 1) * 1000))
            if ready < 0 && errno != EINTR { throw WorkerFailure(reason: "poll failed") }
            if ready <= 0 { continue }
            let n = read(worker.output, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { throw WorkerFailure(reason: "the decoder process died") }
            worker.buffer += chunk[0..<n]
        }
    }

    /// A new worker, with its stdin and stdout on pipes and nothing else inherited.
    private func spawn() throws -> Worker {
        // A write to a worker that died must fail with EPIPE (handled in `make`), not
        // raise SIGPIPE, whose default ends this whole process: the mount (outside
        // libfuse's handlers) or `albumfs thumbnails`/`import`. Process-wide; workers
        // ignore it themselves anyway.
        signal(SIGPIPE, SIG_IGN)
        let a = try SystemCalls.pipeCloseOnExec(), b = try SystemCalls.pipeCloseOnExec()
        let toWorker = [a.read, a.write], fromWorker = [b.read, b.write]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toWorker[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromWorker[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(toWorker[0])
        close(fromWorker[1])
        guard rc == 0 else {
            close(toWorker[1])
            close(fromWorker[0])
            throw LibraryError.io("cannot start the thumbnail worker \(executable)", errno: rc)
        }
        return Worker(pid: pid, input: toWorker[1], output: fromWorker[0])
    }
}

/// The loop of `albumfs thumbnail-worker`: requests on stdin, replies on stdout.
public enum ThumbnailWorker {
    public static func serve(nice: Int = 0) -> Int32 {
        if nice != 0 { setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, Int32(nice)) }
        // A decompression bomb fails here instead of taking the machine's memory.
        var limit = rlimit(rlim_cur: 4 << 30, rlim_max: 4 << 30)
        setrlimit(Int32(RLIMIT_AS.rawValue), &limit)
        signal(SIGPIPE, SIG_IGN)
        MetadataReader.initialize()
        vips_concurrency_set(1)  // parallelism comes from several workers
        while let line = readLine(strippingNewline: true) {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            var reply = "ok"
            if fields.count == 4, let kind = ThumbnailMaker.Kind(rawValue: fields[0]), let size = Int(fields[1]) {
                do {
                    try ThumbnailMaker.make(input: fields[2], kind: kind, size: size, output: fields[3])
                } catch {
                    reply = "fail\t" + "\(error)".replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\t", with: " ")
                }
            } else {
                reply = "fail\tmalformed request"
            }
            FileHandle.standardOutput.write(Data((reply + "\n").utf8))
        }
        return 0
    }
}
