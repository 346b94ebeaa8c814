import Foundation
import Glibc

/// The daemon's log: one line per event. In the foreground it goes to stderr; in the
/// background to syslog (the journal), or to a file given with `-o log=PATH`.
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
    }

    struct State {
        var destination: Destination = .stderr
        var minimum: Level = .info
    }

    private static let state = Locked(State())

    public static func configure(destination: Destination, minimum: Level) {
        if case .syslog = destination { openlog("albumfs", LOG_PID, LOG_DAEMON) }
        state.withLock { $0 = State(destination: destination, minimum: minimum) }
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

    private static func write(_ level: Level, _ message: () -> String) {
        let (destination, minimum) = state.withLock { ($0.destination, $0.minimum) }
        guard level >= minimum else { return }
        let text = message().replacingOccurrences(of: "\n", with: "\\n")
        switch destination {
        case .syslog:
            text.withCString { syslog_message(level.syslogPriority, $0) }
        case .stderr, .file:
            let fd: Int32
            if case .file(let f) = destination { fd = f } else { fd = 2 }
            let line = "\(timestamp()) albumfs[\(getpid())] \(level.label): \(text)\n"
            line.withCString { _ = Glibc.write(fd, $0, strlen($0)) }
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
