import Glibc

extension Library {
    public static let trashRetentionSeconds: Int64 = 30 * 86400

    func fetchAsset(_ id: Int64, db: Connection) throws -> Asset? {
        try db.first("SELECT \(Asset.columns) FROM assets a WHERE a.id = ?", id) { Asset(row: $0) }
    }

    public func asset(id: Int64) throws -> Asset? {
        try read { db in try fetchAsset(id, db: db) }
    }

    /// The asset whose display name (in All Photos and the views) is `name`, in any case
    /// or normalization.
    public func asset(named name: String) throws -> Asset? {
        try read { db in
            try db.first("SELECT \(Asset.columns) FROM assets a WHERE a.name_key = ?", Names.key(name)) { Asset(row: $0) }
        }
    }

    public func assets(withSHA256 sha256: String) throws -> [Asset] {
        try read { db in
            try db.query("SELECT \(Asset.columns) FROM assets a WHERE a.sha256 = ? ORDER BY a.id", sha256) { Asset(row: $0) }
        }
    }

    /// The asset behind an inode number that was handed out for a file being written
    /// whose bytes turned out to be a duplicate.
    public func aliasedAsset(ino: Int64) throws -> Int64? {
        try read { db in try db.scalar("SELECT asset_id FROM aliases WHERE ino = ?", ino) }
    }

    /// Records that inode number `ino` now stands for `asset`; attributes stored on the
    /// number before (Samba sets them on a file it is still writing) move to the asset.
    public func addAlias(ino: Int64, asset: Int64) throws {
        try write { db in
            try db.run("INSERT OR REPLACE INTO aliases(ino, asset_id) VALUES (?, ?)", ino, asset)
            try db.run("UPDATE OR REPLACE xattrs SET ino = ? WHERE ino = ?", asset, ino)
        }
    }

    private func update(_ id: Int64, _ assignments: String, _ values: any SQLConvertible...) throws {
        try write { db in
            let statement = "UPDATE assets SET \(assignments), changed_ns = ? WHERE id = ?"
            try db.run(statement, bindings: values + [nowNanoseconds(), id])
            guard db.changes > 0 else { throw LibraryError.notFound("asset \(id)") }
        }
    }

    /// Moves an asset to Recently Deleted; its memberships are kept for a restore.
    public func trash(_ id: Int64) throws {
        try update(id, "trashed_at = coalesce(trashed_at, ?)", nowSeconds())
    }

    /// Brings an asset back from Recently Deleted, with its album memberships.
    public func restore(_ id: Int64) throws {
        try update(id, "trashed_at = NULL")
    }

    /// Permission bits for an asset (chmod); nil goes back to the default.
    public func setMode(_ id: Int64, _ mode: UInt32?) throws {
        try update(id, "mode = ?", mode.map { Int64($0 & 0o7777) })
    }

    public func setFavorite(_ id: Int64, _ on: Bool) throws {
        try update(id, "favorite = ?", on)
    }

    public func setHidden(_ id: Int64, _ on: Bool) throws {
        try update(id, "hidden = ?", on)
    }

    /// Renames an asset's display name (a rename in All Photos or a view). EEXIST if
    /// another asset has that name.
    public func renameAsset(_ id: Int64, to newName: String) throws {
        try Names.validate(newName)
        try write { db in
            let key = Names.key(newName)
            if let other = try db.scalar("SELECT id FROM assets WHERE name_key = ?", key), other != id {
                throw LibraryError.exists(newName)
            }
            try db.run("UPDATE assets SET name = ?, name_key = ?, changed_ns = ? WHERE id = ?", newName, key, nowNanoseconds(), id)
            guard db.changes > 0 else { throw LibraryError.notFound("asset \(id)") }
        }
    }

    /// Sets the mtime a user chose (`cp -p`, `rsync -t`, `touch`). When the bytes carry no
    /// capture date, it becomes the capture date too, and the asset moves in the date
    /// views and the listing order.
    public func setMtime(_ id: Int64, nanoseconds: Int64) throws {
        try write { db in
            guard let asset = try fetchAsset(id, db: db) else { throw LibraryError.notFound("asset \(id)") }
            let now = nowNanoseconds()
            if asset.takenSource == .fileTime || asset.takenSource == .user {
                let taken = nanoseconds >= 0 ? nanoseconds / nanosecondsPerSecond : (nanoseconds - nanosecondsPerSecond + 1) / nanosecondsPerSecond
                let day = Library.dayNumber(instant: taken, offsetMinutes: nil)
                try db.run("""
                    UPDATE assets SET taken_at = ?, taken_offset = NULL, taken_day = ?, taken_source = ?,
                        sort_key = ?, mtime_ns = ?, changed_ns = ? WHERE id = ?
                    """, taken, day, CaptureSource.user.rawValue, SortKey.make(takenAt: taken, id: id), nanoseconds, now, id)
                try db.run("UPDATE memberships SET sort_key = \(SortKey.sql(taken: "?", id: "id")) WHERE asset_id = ?", taken, id)
            } else {
                try db.run("UPDATE assets SET mtime_ns = ?, changed_ns = ? WHERE id = ?", nanoseconds, now, id)
            }
        }
    }

    /// Deletes an asset for good: rows, memberships, versions and xattrs. Its blobs stay
    /// until `gc` finds nothing else uses them.
    public func deletePermanently(_ id: Int64) throws {
        try write { db in try deleteAsset(id, db: db) }
    }

    func deleteAsset(_ id: Int64, db: Connection) throws {
        let albums = try db.query("SELECT DISTINCT album_id FROM memberships WHERE asset_id = ?", id) { $0.int64(0) }
        try db.run("DELETE FROM assets WHERE id = ?", id)
        guard db.changes > 0 else { throw LibraryError.notFound("asset \(id)") }
        try db.run("DELETE FROM xattrs WHERE ino = ?", id)
        try db.run("DELETE FROM xattrs WHERE ino IN (SELECT ino FROM aliases WHERE asset_id = ?)", id)
        for album in albums { try touchAlbum(album, db: db) }
    }

    // MARK: versions

    public struct Version: Sendable, Equatable {
        public var version: Int
        public var sha256: String
        public var size: Int64
        public var createdAt: Int64
    }

    public func versions(of id: Int64) throws -> [Version] {
        try read { db in
            try db.query("SELECT version, sha256, size, created_at FROM versions WHERE asset_id = ? ORDER BY version", id) {
                Version(version: $0.int(0), sha256: $0.text(1), size: $0.int64(2), createdAt: $0.int64(3))
            }
        }
    }

    /// Makes a staged file the new current version of an asset, keeping the earlier
    /// ones. Bytes equal to the current version change nothing. Returns the asset.
    public func commitVersion(_ staged: StagedFile, of id: Int64) throws -> Asset {
        defer { unlink(staged.path) }
        guard let current = try asset(id: id) else { throw LibraryError.notFound("asset \(id)") }
        if current.sha256 == staged.sha256 { return current }
        let format: MediaFormat
        switch Sniffer.sniff(staged.header, name: current.originalName) {
        case .media(let f): format = f
        case .unsupported(let why): throw LibraryError.refused(why)
        }
        let metadata = try MetadataReader.read(path: staged.path, format: format)
        if !blobs.exists(staged.sha256) {
            try blobs.adopt(stagedFile: staged.path, sha256: staged.sha256)
        }
        return try write { db in
            guard let asset = try fetchAsset(id, db: db) else { throw LibraryError.notFound("asset \(id)") }
            let now = nowNanoseconds()
            let version = asset.version + 1
            try db.run("INSERT OR IGNORE INTO blobs(sha256, size, created_at, mtime_ns) VALUES (?, ?, ?, ?)",
                       staged.sha256, staged.size, now / nanosecondsPerSecond, blobMtime(staged.sha256))
            try db.run("INSERT INTO versions(asset_id, version, sha256, size, created_at) VALUES (?, ?, ?, ?, ?)",
                       id, version, staged.sha256, staged.size, now / nanosecondsPerSecond)
            // The capture date stays: an edit does not change when the photo was taken.
            try db.run("""
                UPDATE assets SET sha256 = ?, size = ?, version = ?, media_type = ?, format = ?, width = ?, height = ?,
                    orientation = ?, rotation = ?, duration = ?, changed_ns = ?,
                    mtime_ns = CASE WHEN taken_source IN (3, 4) THEN mtime_ns ELSE NULL END
                WHERE id = ?
                """, staged.sha256, staged.size, version, metadata.mediaType.rawValue, metadata.format.rawValue,
                       metadata.width, metadata.height, metadata.orientation, metadata.rotation, metadata.duration, now, id)
            return try fetchAsset(id, db: db)!
        }
    }

    // MARK: extended attributes

    public func xattr(ino: Int64, name: String) throws -> [UInt8]? {
        try read { db in try db.first("SELECT value FROM xattrs WHERE ino = ? AND name = ?", ino, name) { $0.blob(0) } }
    }

    public func xattrNames(ino: Int64) throws -> [String] {
        try read { db in try db.query("SELECT name FROM xattrs WHERE ino = ? ORDER BY name", ino) { $0.text(0) } }
    }

    public func setXattr(ino: Int64, name: String, value: [UInt8]) throws {
        try write { db in
            try db.run("INSERT OR REPLACE INTO xattrs(ino, name, value) VALUES (?, ?, ?)", ino, name, value)
        }
    }

    /// Removes an attribute; false if there was none.
    @discardableResult
    public func removeXattr(ino: Int64, name: String) throws -> Bool {
        try write { db in
            try db.run("DELETE FROM xattrs WHERE ino = ? AND name = ?", ino, name)
            return db.changes > 0
        }
    }
}
