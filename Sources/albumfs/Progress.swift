import Foundation
import Glibc

/// A one-line progress bar on stderr, drawn only when stderr is a terminal.
final class ProgressBar: @unchecked Sendable {
    private let total: Int
    private let totalBytes: Int64
    private let label: String
    private let enabled: Bool
    private let start = Date()
    private let lock = NSLock()
    private var done = 0
    private var bytes: Int64 = 0
    private var lastDraw = Date.distantPast

    init(total: Int, totalBytes: Int64, label: String) {
        self.total = total
        self.totalBytes = totalBytes
        self.label = label
        self.enabled = isatty(2) != 0
    }

    func advance(files: Int = 1, bytes added: Int64) {
        lock.lock()
        defer { lock.unlock() }
        done += files
        bytes += added
        let now = Date()
        if enabled && (now.timeIntervalSince(lastDraw) > 0.1 || done == total) {
            lastDraw = now
            draw(now)
        }
    }

    private func draw(_ now: Date) {
        let elapsed = max(now.timeIntervalSince(start), 0.001)
        let fraction = total > 0 ? Double(done) / Double(total) : 1
        let width = 24
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let line = String(format: "\r%@ [%@] %d/%d  %.1f files/s  %@/s ", label, bar, done, total,
                          Double(done) / elapsed, formatBytes(Int64(Double(bytes) / elapsed)))
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Ends the bar's line.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        if enabled && total > 0 { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    var elapsed: TimeInterval { Date().timeIntervalSince(start) }
}
