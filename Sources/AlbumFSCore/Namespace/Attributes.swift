import AlbumCore
import Glibc

/// File attributes as the filesystem reports them (a `struct stat`, minus the C).
public struct Attributes: Sendable, Equatable {
    public enum Kind: Sendable { case directory, file, symlink }

    public var ino: UInt64
    public var kind: Kind
    public var permissions: UInt32
    public var nlink: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var size: Int64
    public var blocks: Int64
    public var atimeNs: Int64
    public var mtimeNs: Int64
    public var ctimeNs: Int64

    public var mode: UInt32 {
        switch kind {
        case .directory: return UInt32(S_IFDIR) | permissions
        case .file: return UInt32(S_IFREG) | permissions
        case .symlink: return UInt32(S_IFLNK) | permissions
        }
    }

    /// 512-byte blocks a file of `size` bytes takes on a filesystem of 4 KiB blocks.
    static func blocks(forSize size: Int64) -> Int64 { (size + 4095) / 4096 * 8 }
}

/// What the mount was asked for: ownership, permissions, read-only, thumbnail size.
public struct MountOptions: Sendable {
    public var uid: UInt32 = getuid()
    public var gid: UInt32 = getgid()
    /// Applied to every mode the mount reports.
    public var umask: UInt32 = 0o022
    public var readOnly = false
    public var thumbnailSize = 256
    /// How long the kernel may cache names and attributes. Every change made through
    /// the mount invalidates what it touches, so this can be long.
    public var cacheSeconds: Double = 3600
    /// FUSE passthrough for read-only opens, when the kernel offers it (root, Linux 6.9
    /// and later): the kernel reads photos and thumbnails from their files itself, at the
    /// speed of the disk. On by default for root; `-o nopassthrough` turns it off. Writers
    /// are not held up by it (`IOMode`, `KernelNodes`). Nil: the default.
    public var passthrough: Bool?
    /// FUSE over io_uring, when the kernel offers it (Linux 6.14 and later, with the fuse
    /// module's `enable_uring` set by the administrator): requests are served on the CPU
    /// of the program that makes them, which saves a wake-up across CPUs in each round
    /// trip (docs/performance.md). `-o noio_uring` turns it off. Nil: used when offered.
    public var ioUring: Bool?
    /// Other users may use the mount (`allow_other`): the kernel then always checks the
    /// modes (default_permissions), and the default umask keeps photos from everyone
    /// but the owner and the group (docs/reliability.md, "Permissions").
    public var allowOther = false
    /// Whether folders list their `.thumbnails/` (`-o list_thumbnails`). Off by default:
    /// thumbnail folders are reachable by path but never in the way of tools that walk
    /// or copy trees (rsync, tar, find, du, a Samba client deleting a folder; PRODUCT.md
    /// section 2, docs/thumbnails.md).
    public var listThumbnails = false
    /// This host's name in a library several hosts serve (`-o host=NAME`; default: the
    /// environment's `ALBUMFS_HOST`, else the machine's name). It names the host's lock
    /// and staging folder (docs/scale.md).
    public var host: String?

    public init() {}
}

extension FileSystem {
    /// The attributes of an inode: what it is, with what a writer holds for it on top
    /// (a file being written shows its bytes as they are now).
    /// `node`: the kernel inode asked about (the current one when not said); see
    /// `kernelView`.
    public func getattr(_ ino: UInt64, node: UInt64? = nil) throws -> Attributes {
        var lookedAgain = false
        while true {
            guard let item = try item(ino) else {
                // A plain file removed while open is still there for its handles (fstat).
                if let a = unlinkedAttributes(ino, node: node) { return a }
                throw FSError.noEntry("inode \(ino)")
            }
            do {
                return kernelView(try attributes(of: item, ino: ino), node: node).attributes
            } catch let error as FSError where error.errno == ENOENT && item.plainFile != nil && !lookedAgain {
                // A plain file gone since it was read: a close may have made it a photo,
                // which keeps its number (the next look finds it), or an rm removed it.
                lookedAgain = true
            }
        }
    }

    /// Attributes as kernel inode `node` (the current one of `a.ino` when not said) is to
    /// have them. One held in passthrough reports the size of the file its readers read,
    /// which is an older version's while a save is landing or once the photo has moved
    /// to a new kernel inode (`KernelNodes`): a reader that maps it maps those bytes and
    /// no more (a mapping past the end of its file faults). So does one held by cached
    /// readers (thumbnails, `-o nopassthrough`), which all read one version
    /// (`HandleTable.addCachedReader`): the kernel cuts their reads at its size. One that the photo left
    /// while handles wrote through it (a rename handed them another file's bytes, or a
    /// save by rename left them the version they had open) reports the size of what they
    /// write: the kernel cuts their reads at its inode's size.
    public func kernelView(_ a: Attributes, node: UInt64? = nil) -> (node: UInt64, attributes: Attributes) {
        // Folders have no generations and are never in passthrough: no lock for them.
        guard a.kind == .file else { return (node ?? a.ino, a) }
        let node = node ?? kernelNodes.node(of: a.ino)
        if let bytes = writerLeftOn(node)?.readable().0, let size = try? bytes.size() {
            var theirs = a
            theirs.size = size
            theirs.blocks = Attributes.blocks(forSize: size)
            return (node, theirs)
        }
        guard let size = handles.readersSize(node), size != a.size else { return (node, a) }
        var held = a
        held.size = size
        held.blocks = Attributes.blocks(forSize: size)
        return (node, held)
    }

    /// `ino`: the number it was asked by. A copy's number that stands for a photo the
    /// library had keeps reporting itself (an NFS client holds it since its CREATE).
    func attributes(of item: Item, ino: UInt64? = nil) throws -> Attributes {
        switch item {
        case .asset(let asset):
            if let ino, ino != UInt64(asset.id), try library.aliasKeepsItsNumber(Int64(ino)) {
                var a = attributes(of: asset)
                a.ino = ino
                return a
            }
            return attributes(of: asset)
        case .plain(let file):
            return try attributes(of: file)
        case .album(let album):
            var a = folderAttributes(ino: UInt64(album.id), writable: true, mtimeNs: album.mtimeNs, ctimeNs: album.changedNs)
            if let mode = album.mode { a.permissions = mode & 0o1777 & ~options.umask }
            if album.role != nil, let owner = try desktopTrashOwner(album) {
                // The trash specification: a user's `.Trash-UID` is that user's, private.
                a.uid = owner
                a.permissions = 0o700
            }
            return a
        case .thumbnail(let asset):
            guard let file = try thumbnailWaitingIfNeeded(of: asset) else { throw thumbnailMissing(of: asset, "the thumbnail of \(asset.name)") }
            return thumbnailAttributes(asset, file)
        case .sharedThumbnail(let entry):
            guard let file = try sharedThumbnailFile(entry) else { throw thumbnailMissing(of: entry.asset, "the shared thumbnail of \(entry.name)", size: sharedSourceSize(large: entry.large)) }
            return sharedAttributes(entry, file)
        default:
            return virtualFolderAttributes(item)
        }
    }

    /// The user a desktop trash folder (`.Trash-UID`, or its `files/` and `info/`) is for.
    func desktopTrashOwner(_ album: Album) throws -> UInt32? {
        if album.role == .desktopTrash { return Rules.trashOwner(album.name) }
        guard let top = try library.read({ try $0.album(id: album.parentID) }) else { return nil }
        return Rules.trashOwner(top.name)
    }

    /// An asset's attributes; while a writer holds new bytes for it, their size and mtime.
    func attributes(of asset: Asset) -> Attributes {
        attributes(of: asset.listed)
    }

    func attributes(of asset: ListedAsset) -> Attributes {
        var a = fileAttributes(ino: UInt64(asset.id), permissions: asset.mode ?? Self.defaultFileMode, size: asset.size,
                               mtimeNs: asset.mtimeNanoseconds, ctimeNs: asset.changedNs)
        a.nlink = UInt32(max(1, asset.links))
        if let pending = writers.get(UInt64(asset.id))?.pendingAttributes() {
            a.size = pending.size
            a.blocks = Attributes.blocks(forSize: pending.size)
            a.mtimeNs = pending.mtimeNs
            a.atimeNs = pending.mtimeNs
            a.ctimeNs = max(a.ctimeNs, pending.mtimeNs)
        }
        return a
    }

    /// A plain file's attributes: its bytes' size and mtime (an mtime set on a file that
    /// shares a blob is kept in its row).
    func attributes(of file: PlainFile) throws -> Attributes {
        guard let st = try library.files.status(file.bytes), st.isRegularFile else {
            // Its row may have been read just before a close made it a photo, an rm or a
            // rename over its name removed it, or its bytes became a copy of its own (the
            // bytes file then went with the row): what its row says now.
            guard let now = try library.plainFile(id: file.id) else { throw FSError.noEntry(file.name) }
            if now.bytes != file.bytes, let st = try library.files.status(now.bytes), st.isRegularFile {
                return attributes(of: now, st)
            }
            throw FSError(EIO, "plain file \(file.name) (\(file.id)) has lost its bytes (or they are a link); run albumfs check")
        }
        return attributes(of: file, st)
    }

    func attributes(of file: PlainFile, _ st: stat) -> Attributes {
        let mtime = file.blobSHA256 != nil ? (file.explicitMtimeNs ?? file.changedNs) : st.modificationNanoseconds
        // A copy of a whole photo not made yet (copy_file_range) has the photo's size.
        let size = writers.get(UInt64(file.id))?.cloneSize ?? Int64(st.st_size)
        var a = fileAttributes(ino: UInt64(file.id), permissions: file.mode & 0o1777, size: size,
                               mtimeNs: mtime, ctimeNs: max(file.changedNs, file.blobSHA256 == nil ? st.changeNanoseconds : 0))
        a.blocks = file.blobSHA256 == nil ? Int64(st.st_blocks) : Attributes.blocks(forSize: Int64(st.st_size))
        a.nlink = UInt32(max(1, file.links))
        // The access time set on it, if any (reads leave it, as on a disk mounted noatime:
        // only some reach the daemon); else its mtime. Not its bytes file's own: that one
        // moves when its bytes are written after it is made, and Samba, which takes a
        // file's creation time to be the earliest of its three times where the disk keeps
        // none, then gives a new file a creation time before its first write time.
        if file.atimeNs != 0 { a.atimeNs = file.atimeNs }
        if file.isSymlink {
            // As every Linux filesystem shows a link: 0777 whatever the umask (its
            // target's mode is what counts), its size the length of its target.
            a.kind = .symlink
            a.permissions = 0o777
        }
        return a
    }

    func fileAttributes(ino: UInt64, permissions: UInt32, size: Int64, mtimeNs: Int64, ctimeNs: Int64) -> Attributes {
        Attributes(ino: ino, kind: .file, permissions: permissions & 0o1777 & ~options.umask, nlink: 1,
                   uid: options.uid, gid: options.gid, size: size, blocks: Attributes.blocks(forSize: size),
                   atimeNs: mtimeNs, mtimeNs: mtimeNs, ctimeNs: ctimeNs)
    }

    /// The modes files and folders have until `chmod` gives them others, before the
    /// mount's umask: what a new file and a new folder get from a process whose umask is
    /// 0, so that `umask=` works as the shell's umask does (022: 0644 and 0755; 002:
    /// 0664 and 0775, for a group that shares the library). Folders whose contents
    /// cannot change (date folders, most smart albums, `.thumbnails/`) are 0555.
    static let defaultFileMode: UInt32 = 0o666
    static let defaultFolderMode: UInt32 = 0o777

    /// The mode a save's temporary file (`mode`, nil for the default) gives the photo it
    /// is renamed over, as its next version: its own when it was set on purpose (rsync
    /// gives its temporary file the source's mode; vim and exiftool copy the photo's);
    /// nil, the photo keeping its own, when it shows as every new file does (0644 under
    /// the default umask) or as `mkstemp`'s 0600 (Python's atomic saves): those say
    /// nothing of what the photo should be, and a photo made private stays so, one
    /// shared with a group is not made private. A disk gives the photo the temporary
    /// file's mode in every case.
    func modeASaveGives(_ mode: UInt32?) -> UInt32? {
        guard let mode = mode.map({ $0 & 0o1777 }) else { return nil }
        let shown = mode & ~options.umask
        guard shown != Self.defaultFileMode & ~options.umask, shown != 0o600 else { return nil }
        return mode
    }

    /// Folders report one link: the count of their subfolders is not worth a query on
    /// every stat, and 1 tells find(1) not to count on it (as btrfs does).
    func folderAttributes(ino: UInt64, writable: Bool, mtimeNs: Int64, ctimeNs: Int64) -> Attributes {
        Attributes(ino: ino, kind: .directory, permissions: (writable ? Self.defaultFolderMode : 0o555) & ~options.umask, nlink: 1,
                   uid: options.uid, gid: options.gid, size: 4096, blocks: 8,
                   atimeNs: mtimeNs, mtimeNs: mtimeNs, ctimeNs: ctimeNs)
    }

    /// A folder that is not an album: the library's time, and the mode `chmod` gave it.
    func virtualFolderAttributes(_ item: Item) -> Attributes {
        let time = changedNs.withLock { $0 }
        var a = folderAttributes(ino: item.ino, writable: Rules.isWritable(Rules.Folder(item)), mtimeNs: time, ctimeNs: time)
        if let mode = (try? library.read({ try $0.folderMode(item.ino) })) ?? nil { a.permissions = mode & 0o1777 & ~options.umask }
        return a
    }
}
