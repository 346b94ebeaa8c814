import AlbumCore

/// What an open of a photo or thumbnail for reading must do when it meets a save of the
/// same photo, so that its reader gets whole bytes of one version and the size of those
/// bytes (docs/namespace.md, "Reads in passthrough").
///
/// Two races, both found by `PassthroughTests` under load:
///
/// - **A size from before the save.** A save commits the photo's next version, and only
///   then drops the kernel's cached attributes of the photo's kernel inode. An open in
///   between reads the new version in passthrough, while `fstat` on it still answers the
///   old version's size from the kernel's cache. `mmap` of the whole file maps that
///   size: the first 150,085 bytes of a photo of 157,569. So an open that may have met
///   a save (one was on its way when it looked, or one began since) drops its kernel
///   inode's attributes itself before its reply; `fstat` then asks, and the daemon
///   answers the size of the file that kernel inode reads (`kernelView`). Such an open
///   may also have read the version from before the save and taken the photo's current
///   kernel inode in passthrough after the save looked for readers to move past: the
///   photo moves past it then.
/// - **A second `ESTALE`.** An open that finds its kernel inode read in passthrough
///   from another version gets `ESTALE` and the photo moves to a new kernel inode
///   (`openElsewhere`); the kernel looks the path up again and opens once more, and
///   gives up after that. Between the two, another reader may have opened the new
///   kernel inode with the version before or after this reader's (a save landed
///   meanwhile). The second open then shares the version that kernel inode reads:
///   its lookup found that kernel inode current, so the save that made the two
///   differ was not over when this open began, and either version is one a reader
///   may get (as a reader racing a rename on a disk gets the old file or the new).
final class OpensAcrossSaves: Sendable {
    /// What an open knew before it read the photo.
    struct Mark: Sendable {
        fileprivate let begun: UInt64
        fileprivate let landing: Bool
    }

    private struct State {
        /// Saves of photos' bytes begun so far.
        var begun: UInt64 = 0
        /// Inode numbers (photos, thumbnails) whose save has begun and whose kernel
        /// attributes may not be dropped yet.
        var landing: [UInt64: Int] = [:]
        /// Saves that ended, by inode number: the latest number begun among them, and
        /// when the last one ended. Kept while `recent`, or while fewer than `across`
        /// saves began since.
        var ended: [UInt64: (begun: UInt64, at: Double)] = [:]
        /// Threads whose open got `ESTALE` (`openElsewhere`), and of which inode: the
        /// kernel's one retry comes from the same thread.
        var retrying: [Int32: (ino: UInt64, at: Double)] = [:]
    }

    /// How long after a save ended its inodes are not given to the kernel to keep
    /// (`savedRecently`).
    static let recent: Double = 1

    /// An open across this many saves (of any photos) takes itself to have met one of
    /// its own: the saves that ended before are forgotten once no longer `recent`.
    private static let across: UInt64 = 128

    private let state = Locked(State())

    /// A save of `inos` begins (before its transaction); returns its number, for `end`.
    func begin(_ inos: [UInt64]) -> UInt64 {
        guard !inos.isEmpty else { return 0 }
        return state.withLock { s in
            s.begun &+= 1
            for ino in inos { s.landing[ino, default: 0] += 1 }
            return s.begun
        }
    }

    /// That save is over: committed and the kernel told, or failed.
    func end(_ inos: [UInt64], begun: UInt64) {
        guard !inos.isEmpty else { return }
        let now = monotonicSeconds()
        state.withLock { s in
            if s.ended.count > 512 {
                let latest = s.begun
                s.ended = s.ended.filter { now - $0.value.at < Self.recent || latest &- $0.value.begun < Self.across }
            }
            for ino in inos {
                let left = (s.landing[ino] ?? 1) - 1
                s.landing[ino] = left > 0 ? left : nil
                // Saves of one photo may end out of order: the latest begun counts.
                s.ended[ino] = (max(s.ended[ino]?.begun ?? 0, begun), now)
            }
        }
    }

    /// Taken by an open of `ino` before it reads what the photo is.
    func mark(_ ino: UInt64) -> Mark {
        state.withLock { Mark(begun: $0.begun, landing: $0.landing[ino] != nil) }
    }

    /// Whether an open of `ino` that took `mark` may have met a save of it: one was
    /// landing when it looked or is now, or one began and ended since.
    func mayHaveMetASave(of ino: UInt64, since mark: Mark) -> Bool {
        if mark.landing { return true }
        return state.withLock { s in
            if s.landing[ino] != nil { return true }
            guard s.begun != mark.begun else { return false }
            if s.begun &- mark.begun >= Self.across { return true }
            return (s.ended[ino]?.begun ?? 0) > mark.begun
        }
    }

    /// Whether a save of `ino` is landing, or ended less than `recent` seconds ago.
    ///
    /// The kernel keeps attributes from a reply unless an invalidation of the same kernel
    /// inode came after the request began (`attr_version`); a kernel inode that a reply
    /// creates has no such guard. A lookup or a listing that read a photo before a save's
    /// commit, answered after the save moved the photo to a new kernel inode (or after
    /// the kernel dropped the old one), or whose reply the kernel took in only after the
    /// save's invalidation, leaves that kernel inode with the old version's size, for an
    /// hour: a reader of the new bytes then gets them cut at that size (found with
    /// thumbnails read beside saves, `PassthroughTests`). So such replies carry no
    /// attributes for the kernel to keep, and an open in that time drops the ones its
    /// kernel inode has.
    func savedRecently(_ ino: UInt64) -> Bool {
        state.withLock { s in
            guard !s.ended.isEmpty || !s.landing.isEmpty else { return false }
            if s.landing[ino] != nil { return true }
            guard let at = s.ended[ino]?.at else { return false }
            return monotonicSeconds() - at < Self.recent
        }
    }

    /// The inodes `savedRecently` holds for now (for a listing: one look for a page).
    func inodesSavedRecently() -> Set<UInt64> {
        state.withLock { s in
            guard !s.ended.isEmpty || !s.landing.isEmpty else { return [] }
            let now = monotonicSeconds()
            return Set(s.landing.keys).union(s.ended.filter { now - $0.value.at < Self.recent }.keys)
        }
    }

    /// Thread `pid`'s open of `ino` got `ESTALE`: its retry is on its way.
    func gotStale(_ pid: Int32, _ ino: UInt64) {
        guard pid > 0 else { return }
        let now = monotonicSeconds()
        state.withLock { s in
            // A thread killed between the two opens leaves its entry behind.
            if s.retrying.count > 1024 { s.retrying = s.retrying.filter { now - $0.value.at < 5 } }
            s.retrying[pid] = (ino, now)
        }
    }

    /// Whether this open of `ino` by `pid` is the kernel's retry after `ESTALE` (taken
    /// once: the retry's own retry would be the program's next open).
    func isRetry(_ pid: Int32, _ ino: UInt64) -> Bool {
        guard pid > 0 else { return false }
        return state.withLock { s in
            guard let entry = s.retrying[pid], entry.ino == ino else { return false }
            s.retrying[pid] = nil
            return monotonicSeconds() - entry.at < 5
        }
    }
}
