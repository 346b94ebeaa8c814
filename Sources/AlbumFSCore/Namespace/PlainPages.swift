import AlbumCore
import Glibc

/// Whether the kernel may keep the pages it has of a plain file at an open for reading.
///
/// A plain file's bytes are written in place: by this host's writers, or cut by a
/// truncate. So its pages are kept from one open to the next only when its bytes file is
/// as an earlier open of that kernel inode found it: the same file, size, mtime and
/// ctime (every write and truncation moves the ctime), and only once that earlier open's
/// own drop of the pages is known to be done. The kernel drops them in the opener's
/// call after the daemon's answer, so an open is taken as the witness of its bytes at
/// its first READ: until then, a second open of the same bytes drops the pages again
/// (else it could read pages older than the first open's while the first one's drop was
/// still on its way, or never came: an open that failed after the answer). Bytes that
/// had changed less than two seconds before that open looked at them are never kept: a
/// file system sets the ctime of a write before it copies the bytes, so a file looked
/// at during a write has its new ctime and some of its old bytes (and a clock's tick may
/// hold two writes). A READ through an older handle of the kernel inode (one opened
/// before the record, perhaps on other bytes: a backup's blob before a writer gave it
/// bytes of its own) may bring its bytes into the pages: it ends the record. Each kernel
/// inode has pages of its own (`KernelNodes`), so each has its own record. Libraries
/// shared by several hosts drop the pages at every open, as before: another host's
/// clock and file system decide the times there.
///
/// Before, every open of a plain file dropped its pages: a warm `cat` of a 1 GB plain
/// file took 0.51–0.56 s, against 0.09–0.11 s in a plain directory (docs/namespace.md,
/// "Caching").
final class PlainPages: Sendable {
    private struct Record {
        let stamp: FileStamp
        /// Whether the bytes had settled when the stamp was taken (see above).
        let settled: Bool
        /// The handle of the open that took the stamp (nil: not known yet, the open is
        /// under way).
        var since: UInt64?
        /// Whether an open's READ witnessed the stamp.
        var witnessed: Bool
    }

    /// Nothing is kept where several hosts share the library.
    let enabled: Bool
    /// Bounded: a kernel inode not found here drops its pages once more.
    private let records = Locked([UInt64: Record]())
    static let limit = 16_384
    /// Bytes changed this recently are never kept (see above).
    static let settleNs: Int64 = 2_000_000_000

    init(enabled: Bool) { self.enabled = enabled }

    /// Whether the pages of kernel inode `node` may be kept for an open of `bytes`. An
    /// open told no records its bytes, and says which handle it got (`opened`) before
    /// its answer is sent; one that fails before leaves a record no READ will witness,
    /// which the next open takes over.
    func mayKeep(node: UInt64, _ bytes: FileDescriptor) -> Bool {
        guard enabled else { return false }
        guard let st = try? bytes.status() else {
            _ = records.withLock { $0.removeValue(forKey: node) }
            return false
        }
        let stamp = FileStamp(st)
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let settled = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) - stamp.ctimeNs >= Self.settleNs
        return records.withLock { records in
            if let record = records[node], record.stamp == stamp, record.settled, record.witnessed { return true }
            if records.count >= Self.limit { records.removeAll() }
            records[node] = Record(stamp: stamp, settled: settled, since: nil, witnessed: false)
            return false
        }
    }

    /// The open that `mayKeep` told no got `handle`.
    func opened(node: UInt64, handle: UInt64) {
        records.withLock { records in
            guard var record = records[node], record.since == nil else { return }
            record.since = handle
            records[node] = record
        }
    }

    /// A READ of `handle` through kernel inode `node`. The first of the open that took
    /// the record witnesses it (that open's drop of the pages is done); one of an older
    /// handle ends it (handle numbers only grow).
    func read(node: UInt64, handle: UInt64) {
        guard enabled else { return }
        records.withLock { records in
            guard var record = records[node], !record.witnessed || handle < record.since ?? .max else { return }
            guard let since = record.since, handle >= since else {
                records[node] = nil
                return
            }
            if handle == since {
                record.witnessed = true
                records[node] = record
            }
        }
    }
}
