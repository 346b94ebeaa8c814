import Foundation
import Glibc

/// The daemon's log: one line per event. In the foreground it goes to stderr; in the
/// background to syslog (the journal) when something listens on /dev/log, else to
/// `LIBRARY/logs/albumfs.log` (kept under 8 MiB, the one before as `.1`); or to a file
/// given with `-o log=PATH`. In the background, stderr (where the Swift runtime writes why
/// it stopped the process) is the log file too (`sendStandardErrorHere`).
public enum Log {
    public enum Level: Int, Sendable, Comparable {
        case debug = 0, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var label: String { ["debug", "info", "warning", "error"][rawValue] }
        var syslogPriority: Int32 { [LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERR][rawValue] }
    }

    public enum Destination: Sendable {
        case stderr
        case syslog
        case file(Int32)
        /// A file of the library's that starts again when it grows past `limit` bytes.
        case rotating(path: String, fd: Int32, limit: Int64)
    }

    struct State {
        var destination: Destination = .stderr
        var minimum: Level = .info
        var linesSinceCheck = 0
        /// stderr is the log file (`sendStandardErrorHere`), and follows it when it starts again.
        var standardErrorFollows = false
    }

    private static let state = Locked(State())

    public static func configure(destination: Destination, minimum: Level) {
        if case .syslog = destination { openlog("albumfs", LOG_PID, LOG_DAEMON) }
        state.withLock { $0 = State(destination: destination, minimum: minimum) }
    }

    /// Points stderr at the log file, in a daemon whose stderr went to /dev/null: what the
    /// Swift runtime writes when a trap stops the process (its reason and backtrace) then
    /// lands beside the log's last lines, where a user looks, instead of nowhere.
    public static func sendStandardErrorHere() {
        state.withLock { state in
            switch state.destination {
            case .file(let fd), .rotating(_, let fd, _):
                _ = dup2(fd, 2)
                state.standardErrorFollows = true
            case .stderr, .syslog:
                break
            }
        }
    }

    /// Whether a syslog daemon listens (no container and not every machine has one: a
    /// message sent to nobody is lost).
    public static func syslogListens() -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in "/dev/log".utf8.enumerated() { raw[i] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
        }
    }

    /// The log file of a library, rotated first if it is over `limit`.
    public static func openRotating(_ path: String, limit: Int64 = 8 << 20) throws -> Destination {
        rotateIfFull(path, limit: limit)
        return .rotating(path: path, fd: try openFile(path), limit: limit)
    }

    private static func rotateIfFull(_ path: String, limit: Int64) {
        var st = stat()
        guard stat(path, &st) == 0, Int64(st.st_size) >= limit else { return }
        _ = rename(path, path + ".1")
    }

    /// Opens (appends to) a log file for `configure(destination: .file(...))`.
    public static func openFile(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LibraryError.io("cannot open the log file \(path)", errno: errno) }
        return fd
    }

    public static func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public static func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public static func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    public static func error(_ message: @autoclosure () -> String) { write(.error, message) }

    public static var isDebug: Bool { state.withLock { $0.minimum == .debug } }

    public static var isSyslog: Bool {
        state.withLock { if case .syslog = $0.destination { return true } else { return false } }
    }

    private static func write(_ level: Level, _ message: () -> String) {
        let (destination, minimum) = state.withLock { ($0.destination, $0.minimum) }
        guard level >= minimum else { return }
        let text = message().replacingOccurrences(of: "\n", with: "\\n")
        switch destination {
        case .syslog:
            text.withCString { syslog_message(level.syslogPriority, $0) }
        case .stderr, .file, .rotating:
            let fd: Int32
            switch destination {
            case .file(let f), .rotating(_, let f, _): fd = f
            default: fd = 2
            }
            let line = "\(timestamp()) albumfs[\(getpid())] \(level.label): \(text)\n"
            line.withCString { _ = Glibc.write(fd, $0, strlen($0)) }
            if case .rotating(let path, _, let limit) = destination { checkRotation(path, limit: limit) }
        }
    }

    /// Every few hundred lines, a log over its limit starts again (the full one kept as
    /// `.1`).
    private static func checkRotation(_ path: String, limit: Int64) {
        state.withLock { state in
            state.linesSinceCheck += 1
            guard state.linesSinceCheck >= 256, case .rotating(_, let fd, _) = state.destination else { return }
            state.linesSinceCheck = 0
            var st = stat()
            guard fstat(fd, &st) == 0, Int64(st.st_size) >= limit else { return }
            rotateIfFull(path, limit: limit)
            guard let fresh = try? openFile(path) else { return }
            state.destination = .rotating(path: path, fd: fresh, limit: limit)
            if state.standardErrorFollows { _ = dup2(fresh, 2) }
            close(fd)
        }
    }

    private static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = ts.tv_sec
        var tm = Glibc.tm()
        gmtime_r(&t, &tm)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(tm.tm_year) + 1900, Int(tm.tm_mon) + 1,
                      Int(tm.tm_mday), Int(tm.tm_hour), Int(tm.tm_min), Int(tm.tm_sec), Int(ts.tv_nsec / 1_000_000))
    }
}

/// syslog is variadic; vsyslog is not reachable from Swift either, so pass "%s".
private func syslog_message(_ priority: Int32, _ text: UnsafePointer<CChar>) {
    withVaList([text]) { vsyslog(priority, "%s", $0) }
}

/// Times the phases of one operation for the debug log (`-d`); free otherwise.
public struct PhaseClock {
    private var last: Int64
    private var phases: [(String, Int64)] = []
    private let enabled: Bool

    public init() {
        enabled = Log.isDebug  // read once: it takes the log's lock
        last = enabled ? nowNanoseconds() : 0
    }

    public mutating func mark(_ phase: String) {
        guard enabled else { return }
        let now = nowNanoseconds()
        phases.append((phase, now - last))
        last = now
    }

    public func log(_ what: String) {
        guard enabled, !phases.isEmpty else { return }
        Log.debug("\(what): " + phases.map { "\($0.0) \($0.1 / 1000) µs" }.joined(separator: ", "))
    }
}
