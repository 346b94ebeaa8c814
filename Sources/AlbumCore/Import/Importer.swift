import Glibc

/// Reads the metadata of a file whose format the sniffer found. The mount reads in
/// decoder worker processes (a file crafted to crash a parser costs that worker, never
/// the mount); tests and tools may read in process.
public protocol MetadataReading: Sendable {
    /// Throws `LibraryError.refused` with the parser's reason when the bytes are not
    /// readable as `format` (its verdict on the bytes); any other error when the reader
    /// itself failed (a worker that crashed or ran out of time).
    func metadata(of file: FileDescriptor, format: MediaFormat) throws -> MediaMetadata
    /// What an XMP sidecar says (rating, keywords, caption, capture date), with the same
    /// errors.
    func sidecar(of file: FileDescriptor) throws -> MediaMetadata
}

/// Reads metadata in this process.
public struct InProcessMetadata: MetadataReading {
    public init() {}
    public func metadata(of file: FileDescriptor, format: MediaFormat) throws -> MediaMetadata {
        try MetadataReader.read(path: "/proc/self/fd/\(file.raw)", format: format)
    }
    public func sidecar(of file: FileDescriptor) throws -> MediaMetadata {
        try MetadataReader.readSidecar(path: "/proc/self/fd/\(file.raw)")
    }
}

/// What a file's bytes are.
public enum Classification: Sendable {
    /// A supported photo or video, with what its bytes say.
    case media(MediaMetadata)
    /// Anything else, with the reason.
    case notMedia(String)

    public var metadata: MediaMetadata? {
        if case .media(let m) = self { return m }
        return nil
    }
}

/// Where an imported file goes besides the library itself.
public struct ImportDestination: Sendable, Equatable {
    /// Album to add the asset to, and the entry name there (nil: the file's name).
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
    /// Sniffs a file and reads its metadata. A file whose metadata reader failed (not a
    /// verdict on the bytes: the worker crashed or ran out of time) is a photo without
    /// metadata, with a log line: the user's file is kept either way. A reader that could
    /// not start for want of descriptors throws: the close fails with `ENFILE` rather
    /// than keep a photo without its metadata for good.
    public func classify(_ file: HashedFile, name: String, reader: any MetadataReading) throws -> Classification {
        switch Sniffer.sniff(file.header, name: name) {
        case .unsupported(let why):
            return .notMedia(why)
        case .media(let format):
            do {
                return .media(try reader.metadata(of: file.descriptor, format: format))
            } catch LibraryError.refused(let why) {
                return .notMedia(why)
            } catch let error as LibraryError where DescriptorLimit.isReached(error.errno) {
                throw error
            } catch {
                Log.warning("\(name): its metadata could not be read (\(error)); kept as a \(format.rawValue.uppercased()) without metadata")
                var metadata = MediaMetadata(format: format)
                if format.mediaType == .photo { metadata.orientation = 1 }
                return .media(metadata)
            }
        }
    }

    /// Replaces a blob that a row names and that is damaged (`problem`: altered, cut
    /// short) by `file`, whose bytes have its hash.
    private func heal(_ file: HashedFile, _ problem: String) throws {
        _ = try blobs.place(file.path, descriptor: file.descriptor, sha256: file.sha256, replaceDamaged: true)
        let placed = try blobs.open(file.sha256)
        let st = try placed.status()
        try write { try $0.healBlob(file.sha256, size: file.size, mtimeNs: st.modificationNanoseconds) }
        blobs.seal(file.sha256, descriptor: placed)
        Log.info("repaired the original \(file.sha256) (it \(problem)) with good bytes of the same hash")
    }

    /// Imports one file from outside the library (the command line): copied into
    /// staging while hashed; bytes the library holds add the existing asset where it is
    /// imported (and heal its blob if that was damaged); else sniffed, metadata read,
    /// the blob placed and the rows added in one transaction.
    public func importFile(at sourcePath: String, originalName: String, destination: ImportDestination,
                           reader: any MetadataReading = InProcessMetadata()) throws -> ImportOutcome {
        let staged: HashedFile
        do {
            staged = try Staging(files: files).copy(from: sourcePath)
        } catch LibraryError.refused(let why) {
            return .refused(why)
        }
        defer { _ = try? files.remove(staged.path) }
        if let existing = try read({ try $0.assets(withSHA256: staged.sha256).first }) {
            _ = try placeBlob(staged)  // heals the blob if it is damaged
            return try write { tx in try tx.addExisting(existing.id, destination: destination) }
        }
        let metadata: MediaMetadata
        switch try classify(staged, name: originalName, reader: reader) {
        case .notMedia(let why): return .refused(why)
        case .media(let m): metadata = m
        }
        do {
            return try land(staged, metadata: metadata, originalName: originalName, destination: destination)
        } catch LibraryError.changedMeanwhile {
            // The blob another host had placed was taken back: these bytes are placed now.
            return try land(staged, metadata: metadata, originalName: originalName, destination: destination)
        }
    }

    /// Places the blob of `staged` and adds its rows, in one transaction; the same bytes
    /// imported by another thread at once wait (`BlobsInFlight`), then find them.
    private func land(_ staged: HashedFile, metadata: MediaMetadata, originalName: String,
                      destination: ImportDestination) throws -> ImportOutcome {
        blobsInFlight.begin(staged.sha256)
        defer { blobsInFlight.end(staged.sha256) }
        let placement = try placeBlob(staged)
        do {
            let outcome = try write { tx -> ImportOutcome in
                if placement?.created != true { try tx.expectBlobInPlace(staged.sha256) }
                if let raced = try tx.assets(withSHA256: staged.sha256).first {
                    return try tx.addExisting(raced.id, destination: destination)
                }
                let entry = NewAsset(blob: staged, metadata: metadata, originalName: originalName)
                let (asset, membership) = try tx.insertAsset(entry, destination: destination)
                return .imported(asset, membership: membership)
            }
            blobs.seal(staged.sha256, descriptor: staged.descriptor)
            return outcome
        } catch {
            if let placement { takeBack(placement) }
            throw error
        }
    }

    /// Takes back a placement whose transaction failed: its blob file goes, unless a row
    /// names it now. In a store several hosts share, another host may have found the
    /// file in place meanwhile (`placeBlob`: its bytes decide) and committed rows naming
    /// it: the look and the removal are then one write transaction, which a landing's
    /// look at a blob it did not place (`Transaction.expectBlobInPlace`) comes wholly
    /// before or after. Before, a close through one host that failed took back the blob
    /// of a photo a rename through another had just made of the same bytes (`albumfs
    /// check`: "blob file missing").
    public func takeBack(_ placement: BlobStore.Placement) {
        guard placement.created else { return }
        guard blobs.shared else { return blobs.undo(placement) }
        do {
            try write(.lazy) { tx in
                if try tx.blobRecord(placement.sha256) == nil { blobs.undo(placement) }
            }
        } catch {
            Log.error("blob \(placement.sha256) was not taken back (\(error)); albumfs gc removes it if no row names it")
        }
    }

    /// Makes `file` (bytes of its hash, in the library) the blob of those bytes, and
    /// returns the placement when it made one (a transaction that then fails takes it
    /// back). A blob that a row names is kept, or healed with these bytes if it is
    /// damaged (altered, cut short, missing). A blob file that no row names is what a
    /// crash leaves behind, maybe short (a close links its bytes before it syncs them,
    /// `BlobStore.placeEarly`): never trusted, these bytes replace it (and are the
    /// caller's placement).
    public func placeBlob(_ file: HashedFile) throws -> BlobStore.Placement? {
        if try read({ try $0.blobRecord(file.sha256) }) != nil {
            if let problem = try blobProblem(file.sha256) { try heal(file, problem) }
            return nil
        }
        guard blobs.exists(file.sha256) else {
            return try blobs.place(file.path, descriptor: file.descriptor, sha256: file.sha256)
        }
        // Shared by several hosts: the file may be another host's placement, linked once
        // synced and about to be committed. Its bytes decide.
        if blobs.shared, (try? blobs.open(file.sha256).sha256()) == file.sha256 {
            try blobs.syncPlaced(file.sha256)
            return nil
        }
        _ = try blobs.place(file.path, descriptor: file.descriptor, sha256: file.sha256, replaceDamaged: true)
        // The caller's placement now, as one it made: sealed read-only once its rows are
        // committed (the bytes are still its file's until then), taken back if they fail
        // (no row names them either way).
        return BlobStore.Placement(sha256: file.sha256, created: true)
    }
}

/// What a new asset is made of.
public struct NewAsset: Sendable {
    /// Its inode number, when the mount handed one out already (the file's); nil
    /// allocates one.
    public var id: Int64?
    public var sha256: String
    public var size: Int64
    public var metadata: MediaMetadata
    public var originalName: String
    /// The capture date when the bytes carry none: the file's mtime.
    public var fileMtimeNs: Int64
    /// An mtime set through the mount (`cp -p`), kept as st_mtime.
    public var explicitMtimeNs: Int64?
    /// Permission bits set through the mount; nil is the default.
    public var mode: UInt32?

    public init(id: Int64? = nil, sha256: String, size: Int64, metadata: MediaMetadata, originalName: String,
                fileMtimeNs: Int64, explicitMtimeNs: Int64? = nil, mode: UInt32? = nil) {
        self.id = id
        self.sha256 = sha256
        self.size = size
        self.metadata = metadata
        self.originalName = originalName
        self.fileMtimeNs = fileMtimeNs
        self.explicitMtimeNs = explicitMtimeNs
        self.mode = mode
    }

    public init(blob: HashedFile, metadata: MediaMetadata, originalName: String) {
        self.init(sha256: blob.sha256, size: blob.size, metadata: metadata, originalName: originalName, fileMtimeNs: blob.mtimeNs)
    }
}

extension Transaction {
    /// The mtime of a blob file a row is about to name. Its file must be there: gc of
    /// another host may have removed an unused blob between the caller's look and this
    /// transaction (gc removes them holding the writers' lock, so this look is after it).
    /// The caller's close or import then fails and its bytes stay where they were.
    /// With one host (SQLite) no gc runs beside a mount: a file missing here is a lost
    /// original (`check` names it), and trying again would not help.
    func placedBlobMtime(_ sha256: String) throws -> Int64 {
        guard let st = try library.files.status(.blob(sha256)) else {
            if library.backend == .sqlite {
                Log.error("the original \(sha256) is missing from originals/; run albumfs check")
                throw LibraryError.io("the original \(sha256) is missing; run albumfs check", errno: EIO)
            }
            throw LibraryError.io("the original \(sha256) was removed (by gc?) before it was recorded; try again", errno: EAGAIN)
        }
        return st.modificationNanoseconds
    }

    /// Adds a new asset (its blob placed already) and puts it where `destination` says.
    public func insertAsset(_ new: NewAsset, destination: ImportDestination) throws -> (Asset, Membership?) {
        let id = try new.id ?? allocateID()
        // Copied into Favorites or Hidden, it shows there by this name too.
        let views = Self.namedViews(favorite: destination.favorite, hidden: destination.hidden)
        let name = try Names.firstFree(new.originalName) { key in try assetNameTaken(key) || plainFileHolds(key, in: views) }
        let m = new.metadata
        let capture = m.capture
            ?? CaptureDate(instant: Dates.floorSeconds(new.explicitMtimeNs ?? new.fileMtimeNs), offsetMinutes: nil,
                           source: new.explicitMtimeNs != nil ? .user : .fileTime)
        let day = Library.dayNumber(instant: capture.instant, offsetMinutes: capture.offsetMinutes)
        let kinds = Library.kinds(of: m, originalName: new.originalName)
        let now = nowNanoseconds()
        try recordBlob(new.sha256, size: new.size, mtimeNs: try placedBlobMtime(new.sha256))
        try db.run("""
            INSERT INTO assets(id, name, name_key, original_name, sha256, size, version, media_type, format, kinds,
                taken_at, taken_offset, taken_day, taken_source, sort_key, mtime_ns, width, height, orientation, rotation,
                latitude, longitude, make, model, lens, duration, favorite, hidden, added_at, changed_ns, mode)
            VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
                   id, name, Names.key(name), new.originalName, new.sha256, new.size,
                   m.mediaType.rawValue, m.format.rawValue, kinds.rawValue,
                   capture.instant, capture.offsetMinutes, day, capture.source.rawValue, SortKey.make(takenAt: capture.instant, id: id),
                   new.explicitMtimeNs, m.width, m.height, m.orientation, m.rotation,
                   m.latitude, m.longitude, m.make, m.model, m.lens,
                   m.duration, destination.favorite, destination.hidden, now / nanosecondsPerSecond, now,
                   new.mode.map { Int64($0 & 0o1777) })
        try db.run("INSERT INTO versions(asset_id, version, sha256, size, created_at) VALUES (?, 1, ?, ?, ?)",
                   id, new.sha256, new.size, now / nanosecondsPerSecond)
        try setDescriptive(id, m)
        try pairLivePhoto(id: id, originalName: new.originalName, mediaType: m.mediaType, takenAt: capture.instant)
        guard let inserted = try asset(id: id) else { throw LibraryError.notFound("asset \(id)") }
        let membership = try place(inserted, destination: destination)
        try applySidecarDate(id)
        return (try asset(id: id) ?? inserted, membership)
    }

    /// A new asset with the bytes and metadata of `source` (Photos' "Duplicate"): a copy
    /// into a folder that holds `source` already. The blob is shared; editing one never
    /// changes the other.
    public func duplicate(_ source: Asset, id: Int64?, name: String, destination: ImportDestination,
                          explicitMtimeNs: Int64? = nil, mode: UInt32? = nil) throws -> (Asset, Membership?) {
        var metadata = source.metadata
        metadata.capture = CaptureDate(instant: source.takenAt, offsetMinutes: source.takenOffset, source: source.takenSource)
        let new = NewAsset(id: id, sha256: source.sha256, size: source.size, metadata: metadata, originalName: name,
                           fileMtimeNs: source.mtimeNanoseconds, explicitMtimeNs: explicitMtimeNs, mode: mode)
        let (asset, membership) = try insertAsset(new, destination: destination)
        try db.run("""
            UPDATE assets SET kinds = s.kinds, rating = s.rating, keywords = s.keywords, caption = s.caption
            FROM (SELECT kinds, rating, keywords, caption FROM assets WHERE id = ?) AS s WHERE assets.id = ?
            """, source.id, asset.id)
        return (try self.asset(id: asset.id) ?? asset, membership)
    }

    /// Adds an asset already in the library where a file was made: a membership, a mark
    /// (Favorites, Hidden), and back from Recently Deleted if it was there.
    public func addExisting(_ id: Int64, destination: ImportDestination) throws -> ImportOutcome {
        guard let found = try asset(id: id) else { throw LibraryError.notFound("asset \(id)") }
        let restored = found.isTrashed
        if restored { try restore(id) }
        if destination.favorite && !found.favorite { try setFavorite(id, true) }
        if destination.hidden && !found.hidden { try setHidden(id, true) }
        let membership = try place(found, destination: destination)
        return .duplicate(try asset(id: id) ?? found, membership: membership, restored: restored)
    }

    /// Puts an asset into the album of `destination`, under its entry name.
    private func place(_ asset: Asset, destination: ImportDestination) throws -> Membership? {
        guard let album = destination.album else { return nil }
        let wanted = destination.entryName ?? asset.originalName
        if let existing = try membership(named: wanted, inAlbum: album), existing.assetID == asset.id { return existing }
        if destination.suffixOnConflict {
            // The command line: already in this album under any name counts.
            if let existing = try memberships(ofAsset: asset.id).first(where: { $0.albumID == album }) { return existing }
            let name = try Names.firstFree(wanted) { key in try nameTaken(inAlbum: album, key: key) }
            return try addMembership(album: album, asset: asset.id, name: name)
        }
        return try addMembership(album: album, asset: asset.id, name: wanted)
    }

    /// Makes placed bytes the new current version of an asset, keeping the earlier ones.
    /// What the bytes say is read again from them: pixel size, orientation, camera, GPS,
    /// and the capture date when they carry one (else the asset keeps the one it had).
    /// st_mtime becomes `mtimeNs` (the time of the write, or the one the tool set).
    /// Bytes equal to the current version change nothing but the mtime.
    @discardableResult
    public func addVersion(of id: Int64, sha256: String, size: Int64, metadata m: MediaMetadata, mtimeNs: Int64) throws -> Asset {
        guard let current = try asset(id: id) else { throw LibraryError.notFound("asset \(id)") }
        if current.sha256 == sha256 {
            if current.mtimeNs != mtimeNs { try db.run("UPDATE assets SET mtime_ns = ?, changed_ns = ? WHERE id = ?", mtimeNs, nowNanoseconds(), id) }
            return try asset(id: id) ?? current
        }
        let now = nowNanoseconds()
        try recordBlob(sha256, size: size, mtimeNs: try placedBlobMtime(sha256))
        let version = current.version + 1
        try db.run("INSERT INTO versions(asset_id, version, sha256, size, created_at) VALUES (?, ?, ?, ?, ?)",
                   id, version, sha256, size, now / nanosecondsPerSecond)
        var kinds = Library.kinds(of: m, originalName: current.originalName)
        if current.kinds.contains(.live) { kinds.insert(.live) }
        try db.run("""
            UPDATE assets SET sha256 = ?, size = ?, version = ?, media_type = ?, format = ?, kinds = ?, width = ?, height = ?,
                orientation = ?, rotation = ?, latitude = ?, longitude = ?, make = ?, model = ?, lens = ?, duration = ?,
                mtime_ns = ?, changed_ns = ?
            WHERE id = ?
            """, sha256, size, version, m.mediaType.rawValue, m.format.rawValue, kinds.rawValue, m.width, m.height,
                   m.orientation, m.rotation, m.latitude, m.longitude, m.make, m.model, m.lens, m.duration, mtimeNs, now, id)
        try setDescriptive(id, m)
        if let capture = m.capture, capture != CaptureDate(instant: current.takenAt, offsetMinutes: current.takenOffset, source: current.takenSource) {
            try setCapture(id, capture)
        }
        return try asset(id: id)!
    }

    /// A photo and a video with the same name stem taken within two seconds of each
    /// other are the two halves of a Live Photo.
    private func pairLivePhoto(id: Int64, originalName: String, mediaType: MediaType, takenAt: Int64) throws {
        for partner in try livePartners(originalName: originalName, mediaType: mediaType, takenAt: takenAt, besides: [id]) {
            try db.run("UPDATE assets SET kinds = kinds | ? WHERE id IN (?, ?)", MediaKinds.live.rawValue, id, partner)
        }
    }

    /// The assets of the other media type whose name has the same stem, taken within two
    /// seconds: the other halves of a Live Photo.
    private func livePartners(originalName: String, mediaType: MediaType, takenAt: Int64, besides: [Int64]) throws -> [Int64] {
        let stem = Names.key(Names.split(originalName).stem)
        // The other type as a literal: the partial index of that type serves the query
        // only when its condition is in the statement itself (schema 7).
        let other: MediaType = mediaType == .photo ? .video : .photo
        let candidates = try db.query("SELECT id, original_name FROM assets WHERE media_type = \(other.rawValue) AND taken_at BETWEEN ? AND ?",
                                      takenAt - 2, takenAt + 2) { ($0.int64(0), $0.text(1)) }
        return candidates.filter { !besides.contains($0.0) && Names.key(Names.split($0.1).stem) == stem }.map(\.0)
    }

    /// Asset `id`, half of a Live Photo, is about to be deleted for good: each other half
    /// that has no other partner left is a plain photo or video again (it left Live
    /// Photos, which showed it as a pair that no longer is).
    func unpairLivePhoto(_ id: Int64) throws {
        guard let gone = try asset(id: id), gone.kinds.contains(.live) else { return }
        for partner in try livePartners(originalName: gone.originalName, mediaType: gone.mediaType, takenAt: gone.takenAt, besides: [id]) {
            guard let half = try asset(id: partner),
                  try livePartners(originalName: half.originalName, mediaType: half.mediaType, takenAt: half.takenAt, besides: [partner, id]).isEmpty
            else { continue }
            try db.run("UPDATE assets SET kinds = kinds & ~? WHERE id = ?", MediaKinds.live.rawValue, partner)
        }
    }
}

extension Library {
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

    /// Reserves `count` object ids in one transaction (the mount hands them out to files
    /// it creates).
    public func reserveIDs(_ count: Int) throws -> Range<Int64> {
        try write { try $0.reserveIDs(count) }
    }
}
