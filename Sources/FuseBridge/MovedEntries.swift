import AlbumCore

/// Inodes whose kernel entry a rename just moved onto a name that shows another object
/// (`FileSystem.rename` says which): a photo saved over another that lives on elsewhere,
/// a photo renamed to a hidden name (that name is a plain file of its own now). After a
/// rename the kernel keeps the moved entry, standing for the old inode, under the new
/// name until the name's invalidation arrives, which can only be sent after the reply
/// (the rename holds both folders' locks). A program that changes the new name at once
/// (`os.replace` then `os.chmod`, a review measured it) would change that other object.
///
/// From the rename's reply until a second after the invalidation is sent, requests
/// about such an inode that a path leads to and that would change or open it (open,
/// setattr not through a handle, setxattr, removexattr, link) are answered `ESTALE`:
/// the kernel then walks the path again with every entry looked up anew
/// (`retry_estale`), and the new name leads to what it shows. The second after is for
/// a request whose path was walked just before the invalidation and that reached the
/// daemon after it (with both cores busy, the test of this found such requests). Once
/// the invalidation is sent, a lookup that finds the inode under a name ends it: the
/// path that led there is a true one (before, the moved entry still stands, and a
/// lookup by another program must not open the way for it). Reads of attributes
/// (`stat`, `getxattr`) are answered as before, so that `fstat`, `fgetxattr` and
/// `flistxattr` by a program holding that inode never fail; a moment where they show
/// the old inode is documented. An inode with handles open is never marked
/// (`FileSystem.rename`): a server holding it (nfs-ganesha, Samba) reopens it by handle.
final class MovedEntries: Sendable {
    private struct Mark {
        /// Renames that moved it whose invalidation is not sent yet.
        var pending = 0
        /// When the first of those was marked (a pending mark older than `longestNs`
        /// is over: the notifier is stuck behind something, and a refusal must end).
        var sinceNs: Int64 = 0
        /// Until when requests about it are refused once none is pending.
        var untilNs: Int64 = 0
    }

    private let inodes = Locked<[UInt64: Mark]>([:])
    static let afterInvalidationNs: Int64 = 1_000_000_000
    static let longestNs: Int64 = 10_000_000_000

    /// `ino`'s entry was moved by a rename that is about to be answered.
    func moved(_ ino: UInt64) {
        let now = nowNanoseconds()
        inodes.withLock { table in
            Self.prune(&table, now: now)
            var mark = table[ino] ?? Mark()
            if mark.pending == 0 { mark.sinceNs = now }
            mark.pending += 1
            table[ino] = mark
        }
    }

    /// The invalidation queued after one such rename was sent.
    func invalidated(_ ino: UInt64) {
        let now = nowNanoseconds()
        inodes.withLock { table in
            guard var mark = table[ino] else { return }
            mark.pending = max(0, mark.pending - 1)
            mark.untilNs = now + Self.afterInvalidationNs
            table[ino] = mark
            Self.prune(&table, now: now)
        }
    }

    /// A lookup found `ino` under a name: once no moved entry of it is left, the path
    /// that led there is a true one.
    func found(_ ino: UInt64) {
        inodes.withLock { table in
            guard !table.isEmpty, let mark = table[ino], mark.pending == 0 else { return }
            table.removeValue(forKey: ino)
        }
    }

    /// Whether a request about `ino` may come through an entry a rename moved away.
    func isMoved(_ ino: UInt64) -> Bool {
        inodes.withLock { table in
            guard !table.isEmpty, let mark = table[ino] else { return false }
            if Self.isLive(mark, now: nowNanoseconds()) { return true }
            table.removeValue(forKey: ino)
            return false
        }
    }

    private static func isLive(_ mark: Mark, now: Int64) -> Bool {
        mark.pending > 0 ? now - mark.sinceNs < longestNs : now < mark.untilNs
    }

    /// Marks that are over go, so that the table holds only the last seconds' renames.
    private static func prune(_ table: inout [UInt64: Mark], now: Int64) {
        if table.contains(where: { !isLive($0.value, now: now) }) { table = table.filter { isLive($0.value, now: now) } }
    }
}
