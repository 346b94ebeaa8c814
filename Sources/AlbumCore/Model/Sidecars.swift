/// Sidecars (PRODUCT.md section 3): plain files named after a photo of the same folder
/// with a sidecar suffix. Tools move, rename and delete them as on any disk; AlbumFS
/// reads the XMP ones into the photo's metadata where the photo's own bytes are silent,
/// and sends every kind to Recently Deleted with its photo, and back.
///
/// Which photo a sidecar belongs to, by its name:
/// - `IMG_1.CR2.xmp` (darktable, digiKam, RawTherapee's `.pp3`, DxO's `.dop`): the photo
///   `IMG_1.CR2` only;
/// - `IMG_1.xmp` (Lightroom, `exiftool -o %d%f.xmp`, Apple's `.AAE`, a camera's `.THM`):
///   every photo of the folder whose name without its extension is `IMG_1`, so that both
///   halves of a RAW+JPEG pair share it. Where both forms exist, the full name's is read
///   first.
/// Suffixes and names compare in any case (`IMG_1.XMP`, `img_1.aae`).
public enum Sidecars {
    public static let suffixes = ["xmp", "aae", "pp3", "dop", "thm"]

    /// The name without its sidecar suffix, if it has one (and something before it).
    public static func base(of name: String) -> String? {
        let (stem, ext) = Names.split(name)
        guard !stem.isEmpty, suffixes.contains(ext.dropFirst().lowercased()) else { return nil }
        return stem
    }

    /// Whether a file of this name is a sidecar, should a photo it names be beside it. Such
    /// files are never imported, even with photo bytes (a `.THM` is a JPEG).
    public static func isSidecarName(_ name: String) -> Bool { base(of: name) != nil }

    /// Whether it is read: an XMP sidecar, and a camera's `.THM` (the JPEG preview a
    /// camera writes beside a video or a RAW, with the camera's EXIF: the only date an
    /// old camera's AVI has). `.AAE`, `.pp3` and `.dop` hold a tool's edits, none of the
    /// fields a sidecar gives a photo.
    public static func isRead(_ name: String) -> Bool {
        ["xmp", "thm"].contains(Names.split(name).ext.dropFirst().lowercased()) && base(of: name) != nil
    }

    /// Whether sidecar `sidecar` belongs to the photo named `photo` in the same folder.
    public static func belongs(_ sidecar: String, to photo: String) -> Bool {
        guard let base = base(of: sidecar) else { return false }
        let key = Names.key(base)
        if key == Names.key(photo) { return true }
        let (stem, ext) = Names.split(photo)
        return !ext.isEmpty && key == Names.key(stem)
    }

    /// The names (as keys) a sidecar of `photo` may have: full-name forms first.
    static func candidateKeys(for photo: String) -> [String] {
        let full = Names.key(photo), stem = Names.key(Names.split(photo).stem)
        return suffixes.map { full + "." + $0 } + (stem == full ? [] : suffixes.map { stem + "." + $0 })
    }
}

/// What photo tools wrote: a rating, keywords, a caption.
public struct Descriptive: Sendable, Equatable {
    public var rating: Int?
    public var keywords: [String] = []
    public var caption: String?

    public init(rating: Int? = nil, keywords: [String] = [], caption: String? = nil) {
        self.rating = rating
        self.keywords = keywords
        self.caption = caption
    }

    init(_ m: MediaMetadata) { self.init(rating: m.rating, keywords: m.keywords, caption: m.caption) }
}

// MARK: - reads

extension LibraryRecords {
    /// Where an asset shows under a name of its own: All Photos and its albums.
    func places(of asset: Asset) throws -> [(dirIno: UInt64, name: String)] {
        [(FixedInode.allPhotos, asset.name)] + (try memberships(ofAsset: asset.id)).map { (UInt64($0.albumID), $0.name) }
    }

    /// The sidecars beside an asset in every folder where it shows, full-name forms first.
    public func sidecars(of asset: Asset) throws -> [PlainFile] {
        var found: [PlainFile] = []
        for (dir, name) in try places(of: asset) {
            let keys = Sidecars.candidateKeys(for: name)
            let files = try db.query("""
                SELECT \(PlainFile.columns) FROM \(PlainFile.rows) WHERE n.dir_ino = ? AND n.name_key IN (\(keys.map { _ in "?" }.joined(separator: ", ")))
                """, bindings: [Int64(bitPattern: dir)] + keys, map: PlainFile.init)
            found += files.sorted { (keys.firstIndex(of: Names.key($0.name)) ?? 0) < (keys.firstIndex(of: Names.key($1.name)) ?? 0) }
        }
        return found
    }

    /// Sidecars that went to Recently Deleted with an asset: the folder each came from,
    /// and its name.
    public func trashedSidecars(of id: Int64) throws -> [(dirIno: UInt64, name: String)] {
        try db.query("SELECT trashed_from, name FROM plain_files WHERE trashed_with = ?", id) {
            (UInt64(bitPattern: $0.int64(0)), $0.text(1))
        }
    }

    /// What the asset's own bytes say (rating, keywords, caption).
    public func embeddedDescriptive(ofAsset id: Int64) throws -> Descriptive {
        try db.first("SELECT rating, keywords, caption FROM assets WHERE id = ?", id) { row in
            Descriptive(rating: row.optionalInt64(0).map(Int.init),
                        keywords: row.optionalText(1).map { $0.split(separator: "\n").map(String.init) } ?? [],
                        caption: row.optionalText(2))
        } ?? Descriptive()
    }

    /// All that the asset's current bytes said when they were read, for bytes that become
    /// another photo's version without being read again (a temporary photo renamed over
    /// it, a copy by `copy_file_range`): `Asset.metadata` with what photo tools wrote
    /// (rating, keywords, caption) and what its kinds were read from. Without them the
    /// version's reading would wipe the rating and keywords a tool had just saved.
    public func bytesMetadata(of asset: Asset) throws -> MediaMetadata {
        var m = asset.metadata
        let d = try embeddedDescriptive(ofAsset: asset.id)
        m.rating = d.rating
        m.keywords = d.keywords
        m.caption = d.caption
        if asset.kinds.contains(.animated) { m.pageCount = max(m.pageCount, 2) }
        if asset.kinds.contains(.screenshot), m.make == nil { m.userComment = "Screenshot" }
        return m
    }

    /// What the read sidecars beside an asset say (XMP, then a `.THM`'s EXIF), first
    /// sidecar first.
    public func sidecarReadings(of asset: Asset) throws -> [MediaMetadata] {
        try sidecars(of: asset).compactMap { file in
            let text = try db.first("SELECT xmp FROM plain_files WHERE id = ?", file.id) { $0.optionalText(0) } ?? nil
            return text.flatMap { MediaMetadata(encoded: Array($0.utf8), format: .jpeg) }
        }
    }

    /// Whether another photo than `asset`, not in Recently Deleted, shows in folder `dir`
    /// with a name sidecar `name` belongs to.
    func sidecarIsClaimed(_ name: String, in dir: UInt64, besides asset: Int64) throws -> Bool {
        guard let base = Sidecars.base(of: name) else { return false }
        let key = Names.key(base)
        // Names `base` or `base.ext`: keys from `base` up to `base/` (after every `base.x`).
        let names: [(Int64, String)]
        if dir == FixedInode.allPhotos {
            names = try db.query("SELECT id, name FROM assets WHERE name_key >= ? AND name_key < ? AND trashed_at IS NULL",
                                 key, key + "/") { ($0.int64(0), $0.text(1)) }
        } else {
            names = try db.query("""
                SELECT a.id, m.name FROM memberships m JOIN assets a ON a.id = m.asset_id
                WHERE m.album_id = ? AND m.name_key >= ? AND m.name_key < ? AND a.trashed_at IS NULL
                """, Int64(bitPattern: dir), key, key + "/") { ($0.int64(0), $0.text(1)) }
        }
        return names.contains { $0.0 != asset && Sidecars.belongs(name, to: $0.1) }
    }

    /// Ids of the photos in folder `dir` that sidecar `name` belongs to.
    public func assets(showingIn dir: UInt64, named name: String) throws -> [Int64] {
        guard let base = Sidecars.base(of: name) else { return [] }
        let key = Names.key(base)
        let rows: [(Int64, String)]
        if dir == FixedInode.allPhotos {
            rows = try db.query("SELECT id, name FROM assets WHERE name_key >= ? AND name_key < ?", key, key + "/") { ($0.int64(0), $0.text(1)) }
        } else {
            rows = try db.query("SELECT asset_id, name FROM memberships WHERE album_id = ? AND name_key >= ? AND name_key < ?",
                                Int64(bitPattern: dir), key, key + "/") { ($0.int64(0), $0.text(1)) }
        }
        return rows.filter { Sidecars.belongs(name, to: $0.1) }.map(\.0)
    }
}

// MARK: - changes

extension Transaction {
    /// Records what an asset's own bytes say (at import and for each new version).
    func setDescriptive(_ id: Int64, _ m: MediaMetadata) throws {
        try db.run("UPDATE assets SET rating = ?, keywords = ?, caption = ? WHERE id = ?",
                   m.rating, m.keywords.isEmpty ? nil : m.keywords.joined(separator: "\n"), m.caption, id)
    }

    /// Records a sidecar's reading of its XMP (nil: none, or not readable), and gives the
    /// photos it belongs to the date it carries where their own bytes have none.
    /// Returns the photos it belongs to.
    @discardableResult
    public func setSidecarReading(_ fileID: Int64, _ reading: MediaMetadata?) throws -> [Int64] {
        try db.run("UPDATE plain_files SET xmp = ? WHERE id = ?", reading.map { String(decoding: $0.encoded, as: UTF8.self) }, fileID)
        guard let file = try plainFile(id: fileID) else { return [] }
        return try sidecarChanged(named: file.name, in: file.dirIno)
    }

    /// A sidecar called `name` in `dir` arrived, changed or went: the photos it belongs
    /// to take their capture date again. Returns them.
    @discardableResult
    public func sidecarChanged(named name: String, in dir: UInt64) throws -> [Int64] {
        guard Sidecars.isRead(name) else { return [] }
        let ids = try assets(showingIn: dir, named: name)
        for id in ids { try applySidecarDate(id) }
        return ids
    }

    /// A photo whose bytes carry no date takes its sidecar's (PRODUCT.md section 1); when
    /// the sidecar goes, it goes back to its mtime (the one a user set, else the time it
    /// was added).
    public func applySidecarDate(_ id: Int64) throws {
        guard let asset = try asset(id: id),
              [.fileTime, .user, .sidecar].contains(asset.takenSource) else { return }
        if let capture = try sidecarReadings(of: asset).lazy.compactMap(\.capture).first {
            let dated = CaptureDate(instant: capture.instant, offsetMinutes: capture.offsetMinutes, source: .sidecar)
            if dated != CaptureDate(instant: asset.takenAt, offsetMinutes: asset.takenOffset, source: asset.takenSource) {
                try setCapture(id, dated)
            }
        } else if asset.takenSource == .sidecar {
            let mtime = try db.scalar("SELECT mtime_ns FROM assets WHERE id = ?", id)
            let added = try db.scalar("SELECT added_at FROM assets WHERE id = ?", id) ?? 0
            try setCapture(id, CaptureDate(instant: mtime.map { Dates.floorSeconds($0) } ?? added, offsetMinutes: nil,
                                           source: mtime != nil ? .user : .fileTime))
        }
    }

    /// The sidecars beside a photo going to Recently Deleted go with it: out of their
    /// folders, except one that another photo there still claims (the other half of a
    /// RAW+JPEG pair). Returns them, as they were, for the caller's invalidations.
    @discardableResult
    func trashSidecars(of asset: Asset) throws -> [PlainFile] {
        var gone: [PlainFile] = []
        // A sidecar with other names (hard links) stays: those still show it.
        for file in try sidecars(of: asset) where try !file.isLinked && !sidecarIsClaimed(file.name, in: file.dirIno, besides: asset.id) {
            // Out of every folder (0), under a key no name can have ('/' is in none), one
            // of its own. Not a NUL byte: PostgreSQL's text ends there, and every trashed
            // sidecar had the empty key, the second one a unique violation (EIO).
            try db.run("UPDATE plain_files SET trashed_with = ?, trashed_from = dir_ino, dir_ino = 0, name_key = ? WHERE id = ?",
                       asset.id, "/trashed \(file.id)", file.id)
            try touchFolder(file.dirIno)
            gone.append(file)
        }
        return gone
    }

    /// Brings back the sidecars that went with a photo. One whose name was taken
    /// meanwhile (by a file, or in an album by a sub-album or a photo's entry) comes back
    /// under the first free name (`IMG_1 (2).xmp`): nothing is lost.
    @discardableResult
    func restoreSidecars(of id: Int64) throws -> [PlainFile] {
        let files = try db.query("SELECT \(PlainFile.columns), n.trashed_from FROM \(PlainFile.rows) WHERE n.trashed_with = ?", id) {
            (PlainFile(row: $0), UInt64(bitPattern: $0.int64(11)))
        }
        var back: [PlainFile] = []
        for (file, dir) in files {
            let name = try Names.firstFree(file.name) { key in
                if let album = FixedInode.album(ofFolder: dir) { return try nameTaken(inAlbum: album, key: key) }
                return try plainFileHolds(key, in: [dir])
            }
            try db.run("""
                UPDATE plain_files SET dir_ino = ?, name = ?, name_key = ?, trashed_with = NULL, trashed_from = NULL, changed_ns = ?
                WHERE id = ?
                """, Int64(bitPattern: dir), name, Names.key(name), nowNanoseconds(), file.id)
            try touchFolder(dir)
            back.append(try plainFile(id: file.id) ?? file)
        }
        return back
    }

    /// Sidecars that went with a photo deleted for good go with it; returns them, for the
    /// caller to remove their bytes.
    @discardableResult
    func deleteTrashedSidecars(of id: Int64) throws -> [PlainFile] {
        let files = try db.query("SELECT \(PlainFile.columns) FROM \(PlainFile.rows) WHERE n.trashed_with = ?", id, map: PlainFile.init)
        for file in files {
            try db.run("DELETE FROM plain_files WHERE id = ?", file.id)
            try db.run("DELETE FROM xattrs WHERE ino = ?", file.id)
        }
        return files
    }
}
