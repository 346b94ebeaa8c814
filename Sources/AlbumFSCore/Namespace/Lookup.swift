import AlbumCore
import Glibc

extension FileSystem {
    public static let thumbnailsFolderName = ".thumbnails"

    /// Names of the fixed folders, in listing order.
    static let rootChildren: [(String, Item)] = [
        ("Albums", .albumsTop), ("All Photos", .allPhotos), ("By Date", .byDate), ("Smart Albums", .smartAlbums),
    ]
    static let smartChildren: [(String, Item)] = SmartAlbum.allCases.map { ($0.folderName, .smart($0)) }

    /// What a lookup found: its attributes, and the name it has (which may differ from
    /// the one asked for in case or Unicode normalization: the kernel should not keep
    /// such a name for long, since removing the file invalidates only its own name).
    public struct Found: Sendable {
        public let attributes: Attributes
        public let name: String
        /// Whether the kernel may keep the name. Not for a photo a close brought back
        /// from Recently Deleted, or made a name of here, moments ago: renamed over
        /// another photo (a save's temporary file), it lives on, and the name it is
        /// moved to must lead to the photo saved at once, not to it (entry
        /// invalidations arrive after the rename has returned; `SaveWindow`).
        public var keepName = true
        /// Whether the kernel may keep its attributes: not a photo's or thumbnail's whose
        /// save is landing or just landed (`OpensAcrossSaves.savedRecently`).
        public var keepAttributes = true
    }

    /// Looks a name up in a folder. Names arrive as bytes: not UTF-8 is EILSEQ, over 255
    /// bytes ENAMETOOLONG. Case and Unicode normalization do not matter. `.` and `..`
    /// are answered for any folder (NFS asks them after a restart). `pid` is the caller's
    /// process (0: unknown), for NewAlbums.
    public func lookup(parent: UInt64, name bytes: [UInt8], pid: Int32 = 0) throws -> Found {
        if bytes == [0x2E] || bytes == [0x2E, 0x2E] {
            // "." of any inode, file or folder: NFS servers look a handle up that way.
            let item: Item? = try library.read { r in
                guard let found = try self.item(parent, in: r) else { throw FSError.noEntry("inode \(parent)") }
                return bytes.count == 1 ? found : try self.parent(of: found, in: r)
            }
            guard let item else { throw FSError(ENOTDIR, "inode \(parent) is not a folder", logged: false) }
            return Found(attributes: try attributes(of: item, ino: bytes.count == 1 ? parent : nil),
                         name: String(decoding: bytes, as: UTF8.self))
        }
        let name = try validName(bytes)
        let folder = try library.read { try self.folder(parent, in: $0) }
        // Cheapest first: this runs for every lookup in an album.
        if case .album(let album) = folder, Self.isThumbnailsFolderName(name),
           newAlbums.hidesThumbnails(of: album.id, from: pid),
           try library.plainFiles(in: Node.thumbnails(of: parent).ino).isEmpty {
            throw FSError.noEntry(name)
        }
        if case .thumbnails(let albumIno) = folder, newAlbums.hidesMadeThumbnails(in: Int64(albumIno), from: pid) {
            guard let plain = try library.plainFile(named: name, in: parent) else { throw FSError.noEntry(name) }
            return Found(attributes: try attributes(of: plain), name: plain.name)
        }
        guard var (item, shownAs) = try lookupNamed(in: folder, name: name) else { throw FSError.noEntry(name) }
        let attributes: Attributes
        do {
            do {
                attributes = try self.attributes(of: item)
            } catch let error as FSError where error.errno == ENOENT && item.plainFile != nil {
                // A plain file gone since it was found: a close may have made it a photo of
                // that name (another number, when the library had those bytes), or an rm
                // removed it. The name once more.
                guard let again = try lookupNamed(in: folder, name: name) else { throw FSError.noEntry(name) }
                (item, shownAs) = again
                attributes = try self.attributes(of: item)
            }
        } catch let error as FSError where error.errno == EIO && item.isThumbnailFile {
            // A thumbnail that cannot be had now (its decoder failed, its original is
            // missing) is not there to a lookup by name, so that a file may be created
            // under that name (a card's own .thumbnails/ copied in); a stat of a node
            // already known, or an NFS handle's ".", says EIO (`thumbnailMissing`).
            throw FSError.noEntry(name)
        }
        var found = Found(attributes: attributes, name: shownAs)
        if case .asset(let asset) = item, saves.keepsNoName(asset.id, in: parent) { found.keepName = false }
        if attributes.kind == .file, opensAcrossSaves.savedRecently(attributes.ino) { found.keepAttributes = false }
        return found
    }

    /// `.thumbnails` in any case (a length test first: most names are not).
    static func isThumbnailsFolderName(_ name: String) -> Bool {
        name.utf8.count == thumbnailsFolderName.utf8.count && Names.key(name) == Names.key(thumbnailsFolderName)
    }

    func validName(_ bytes: [UInt8]) throws -> String {
        do {
            return try Names.validate(bytes: bytes)
        } catch {
            throw FSError.wrapping(error, "refused name \(String(decoding: bytes.prefix(80), as: UTF8.self))")
        }
    }

    /// What `name` is in `folder`, or nil when nothing is: an album, a photo's entry, a
    /// plain file, a fixed folder, a thumbnail.
    func lookupEntry(in folder: Item, name: String) throws -> Item? {
        try lookupNamed(in: folder, name: name)?.0
    }

    /// What a new file or a rename under `name` in `folder` would replace. In a
    /// `.thumbnails/` a thumbnail AlbumFS makes is no occupant: a file copied in under its
    /// name takes the name (`thumbnailEntries` then lists the file, not the thumbnail),
    /// as a tree with its own `.thumbnails/` must copy in whole (PRODUCT.md section 2).
    func occupant(in folder: Item, name: String) throws -> Item? {
        guard case .thumbnails = folder else { return try lookupEntry(in: folder, name: name) }
        return try library.plainFile(named: name, in: folder.ino).map { .plain($0) }
    }

    /// `occupant`, read inside a write transaction.
    private func occupant(in folder: Item, name: String, _ tx: Transaction) throws -> Item? {
        guard case .thumbnails = folder else { return try entryNamed(name, in: folder, tx)?.0 }
        return try tx.plainFile(named: name, in: folder.ino).map { .plain($0) }
    }

    /// Inside the write transaction of a new name (create, ln, ln -s): `name` in `folder`
    /// is free, else EEXIST. Asked there, not before: this host's kernel keeps such calls
    /// apart from its other calls in the folder (its lock of the folder), but not from
    /// another host's, and a photo renamed there through that host between a look before
    /// the transaction and the transaction shared its name with the new file (the file's
    /// close then failed with EEXIST, seen with `plain-stress.py photos= elsewhere=`).
    func expectFree(_ name: String, in folder: Item, _ tx: Transaction) throws {
        if try occupant(in: folder, name: name, tx) != nil { throw FSError(EEXIST, "\(name) exists", logged: false) }
    }

    /// Inside the write transaction of a rename of `source`: what `name` in `folder` names
    /// is still `found`, what the look before the transaction found there (nil: nothing,
    /// or `source` itself, renamed to its own name in another case). Else
    /// `changedMeanwhile`: another host changed it meanwhile, and the rename looks again
    /// (`afterCloses`) and does what it then finds to do (replace it, save over it).
    func expectEntry(_ found: Item?, named name: String, in folder: Item, renaming source: Item, _ tx: Transaction) throws {
        let now = try occupant(in: folder, name: name, tx)
        if Self.sameEntry(now, found) || found == nil && Self.sameEntry(now, source) { return }
        throw LibraryError.changedMeanwhile(name)
    }

    /// Inside the write transaction of an rm, rmdir or mv of `entry` (a photo's, an
    /// album), found as `name` in `folder` by the look before it: the name still shows
    /// it. Else `changedMeanwhile`: another host renamed, removed, restored or replaced
    /// it meanwhile, and the call looks again and does what it then finds to do, as rm,
    /// rmdir and mv act on what a name is when they run. Without it, an rm in Recently
    /// Deleted deleted for good a photo that another host had just restored, a photo
    /// renamed over another gave it its bytes while the entry that went was the one
    /// another host had put under its old name, and an rmdir removed an empty album
    /// that another host had renamed (docs/scale.md).
    func expectShown(_ entry: Item, as name: String, in folder: Item, _ tx: Transaction) throws {
        guard let now = try occupant(in: folder, name: name, tx), Self.sameEntry(now, entry) else {
            throw LibraryError.changedMeanwhile(name)
        }
    }

    private static func sameEntry(_ a: Item?, _ b: Item?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (.plain(let a)?, .plain(let b)?): return a.entry == b.entry  // each name of a file is an entry of its own
        // A plain file that became a photo keeps its number, but it is another entry
        // now: a rename through another host that found the plain file must look again
        // (and is refused, text over a photo), or it put a plain file beside the photo
        // under its name.
        case (.plain?, _?), (_?, .plain?): return false
        case (let a?, let b?): return a.ino == b.ino
        default: return false
        }
    }

    /// `lookupEntry`, with the name the entry has.
    func lookupNamed(in folder: Item, name: String) throws -> (Item, String)? {
        // A name is looked for in several tables, one statement each, and a change that
        // committed between two of them (a plain file becoming a photo of that name: its
        // row out, a membership in) can hide it from both.
        try lookingAgainAfterAMiss { snapshot in try lookupNamed(in: folder, name: name, snapshot: snapshot) }
    }

    /// What `find` finds (given whether to read in one snapshot), read first without a
    /// snapshot; nothing found is looked for once more in one, unless no write can have
    /// committed meanwhile. Most lookups find what they look for and pay nothing more; a
    /// miss (every new file's name, twice) pays a second look only while something is
    /// written (10 µs of 45 here when it always did).
    func lookingAgainAfterAMiss<T>(_ find: (_ snapshot: Bool) throws -> T?) throws -> T? {
        let before = library.writeTally
        if let found = try find(false) { return found }
        if library.noWriteCommitted(since: before) { return nil }
        return try find(true)
    }

    private func lookupNamed(in folder: Item, name: String, snapshot: Bool) throws -> (Item, String)? {
        try library.read(snapshot: snapshot) { try entryNamed(name, in: folder, $0) }
    }

    /// What `name` is in `folder` as `r` has it, with the name it has there.
    private func entryNamed(_ name: String, in folder: Item, _ r: any LibraryRecords) throws -> (Item, String)? {
        let key = Names.key(name)
        switch folder {
        case .root:
            if let (shown, item) = Self.rootChildren.first(where: { Names.key($0.0) == key }) { return (item, shown) }
            if let trash = try r.album(named: name, in: Album.rootParent) { return (.album(trash), trash.name) }
        case .smartAlbums:
            if let (shown, item) = Self.smartChildren.first(where: { Names.key($0.0) == key }) { return (item, shown) }
        case .albumsTop:
            if let album = try r.album(named: name, in: 0) { return (.album(album), album.name) }
        case .byDate:
            if let year = Int(name), String(year) == name, (1000...9999).contains(year),
               try Self.dateFolderIsThere(year, divisor: 10000, r) {
                return (.year(year), name)
            }
        case .year(let year):
            if let month = DateNames.parseMonth(name, year: year), try Self.dateFolderIsThere(month, divisor: 100, r) {
                return (.month(month), DateNames.month(month))
            }
        case .month(let month):
            if let day = DateNames.parseDay(name, month: month), try Self.dateFolderIsThere(day, divisor: 1, r) {
                return (.day(day), DateNames.day(day))
            }
        case .thumbnails(let folderIno):
            // Files copied into an album's .thumbnails/ first (they cannot be named
            // as a thumbnail AlbumFS shows: creating such a name opens that one).
            if let plain = try r.plainFile(named: name, in: folder.ino) { return (.plain(plain), plain.name) }
            guard name.lowercased().hasSuffix(".jpg"), !removedThumbnails.isRemoved(name, in: folder.ino),
                  let (asset, shown) = try assetEntry(in: folderIno, named: String(name.dropLast(4)), r) else { return nil }
            if thumbnails.failed(sha256: asset.sha256, size: options.thumbnailSize) { return nil }
            return (.thumbnail(asset), shown + ".jpg")
        case .sharedThumbnails(let folderIno):
            if let size = Self.sharedSizes.first(where: { $0.name == name }) {
                return (.sharedSize(of: folderIno, large: size.large), size.name)
            }
            return nil
        case .sharedSize(let folderIno, let large):
            guard let entry = try sharedEntry(in: folderIno, large: large, named: name, r) else { return nil }
            if thumbnails.failed(sha256: entry.asset.sha256, size: sharedSourceSize(large: large)) { return nil }
            return (.sharedThumbnail(entry), name)
        case .allPhotos, .smart, .day:
            if key == Names.key(Self.thumbnailsFolderName) { return (.thumbnails(of: folder.ino), Self.thumbnailsFolderName) }
            if key == Names.key(Self.sharedFolderName) { return (.sharedThumbnails(of: folder.ino), Self.sharedFolderName) }
            if let asset = try r.asset(named: name, in: folder.view!) { return (.asset(asset), asset.name) }
        case .album(let album):
            if key == Names.key(Self.thumbnailsFolderName) { return (.thumbnails(of: folder.ino), Self.thumbnailsFolderName) }
            if key == Names.key(Self.sharedFolderName) { return (.sharedThumbnails(of: folder.ino), Self.sharedFolderName) }
            // A name is one thing in a folder (every way in checks all three), so the
            // order only decides the cost: photos first, since most names are photos'
            // (one query fewer per lookup: on PostgreSQL, a round trip).
            if let (membership, asset) = try r.member(named: name, ofAlbum: album.id, trashed: album.role == .trashFiles) {
                return (.asset(asset), membership.name)
            }
            if let sub = try r.album(named: name, in: album.id) { return (.album(sub), sub.name) }
        case .asset, .plain, .thumbnail, .sharedThumbnail:
            throw FSError(ENOTDIR, "not a folder", logged: false)
        }
        if let plain = try r.plainFile(named: name, in: folder.ino) { return (.plain(plain), plain.name) }
        return nil
    }

    /// The asset shown as `name` in a folder that lists assets, with its name there.
    func assetEntry(in folderIno: UInt64, named name: String, _ r: any LibraryRecords) throws -> (Asset, String)? {
        guard let folder = try item(folderIno, in: r) else { return nil }
        if let view = folder.view { return try r.asset(named: name, in: view).map { ($0, $0.name) } }
        if case .album(let album) = folder {
            return try r.member(named: name, ofAlbum: album.id, trashed: album.role == .trashFiles).map { ($0.1, $0.0.name) }
        }
        return nil
    }
}
