import Glibc

/// What a folder that is kept as an album row is for, when it is not a user album.
public enum AlbumRole: Int, Sendable {
    /// `.Trash-UID` at the root of the mount: a file manager's trash (the freedesktop.org
    /// trash specification's per-user trash of a mounted volume).
    case desktopTrash = 1
    /// Its `files/`: photos trashed through it (in Recently Deleted), under the names the
    /// file manager gave them; restoring one moves it back out.
    case trashFiles = 2
    /// Its `info/`: the `.trashinfo` files the file manager writes, plain files.
    case trashInfo = 3
    /// Its `expunged/`: where gvfs moves what it empties out of the trash before it
    /// deletes it. A photo moved there is deleted for good.
    case trashExpunged = 4
}

/// A user album (a directory under Albums/), or a folder of the desktop trash (`role`).
public struct Album: Sendable, Equatable {
    public var id: Int64
    /// 0 for an album at the top of Albums/.
    public var parentID: Int64
    public var name: String
    public var createdAt: Int64
    public var mtimeNs: Int64
    public var changedNs: Int64
    /// Permission bits a user set; nil for the default.
    public var mode: UInt32?
    /// nil for a user album.
    public var role: AlbumRole?

    /// The parent of the desktop trash folders: the root of the mount.
    public static let rootParent: Int64 = -1

    static let columns = "id, parent_id, name, created_at, mtime_ns, changed_ns, mode, role"

    init(row: Row) {
        id = row.int64(0)
        parentID = row.int64(1)
        name = row.text(2)
        createdAt = row.int64(3)
        mtimeNs = row.int64(4)
        changedNs = row.int64(5)
        mode = row.optionalInt(6).map { UInt32(truncatingIfNeeded: $0) }
        role = row.optionalInt(7).flatMap(AlbumRole.init(rawValue:))
    }
}

/// An asset's entry in an album.
public struct Membership: Sendable, Equatable {
    public var id: Int64
    public var albumID: Int64
    public var assetID: Int64
    public var name: String
    public var sortKey: Int64

    static let columns = "id, album_id, asset_id, name, sort_key"

    init(id: Int64, albumID: Int64, assetID: Int64, name: String, sortKey: Int64) {
        self.id = id
        self.albumID = albumID
        self.assetID = assetID
        self.name = name
        self.sortKey = sortKey
    }

    init(row: Row) {
        self.init(id: row.int64(0), albumID: row.int64(1), assetID: row.int64(2), name: row.text(3), sortKey: row.int64(4))
    }
}

/// Inode numbers of the fixed folders. Plain files record the inode of the folder they
/// live in, so these numbers are part of the storage format and never change.
public enum FixedInode {
    public static let root: UInt64 = 1
    public static let albums: UInt64 = 2
    public static let allPhotos: UInt64 = 3
    public static let byDate: UInt64 = 4
    public static let smartAlbums: UInt64 = 5
    /// Smart album folders are 16 + `SmartAlbum.rawValue`.
    public static let firstSmartAlbum: UInt64 = 16

    /// The folder inode of a smart album.
    public static func folder(of smart: SmartAlbum) -> UInt64 { firstSmartAlbum + UInt64(smart.rawValue) }

    /// The folder inode of album `id` (0: the top of Albums/; `Album.rootParent`: the
    /// root, where the desktop trash folders are).
    public static func folder(ofAlbum id: Int64) -> UInt64 {
        switch id {
        case Album.rootParent: return root
        case 0: return albums
        default: return UInt64(id)
        }
    }

    /// The album a folder inode is, if it is one (albums are objects, ids >= 1000).
    public static func album(ofFolder ino: UInt64) -> Int64? {
        ino >= UInt64(Schema.firstObjectID) && ino < (1 << 48) ? Int64(ino) : nil
    }
}

// MARK: - reads

extension LibraryRecords {
    public func album(id: Int64) throws -> Album? {
        try db.first("SELECT \(Album.columns) FROM albums WHERE id = ?", id, map: Album.init)
    }

    /// The album called `name` (any case or normalization) in `parent` (0: top level).
    public func album(named name: String, in parent: Int64) throws -> Album? {
        try db.first("SELECT \(Album.columns) FROM albums WHERE parent_id = ? AND name_key = ?",
                     parent, Names.key(name), map: Album.init)
    }

    /// Sub-albums of `parent` in creation order, after id `after`.
    public func albums(in parent: Int64, after: Int64 = 0, limit: Int = Int.max) throws -> [Album] {
        try db.query("SELECT \(Album.columns) FROM albums WHERE parent_id = ? AND id > ? ORDER BY id LIMIT ?",
                     parent, after, limit, map: Album.init)
    }

    /// Every user album (not the desktop trash's folders).
    public func allAlbums() throws -> [Album] {
        try db.query("SELECT \(Album.columns) FROM albums WHERE role IS NULL ORDER BY id", map: Album.init)
    }

    /// The album at a path of names below Albums/ (`["Trips", "Rome 2024"]`).
    public func album(path: [String]) throws -> Album? {
        var parent: Int64 = 0
        var found: Album?
        for component in path {
            guard let next = try album(named: component, in: parent) else { return nil }
            found = next
            parent = next.id
        }
        return found
    }

    /// The path of names from the top of Albums/ to an album.
    public func albumPath(id: Int64) throws -> [String] {
        var names: [String] = []
        var current = id
        var steps = 0
        while current != 0, let album = try album(id: current), steps < 4096 {
            names.insert(album.name, at: 0)
            current = album.parentID
            steps += 1
        }
        return names
    }

    public func memberships(ofAsset assetID: Int64) throws -> [Membership] {
        try db.query("SELECT \(Membership.columns) FROM memberships WHERE asset_id = ? ORDER BY id", assetID, map: Membership.init)
    }

    /// The entry called `name` (any case or normalization) in album `albumID`, visible or not.
    public func membership(named name: String, inAlbum albumID: Int64) throws -> Membership? {
        try db.first("SELECT \(Membership.columns) FROM memberships WHERE album_id = ? AND name_key = ?",
                     albumID, Names.key(name), map: Membership.init)
    }

    /// Whether a directory entry with key `key` exists in album `albumID` (0: top level):
    /// a sub-album, a member (shown or not) or a plain file.
    func nameTaken(inAlbum albumID: Int64, key: String) throws -> Bool {
        if try db.scalar("SELECT 1 FROM albums WHERE parent_id = ? AND name_key = ?", albumID, key) != nil { return true }
        let folder = FixedInode.folder(ofAlbum: albumID)
        if try db.scalar("SELECT 1 FROM plain_files WHERE dir_ino = ? AND name_key = ?", Int64(folder), key) != nil { return true }
        if albumID > 0,
           try db.scalar("SELECT 1 FROM memberships WHERE album_id = ? AND name_key = ?", albumID, key) != nil { return true }
        return false
    }
}

// MARK: - changes

extension Transaction {
    /// Frees `key` in album `albumID` (0: top level) for a new entry: EEXIST when a
    /// sub-album, a plain file or a visible member has it; the entry of a deleted or
    /// hidden asset gives way (`makeWayForVisibleEntry`).
    func claimName(inAlbum albumID: Int64, name: String) throws {
        if albumID > 0, let member = try membership(named: name, inAlbum: albumID) {
            try makeWayForVisibleEntry(member)
        }
        if try nameTaken(inAlbum: albumID, key: Names.key(name)) { throw LibraryError.exists(name) }
    }

    /// Creates an album. EEXIST if the parent already has an entry of that name.
    @discardableResult
    public func createAlbum(named name: String, in parent: Int64, role: AlbumRole? = nil) throws -> Album {
        try Names.validate(name)
        if parent > 0, try album(id: parent) == nil { throw LibraryError.notFound("album \(parent)") }
        try claimName(inAlbum: parent, name: name)
        let id = try allocateID()
        let now = nowNanoseconds()
        try db.run("INSERT INTO albums(id, parent_id, name, name_key, created_at, mtime_ns, changed_ns, role) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   id, parent, name, Names.key(name), now / nanosecondsPerSecond, now, now, role?.rawValue)
        try touchAlbum(parent)
        return try album(id: id)!
    }

    /// The album at `path`, creating every missing album on the way ("save to album X,
    /// creating it if missing").
    public func ensureAlbum(path: [String]) throws -> Album? {
        var parent: Int64 = 0
        var found: Album?
        for component in path {
            let next = try album(named: component, in: parent) ?? createAlbum(named: component, in: parent)
            found = next
            parent = next.id
        }
        return found
    }

    /// Renames and/or moves an album. Into itself or a descendant is EINVAL; a name taken
    /// at the target is EEXIST, except by an empty album, which it replaces (rename(2)).
    public func moveAlbum(id: Int64, to newParent: Int64, name newName: String) throws {
        try Names.validate(newName)
        guard let moving = try album(id: id) else { throw LibraryError.notFound("album \(id)") }
        var cursor = newParent
        while cursor != 0 {
            if cursor == id { throw LibraryError.invalidName("cannot move album \(moving.name) into itself", errno: EINVAL) }
            guard let up = try db.scalar("SELECT parent_id FROM albums WHERE id = ?", cursor) else {
                throw LibraryError.notFound("album \(newParent)")
            }
            cursor = up
        }
        let key = Names.key(newName)
        let sameSlot = newParent == moving.parentID && key == Names.key(moving.name)
        if !sameSlot {
            if let existing = try album(named: newName, in: newParent), existing.id != id {
                try deleteAlbum(id: existing.id)  // ENOTEMPTY unless empty
            }
            try claimName(inAlbum: newParent, name: newName)
        }
        try db.run("UPDATE albums SET parent_id = ?, name = ?, name_key = ?, changed_ns = ? WHERE id = ?",
                   newParent, newName, key, nowNanoseconds(), id)
        try touchAlbum(moving.parentID)
        if newParent != moving.parentID { try touchAlbum(newParent) }
    }

    /// Deletes an album. Not recursive: ENOTEMPTY while it has sub-albums, plain files or
    /// entries it shows, as a folder whose listing is empty can be removed on any disk.
    /// Entries it does not show (photos in Recently Deleted, hidden photos) go with it:
    /// such a photo, restored or shown again, comes back to its other albums only. Its
    /// assets stay in the library. Sidecars that went to Recently Deleted with such a
    /// photo will come back to the folder above, the nearest that still exists. Returns
    /// the assets whose entries went unseen (their link counts changed).
    @discardableResult
    public func deleteAlbum(id: Int64) throws -> [Int64] {
        guard let doomed = try album(id: id) else { throw LibraryError.notFound("album \(id)") }
        let shown = doomed.role == .trashFiles ? "a.trashed_at IS NOT NULL" : AssetView.visible
        let busy = try db.scalar("""
            SELECT 1 FROM albums WHERE parent_id = ?
            UNION ALL SELECT 1 FROM memberships m JOIN assets a ON a.id = m.asset_id WHERE m.album_id = ? AND \(shown)
            UNION ALL SELECT 1 FROM plain_files WHERE dir_ino = ? LIMIT 1
            """, id, id, id) != nil
        if busy { throw LibraryError.notEmpty(doomed.name) }
        let unseen = try db.query("SELECT asset_id FROM memberships WHERE album_id = ?", id) { $0.int64(0) }
        let now = nowNanoseconds()
        for asset in unseen { try db.run("UPDATE assets SET changed_ns = ? WHERE id = ?", now, asset) }
        try db.run("DELETE FROM memberships WHERE album_id = ?", id)
        // The desktop trash's folders sit in the root, where no file may be: their
        // sidecars come back to the top of Albums/.
        let above = doomed.parentID == Album.rootParent ? FixedInode.albums : FixedInode.folder(ofAlbum: doomed.parentID)
        try db.run("UPDATE plain_files SET trashed_from = ? WHERE trashed_from = ? AND trashed_with IS NOT NULL",
                   Int64(bitPattern: above), Int64(bitPattern: FixedInode.folder(ofAlbum: id)))
        try db.run("DELETE FROM albums WHERE id = ?", id)
        try db.run("DELETE FROM xattrs WHERE ino = ?", id)
        try touchAlbum(doomed.parentID)
        return unseen
    }

    /// Sets an album's mtime and ctime to now (its entries changed).
    func touchAlbum(_ id: Int64) throws {
        guard id > 0 else { return }
        let now = nowNanoseconds()
        try db.run("UPDATE albums SET mtime_ns = ?, changed_ns = ? WHERE id = ?", now, now, id)
    }

    /// Touches the album a folder inode is, if it is one.
    func touchFolder(_ ino: UInt64) throws {
        if let album = FixedInode.album(ofFolder: ino) { try touchAlbum(album) }
    }

    public func setAlbumMode(id: Int64, mode: UInt32) throws {
        try db.run("UPDATE albums SET mode = ?, changed_ns = ? WHERE id = ?", Int64(mode & 0o7777), nowNanoseconds(), id)
    }

    public func setAlbumTimes(id: Int64, mtimeNs: Int64) throws {
        try db.run("UPDATE albums SET mtime_ns = ?, changed_ns = ? WHERE id = ?", mtimeNs, nowNanoseconds(), id)
    }

    // MARK: memberships

    /// Adds an asset to an album under `name`. If the album already has the asset under
    /// that name, nothing changes; another entry of that name is EEXIST.
    @discardableResult
    public func addMembership(album albumID: Int64, asset assetID: Int64, name: String) throws -> Membership {
        try Names.validate(name)
        let existing = try membership(named: name, inAlbum: albumID)
        if let existing, existing.assetID == assetID { return existing }
        try claimName(inAlbum: albumID, name: name)
        guard let taken = try db.scalar("SELECT taken_at FROM assets WHERE id = ?", assetID) else {
            throw LibraryError.notFound("asset \(assetID)")
        }
        guard let id = try db.first("""
            INSERT INTO memberships(album_id, asset_id, name, name_key, sort_key, added_at) VALUES (?, ?, ?, ?, 0, ?) RETURNING id
            """, albumID, assetID, name, Names.key(name), nowSeconds(), map: { $0.int64(0) }) else {
            throw LibraryError.corrupt("a new membership has no id")
        }
        let sortKey = SortKey.make(takenAt: taken, id: id)
        try db.run("UPDATE memberships SET sort_key = ? WHERE id = ?", sortKey, id)
        try touchAlbum(albumID)
        try db.run("UPDATE assets SET changed_ns = ? WHERE id = ?", nowNanoseconds(), assetID)  // its link count
        try applySidecarDate(assetID)  // a sidecar may be waiting for it there (rsync sends them first)
        return Membership(id: id, albumID: albumID, assetID: assetID, name: name, sortKey: sortKey)
    }

    /// A name in an album held by the entry of a deleted or hidden asset (kept for its
    /// restore, but not shown) gives way to a new entry: the invisible one takes the
    /// first free ` (2)` name. A visible entry of that name is EEXIST.
    func makeWayForVisibleEntry(_ existing: Membership) throws {
        let visible = try db.scalar("SELECT 1 FROM assets WHERE id = ? AND trashed_at IS NULL AND hidden = 0", existing.assetID) != nil
        if visible { throw LibraryError.exists(existing.name) }
        let free = try Names.firstFree(existing.name) { key in try nameTaken(inAlbum: existing.albumID, key: key) }
        try db.run("UPDATE memberships SET name = ?, name_key = ? WHERE id = ?", free, Names.key(free), existing.id)
    }

    /// An entry of a deleted or hidden photo named `name` in album folder `dirIno` moves
    /// aside (`makeWayForVisibleEntry`) for a plain file taking that name, as it does for
    /// a photo or a sub-album (`claimName`); else the photo's return would show the name
    /// twice. A visible entry there is the caller's business.
    func makeWayForPlainFile(named name: String, in dirIno: UInt64) throws {
        guard let albumID = FixedInode.album(ofFolder: dirIno), let member = try membership(named: name, inAlbum: albumID),
              try db.scalar("SELECT 1 FROM assets WHERE id = ? AND trashed_at IS NULL AND hidden = 0", member.assetID) == nil
        else { return }
        try makeWayForVisibleEntry(member)
    }

    /// Removes the entry `name` from an album; the asset stays in the library.
    public func removeMembership(album albumID: Int64, name: String) throws {
        guard let entry = try membership(named: name, inAlbum: albumID) else { throw LibraryError.notFound(name) }
        try db.run("UPDATE assets SET changed_ns = ? WHERE id = ?", nowNanoseconds(), entry.assetID)  // its link count
        try db.run("DELETE FROM memberships WHERE id = ?", entry.id)
        try touchAlbum(albumID)
        // A sidecar of that folder no longer belongs to it: the date it gave goes too.
        try applySidecarDate(entry.assetID)
    }

    /// Moves or renames an album entry. A different entry at the target name is EEXIST
    /// (the filesystem core decides what replacing means).
    public func moveMembership(from albumID: Int64, name: String, to newAlbumID: Int64, name newName: String) throws {
        try Names.validate(newName)
        guard let entry = try membership(named: name, inAlbum: albumID) else { throw LibraryError.notFound(name) }
        let key = Names.key(newName)
        let sameSlot = albumID == newAlbumID && key == Names.key(name)
        if !sameSlot { try claimName(inAlbum: newAlbumID, name: newName) }
        try db.run("UPDATE memberships SET album_id = ?, name = ?, name_key = ? WHERE id = ?", newAlbumID, newName, key, entry.id)
        try touchAlbum(albumID)
        if newAlbumID != albumID { try touchAlbum(newAlbumID) }
        try applySidecarDate(entry.assetID)
    }

    /// A new object id (inode number), never handed out before.
    func allocateID() throws -> Int64 {
        guard let id = try db.first("UPDATE meta SET value = value + 1 WHERE key = 'next_object_id' RETURNING value - 1", map: { $0.int64(0) }) else {
            throw LibraryError.corrupt("library.db has no next_object_id")
        }
        return id
    }

    /// Reserves `count` object ids (the mount hands them out to files it creates).
    public func reserveIDs(_ count: Int) throws -> Range<Int64> {
        guard let end = try db.first("UPDATE meta SET value = value + ? WHERE key = 'next_object_id' RETURNING value", count, map: { $0.int64(0) }) else {
            throw LibraryError.corrupt("library.db has no next_object_id")
        }
        return (end - Int64(count))..<end
    }
}
