import AlbumCore
import Glibc

/// mv: what moving or renaming means depends on where an entry leaves and where it
/// lands (PRODUCT.md section 3); every refusal is checked before anything changes.
extension FileSystem {
    public static let renameNoReplace: UInt32 = 1
    public static let renameExchange: UInt32 = 2

    public func rename(parent: UInt64, name nameBytes: [UInt8], newParent: UInt64, newName newBytes: [UInt8], flags: UInt32) throws {
        try checkWritable()
        if flags & Self.renameExchange != 0 {
            throw FSError(EINVAL, "rename with RENAME_EXCHANGE is not supported")
        }
        let name = try validName(nameBytes)
        let newName = try validName(newBytes)
        let from = try role(of: parent)
        let to = try role(of: newParent)
        let source = try entry(in: parent, name: name)
        var target: Entry? = try? entry(in: newParent, name: newName)
        if let t = target, Self.sameObject(source, t) { target = nil }  // a case-only rename, or a no-op
        if target != nil && flags & Self.renameNoReplace != 0 {
            throw FSError(EEXIST, "\(newName) exists", logged: false)
        }
        if case .asset(let existing)? = target {
            try refuseChangeWhileReadInPassthrough(UInt64(existing.id), newName)
        }
        switch source {
        case .thumbnail, .virtualFolder:
            throw FSError.notPermitted("cannot move \(name): it is a fixed folder of the library")
        case .album(let album):
            try moveAlbum(album, to: to, newParent: newParent, newName: newName, replacing: target)
        case .scratch(let file):
            try moveScratch(file, from: parent, to: to, newParent: newParent, newName: newName, replacing: target)
        case .newFile(let writer):
            try moveNewFile(writer, from: parent, to: to, newParent: newParent, newName: newName, replacing: target)
        case .asset(let asset):
            try moveAsset(asset, from: from, parent: parent, name: name, to: to, newParent: newParent, newName: newName, replacing: target)
        }
    }

    static func sameObject(_ a: Entry, _ b: Entry) -> Bool {
        switch (a, b) {
        case (.asset(let x), .asset(let y)): return x.id == y.id
        case (.album(let x), .album(let y)): return x.id == y.id
        case (.scratch(let x), .scratch(let y)): return x.id == y.id
        case (.newFile(let x), .newFile(let y)): return x === y
        default: return false
        }
    }

    private func moveAlbum(_ album: Album, to: FolderRole, newParent: UInt64, newName: String, replacing target: Entry?) throws {
        let parentAlbum: Int64
        switch to {
        case .albumsRoot: parentAlbum = 0
        case .album(let id): parentAlbum = id
        default: throw FSError.notPermitted("cannot move album \(album.name) into \(to.displayName): albums live in Albums/")
        }
        if Names.key(newName) == Names.key(Self.thumbnailsFolderName) {
            throw FSError.notPermitted("\(newName) is the name of the thumbnails folder")
        }
        switch target {
        case nil: break
        case .album(let existing)?:
            try library.deleteAlbum(id: existing.id)  // ENOTEMPTY unless empty, as rename(2)
        default:
            throw FSError(ENOTDIR, "\(newName) is not a folder", logged: false)
        }
        let oldParent = album.parentID == 0 ? FixedInode.albums : UInt64(album.parentID)
        try library.moveAlbum(id: album.id, to: parentAlbum, name: newName)
        afterChange(folders: [oldParent, newParent, UInt64(album.id)], entries: [(oldParent, album.name), (newParent, newName)])
    }

    /// A scratch file renamed onto a media name is imported there (rsync's
    /// `.NAME.XXXXXX`, an editor's hidden temp file); onto an existing photo it becomes
    /// that photo's new version. Onto another scratch name it just moves.
    private func moveScratch(_ file: ScratchFile, from parent: UInt64, to: FolderRole, newParent: UInt64,
                             newName: String, replacing target: Entry?) throws {
        try checkScratchAllowed(to, name: newName)
        if Names.isScratch(newName) {
            switch target {
            case nil, .scratch?: break
            case .album?, .virtualFolder?: throw FSError(EISDIR, "\(newName) is a folder", logged: false)
            default: throw FSError.notPermitted("a hidden or junk name (\(newName)) cannot replace a photo")
            }
            try library.moveScratchFile(file.id, to: newParent, name: newName)
            afterChange(folders: [parent, newParent], entries: [(parent, file.name), (newParent, newName)])
            return
        }
        // Refusals of the target first, before the bytes move into staging.
        switch target {
        case .asset(let existing)? where existing.isTrashed:
            throw FSError.notPermitted("\(newName) is in Recently Deleted")
        case .album?, .virtualFolder?:
            throw FSError(EISDIR, "\(newName) is a folder", logged: false)
        default: break
        }
        // Import (or a new version) from the scratch file's bytes, moved into staging.
        let scratchPath = library.scratchPath(file.id)
        let (stageFD, stagePath) = try library.staging.createFile(prefix: "rename")
        close(stageFD)
        guard Glibc.rename(scratchPath, stagePath) == 0 else {
            Glibc.unlink(stagePath)
            throw FSError(errno, "cannot move \(file.name) into staging")
        }
        func putBack() { _ = Glibc.rename(stagePath, scratchPath) }
        let fd: Int32
        do {
            fd = try library.openInside(String(stagePath.dropFirst(library.paths.root.count + 1)), flags: O_RDONLY)
        } catch {
            putBack()
            throw FSError(EIO, "cannot open \(stagePath): \(error)")
        }
        defer { close(fd) }
        var st = stat()
        fstat(fd, &st)
        let fileMtime = st.st_mtim.nanoseconds
        let explicitMtime = file.mtimeNs != 0 ? file.mtimeNs : nil  // 0: none was set
        let staged: StagedFile
        do {
            staged = try library.staging.seal(path: stagePath, fd: fd, mtimeNs: explicitMtime ?? fileMtime)
        } catch {
            putBack()
            throw error
        }
        var asset: Asset
        var before: Asset?
        switch target {
        case .asset(let existing)?:
            before = existing
            do {
                asset = try library.commitVersion(staged, of: existing.id)
            } catch {
                if access(stagePath, F_OK) == 0 { putBack() }
                throw FSError.from(error)
            }
            // The kernel's inode for this name is now the scratch file's number.
            try library.addAlias(ino: file.id, asset: existing.id)
        case .newFile(let writer)?:
            dropNewFile(writer)
            fallthrough
        default:
            let destination: ImportDestination
            do { destination = try importDestination(to, name: newName) } catch { putBack(); throw error }
            let outcome: ImportOutcome
            do {
                outcome = try library.commit(staged, originalName: newName, destination: destination, assetID: file.id)
            } catch {
                if access(stagePath, F_OK) == 0 { putBack() }
                throw error
            }
            guard let imported = outcome.asset else {
                putBack()
                if case .refused(let why) = outcome { throw FSError(EINVAL, "refused \(newName): \(why); \(file.name) is kept") }
                throw FSError(EINVAL, "refused \(newName)")
            }
            if imported.id != file.id { try library.addAlias(ino: file.id, asset: imported.id) }
            asset = imported
        }
        try library.forgetScratchFile(file.id)
        if before == nil, file.mode & 0o7777 != 0o644, file.mode & 0o7777 != 0o600 {
            try library.setMode(asset.id, file.mode & 0o7777)  // rsync -a's chmod of its temp file
        }
        if let explicitMtime {
            try library.setMtime(asset.id, nanoseconds: explicitMtime)
            asset = try library.asset(id: asset.id) ?? asset
        }
        afterChange(asset: asset, views: before, folders: [parent, newParent], entries: [(parent, file.name), (newParent, newName)])
    }

    /// A file still being written moves with its name; over an existing photo it will be
    /// that photo's new version.
    private func moveNewFile(_ writer: Writer, from parent: UInt64, to: FolderRole, newParent: UInt64,
                             newName: String, replacing target: Entry?) throws {
        guard case .newFile(_, let oldName) = writer.withLock({ writer.target }) else { return }
        if Names.isScratch(newName) {
            throw FSError.notPermitted("a file being written cannot become a hidden or junk file (\(newName))")
        }
        switch target {
        case .asset(let existing)?:
            try library.addAlias(ino: Int64(writer.ino), asset: existing.id)
            writer.withLock { writer.target = .asset(existing.id); writer.dirty = true }
            writers.clearName(writer)
        case .album?, .virtualFolder?:
            throw FSError(EISDIR, "\(newName) is a folder", logged: false)
        case .scratch?:
            throw FSError.notPermitted("a file being written cannot replace a hidden or junk file")
        case .newFile(let other)?:
            dropNewFile(other)
            fallthrough
        default:
            _ = try importDestination(to, name: newName)
            writer.withLock { writer.target = .newFile(folder: newParent, name: newName) }
            writers.setName(writer, folder: newParent, name: newName)
        }
        afterChange(folders: [parent, newParent], entries: [(parent, oldName), (newParent, newName)])
    }

    /// An asset leaves `from` (out of an album, unmarked from Favorites or Hidden,
    /// restored from Recently Deleted) and lands in `to` (into an album, marked, renamed
    /// in All Photos). Over another photo, that photo gets a new version with these
    /// bytes, and this entry goes as `rm` would take it.
    private func moveAsset(_ asset: Asset, from: FolderRole, parent: UInt64, name: String, to: FolderRole,
                           newParent: UInt64, newName: String, replacing target: Entry?) throws {
        if Names.isScratch(newName) {
            throw FSError.notPermitted("a photo cannot be renamed to a hidden or junk name (\(newName))")
        }
        let sameFolder = parent == newParent
        // What leaving `from` and landing in `to` mean; refusals first.
        switch from {
        case .album, .allPhotos, .smart(.favorites), .smart(.hidden), .smart(.recentlyDeleted): break
        default:
            throw FSError.notPermitted("cannot move \(name) out of \(from.displayName): it is a view of the library")
        }
        switch to {
        case .album, .allPhotos, .smart(.favorites), .smart(.hidden): break
        case .smart(.recentlyDeleted) where sameFolder: break
        default:
            throw FSError.notPermitted("cannot move \(name) into \(to.displayName)")
        }
        switch target {
        case .album?, .virtualFolder?: throw FSError(EISDIR, "\(newName) is a folder", logged: false)
        case .scratch?: throw FSError.notPermitted("a photo cannot replace a hidden or junk file (\(newName))")
        default: break
        }
        if asset.isTrashed, case .smart(.recentlyDeleted) = from {} else if asset.isTrashed {
            throw FSError.notPermitted("\(name) is in Recently Deleted")
        }

        // Over another photo: that photo's new version, then this entry goes.
        if case .asset(let existing)? = target {
            if existing.sha256 != asset.sha256 {
                let (fd, path) = try library.staging.createFile(prefix: "replace")
                do {
                    try copyBlob(asset, into: fd, path: path)
                    let staged = try library.staging.seal(path: path, fd: fd, mtimeNs: asset.mtimeNanoseconds)
                    close(fd)
                    _ = try library.commitVersion(staged, of: existing.id)
                } catch {
                    close(fd)
                    Glibc.unlink(path)
                    throw error
                }
            }
            try unlink(parent: parent, name: Array(name.utf8))
            afterChange(asset: try library.asset(id: existing.id), folders: [parent, newParent],
                        entries: [(parent, name), (newParent, newName)])
            return
        }
        if case .newFile(let writer)? = target { dropNewFile(writer) }

        // Leave.
        var movedMembership = false
        switch from {
        case .album(let album):
            if case .album(let destination) = to {
                try library.moveMembership(from: album, name: name, to: destination, name: newName)
                movedMembership = true
            } else {
                try library.removeMembership(album: album, name: name)
            }
        case .smart(.favorites) where to != .smart(.favorites): try library.setFavorite(asset.id, false)
        case .smart(.hidden) where to != .smart(.hidden): try library.setHidden(asset.id, false)
        case .smart(.recentlyDeleted): try library.restore(asset.id)
        default: break
        }
        // Land.
        switch to {
        case .album(let album) where !movedMembership:
            try library.addMembership(album: album, asset: asset.id, name: newName)
        case .allPhotos, .smart(.recentlyDeleted):
            if newName != asset.name { try library.renameAsset(asset.id, to: newName) }
        case .smart(.favorites):
            if !asset.favorite { try library.setFavorite(asset.id, true) }
            if sameFolder && newName != asset.name { try library.renameAsset(asset.id, to: newName) }
        case .smart(.hidden):
            if !asset.hidden { try library.setHidden(asset.id, true) }
            if sameFolder && newName != asset.name { try library.renameAsset(asset.id, to: newName) }
        default: break
        }
        let after = try library.asset(id: asset.id)
        afterChange(asset: after, views: asset, folders: [parent, newParent], entries: [(parent, name), (newParent, newName)])
    }
}
