import Glibc

/// Where an imported file goes besides the library itself.
public struct ImportDestination: Sendable {
    /// Album to add the asset to, and the entry name there (nil: the asset's name).
    public var album: Int64?
    public var entryName: String?
    /// When the album already has another entry of that name: pick a free ` (2)` name
    /// (the command line), or fail with EEXIST (the mount, which checked beforehand).
    public var suffixOnConflict: Bool
    public var favorite: Bool
    public var hidden: Bool

    public init(album: Int64? = nil, entryName: String? = nil, suffixOnConflict: Bool = true,
                favorite: Bool = false, hidden: Bool = false) {
        self.album = album
        self.entryName = entryName
        self.suffixOnConflict = suffixOnConflict
        self.favorite = favorite
        self.hidden = hidden
    }

    public static let library = ImportDestination()
}

public enum ImportOutcome: Sendable {
    /// A new asset.
    case imported(Asset, membership: Membership?)
    /// The bytes were already in the library: the existing asset, now also where it was
    /// imported, and back from Recently Deleted if it was there.
    case duplicate(Asset, membership: Membership?, restored: Bool)
    /// Not a supported photo or video; nothing was added.
    case refused(String)

    public var asset: Asset? {
        switch self {
        case .imported(let a, _), .duplicate(let a, _, _): return a
        case .refused: return nil
        }
    }
}

extension Library {
    public var staging: Staging { Staging(paths: paths) }

    /// Imports one file from outside the library (the command line).
    public func importFile(at sourcePath: String, originalName: String, destination: ImportDestination) throws -> ImportOutcome {
        let staged: StagedFile
        do {
            staged = try staging.copy(from: sourcePath)
        } catch let error as LibraryError {
            if case .refused(let why) = error { return .refused(why) }
            throw error
        }
        return try commit(staged, originalName: originalName, destination: destination)
    }

    /// Makes a staged file part of the library: dedupe by hash, else sniff, read the
    /// metadata, move the blob into place (fsynced) and add the rows in one transaction.
    /// The staged file is consumed in every case, refusal and error included.
    /// `assetID`: the id a new asset takes (the mount reserved it for the file being
    /// written, whose inode number the kernel already has); nil allocates one.
    public func commit(_ staged: StagedFile, originalName: String, destination: ImportDestination,
                       assetID: Int64? = nil) throws -> ImportOutcome {
        defer { unlink(staged.path) }  // a no-op once adopted into originals/
        var clock = PhaseClock()
        defer { clock.log("import of \(originalName)") }
        if let existing = try read({ db in try existingAsset(sha256: staged.sha256, db: db) }) {
            return try addExisting(existing, destination: destination)
        }
        let format: MediaFormat
        switch Sniffer.sniff(staged.header, name: originalName) {
        case .media(let f): format = f
        case .unsupported(let why): return .refused(why)
        }
        let metadata: MediaMetadata
        do {
            metadata = try MetadataReader.read(path: staged.path, format: format)
        } catch LibraryError.refused(let why) {
            return .refused(why)
        }
        clock.mark("metadata")
        try blobs.adopt(stagedFile: staged.path, sha256: staged.sha256)
        clock.mark("blob")
        defer { clock.mark("rows") }
        return try write { db in
            if let raced = try existingAsset(sha256: staged.sha256, db: db) {
                return try addExisting(raced, destination: destination, db: db)
            }
            let asset = try insertAsset(staged: staged, metadata: metadata, originalName: originalName,
                                        destination: destination, id: assetID, db: db)
            let membership = try addToDestination(asset, destination: destination, db: db)
            return .imported(try fetchAsset(asset.id, db: db) ?? asset, membership: membership)
        }
    }

    func existingAsset(sha256: String, db: Connection) throws -> Int64? {
        try db.scalar("SELECT id FROM assets WHERE sha256 = ? ORDER BY id LIMIT 1", sha256)
    }

    /// Adds an asset already in the library where a file was made (a copy inside the
    /// mount that copied no bytes), as an import of its bytes would.
    public func addExisting(_ id: Int64, destination: ImportDestination) throws -> ImportOutcome {
        try write { db in try addExisting(id, destination: destination, db: db) }
    }

    private func addExisting(_ id: Int64, destination: ImportDestination, db: Connection) throws -> ImportOutcome {
        guard var asset = try fetchAsset(id, db: db) else { throw LibraryError.notFound("asset \(id)") }
        let restored = asset.isTrashed
        if restored {
            try db.run("UPDATE assets SET trashed_at = NULL, changed_ns = ? WHERE id = ?", nowNanoseconds(), id)
        }
        if destination.favorite && !asset.favorite {
            try db.run("UPDATE assets SET favorite = 1, changed_ns = ? WHERE id = ?", nowNanoseconds(), id)
        }
        if destination.hidden && !asset.hidden {
            try db.run("UPDATE assets SET hidden = 1, changed_ns = ? WHERE id = ?", nowNanoseconds(), id)
        }
        let membership = try addToDestination(asset, destination: destination, db: db)
        asset = try fetchAsset(id, db: db) ?? asset
        return .duplicate(asset, membership: membership, restored: restored)
    }

    private func addToDestination(_ asset: Asset, destination: ImportDestination, db: Connection) throws -> Membership? {
        guard let album = destination.album else { return nil }
        let wanted = destination.entryName ?? asset.name
        // Already in this album under the wanted name, or (command line) under any name.
        if let existing = try db.first("SELECT id, name, sort_key FROM memberships WHERE album_id = ? AND asset_id = ? ORDER BY name_key = ? DESC LIMIT 1",
                                       album, asset.id, Names.key(wanted), map: {
            Membership(id: $0.int64(0), albumID: album, assetID: asset.id, name: $0.text(1), sortKey: $0.int64(2))
        }), destination.suffixOnConflict || Names.key(existing.name) == Names.key(wanted) {
            return existing
        }
        var name = wanted
        if destination.suffixOnConflict {
            name = try Names.firstFree(wanted) { key in try nameTaken(inAlbum: album, key: key, db: db) }
        }
        return try addMembership(album: album, asset: asset.id, name: name, db: db)
    }

    private func insertAsset(staged: StagedFile, metadata: MediaMetadata, originalName: String,
                             destination: ImportDestination, id preassigned: Int64?, db: Connection) throws -> Asset {
        let id = try preassigned ?? allocateID(db)
        let name = try Names.firstFree(originalName) { key in
            try db.scalar("SELECT 1 FROM assets WHERE name_key = ?", key) != nil
        }
        let capture = metadata.capture
            ?? CaptureDate(instant: staged.mtimeNs / nanosecondsPerSecond, offsetMinutes: nil, source: .fileTime)
        let day = Library.dayNumber(instant: capture.instant, offsetMinutes: capture.offsetMinutes)
        let kinds = Library.kinds(of: metadata, originalName: originalName)
        let now = nowNanoseconds()
        let sortKey = SortKey.make(takenAt: capture.instant, id: id)
        try db.run("INSERT OR IGNORE INTO blobs(sha256, size, created_at, mtime_ns) VALUES (?, ?, ?, ?)",
                   staged.sha256, staged.size, now / nanosecondsPerSecond, blobMtime(staged.sha256))
        try db.run("""
            INSERT INTO assets(id, name, name_key, original_name, sha256, size, version, media_type, format, kinds,
                taken_at, taken_offset, taken_day, taken_source, sort_key, width, height, orientation, rotation,
                latitude, longitude, make, model, lens, duration, favorite, hidden, added_at, changed_ns)
            VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
                   id, name, Names.key(name), originalName, staged.sha256, staged.size,
                   metadata.mediaType.rawValue, metadata.format.rawValue, kinds.rawValue,
                   capture.instant, capture.offsetMinutes, day, capture.source.rawValue, sortKey,
                   metadata.width, metadata.height, metadata.orientation, metadata.rotation,
                   metadata.latitude, metadata.longitude, metadata.make, metadata.model, metadata.lens,
                   metadata.duration, destination.favorite, destination.hidden, now / nanosecondsPerSecond, now)
        try db.run("INSERT INTO versions(asset_id, version, sha256, size, created_at) VALUES (?, 1, ?, ?, ?)",
                   id, staged.sha256, staged.size, now / nanosecondsPerSecond)
        try pairLivePhoto(id: id, originalName: originalName, mediaType: metadata.mediaType, takenAt: capture.instant, db: db)
        guard let asset = try fetchAsset(id, db: db) else { throw LibraryError.notFound("asset \(id)") }
        return asset
    }

    /// yyyymmdd of an instant on the capture's clock (this machine's zone if unknown).
    static func dayNumber(instant: Int64, offsetMinutes: Int?) -> Int {
        let offset = offsetMinutes ?? Dates.localOffsetMinutes(atInstant: instant)
        return Dates.wallClock(instant, offsetMinutes: offset).dayNumber
    }

    /// The smart-album kinds of a file. See docs/storage-format.md for the rules.
    static func kinds(of m: MediaMetadata, originalName: String) -> MediaKinds {
        var kinds: MediaKinds = []
        if m.format == .raw { kinds.insert(.raw) }
        guard m.mediaType == .photo else { return kinds }
        let lowerName = originalName.lowercased()
        if m.make == nil && (m.userComment?.lowercased() == "screenshot"
            || lowerName.hasPrefix("screenshot") || lowerName.hasPrefix("screen shot")) {
            kinds.insert(.screenshot)
        }
        if let w = m.width, let h = m.height, min(w, h) > 0, max(w, h) >= 2400,
           Double(max(w, h)) / Double(min(w, h)) >= 3 {
            kinds.insert(.panorama)
        }
        if m.pageCount > 1 && (m.format == .gif || m.format == .webp || m.format == .png) { kinds.insert(.animated) }
        if let lens = m.lens?.lowercased(), lens.contains("front") { kinds.insert(.selfie) }
        return kinds
    }

    /// A photo and a video with the same name stem taken within two seconds of each
    /// other are the two halves of a Live Photo.
    private func pairLivePhoto(id: Int64, originalName: String, mediaType: MediaType, takenAt: Int64, db: Connection) throws {
        let stem = Names.key(Names.split(originalName).stem)
        let partners = try db.query("SELECT id, original_name FROM assets WHERE taken_at BETWEEN ? AND ? AND media_type != ? AND id != ?",
                                    takenAt - 2, takenAt + 2, mediaType.rawValue, id) { ($0.int64(0), $0.text(1)) }
        for (partner, name) in partners where Names.key(Names.split(name).stem) == stem {
            try db.run("UPDATE assets SET kinds = kinds | ? WHERE id IN (?, ?)", MediaKinds.live.rawValue, id, partner)
        }
    }

    /// A new object id (inode number), never handed out before.
    func allocateID(_ db: Connection) throws -> Int64 {
        guard let id = try db.first("UPDATE meta SET value = value + 1 WHERE key = 'next_object_id' RETURNING value - 1", map: { $0.int64(0) }) else {
            throw LibraryError.corrupt("library.db has no next_object_id")
        }
        return id
    }

    /// Reserves `count` object ids in one transaction (the mount hands them out to files
    /// being written).
    public func reserveIDs(_ count: Int) throws -> Range<Int64> {
        try write { db in
            guard let end = try db.first("UPDATE meta SET value = value + ? WHERE key = 'next_object_id' RETURNING value", count, map: { $0.int64(0) }) else {
                throw LibraryError.corrupt("library.db has no next_object_id")
            }
            return (end - Int64(count))..<end
        }
    }
}
