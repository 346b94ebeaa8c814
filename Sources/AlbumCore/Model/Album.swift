import Glibc

/// A user album (a directory under Albums/).
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

    static let columns = "id, parent_id, name, created_at, mtime_ns, changed_ns, mode"

    public init(id: Int64, parentID: Int64, name: String, createdAt: Int64, mtimeNs: Int64, changedNs: Int64, mode: UInt32? = nil) {
        self.mode = mode
        self.id = id
        self.parentID = parentID
        self.name = name
        self.createdAt = createdAt
        self.mtimeNs = mtimeNs
        self.changedNs = changedNs
    }

    init(row: Row) {
        id = row.int64(0)
        parentID = row.int64(1)
        name = row.text(2)
        createdAt = row.int64(3)
        mtimeNs = row.int64(4)
        changedNs = row.int64(5)
        mode = row.optionalInt(6).map { UInt32(truncatingIfNeeded: $0) }
    }
}

/// An asset's entry in an album.
public struct Membership: Sendable, Equatable {
    public var id: Int64
    public var albumID: Int64
    public var assetID: Int64
    public var name: String
    public var sortKey: Int64
}

extension Membership {
    static let columns = "id, album_id, asset_id, name, sort_key"

    // In an extension, so that the memberwise initializer stays.
    init(row: Row) {
        self.init(id: row.int64(0), albumID: row.int64(1), assetID: row.int64(2), name: row.text(3), sortKey: row.int64(4))
    }
}

/// Inode numbers of the fixed folders. Scratch files record the inode of the folder
/// they live in, so these numbers are part of the storage format and never change.
public enum FixedInode {
    public static let root: UInt64 = 1
    public static let albums: UInt64 = 2
    public static let allPhotos: UInt64 = 3
    public static let byDate: UInt64 = 4
    public static let smartAlbums: UInt64 = 5
    /// Smart album folders are 16 + `SmartAlbum.rawValue`.
    public static let firstSmartAlbum: UInt64 = 16
}

extension Library {
    // MARK: albums

    public func album(id: Int64) throws -> Album? {
        try read { db in
            try db.first("SELECT \(Album.columns) FROM albums WHERE id = ?", id, map: Album.init)
        }
    }

    /// The album called `name` (any case or normalization) in `parent` (0: top level).
    public func album(named name: String, in parent: Int64) throws -> Album? {
        try read { db in
            try db.first("SELECT \(Album.columns) FROM albums WHERE parent_id = ? AND name_key = ?",
                         parent, Names.key(name), map: Album.init)
        }
    }

    /// Sub-albums of `parent` in creation order, after id `after`.
    public func albums(in parent: Int64, after: Int64 = 0, limit: Int = Int.max) throws -> [Album] {
        try read { db in
            try db.query("SELECT \(Album.columns) FROM albums WHERE parent_id = ? AND id > ? ORDER BY id LIMIT ?",
                         parent, after, limit, map: Album.init)
        }
    }

    public func allAlbums() throws -> [Album] {
        try read { db in try db.query("SELECT \(Album.columns) FROM albums ORDER BY id", map: Album.init) }
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
        var guardCount = 0
        while current != 0, let album = try album(id: current), guardCount < 4096 {
            names.insert(album.name, at: 0)
            current = album.parentID
            guardCount += 1
        }
        return names
    }

    /// Whether a directory entry called `key` exists in album `albumID` (0: top level):
    /// a sub-album, a member or a scratch file.
    func nameTaken(inAlbum albumID: Int64, key: String, db: Connection) throws -> Bool {
        let dirIno = albumID == 0 ? Int64(FixedInode.albums) : albumID
        if try db.scalar("SELECT 1 FROM albums WHERE parent_id = ? AND name_key = ?", albumID, key) != nil { return true }
        if try db.scalar("SELECT 1 FROM scratch WHERE dir_ino = ? AND name_key = ?", dirIno, key) != nil { return true }
        if albumID != 0,
           try db.scalar("SELECT 1 FROM memberships WHERE album_id = ? AND name_key = ?", albumID, key) != nil { return true }
        return false
    }

    /// Frees `key` in album `albumID` (0: top level) for a new entry: EEXIST when a
    /// sub-album, a scratch file or a visible member has it; the entry of a deleted or
    /// hidden asset gives way (`makeWayForVisibleEntry`).
    func claimName(inAlbum albumID: Int64, key: String, name: String, db: Connection) throws {
        let member = try albumID == 0 ? nil : membership(inAlbum: albumID, key: key, db: db)
        try claimName(inAlbum: albumID, key: key, name: name, member: member, db: db)
    }

    /// `claimName` with the album's entry of `key` (`membership(inAlbum:key:db:)`)
    /// already looked up by the caller.
    private func claimName(inAlbum albumID: Int64, key: String, name: String, member: Membership?, db: Connection) throws {
        if albumID != 0, let member { try makeWayForVisibleEntry(member, db: db) }
        if try nameTaken(inAlbum: albumID, key: key, db: db) { throw LibraryError.exists(name) }
    }

    /// Creates an album. EEXIST if the parent already has an entry of that name.
    public func createAlbum(named name: String, in parent: Int64) throws -> Album {
        try Names.validate(name)
        return try write { db in
            try createAlbum(named: name, in: parent, db: db)
        }
    }

    func createAlbum(named name: String, in parent: Int64, db: Connection) throws -> Album {
        let key = Names.key(name)
        if parent != 0, try db.scalar("SELECT 1 FROM albums WHERE id = ?", parent) == nil {
            throw LibraryError.notFound("album \(parent)")
        }
        try claimName(inAlbum: parent, key: key, name: name, db: db)
        let id = try allocateID(db)
        let now = nowNanoseconds()
        try db.run("INSERT INTO albums(id, parent_id, name, name_key, created_at, mtime_ns, changed_ns) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   id, parent, name, key, now / nanosecondsPerSecond, now, now)
        try touchAlbum(parent, db: db)
        return Album(id: id, parentID: parent, name: name, createdAt: now / nanosecondsPerSecond, mtimeNs: now, changedNs: now)
    }

    /// The album at `path`, creating every missing album on the way ("save to album X,
    /// creating it if missing").
    public func ensureAlbum(path: [String]) throws -> Album? {
        var parent: Int64 = 0
        var found: Album?
        for component in path {
            try Names.validate(component)
            if let existing = try album(named: component, in: parent) {
                found = existing
            } else {
                found = try write { db in
                    if let raced = try db.first("SELECT \(Album.columns) FROM albums WHERE parent_id = ? AND name_key = ?",
                                                parent, Names.key(component), map: Album.init) {
                        return raced
                    }
                    return try createAlbum(named: component, in: parent, db: db)
                }
            }
            parent = found!.id
        }
        return found
    }

    /// Renames and/or moves an album. Moving an album into itself or a descendant is
    /// EINVAL; a name taken at the target is EEXIST.
    public func moveAlbum(id: Int64, to newParent: Int64, name newName: String) throws {
        try Names.validate(newName)
        try write { db in
            guard let album = try db.first("SELECT \(Album.columns) FROM albums WHERE id = ?", id, map: Album.init) else {
                throw LibraryError.notFound("album \(id)")
            }
            var cursor = newParent
            while cursor != 0 {
                if cursor == id {
                    throw LibraryError.invalidName("cannot move album \(album.name) into itself", errno: EINVAL)
                }
                guard let up = try db.scalar("SELECT parent_id FROM albums WHERE id = ?", cursor) else {
                    throw LibraryError.notFound("album \(newParent)")
                }
                cursor = up
            }
            let key = Names.key(newName)
            let sameSlot = newParent == album.parentID && key == Names.key(album.name)
            if !sameSlot { try claimName(inAlbum: newParent, key: key, name: newName, db: db) }
            let now = nowNanoseconds()
            try db.run("UPDATE albums SET parent_id = ?, name = ?, name_key = ?, changed_ns = ? WHERE id = ?",
                       newParent, newName, key, now, id)
            try touchAlbum(album.parentID, db: db)
            if newParent != album.parentID { try touchAlbum(newParent, db: db) }
        }
    }

    /// Deletes an album. Not recursive: ENOTEMPTY unless it has no sub-albums, members
    /// or scratch files. Its assets stay in the library.
    public func deleteAlbum(id: Int64) throws {
        try write { db in
            guard let album = try db.first("SELECT \(Album.columns) FROM albums WHERE id = ?", id, map: Album.init) else {
                throw LibraryError.notFound("album \(id)")
            }
            let busy = try db.scalar("SELECT 1 FROM albums WHERE parent_id = ? UNION ALL SELECT 1 FROM memberships WHERE album_id = ? UNION ALL SELECT 1 FROM scratch WHERE dir_ino = ? LIMIT 1",
                                     id, id, id) != nil
            if busy { throw LibraryError.notEmpty(album.name) }
            try db.run("DELETE FROM albums WHERE id = ?", id)
            try db.run("DELETE FROM xattrs WHERE ino = ?", id)
            try touchAlbum(album.parentID, db: db)
        }
    }

    /// Sets an album's mtime and ctime to now (its entries changed).
    func touchAlbum(_ id: Int64, db: Connection) throws {
        guard id != 0 else { return }
        let now = nowNanoseconds()
        try db.run("UPDATE albums SET mtime_ns = ?, changed_ns = ? WHERE id = ?", now, now, id)
    }

    public func setAlbumMode(id: Int64, mode: UInt32) throws {
        try write { db in
            try db.run("UPDATE albums SET mode = ?, changed_ns = ? WHERE id = ?", Int64(mode & 0o7777), nowNanoseconds(), id)
        }
    }

    public func setAlbumTimes(id: Int64, mtimeNs: Int64) throws {
        try write { db in
            try db.run("UPDATE albums SET mtime_ns = ?, changed_ns = ? WHERE id = ?", mtimeNs, nowNanoseconds(), id)
        }
    }

    // MARK: memberships

    public func memberships(ofAsset assetID: Int64) throws -> [Membership] {
        try read { db in
            try db.query("SELECT \(Membership.columns) FROM memberships WHERE asset_id = ? ORDER BY id", assetID, map: Membership.init)
        }
    }

    /// Adds an asset to an album under `name`. If the album already has the asset under
    /// that name, nothing changes; another entry of that name is EEXIST.
    @discardableResult
    public func addMembership(album albumID: Int64, asset assetID: Int64, name: String) throws -> Membership {
        try Names.validate(name)
        return try write { db in try addMembership(album: albumID, asset: assetID, name: name, db: db) }
    }

    func addMembership(album albumID: Int64, asset assetID: Int64, name: String, db: Connection) throws -> Membership {
        let key = Names.key(name)
        let existing = try membership(inAlbum: albumID, key: key, db: db)
        if let existing, existing.assetID == assetID { return existing }
        // The entry just read is the one claimName would look up again.
        try claimName(inAlbum: albumID, key: key, name: name, member: existing, db: db)
        guard let taken = try db.scalar("SELECT taken_at FROM assets WHERE id = ?", assetID) else {
            throw LibraryError.notFound("asset \(assetID)")
        }
        try db.run("INSERT INTO memberships(album_id, asset_id, name, name_key, sort_key, added_at) VALUES (?, ?, ?, ?, 0, ?)",
                   albumID, assetID, name, key, nowSeconds())
        let id = db.lastInsertRowID
        let sortKey = SortKey.make(takenAt: taken, id: id)
        try db.run("UPDATE memberships SET sort_key = ? WHERE id = ?", sortKey, id)
        try touchAlbum(albumID, db: db)
        return Membership(id: id, albumID: albumID, assetID: assetID, name: name, sortKey: sortKey)
    }

    /// The entry called `key` in album `albumID`, if any.
    private func membership(inAlbum albumID: Int64, key: String, db: Connection) throws -> Membership? {
        try db.first("SELECT \(Membership.columns) FROM memberships WHERE album_id = ? AND name_key = ?", albumID, key, map: Membership.init)
    }

    /// A name in an album held by the entry of a deleted or hidden asset (kept for its
    /// restore, but not shown) gives way to a new entry: the invisible one takes the
    /// first free ` (2)` name. A visible entry of that name is EEXIST.
    func makeWayForVisibleEntry(_ existing: Membership, db: Connection) throws {
        let visible = try db.scalar("SELECT 1 FROM assets WHERE id = ? AND trashed_at IS NULL AND hidden = 0", existing.assetID) != nil
        if visible { throw LibraryError.exists(existing.name) }
        let free = try Names.firstFree(existing.name) { key in try nameTaken(inAlbum: existing.albumID, key: key, db: db) }
        try db.run("UPDATE memberships SET name = ?, name_key = ? WHERE id = ?", free, Names.key(free), existing.id)
    }

    /// Removes the entry `name` from an album; the asset stays in the library.
    public func removeMembership(album albumID: Int64, name: String) throws {
        try write { db in
            try db.run("DELETE FROM memberships WHERE album_id = ? AND name_key = ?", albumID, Names.key(name))
            guard db.changes > 0 else { throw LibraryError.notFound(name) }
            try touchAlbum(albumID, db: db)
        }
    }

    /// Moves or renames an album entry. A different entry at the target name is EEXIST
    /// (the filesystem layer decides what replacing means).
    public func moveMembership(from albumID: Int64, name: String, to newAlbumID: Int64, name newName: String) throws {
        try Names.validate(newName)
        try write { db in
            let key = Names.key(newName)
            guard let membershipID = try db.scalar("SELECT id FROM memberships WHERE album_id = ? AND name_key = ?",
                                                   albumID, Names.key(name)) else {
                throw LibraryError.notFound(name)
            }
            let sameSlot = albumID == newAlbumID && key == Names.key(name)
            if !sameSlot { try claimName(inAlbum: newAlbumID, key: key, name: newName, db: db) }
            try db.run("UPDATE memberships SET album_id = ?, name = ?, name_key = ? WHERE id = ?",
                       newAlbumID, newName, key, membershipID)
            try touchAlbum(albumID, db: db)
            if newAlbumID != albumID { try touchAlbum(newAlbumID, db: db) }
        }
    }
}
