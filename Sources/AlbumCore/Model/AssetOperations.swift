import Glibc

/// One version of an asset (the current one included).
public struct Version: Sendable, Equatable {
    public var version: Int
    public var sha256: String
    public var size: Int64
    public var createdAt: Int64
}

/// A blob's row: what was stored, to tell an intact file from a damaged one.
public struct BlobRecord: Sendable {
    public var size: Int64
    public var mtimeNs: Int64?
    public var damaged: Bool
}

// MARK: - reads

extension LibraryRecords {
    public func asset(id: Int64) throws -> Asset? {
        try db.first("SELECT \(Asset.columns) FROM assets a WHERE a.id = ?", id) { Asset(row: $0) }
    }

    /// The asset whose display name (in All Photos and the views) is `name`, in any case
    /// or normalization.
    public func asset(named name: String) throws -> Asset? {
        try db.first("SELECT \(Asset.columns) FROM assets a WHERE a.name_key = ?", Names.key(name)) { Asset(row: $0) }
    }

    public func assets(withSHA256 sha256: String) throws -> [Asset] {
        try db.query("SELECT \(Asset.columns) FROM assets a WHERE a.sha256 = ? ORDER BY a.id", sha256) { Asset(row: $0) }
    }

    /// The asset an inode number stands for since its file became that asset's (a
    /// duplicate's bytes, a save's temporary file).
    public func aliasedAsset(ino: Int64) throws -> Int64? {
        try db.scalar("SELECT asset_id FROM aliases WHERE ino = ?", ino)
    }

    /// Whether an alias keeps reporting its own number (see `addAlias`).
    public func aliasKeepsItsNumber(_ ino: Int64) throws -> Bool {
        try db.scalar("SELECT own_number FROM aliases WHERE ino = ?", ino) == 1
    }

    public func versions(of id: Int64) throws -> [Version] {
        try db.query("SELECT version, sha256, size, created_at FROM versions WHERE asset_id = ? ORDER BY version", id) {
            Version(version: $0.int(0), sha256: $0.text(1), size: $0.int64(2), createdAt: $0.int64(3))
        }
    }

    public func blobRecord(_ sha256: String) throws -> BlobRecord? {
        try db.first("SELECT size, mtime_ns, damaged FROM blobs WHERE sha256 = ?", sha256) {
            BlobRecord(size: $0.int64(0), mtimeNs: $0.optionalInt64(1), damaged: $0.bool(2))
        }
    }

    public func xattr(ino: Int64, name: String) throws -> [UInt8]? {
        try db.first("SELECT value FROM xattrs WHERE ino = ? AND name = ?", ino, name) { $0.blob(0) }
    }

    public func xattrNames(ino: Int64) throws -> [String] {
        try db.query("SELECT name FROM xattrs WHERE ino = ? ORDER BY name", ino) { $0.text(0) }
    }
}

// MARK: - changes

extension Transaction {
    /// Throws `changedMeanwhile` when the blob of `sha256`, which the caller found in
    /// place and did not place itself, is named by no row and gone: in a store several
    /// hosts share, the host that placed it took it back (`Library.takeBack`). The caller
    /// places its own bytes and starts over.
    public func expectBlobInPlace(_ sha256: String) throws {
        guard library.blobs.shared, try blobRecord(sha256) == nil, !library.blobs.exists(sha256) else { return }
        throw LibraryError.changedMeanwhile("the blob \(sha256)")
    }

    public static let trashRetentionSeconds: Int64 = 30 * 86400

    private func update(_ id: Int64, _ assignments: String, _ values: any SQLConvertible...) throws {
        try db.run("UPDATE assets SET \(assignments), changed_ns = ? WHERE id = ?", bindings: values + [nowNanoseconds(), id])
        guard db.changes > 0 else { throw LibraryError.notFound("asset \(id)") }
    }

    /// Records that inode number `ino` now stands for `asset`. Attributes stored on the
    /// number (Samba sets them on a file it is still writing) go to the asset where it
    /// has none of that name: the asset's own values win. `keepsItsNumber`: a copy's
    /// number, which whoever holds it (an NFS client, since its CREATE) keeps seeing as
    /// that file's st_ino; otherwise a save's, which reports the photo's own.
    public func addAlias(ino: Int64, asset: Int64, keepsItsNumber: Bool = false) throws {
        guard ino != asset else { return }
        try db.run("""
            INSERT INTO aliases(ino, asset_id, own_number) VALUES (?, ?, ?)
            ON CONFLICT(ino) DO UPDATE SET asset_id = excluded.asset_id, own_number = excluded.own_number
            """, ino, asset, keepsItsNumber)
        try copyAttributes(of: ino, to: asset)
        try db.run("DELETE FROM xattrs WHERE ino = ?", ino)
    }

    /// Whether an asset's display name `key` is taken: by another asset, or by a plain
    /// file kept in All Photos, which lists photos by those names (the two would show
    /// under one name there).
    public func assetNameTaken(_ key: String) throws -> Bool {
        try db.scalar("SELECT 1 FROM assets WHERE name_key = ?", key) != nil || plainFileHoldsAssetName(key)
    }

    /// Whether asset `id` may take the display name `key`: no other asset has it, and no
    /// plain file has it in a folder that lists the asset by that name.
    public func assetNameFree(_ key: String, for id: Int64) throws -> Bool {
        if let other = try db.scalar("SELECT id FROM assets WHERE name_key = ?", key), other != id { return false }
        guard let asset = try asset(id: id) else { return true }  // the caller's change finds it gone
        return try !plainFileHolds(key, in: Self.namedViews(showing: asset))
    }

    private func plainFileHoldsAssetName(_ key: String) throws -> Bool {
        try plainFileHolds(key, in: [FixedInode.allPhotos])
    }

    /// The folders that list `asset` by its own name and keep plain files too: All
    /// Photos (whose files every asset name avoids, `assetNameTaken`), and Favorites or
    /// Hidden when it shows there.
    private static func namedViews(showing asset: Asset) -> [UInt64] {
        namedViews(favorite: asset.favorite, hidden: asset.hidden, trashed: asset.isTrashed)
    }

    static func namedViews(favorite: Bool, hidden: Bool, trashed: Bool = false) -> [UInt64] {
        var folders = [FixedInode.allPhotos]
        if !trashed && favorite && !hidden { folders.append(FixedInode.folder(of: .favorites)) }
        if !trashed && hidden { folders.append(FixedInode.folder(of: .hidden)) }
        return folders
    }

    func plainFileHolds(_ key: String, in folders: [UInt64]) throws -> Bool {
        try folders.contains { folder in
            try db.scalar("SELECT 1 FROM plain_files WHERE dir_ino = ? AND name_key = ?", Int64(bitPattern: folder), key) != nil
        }
    }

    /// A photo that starts to show in a folder listing photos by their own names
    /// (restored, unhidden, marked a favorite or hidden) where a plain file has its name
    /// there shows under the next free one everywhere, as a sidecar does; else the folder
    /// listed the name twice, and the name opened the photo, never the file.
    private func freeShownName(_ id: Int64) throws {
        guard let asset = try asset(id: id) else { return }
        let folders = Self.namedViews(showing: asset)
        guard try plainFileHolds(Names.key(asset.name), in: folders) else { return }
        let name = try Names.firstFree(asset.name) { key in try assetNameTaken(key) || plainFileHolds(key, in: folders) }
        try update(id, "name = ?, name_key = ?", name, Names.key(name))
    }

    /// A photo coming back (restored, unhidden) whose album entry's name a plain file took
    /// meanwhile comes back there under the next free one, as in All Photos. Its entry
    /// gives way to a finished file when that file takes the name (`makeWayForPlainFile`),
    /// but not to one still being written, which may yet turn out to be this very photo
    /// copied back in (`createPlainFile`): brought back during such a write, the photo
    /// showed under the file's name beside it.
    private func freeEntryNames(_ id: Int64) throws {
        let entries = try db.query("SELECT id, album_id, name FROM memberships WHERE asset_id = ?", id) {
            (id: $0.int64(0), album: $0.int64(1), name: $0.text(2))
        }
        for entry in entries {
            guard try plainFileHolds(Names.key(entry.name), in: [FixedInode.folder(ofAlbum: entry.album)]) else { continue }
            let name = try Names.firstFree(entry.name) { key in try nameTaken(inAlbum: entry.album, key: key) }
            try db.run("UPDATE memberships SET name = ?, name_key = ? WHERE id = ?", name, Names.key(name), entry.id)
        }
    }

    /// Gives `asset` the attributes stored on number `ino` that it has none of by that
    /// name (its own values win).
    public func copyAttributes(of ino: Int64, to asset: Int64) throws {
        try db.run("INSERT INTO xattrs(ino, name, value) SELECT ?, name, value FROM xattrs WHERE ino = ? ON CONFLICT DO NOTHING", asset, ino)
    }

    /// Moves an asset to Recently Deleted; its memberships are kept for a restore, and
    /// the sidecars beside it go with it (Sidecars.swift).
    /// `at`: the deletion time (seconds) to keep, for a photo put back as it was; already
    /// in Recently Deleted, it then only takes that time.
    public func trash(_ id: Int64, at seconds: Int64? = nil) throws {
        guard let asset = try asset(id: id) else { throw LibraryError.notFound("asset \(id)") }
        guard !asset.isTrashed else {
            if let seconds { try update(id, "trashed_at = ?", seconds) }
            return
        }
        try update(id, "trashed_at = ?", seconds ?? nowSeconds())
        try trashSidecars(of: asset)
        try touchAlbums(of: id)
    }

    /// The albums an asset is in: their listings change when it goes to Recently Deleted,
    /// is hidden, or comes back (an album's mtime is the last change of its entries).
    private func touchAlbums(of id: Int64) throws {
        for album in try db.query("SELECT DISTINCT album_id FROM memberships WHERE asset_id = ?", id, map: { $0.int64(0) }) {
            try touchAlbum(album)
        }
    }

    /// Brings an asset back from Recently Deleted, with its album memberships and the
    /// sidecars that went with it.
    public func restore(_ id: Int64) throws {
        try update(id, "trashed_at = NULL")
        try freeShownName(id)
        try freeEntryNames(id)
        try restoreSidecars(of: id)
        // Out of every desktop trash it went to (their `files/` list trashed photos).
        try db.run("DELETE FROM memberships WHERE asset_id = ? AND album_id IN (SELECT id FROM albums WHERE role = ?)",
                   id, AlbumRole.trashFiles.rawValue)
        try touchAlbums(of: id)
    }

    /// Permission bits for an asset (chmod); nil goes back to the default. Set-id bits
    /// are never kept.
    public func setMode(_ id: Int64, _ mode: UInt32?) throws {
        try update(id, "mode = ?", mode.map { Int64($0 & 0o1777) })
    }

    public func setFavorite(_ id: Int64, _ on: Bool) throws {
        try update(id, "favorite = ?", on)
        if on { try freeShownName(id) }
    }

    public func setHidden(_ id: Int64, _ on: Bool) throws {
        try update(id, "hidden = ?", on)
        try freeShownName(id)
        if !on { try freeEntryNames(id) }
        try touchAlbums(of: id)
    }

    /// Renames an asset's display name (a rename in All Photos or a view). EEXIST if
    /// another asset has that name.
    public func renameAsset(_ id: Int64, to newName: String) throws {
        try Names.validate(newName)
        let key = Names.key(newName)
        guard try assetNameFree(key, for: id) else { throw LibraryError.exists(newName) }
        try update(id, "name = ?, name_key = ?", newName, key)
        try applySidecarDate(id)
    }

    /// Sets the mtime a user chose (`cp -p`, `rsync -t`, `touch`). When the bytes carry no
    /// capture date, it becomes the capture date too, and the asset moves in the date
    /// views and the listing order.
    public func setMtime(_ id: Int64, nanoseconds: Int64) throws {
        guard let asset = try asset(id: id) else { throw LibraryError.notFound("asset \(id)") }
        if asset.takenSource == .fileTime || asset.takenSource == .user {
            let taken = Dates.floorSeconds(nanoseconds)
            try setCapture(id, CaptureDate(instant: taken, offsetMinutes: nil, source: .user))
        }
        try update(id, "mtime_ns = ?", nanoseconds)
    }

    /// Sets the capture date, and with it the date folder and the listing order of the
    /// asset and its album entries.
    func setCapture(_ id: Int64, _ capture: CaptureDate) throws {
        let day = Library.dayNumber(instant: capture.instant, offsetMinutes: capture.offsetMinutes)
        try update(id, "taken_at = ?, taken_offset = ?, taken_day = ?, taken_source = ?, sort_key = ?",
                   capture.instant, capture.offsetMinutes, day, capture.source.rawValue, SortKey.make(takenAt: capture.instant, id: id))
        try db.run("UPDATE memberships SET sort_key = \(SortKey.sql(timePart: "?", id: "id")) WHERE asset_id = ?",
                   SortKey.timePart(capture.instant), id)
    }

    /// Deletes an asset for good: rows, memberships, versions and xattrs. Its blobs stay
    /// until `gc` finds nothing else uses them. Returns the albums it left.
    @discardableResult
    public func deleteAsset(_ id: Int64) throws -> [Membership] {
        let left = try memberships(ofAsset: id)
        try db.run("DELETE FROM xattrs WHERE ino = ? OR ino IN (SELECT ino FROM aliases WHERE asset_id = ?)", id, id)
        // Their bytes in plain/ are removed when the library is next opened, or by gc.
        try deleteTrashedSidecars(of: id)
        try unpairLivePhoto(id)
        try db.run("DELETE FROM assets WHERE id = ?", id)
        guard db.changes > 0 else { throw LibraryError.notFound("asset \(id)") }
        for album in Set(left.map(\.albumID)) { try touchAlbum(album) }
        return left
    }

    /// A temporary file that became an asset by its own close moments ago, and is now
    /// saved over `survivor` (its bytes are `survivor`'s new version): it leaves no trace.
    /// Its number stands for `survivor` from now on, its attributes fill what `survivor`
    /// lacks.
    public func vanish(_ id: Int64, into survivor: Int64) throws {
        try db.run("INSERT INTO xattrs(ino, name, value) SELECT ?, name, value FROM xattrs WHERE ino = ? ON CONFLICT DO NOTHING", survivor, id)
        try db.run("UPDATE aliases SET asset_id = ? WHERE asset_id = ?", survivor, id)
        try deleteAsset(id)
        try addAlias(ino: id, asset: survivor)
    }

    // MARK: extended attributes

    /// The `user.albumfs.*` attributes a user sets on a photo.
    public static let userMarks = ["user.albumfs.favorite", "user.albumfs.hidden", "user.albumfs.rating"]

    /// Marks a copy that keeps attributes wrote on plain file `ino` (rsync -X sets them on
    /// its temporary file, then renames it into place), taken from it as it becomes a
    /// photo: `applyMarks` gives them to that photo.
    public func takeMarks(writtenOn ino: Int64) throws -> [(String, String)] {
        let marks = try db.query("SELECT name, value FROM xattrs WHERE ino = ? AND name IN (?, ?, ?)",
                                 ino, Self.userMarks[0], Self.userMarks[1], Self.userMarks[2]) {
            ($0.text(0), String(decoding: $0.blob(1), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        if !marks.isEmpty {
            try db.run("DELETE FROM xattrs WHERE ino = ? AND name IN (?, ?, ?)", ino, Self.userMarks[0], Self.userMarks[1], Self.userMarks[2])
        }
        return marks
    }

    /// Gives photo `asset` the marks its file carried (`takeMarks`), where they add to
    /// what the folder it arrived in says: a favorite stays one, a rating is set; a
    /// copy's `favorite` 0 does not unmark a photo, and its `hidden` never hides one (the
    /// folder a file is copied into says whether it shows there).
    public func applyMarks(_ marks: [(String, String)], to asset: Int64) throws {
        for (name, text) in marks {
            switch name {
            case Self.userMarks[0] where text == "1": try setFavorite(asset, true)
            case Self.userMarks[2] where Int(text).map({ (0...5).contains($0) }) == true:
                try setXattr(ino: asset, name: name, value: Array(text.utf8))
            default: break
            }
        }
    }

    public func setXattr(ino: Int64, name: String, value: [UInt8]) throws {
        try db.run("INSERT INTO xattrs(ino, name, value) VALUES (?, ?, ?) ON CONFLICT(ino, name) DO UPDATE SET value = excluded.value",
                   ino, name, value)
        try metadataChanged(ino: ino)
    }

    /// An attribute of `ino` changed: its st_ctime is now, whatever it is (a photo, an
    /// album, a plain file; one of the three rows exists).
    private func metadataChanged(ino: Int64) throws {
        let now = nowNanoseconds()
        for table in ["assets", "albums", "plain_files"] {
            try db.run("UPDATE \(table) SET changed_ns = ? WHERE id = ?", now, ino)
        }
    }

    /// Removes an attribute; false if there was none.
    @discardableResult
    public func removeXattr(ino: Int64, name: String) throws -> Bool {
        try db.run("DELETE FROM xattrs WHERE ino = ? AND name = ?", ino, name)
        guard db.changes > 0 else { return false }
        try metadataChanged(ino: ino)
        return true
    }

    // MARK: blobs

    /// The row of a blob just placed (or found) in the store.
    public func recordBlob(_ sha256: String, size: Int64, mtimeNs: Int64?) throws {
        try db.run("INSERT INTO blobs(sha256, size, created_at, mtime_ns) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                   sha256, size, nowSeconds(), mtimeNs)
    }

    /// A close linked bytes of `sha256` where no file of that hash was
    /// (`BlobStore.placeEarly`): if a row names that hash, its file had gone missing
    /// (`check`: "blob file missing"), and these bytes are its file now. Without this the
    /// row kept the lost file's mtime, and every read of the photo failed (EIO).
    public func adoptPlacedBlob(_ sha256: String, size: Int64) throws {
        guard try blobRecord(sha256) != nil else { return }
        try healBlob(sha256, size: size, mtimeNs: try placedBlobMtime(sha256))
    }

    /// A damaged blob's file was replaced by good bytes of the same hash.
    public func healBlob(_ sha256: String, size: Int64, mtimeNs: Int64?) throws {
        try db.run("UPDATE blobs SET size = ?, mtime_ns = ?, damaged = 0 WHERE sha256 = ?", size, mtimeNs, sha256)
        try recordBlob(sha256, size: size, mtimeNs: mtimeNs)
    }

    /// `albumfs check` found a blob's bytes altered: marked, so that the next copy of good
    /// bytes with its hash heals it.
    public func markBlobDamaged(_ sha256: String) throws {
        try db.run("UPDATE blobs SET damaged = 1 WHERE sha256 = ?", sha256)
    }
}

extension Dates {
    /// Whole seconds of nanoseconds since the epoch, rounded down (also before 1970).
    public static func floorSeconds(_ nanoseconds: Int64) -> Int64 {
        let (whole, rest) = nanoseconds.quotientAndRemainder(dividingBy: nanosecondsPerSecond)
        return rest < 0 ? whole - 1 : whole
    }
}
