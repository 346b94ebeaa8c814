import AlbumCore
import Glibc

/// Which process a thread belongs to. A FUSE request names the thread that made it
/// (its `pid` is the thread's id); whether two requests come from one process is a
/// question of their thread groups, which only /proc answers.
enum Processes {
    /// The process (thread group id) of thread `tid`; nil when it cannot be known: 0
    /// (a request from outside the mount's pid namespace), or a thread already gone.
    static func process(ofThread tid: Int32) -> Int32? {
        guard tid > 0 else { return nil }
        guard let status = try? SystemCalls.open("/proc/\(tid)/status", flags: O_RDONLY),
              let bytes = try? status.read(count: 4096, at: 0) else { return nil }
        for line in bytes.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("Tgid:".utf8)) {
            let digits = line.dropFirst(5).filter { $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: " ") }
            return Int32(String(decoding: digits, as: UTF8.self))
        }
        return nil
    }
}
