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
/// order). Once that process has made it, for the rest of the ten minutes it finds only
/// the files copied into it, not the thumbnails AlbumFS makes there: `cp` creates each
/// file with `O_EXCL`, and a photo copied before the folder has a made thumbnail of the
/// name its copied one has (`IMG_1.jpg.jpg`); the copied file then takes the name
/// (`occupant`). Every other process finds the folder and its thumbnails as always. In
/// memory only: a restart ends it.
final class NewAlbums: Sendable {
    static let seconds: Int64 = 600
    static let capacity = 1_000

    private struct Made {
        let pid: Int32
        let atNs: Int64
        var madeThumbnails = false
    }
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
        madeBy(pid, album, now)?.madeThumbnails == false
    }

    /// Whether `pid` made `album` and then its `.thumbnails/` within the ten minutes: it
    /// finds only the files copied in there.
    func hidesMadeThumbnails(in album: Int64, from pid: Int32, now: Int64 = nowNanoseconds()) -> Bool {
        madeBy(pid, album, now)?.madeThumbnails == true
    }

    private func madeBy(_ pid: Int32, _ album: Int64, _ now: Int64) -> Made? {
        guard pid != 0 else { return nil }
        return made.withLock { m in
            guard let entry = m[album], now - entry.atNs < Self.seconds * nanosecondsPerSecond, entry.pid == pid else { return nil }
            return entry
        }
    }

    /// The album's `.thumbnails/` was made: every other process found it all along, and
    /// now the one that made the album does too.
    func madeThumbnails(of album: Int64) {
        made.withLock { m in m[album]?.madeThumbnails = true }
    }
}
