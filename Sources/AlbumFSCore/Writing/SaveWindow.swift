import AlbumCore

/// The minute of a save (PRODUCT.md section 3, "Saving in place keeps the photo"):
/// what the mount remembers for sixty seconds so that a tool's save sequence keeps the
/// photo it saves.
///
/// - Vacated names. A photo renamed away in its folder to a backup's name (`P.jpg` to
///   `P.jpg~`, `P.jpg_original`: `isBackupName`) leaves its name; photo bytes closed under that name, or renamed
///   to it, within the minute are the photo's next version, and the renamed-away name
///   becomes a plain file with the previous bytes (Windows' file-system tunneling keeps
///   a file's identity the same way, for 15 seconds).
/// - Fresh photos. A file that became a photo by its own close moments ago, in this one
///   folder (a save's temporary file: `mkstemp`, `P.jpg_exiftool_tmp`): renamed over a
///   photo (or onto a vacated name) it leaves no trace.
/// - Restored photos. A file whose close brought a photo back from Recently Deleted (its
///   bytes), in this one folder: renamed over another photo, it was a save's temporary
///   file, and the photo goes back as it was (its name, its deletion time).
/// - Joined photos. A file whose close made it a name of a photo the library held
///   elsewhere (its bytes), in this one folder: renamed over another photo, that photo
///   stays where it was. Restored and joined photos live on after such a rename, so the
///   kernel keeps none of their names here for the minute (`keepsNoName`): the name
///   they are renamed to must lead to the photo saved at once, not to them (entry
///   invalidations arrive after the rename has returned; a review found a `chmod` and a
///   write right after such a save landing on the other photo).
///
/// Each entry has its own minute, keyed by folder and name: a busy folder does not cut
/// another save's minute short. The table holds at most `capacity` entries (the oldest
/// go first); it lives in memory, so a daemon restart inside the minute ends it (the log
/// names the temporary file that then stays a photo of its own).
final class SaveWindow: Sendable {
    /// An entry of the table: when it was made (its minute, and its age past `capacity`).
    private protocol Dated { var atNs: Int64 { get } }
    /// An entry about an asset that arrived by a close in one folder.
    private protocol Arrived: Dated { var folder: UInt64 { get } }

    static let seconds: Int64 = 60
    static let capacity = 10_000

    struct Slot: Hashable {
        let folder: UInt64
        let key: String

        init(folder: UInt64, name: String) {
            self.folder = folder
            key = Names.key(name)
        }
    }

    struct Vacated: Sendable {
        let asset: Int64
        /// The name it left.
        let name: String
        /// The name it has now.
        let renamedTo: String
        let atNs: Int64
    }

    struct Fresh: Sendable {
        let folder: UInt64
        let atNs: Int64
        /// When its bytes were last written (its mtime as a file, before it was a photo).
        let writtenNs: Int64
    }

    struct Restored: Sendable {
        let folder: UInt64
        let atNs: Int64
        /// The bytes it came back with: changed since, it is no longer as it was.
        let sha256: String
        /// Its name and deletion time (seconds) in Recently Deleted.
        let name: String
        let trashedAt: Int64
    }

    struct Joined: Sendable {
        let folder: UInt64
        let atNs: Int64
    }

    private struct State {
        var vacated: [Slot: Vacated] = [:]
        var fresh: [Int64: Fresh] = [:]
        var restored: [Int64: Restored] = [:]
        var joined: [Int64: Joined] = [:]
    }

    private let state = Locked(State())

    private static func live(_ atNs: Int64, _ now: Int64) -> Bool { now - atNs < seconds * nanosecondsPerSecond }

    /// Adds `entry` to `table` under `key`; past `capacity`, the oldest entry goes.
    private static func keep<Key: Hashable, Entry: Dated>(_ entry: Entry, as key: Key, in table: inout [Key: Entry]) {
        table[key] = entry
        if table.count > capacity, let oldest = table.min(by: { $0.value.atNs < $1.value.atNs }) {
            table.removeValue(forKey: oldest.key)
        }
    }

    /// `asset`'s entry in `table` if it arrived in `folder` within the minute.
    private static func arrival<Entry: Arrived>(_ asset: Int64, in folder: UInt64, _ table: [Int64: Entry], now: Int64) -> Entry? {
        guard let entry = table[asset], entry.folder == folder, live(entry.atNs, now) else { return nil }
        return entry
    }

    /// A photo in `folder` was renamed from `name` to `renamedTo`. Only a backup's name
    /// (`isBackupName`) leaves the name for a save: a photo renamed to a name of its own
    /// (`IMG_0001.jpg` to `Grandma.jpg`) has simply moved, and the next card's
    /// `IMG_0001.jpg` copied in moments later is a photo of its own.
    func vacated(folder: UInt64, name: String, by asset: Int64, renamedTo: String, now: Int64 = nowNanoseconds()) {
        guard Self.isBackupName(renamedTo, of: name) else { return }
        state.withLock { s in
            Self.keep(Vacated(asset: asset, name: name, renamedTo: renamedTo, atNs: now), as: Slot(folder: folder, name: name), in: &s.vacated)
        }
    }

    /// Whether `backup` is what tools name the copy they keep of `name` while they save
    /// it: `name` itself with something after it, hidden or not, compared as names are
    /// (`P.jpg~`, `P.jpg_original`, `P.jpg.~1~`, `P.jpg.t`, `.P.jpg.bak`). vim, emacs,
    /// `cp --backup`, `rsync --backup`, exiftool and ImageMagick all name it so.
    static func isBackupName(_ backup: String, of name: String) -> Bool {
        let key = Names.key(name)
        let backupKey = Names.key(String(backup.drop(while: { $0 == "." })))
        return backupKey.count > key.count && backupKey.hasPrefix(key)
    }

    /// The photo that left `name` in `folder` within the minute, if any.
    func vacatedBy(folder: UInt64, name: String, now: Int64 = nowNanoseconds()) -> Vacated? {
        state.withLock { s in
            guard let entry = s.vacated[Slot(folder: folder, name: name)], Self.live(entry.atNs, now) else { return nil }
            return entry
        }
    }

    /// The name was claimed (or taken by something else): its minute is over.
    func settle(folder: UInt64, name: String) {
        state.withLock { _ = $0.vacated.removeValue(forKey: Slot(folder: folder, name: name)) }
    }

    /// The photo shown as `name` in `folder` is renamed or moved on: if `name` was the
    /// backup of a save under way, that save is over, and the name it left is an ordinary
    /// free name again. (Bytes written there then would otherwise be the next version of
    /// the photo the user renamed on purpose, which on a disk keeps its bytes.)
    /// `asset`: the photo renamed, whose save ends whatever folder it is renamed in (a
    /// save in All Photos ends when the backup is renamed in Favorites too).
    func backupMoved(folder: UInt64, name: String, asset: Int64? = nil) {
        let key = Names.key(name)
        state.withLock { s in
            guard !s.vacated.isEmpty else { return }
            s.vacated = s.vacated.filter { entry in
                !(entry.key.folder == folder && Names.key(entry.value.renamedTo) == key) && entry.value.asset != asset
            }
        }
    }

    /// `asset` became a photo by a close in `folder` just now.
    func madeByClose(_ asset: Int64, in folder: UInt64, writtenNs: Int64, now: Int64 = nowNanoseconds()) {
        state.withLock { s in Self.keep(Fresh(folder: folder, atNs: now, writtenNs: writtenNs), as: asset, in: &s.fresh) }
    }

    /// How `asset` became a photo by a close in `folder` within the minute, if it did.
    func fresh(_ asset: Int64, in folder: UInt64, now: Int64 = nowNanoseconds()) -> Fresh? {
        state.withLock { s in Self.arrival(asset, in: folder, s.fresh, now: now) }
    }

    /// `asset`, named `name` in Recently Deleted since `trashedAt`, came back by a close in
    /// `folder` just now.
    func restoredByClose(_ asset: Int64, in folder: UInt64, sha256: String, name: String, trashedAt: Int64, now: Int64 = nowNanoseconds()) {
        state.withLock { s in
            Self.keep(Restored(folder: folder, atNs: now, sha256: sha256, name: name, trashedAt: trashedAt), as: asset, in: &s.restored)
        }
    }

    /// How `asset` came back from Recently Deleted by a close in `folder` within the
    /// minute, if it did.
    func restored(_ asset: Int64, in folder: UInt64, now: Int64 = nowNanoseconds()) -> Restored? {
        state.withLock { s in Self.arrival(asset, in: folder, s.restored, now: now) }
    }

    /// `asset`, a photo the library held, got a name in `folder` by a close just now.
    func joinedByClose(_ asset: Int64, in folder: UInt64, now: Int64 = nowNanoseconds()) {
        state.withLock { s in Self.keep(Joined(folder: folder, atNs: now), as: asset, in: &s.joined) }
    }

    /// Whether the kernel is to keep no name of `asset` in `folder`: a close brought it
    /// back from Recently Deleted there, or made it a name there, within the minute.
    func keepsNoName(_ asset: Int64, in folder: UInt64, now: Int64 = nowNanoseconds()) -> Bool {
        state.withLock { s in
            Self.arrival(asset, in: folder, s.restored, now: now) != nil || Self.arrival(asset, in: folder, s.joined, now: now) != nil
        }
    }

    /// The photos of `folder` whose names the kernel is to keep none of (`keepsNoName`;
    /// none, almost always: a look at two empty tables).
    func assetsKeepingNoName(in folder: UInt64, now: Int64 = nowNanoseconds()) -> Set<Int64> {
        func arrived<Entry: Arrived>(_ table: [Int64: Entry]) -> Set<Int64> {
            Set(table.filter { $0.value.folder == folder && Self.live($0.value.atNs, now) }.keys)
        }
        return state.withLock { s in
            guard !s.restored.isEmpty || !s.joined.isEmpty else { return [] }
            return arrived(s.restored).union(arrived(s.joined))
        }
    }

    func forget(_ asset: Int64) {
        state.withLock {
            _ = $0.fresh.removeValue(forKey: asset)
            _ = $0.restored.removeValue(forKey: asset)
        }
    }

    /// Drops what is older than a minute.
    func expire(now: Int64) {
        state.withLock { s in
            s.vacated = s.vacated.filter { Self.live($0.value.atNs, now) }
            s.fresh = s.fresh.filter { Self.live($0.value.atNs, now) }
            s.restored = s.restored.filter { Self.live($0.value.atNs, now) }
            s.joined = s.joined.filter { Self.live($0.value.atNs, now) }
        }
    }
}

extension SaveWindow.Vacated: SaveWindow.Dated {}
extension SaveWindow.Fresh: SaveWindow.Arrived {}
extension SaveWindow.Restored: SaveWindow.Arrived {}
extension SaveWindow.Joined: SaveWindow.Arrived {}
