import AlbumCore
import Foundation
import Glibc

/// The filesystem core: what every inode is, what each operation means there and which
/// errno it fails with. It knows nothing of FUSE; the bridge turns requests into calls
/// here and results into replies, and the tests call it directly.
public final class FileSystem: Sendable {
    public let library: Library
    public let options: MountOptions
    public let thumbnails: ThumbnailCache
    /// Thumbnails made ahead, after imports: a cache on decoders of low priority, so that
    /// they never slow the imports down.
    let backgroundThumbnails: ThumbnailCache
    /// Thumbnails to make in the background after imports.
    let prefetchQueue = Locked(PrefetchQueue())
    let handles = HandleTable()
    let writers = WriterTable()
    /// Inode numbers reserved for files being created.
    let idBlock = Locked<Range<Int64>>(0..<0)
    /// When the library last changed through this mount: the time of virtual folders.
    let changedNs: Locked<Int64>
    /// Kernel cache entries to drop after a change (sent by the bridge, after replying).
    let invalidator: Locked<(@Sendable (Invalidation) -> Void)?> = Locked(nil)

    /// `thumbnailMaker`: where decoders run (the mount gives worker processes; tests and
    /// tools may decode in process).
    public init(library: Library, options: MountOptions, thumbnailMaker: any ThumbnailMaking = InProcessThumbnails(),
                backgroundThumbnailMaker: (any ThumbnailMaking)? = nil) {
        self.library = library
        self.options = options
        self.thumbnails = ThumbnailCache(paths: library.paths, maker: thumbnailMaker)
        self.backgroundThumbnails = ThumbnailCache(paths: library.paths, maker: backgroundThumbnailMaker ?? thumbnailMaker)
        var st = stat()
        let start = stat(library.paths.database, &st) == 0 ? st.st_mtim.nanoseconds : nowNanoseconds()
        changedNs = Locked(start)
    }

    /// What the kernel should forget after a change.
    public enum Invalidation: Sendable, Equatable {
        /// The name in a folder (its dentry, negative or not).
        case entry(parent: UInt64, name: String)
        /// An inode's attributes and cached data (for a folder: its listing).
        case inode(UInt64)
    }

    public func setInvalidator(_ body: @escaping @Sendable (Invalidation) -> Void) {
        invalidator.withLock { $0 = body }
    }

    func invalidate(_ items: [Invalidation]) {
        guard let send = invalidator.withLock({ $0 }) else { return }
        for item in items { send(item) }
    }

    /// Marks the library changed now (virtual folders take this as their mtime).
    func touch() {
        let now = nowNanoseconds()
        changedNs.withLock { $0 = max($0, now) }
    }

    // MARK: resolving inode numbers

    /// What a library object id is.
    enum Object {
        case album(Album)
        case asset(Asset)
        case scratch(ScratchFile)
    }

    func object(_ id: Int64) throws -> Object? {
        if let asset = try library.asset(id: id) { return .asset(asset) }
        if let album = try library.album(id: id) { return .album(album) }
        if let scratch = try library.scratchFile(id: id) { return .scratch(scratch) }
        // A number handed out to a file whose bytes turned out to be a duplicate.
        if let aliased = try library.aliasedAsset(ino: id), let asset = try library.asset(id: aliased) {
            return .asset(asset)
        }
        return nil
    }

    /// Whether a node exists now. Date folders exist while they have assets.
    func exists(_ node: Node) throws -> Bool {
        switch node {
        case .root, .albumsRoot, .allPhotos, .byDate, .smartAlbums, .smart: return true
        case .year(let y): return try library.hasAssets(dayPrefix: y, divisor: 10000)
        case .month(let m): return try library.hasAssets(dayPrefix: m, divisor: 100)
        case .day(let d): return try library.hasAssets(dayPrefix: d, divisor: 1)
        case .thumbnails(let folder):
            guard let parent = Node(ino: folder) else { return false }
            if case .object(let id) = parent { return try library.album(id: id) != nil }
            return try exists(parent)
        case .thumbnail(let asset): return try thumbnailFile(asset: asset) != nil
        case .object(let id): return try object(id) != nil
        }
    }

    /// The folder a folder is in (for `..`); nil for files and the root's parent.
    func parent(of node: Node) throws -> Node? {
        switch node {
        case .root: return .root
        case .albumsRoot, .allPhotos, .byDate, .smartAlbums: return .root
        case .smart: return .smartAlbums
        case .year: return .byDate
        case .month(let m): return .year(m / 100)
        case .day(let d): return .month(d / 100)
        case .thumbnails(let folder): return Node(ino: folder)
        case .thumbnail: return nil
        case .object(let id):
            guard let album = try library.album(id: id) else { return nil }
            return album.parentID == 0 ? .albumsRoot : .object(album.parentID)
        }
    }

    // MARK: attributes

    public func getattr(_ ino: UInt64) throws -> Attributes {
        guard let node = Node(ino: ino) else { throw FSError.noEntry("inode \(ino)") }
        if let pending = pendingAttributes(ino) { return pending }
        return try attributes(of: node)
    }

    func attributes(of node: Node) throws -> Attributes {
        switch node {
        case .object(let id):
            guard let object = try object(id) else { throw FSError.noEntry("inode \(id)") }
            return try attributes(of: object, ino: node.ino)
        case .thumbnail(let id):
            guard let file = try thumbnailFile(asset: id) else { throw FSError.noEntry("thumbnail of \(id)") }
            return thumbnailAttributes(id, file)
        case .year, .month, .day, .thumbnails:
            guard try exists(node) else { throw FSError.noEntry("inode \(node.ino)") }
            return virtualFolderAttributes(node)
        default:
            return virtualFolderAttributes(node)
        }
    }

    func attributes(of object: Object, ino: UInt64) throws -> Attributes {
        switch object {
        case .asset(let asset): return attributes(of: asset)
        case .album(let album):
            var a = folderAttributes(ino: UInt64(album.id), writable: true, mtimeNs: album.mtimeNs, ctimeNs: album.changedNs)
            if let mode = album.mode { a.permissions = mode & ~options.umask }
            return a
        case .scratch(let file): return try attributes(of: file)
        }
    }

    func attributes(of asset: Asset, ino: UInt64? = nil) -> Attributes {
        var a = fileAttributes(ino: ino ?? UInt64(asset.id), permissions: asset.mode ?? 0o644, size: asset.size,
                               mtimeNs: asset.mtimeNanoseconds, ctimeNs: asset.changedNs)
        a.nlink = UInt32(max(1, asset.links))
        return a
    }

    func attributes(of file: ScratchFile) throws -> Attributes {
        var st = stat()
        guard lstat(library.scratchPath(file.id), &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw FSError(EIO, "scratch file \(file.name) (\(file.id)) has lost its bytes (or is a link)")
        }
        var a = fileAttributes(ino: UInt64(file.id), permissions: file.mode & 0o7777, size: Int64(st.st_size),
                               mtimeNs: st.st_mtim.nanoseconds,
                               ctimeNs: max(file.changedNs, st.st_ctim.nanoseconds))
        a.blocks = Int64(st.st_blocks)
        return a
    }

    func fileAttributes(ino: UInt64, permissions: UInt32, size: Int64, mtimeNs: Int64, ctimeNs: Int64) -> Attributes {
        Attributes(ino: ino, kind: .file, permissions: permissions & ~options.umask, nlink: 1,
                   uid: options.uid, gid: options.gid, size: size, blocks: Attributes.blocks(forSize: size),
                   atimeNs: mtimeNs, mtimeNs: mtimeNs, ctimeNs: ctimeNs)
    }

    /// Folders report one link: the count of their subfolders is not worth a query on
    /// every stat, and 1 tells find(1) not to count on it (as btrfs does).
    func folderAttributes(ino: UInt64, writable: Bool, mtimeNs: Int64, ctimeNs: Int64) -> Attributes {
        Attributes(ino: ino, kind: .directory, permissions: (writable ? 0o755 : 0o555) & ~options.umask, nlink: 1,
                   uid: options.uid, gid: options.gid, size: 4096, blocks: 8,
                   atimeNs: mtimeNs, mtimeNs: mtimeNs, ctimeNs: ctimeNs)
    }

    func virtualFolderAttributes(_ node: Node) -> Attributes {
        let time = changedNs.withLock { $0 }
        return folderAttributes(ino: node.ino, writable: isWritableFolder(node), mtimeNs: time, ctimeNs: time)
    }

    /// Folders where something can be created or removed (modes matter with
    /// `default_permissions`). Read-only smart albums and `.thumbnails/` are 0555.
    func isWritableFolder(_ node: Node) -> Bool {
        switch node {
        case .thumbnails: return false
        case .smart(let album):
            return [.favorites, .hidden, .recentlyDeleted].contains(album)
        default: return true
        }
    }

    // MARK: statfs

    public struct FilesystemStats: Sendable {
        public var blockSize: UInt64
        public var fragmentSize: UInt64
        public var blocks: UInt64
        public var blocksFree: UInt64
        public var blocksAvailable: UInt64
        public var files: UInt64
        public var filesFree: UInt64
        public var nameMax: UInt64
    }

    /// The figures of the disk the library is on, so that free space is right on every
    /// client.
    public func statfs() throws -> FilesystemStats {
        var s = statvfs()
        guard statvfs(library.paths.root, &s) == 0 else { throw FSError(errno, "statfs of the library failed") }
        return FilesystemStats(blockSize: UInt64(s.f_bsize), fragmentSize: UInt64(s.f_frsize), blocks: UInt64(s.f_blocks),
                               blocksFree: UInt64(s.f_bfree), blocksAvailable: UInt64(s.f_bavail),
                               files: UInt64(s.f_files), filesFree: UInt64(s.f_ffree), nameMax: UInt64(Names.maxBytes))
    }
}
