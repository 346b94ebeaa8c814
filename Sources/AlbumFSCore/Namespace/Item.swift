import AlbumCore
import Glibc

/// What an inode is now: the one answer to that question in the filesystem core.
///
/// `Node` decodes a number without the database (it says "an object", "a day folder");
/// `Item` is that number resolved against the library: which album, asset or plain file,
/// and whether a date folder still has photos. Every operation starts from an `Item`,
/// and what it may do there is decided in `Rules`.
enum Item {
    case root
    case albumsTop
    case allPhotos
    case byDate
    case year(Int)
    case month(Int)
    case day(Int)
    case smartAlbums
    case smart(SmartAlbum)
    case album(Album)
    /// The `.thumbnails` folder of the folder with this inode.
    case thumbnails(of: UInt64)
    case asset(Asset)
    case plain(PlainFile)
    /// The thumbnail of an asset (in any `.thumbnails` folder).
    case thumbnail(Asset)
    /// The freedesktop.org shared thumbnail repository of a folder (`.sh_thumbnails`),
    /// its `normal/` or `large/`, and one PNG there (SharedThumbnails.swift).
    case sharedThumbnails(of: UInt64)
    case sharedSize(of: UInt64, large: Bool)
    case sharedThumbnail(SharedEntry)

    /// The plain file this entry is, if it is one.
    var plainFile: PlainFile? {
        if case .plain(let file) = self { return file }
        return nil
    }

    /// A thumbnail (`.thumbnails/NAME.jpg`) or a shared one (a PNG of `.sh_thumbnails/`).
    var isThumbnailFile: Bool {
        switch self {
        case .thumbnail, .sharedThumbnail: return true
        default: return false
        }
    }

    var node: Node {
        switch self {
        case .root: return .root
        case .albumsTop: return .albumsRoot
        case .allPhotos: return .allPhotos
        case .byDate: return .byDate
        case .year(let y): return .year(y)
        case .month(let m): return .month(m)
        case .day(let d): return .day(d)
        case .smartAlbums: return .smartAlbums
        case .smart(let s): return .smart(s)
        case .album(let a): return .object(a.id)
        case .thumbnails(let folder): return .thumbnails(of: folder)
        case .asset(let a): return .object(a.id)
        case .plain(let p): return .object(p.id)
        case .thumbnail(let a): return .thumbnail(asset: a.id)
        case .sharedThumbnails(let folder): return .sharedThumbnails(of: folder)
        case .sharedSize(let folder, let large): return .sharedSize(of: folder, large: large)
        case .sharedThumbnail(let e): return .sharedThumbnail(id: e.membership ?? e.asset.id, large: e.large, entry: e.membership != nil)
        }
    }

    var ino: UInt64 { node.ino }

    var isFolder: Bool {
        switch self {
        case .asset, .plain, .thumbnail, .sharedThumbnail: return false
        default: return true
        }
    }

    /// The view of a virtual folder that lists assets by a query.
    var view: AssetView? {
        switch self {
        case .allPhotos: return .allPhotos
        case .smart(let s): return .smart(s)
        case .day(let d): return .day(d)
        default: return nil
        }
    }

    /// Folders that list assets, and so have a `.thumbnails/` subfolder.
    var listsAssets: Bool {
        switch self {
        case .allPhotos, .smart, .day, .album: return true
        default: return false
        }
    }

    /// How it is named in a refusal: "All Photos/", "an album".
    var displayName: String {
        switch self {
        case .root: return "the root"
        case .albumsTop: return "Albums/"
        case .album(let a): return a.role == nil ? "album \(a.name)" : "the desktop trash (\(a.name))"
        case .allPhotos: return "All Photos/"
        case .byDate, .year, .month, .day: return "a date view"
        case .smartAlbums: return "Smart Albums/"
        case .smart(let s): return "Smart Albums/\(s.folderName)/"
        case .thumbnails: return ".thumbnails/"
        case .asset(let a): return a.name
        case .plain(let p): return p.name
        case .thumbnail(let a): return "the thumbnail of \(a.name)"
        case .sharedThumbnails, .sharedSize: return ".sh_thumbnails/"
        case .sharedThumbnail(let e): return "the shared thumbnail of \(e.name)"
        }
    }
}

extension FileSystem {
    /// Whether the date folder of `dayPrefix` (a year, a month, a day) is there: while a
    /// photo of its days shows, and also, found by path but not listed, while one is in
    /// Recently Deleted, so that a file manager can restore a photo trashed from it by
    /// moving it back there (its trash info names that path).
    static func dateFolderIsThere(_ dayPrefix: Int, divisor: Int, _ records: any LibraryRecords) throws -> Bool {
        try records.hasAssets(dayPrefix: dayPrefix, divisor: divisor) || records.hasTrashedAssets(dayPrefix: dayPrefix, divisor: divisor)
    }

    /// What `ino` is now, or nil for a number that was never handed out or is gone. A
    /// number that a duplicate's or a save's file had stands for the asset it became.
    func item(_ ino: UInt64, in records: any LibraryRecords) throws -> Item? {
        guard let node = Node(ino: ino) else { return nil }
        switch node {
        case .root: return .root
        case .albumsRoot: return .albumsTop
        case .allPhotos: return .allPhotos
        case .byDate: return .byDate
        case .smartAlbums: return .smartAlbums
        case .smart(let s): return .smart(s)
        case .year(let y): return try Self.dateFolderIsThere(y, divisor: 10000, records) ? .year(y) : nil
        case .month(let m): return try Self.dateFolderIsThere(m, divisor: 100, records) ? .month(m) : nil
        case .day(let d): return try Self.dateFolderIsThere(d, divisor: 1, records) ? .day(d) : nil
        case .thumbnails(let folder):
            guard let parent = try item(folder, in: records), parent.listsAssets else { return nil }
            return .thumbnails(of: folder)
        case .thumbnail(let id):
            return try records.asset(id: id).map { .thumbnail($0) }
        case .sharedThumbnails(let folder):
            guard let parent = try item(folder, in: records), parent.listsAssets else { return nil }
            return .sharedThumbnails(of: folder)
        case .sharedSize(let folder, let large):
            guard let parent = try item(folder, in: records), parent.listsAssets else { return nil }
            return .sharedSize(of: folder, large: large)
        case .sharedThumbnail(let id, let large, let entry):
            if entry {
                guard let (membership, asset) = try records.membership(id: id) else { return nil }
                return .sharedThumbnail(SharedEntry(asset: asset, name: membership.name, large: large, membership: membership.id))
            }
            return try records.asset(id: id).map { .sharedThumbnail(SharedEntry(asset: $0, name: $0.name, large: large, membership: nil)) }
        case .object(let id):
            return try object(id, in: records)
        }
    }

    /// `item(_:in:)` on a reader connection.
    func item(_ ino: UInt64) throws -> Item? {
        // An object's kinds are tried one statement each (`object`), and a change that
        // committed between two of them (a plain file becoming the photo that keeps its
        // number) can hide it from both.
        try lookingAgainAfterAMiss { snapshot in try library.read(snapshot: snapshot) { try item(ino, in: $0) } }
    }

    /// The item, or ENOENT.
    func existing(_ ino: UInt64) throws -> Item {
        guard let found = try item(ino) else { throw FSError.noEntry("inode \(ino)") }
        return found
    }

    /// The folder an inode is, or ENOENT / ENOTDIR.
    func folder(_ ino: UInt64, in records: any LibraryRecords) throws -> Item {
        guard let found = try item(ino, in: records) else { throw FSError.noEntry("inode \(ino)") }
        guard found.isFolder else { throw FSError(ENOTDIR, "\(found.displayName) is not a folder", logged: false) }
        return found
    }

    /// The folder a folder is in (for `..`); nil for files.
    func parent(of item: Item, in records: any LibraryRecords) throws -> Item? {
        switch item {
        case .root, .albumsTop, .allPhotos, .byDate, .smartAlbums: return .root
        case .smart: return .smartAlbums
        case .year: return .byDate
        case .month(let m): return .year(m / 100)
        case .day(let d): return .month(d / 100)
        case .thumbnails(let folder), .sharedThumbnails(let folder): return try self.item(folder, in: records)
        case .sharedSize(let folder, _): return .sharedThumbnails(of: folder)
        case .album(let a):
            if a.parentID == 0 { return .albumsTop }
            if a.parentID == Album.rootParent { return .root }
            return try records.album(id: a.parentID).map { .album($0) }
        case .asset, .plain, .thumbnail, .sharedThumbnail: return nil
        }
    }
}
