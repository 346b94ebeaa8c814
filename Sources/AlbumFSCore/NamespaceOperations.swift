import AlbumCore
import Glibc

/// rm, rmdir, mkdir, mv and ln: each cell of PRODUCT.md section 3's table.
extension FileSystem {
    /// What a name in a folder is, for the operations that change names.
    enum Entry {
        case asset(Asset)
        case album(Album)
        case scratch(ScratchFile)
        case newFile(Writer)
        case thumbnail
        case virtualFolder(Node)
    }

    func entry(in parent: UInt64, name: String) throws -> Entry {
        let folder = try role(of: parent)
        if let writer = writers.newFile(in: parent, key: Names.key(name)) { return .newFile(writer) }
        if case .thumbnails(let listed) = folder {
            _ = try lookupThumbnail(in: listed, name: name)
            return .thumbnail
        }
        if let scratch = try library.scratchFile(named: name, in: parent) { return .scratch(scratch) }
        let attributes = try lookup(parent: parent, name: Array(name.utf8))
        guard let node = Node(ino: attributes.ino) else { throw FSError.noEntry(name) }
        switch node {
        case .object(let id):
            switch try object(id) {
            case .album(let album)?: return .album(album)
            case .asset(let asset)?: return .asset(asset)
            case .scratch(let file)?: return .scratch(file)
            case nil: throw FSError.noEntry(name)
            }
        default:
            return .virtualFolder(node)
        }
    }

    // MARK: unlink

    /// rm: out of this album (the asset stays); from All Photos or a date view to
    /// Recently Deleted; out of Favorites or Hidden (unmark); for good from Recently
    /// Deleted. Scratch files go; thumbnails are derived, so removing one changes
    /// nothing (and `rm -r` of an album works).
    public func unlink(parent: UInt64, name bytes: [UInt8]) throws {
        try checkWritable()
        let name = try validName(bytes)
        let folder = try role(of: parent)
        switch try entry(in: parent, name: name) {
        case .thumbnail:
            return
        case .virtualFolder, .album:
            throw FSError(EISDIR, "\(name) is a folder", logged: false)
        case .scratch(let file):
            try library.deleteScratchFile(file.id)
            afterChange(folders: [parent], entries: [(parent, name)])
        case .newFile(let writer):
            dropNewFile(writer)
            afterChange(folders: [parent], entries: [(parent, name)])
        case .asset(let asset):
            switch folder {
            case .album(let album):
                try library.removeMembership(album: album, name: name)
                afterChange(asset: try library.asset(id: asset.id), folders: [parent], entries: [(parent, name)])
            case .allPhotos, .day:
                try library.trash(asset.id)
                Log.info("moved \(asset.name) to Recently Deleted")
                afterChange(asset: try library.asset(id: asset.id), views: asset)
            case .smart(.favorites):
                try library.setFavorite(asset.id, false)
                afterChange(asset: try library.asset(id: asset.id), views: asset)
            case .smart(.hidden):
                try library.setHidden(asset.id, false)
                afterChange(asset: try library.asset(id: asset.id), views: asset)
            case .smart(.recentlyDeleted):
                let memberships = try library.memberships(ofAsset: asset.id)
                try library.deletePermanently(asset.id)
                Log.info("deleted \(asset.name) for good")
                afterChange(views: asset, folders: memberships.map { UInt64($0.albumID) },
                            entries: memberships.map { (UInt64($0.albumID), $0.name) })
            default:
                throw FSError.notPermitted("cannot remove \(name) from \(folder.displayName): it is a view of the library")
            }
        }
    }

    /// A new file removed by name, or replaced by a rename: never imported. It leaves the
    /// writer table now unless still open (its last release takes it out then).
    func dropNewFile(_ writer: Writer) {
        let unused = writer.withLock { () -> Bool in
            writer.unlinked = true
            writer.dirty = false
            return writer.openCount == 0
        }
        writers.clearName(writer)
        if unused { writers.remove(writer) }
    }

    // MARK: mkdir and rmdir

    /// mkdir makes an album, in Albums/ or in an album; anywhere else it is EPERM.
    public func mkdir(parent: UInt64, name bytes: [UInt8]) throws -> Attributes {
        try checkWritable()
        let name = try validName(bytes)
        let parentAlbum: Int64
        switch try role(of: parent) {
        case .albumsRoot: parentAlbum = 0
        case .album(let id): parentAlbum = id
        case let other: throw FSError.notPermitted("cannot make folder \(name) in \(other.displayName): folders are albums, made in Albums/")
        }
        if Names.key(name) == Names.key(Self.thumbnailsFolderName) {
            throw FSError(EEXIST, "\(name) is the thumbnails folder", logged: false)
        }
        if writers.newFile(in: parent, key: Names.key(name)) != nil { throw FSError(EEXIST, "\(name) exists", logged: false) }
        let album = try library.createAlbum(named: name, in: parentAlbum)
        afterChange(folders: [parent], entries: [(parent, name)])
        return try attributes(of: .album(album), ino: UInt64(album.id))
    }

    /// rmdir deletes an empty album (its `.thumbnails/` does not count); anything else
    /// is EPERM.
    public func rmdir(parent: UInt64, name bytes: [UInt8]) throws {
        try checkWritable()
        let name = try validName(bytes)
        switch try entry(in: parent, name: name) {
        case .album(let album):
            try library.deleteAlbum(id: album.id)
            afterChange(folders: [parent, UInt64(album.id)], entries: [(parent, name)])
        case .virtualFolder(.thumbnails):
            return  // derived: removing it changes nothing (rm -r of an album)
        case .virtualFolder:
            throw FSError.notPermitted("cannot remove \(name): it is a fixed folder of the library")
        default:
            throw FSError(ENOTDIR, "\(name) is not a folder", logged: false)
        }
    }

    // MARK: link

    /// ln of an existing asset: into an album (a membership), into Favorites or Hidden
    /// (marks it), into All Photos (nothing changes); EPERM elsewhere.
    public func link(ino: UInt64, newParent: UInt64, newName bytes: [UInt8]) throws -> Attributes {
        try checkWritable()
        let name = try validName(bytes)
        guard case .object(let id) = Node(ino: ino) ?? .root, case .asset(let asset)? = try object(id) else {
            throw FSError.notPermitted("only photos and videos can be linked")
        }
        if asset.isTrashed { throw FSError.notPermitted("\(asset.name) is in Recently Deleted: restore it first") }
        if Names.isScratch(name) { throw FSError.notPermitted("a photo cannot be linked under a hidden or junk name (\(name))") }
        switch try role(of: newParent) {
        case .album(let album):
            if (try? lookup(parent: newParent, name: bytes)) != nil { throw FSError(EEXIST, "\(name) exists", logged: false) }
            try library.addMembership(album: album, asset: asset.id, name: name)
        case .allPhotos:
            break
        case .smart(.favorites):
            try library.setFavorite(asset.id, true)
        case .smart(.hidden):
            try library.setHidden(asset.id, true)
        case let other:
            throw FSError.notPermitted("cannot link \(name) into \(other.displayName)")
        }
        let updated = try library.asset(id: asset.id) ?? asset
        afterChange(asset: updated, folders: [newParent], entries: [(newParent, name)])
        return attributes(of: updated)
    }
}
