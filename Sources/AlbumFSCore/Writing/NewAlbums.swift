import AlbumCore

/// Albums made through the mount moments ago, and the process that made each.
///
/// A tree copied in with a `.thumbnails/` of its own (Android's `DCIM/Camera`) has `cp`
/// create that folder without looking first: inside a folder it has just made, coreutils
/// skips the stat. The kernel refuses a mkdir of a name its lookup finds, and an album's
/// `.thumbnails/` is always found. So for ten minutes the process that made an album
/// does not find that album's `.thumbnails/` until it makes one itself (a mkdir there
/// succeeds while nothing was copied in: docs/thumbnails.md). Ten, because `cp` may copy
/// a whole card's photos into the folder before it reaches `.thumbnails/` (readdir
/// order). Every other process, and this one afterwards, finds it as always. In memory
/// only: a restart ends it.
final class NewAlbums: Sendable {
    static let seconds: Int64 = 600
    static let capacity = 1_000

    private struct Made { let pid: Int32; let atNs: Int64 }
    private let made = Locked([Int64: Made]())

    /// `pid` made `album` (0: unknown, nothing is remembered).
    func made(_ album: Int64, by pid: Int32, now: Int64 = nowNanoseconds()) {
        guard pid != 0 else { return }
        made.withLock { m in
            if m.count >= Self.capacity { m = m.filter { now - $0.value.atNs < Self.seconds * nanosecondsPerSecond } }
            if m.count < Self.capacity { m[album] = Made(pid: pid, atNs: now) }
        }
    }

    /// Whether `pid` made `album` within the ten minutes and has not yet made its `.thumbnails/`.
    func hidesThumbnails(of album: Int64, from pid: Int32, now: Int64 = nowNanoseconds()) -> Bool {
        guard pid != 0 else { return false }
        return made.withLock { m in
            guard let entry = m[album], now - entry.atNs < Self.seconds * nanosecondsPerSecond else { return false }
            return entry.pid == pid
        }
    }

    /// The album's `.thumbnails/` was made (or the album is gone): found by all from now on.
    func forget(_ album: Int64) {
        made.withLock { _ = $0.removeValue(forKey: album) }
    }
}
