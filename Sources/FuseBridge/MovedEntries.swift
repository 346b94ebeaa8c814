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
/// about such an inode that a path can lead to (open, setattr, the attribute calls,
/// link) are answered `ESTALE`: the kernel then walks the path again with every entry
/// looked up anew (`retry_estale`), and the new name leads to what it shows. The second
/// after is for a request whose path was walked just before the invalidation and that
/// reached the daemon after it (with both cores busy, the test of this found such
/// requests). A lookup that finds the inode under any name ends it at once: the path
/// that led there is a true one, and a program reaching the inode that way (its other
/// album) gets ESTALE once at most, which the kernel's second walk answers. `stat` is
/// answered as before (a moment where it shows the old inode is documented), so that
/// `fstat` by a program holding that inode never fails; `fchmod`, `futimens` and the
/// attribute calls through a descriptor of it fail with ESTALE inside that second.
final class MovedEntries: Sendable {
    /// Inode: how many renames moved it whose invalidation is not sent yet, and until
    /// when requests about it are refused once all were.
    private let inodes = Locked<[UInt64: (pending: Int, untilNs: Int64)]>([:])
    static let afterInvalidationNs: Int64 = 1_000_000_000

    /// `ino`'s entry was moved by a rename that is about to be answered.
    func moved(_ ino: UInt64) {
        inodes.withLock { $0[ino, default: (0, 0)].pending += 1 }
    }

    /// The invalidation queued after one such rename was sent.
    func invalidated(_ ino: UInt64) {
        let until = nowNanoseconds() + Self.afterInvalidationNs
        inodes.withLock { table in
            guard var entry = table[ino] else { return }
            entry.pending = max(0, entry.pending - 1)
            entry.untilNs = until
            table[ino] = entry
        }
    }

    /// A lookup found `ino` under a name: the path that led there is a true one.
    func found(_ ino: UInt64) {
        inodes.withLock { table in
            if !table.isEmpty { table.removeValue(forKey: ino) }
        }
    }

    /// Whether a request about `ino` may come through an entry a rename moved away.
    func isMoved(_ ino: UInt64) -> Bool {
        inodes.withLock { table in
            guard !table.isEmpty, let entry = table[ino] else { return false }
            if entry.pending > 0 || nowNanoseconds() < entry.untilNs { return true }
            table.removeValue(forKey: ino)
            return false
        }
    }
}
