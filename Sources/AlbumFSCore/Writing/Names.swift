import AlbumCore
import Glibc

/// rm, mkdir, rmdir, ln and ln -s: each one transaction, as `Rules` says.
extension FileSystem {
    // MARK: unlink

    /// rm: a plain file goes; a photo's entry goes where `Rules.remove` says (out of this
    /// album, to Recently Deleted, unmarked, for good). Thumbnails are derived: one in a
    /// `.thumbnails/` is gone from that folder while the mount runs (`RemovedThumbnails`),
    /// a shared one's removal changes nothing (and `rm -r` of an album works).
    public func unlink(parent: UInt64, name bytes: [UInt8]) throws {
        try checkWritable()
        let name = try validName(bytes)
        let folder = try library.read { try self.folder(parent, in: $0) }
        try afterCloses(of: { try lookupEntry(in: folder, name: name) }, files: { [$0] }) { entry in
            guard let entry else { throw FSError.noEntry(name) }
            try unlink(entry, name: name, in: folder)
        }
    }

    /// rm of `entry`, named `name` in `folder`.
    private func unlink(_ entry: Item, name: String, in folder: Item) throws {
        let parent = folder.ino
        switch entry {
        case .thumbnail:
            // In views (All Photos, smart albums, date folders) .thumbnails/ is read-only,
            // as the view is; an album's lets `tar x` remove one in its way.
            guard case .thumbnails(let photos) = folder, FixedInode.album(ofFolder: photos) != nil else {
                throw FSError.notPermitted("cannot remove \(name): the thumbnails of \(folder.displayName) are derived and read-only here")
            }
            removedThumbnails.remove(name, in: parent)
            afterChange(folders: [parent], entries: [(parent, name)])
        case .sharedThumbnail:
            return
        case .plain(let file):
            try removingPlainFile(file) {
                try library.write { tx in
                    try tx.expectUnchanged(file)
                    try tx.removePlainName(file)
                }
                removePlainBytes(file)
            }
            afterChange(folders: [parent], entries: [(parent, name)])
            sidecarWent(named: file.name, in: parent)
        case .asset(let asset):
            let removal = try Rules.remove(from: Rules.Folder(folder), name: name, folderName: folder.displayName)
            if let fresh = saves.fresh(asset.id, in: folder.ino),
               let photo = try photoSaved(from: asset, in: folder, since: fresh.atNs, onlyHere: true) {
                // A save's temporary file, removed once its bytes are the photo's: gone
                // without a trace, as if it had been renamed over the photo.
                try whileLeaving(asset) { try library.write { tx in
                    try expectShown(.asset(asset), as: name, in: folder, tx)
                    try tx.vanish(asset.id, into: photo.id)
                } }
                saves.forget(asset.id)
                afterChange(views: asset, folders: [parent], entries: [(parent, name)])
                return
            }
            if let restored = restoredByClose(asset, in: folder),
               let photo = try photoSaved(from: asset, in: folder, since: restored.atNs, onlyHere: false) {
                // A save's temporary file whose close brought this photo back from Recently
                // Deleted: it goes back there as it was, as if renamed over the photo.
                try library.write { tx in
                    try expectShown(.asset(asset), as: name, in: folder, tx)
                    try putBack(asset, as: name, by: removal, restored, tx)
                }
                saves.forget(asset.id)
                afterChange(asset: try? library.asset(id: asset.id), views: asset, folders: [parent], entries: [(parent, name)])
                Log.info("\(name) removed after \(photo.name) took its bytes: \(restored.name), which they had brought back, is in Recently Deleted again")
                return
            }
            let remove = { try self.library.write { tx in
                try self.expectShown(.asset(asset), as: name, in: folder, tx)
                return try self.remove(asset, as: name, by: removal, tx)
            } }
            let left = removal == .deleteForGood ? try whileLeaving(asset, remove) : try remove()
            switch removal {
            case .trash: Log.info("moved \(asset.name) to Recently Deleted")
            case .deleteForGood: Log.info("deleted \(asset.name) for good")
            default: break
            }
            afterChange(asset: removal == .deleteForGood ? nil : try library.asset(id: asset.id), views: asset,
                        folders: [parent] + left.map { UInt64($0.albumID) },
                        entries: [(parent, name)] + left.map { (UInt64($0.albumID), $0.name) })
        default:
            throw FSError(EISDIR, "\(name) is a folder", logged: false)
        }
    }

    /// The photo that `temp` was a save's temporary file for: `temp` arrived by a close in
    /// `folder` at `since` (moments ago: a new photo, `onlyHere` in no other folder, or
    /// one brought back from Recently Deleted), and since then another photo of `folder`
    /// took its bytes as its next version. exiftool's `-overwrite_original_in_place`
    /// writes `P.jpg_exiftool_tmp`, copies it into `P.jpg` and removes it; without this
    /// the temporary file stayed a photo of the library.
    private func photoSaved(from temp: Asset, in folder: Item, since: Int64, onlyHere: Bool) throws -> Asset? {
        try library.read { r -> Asset? in
            if onlyHere {
                let memberships = try r.memberships(ofAsset: temp.id)
                guard memberships.allSatisfy({ FixedInode.folder(ofAlbum: $0.albumID) == folder.ino }) else { return nil }
            }
            for other in try r.assets(withSHA256: temp.sha256) where other.id != temp.id && !other.isTrashed && other.version > 1 {
                guard let current = try r.versions(of: other.id).last, current.createdAt >= since / nanosecondsPerSecond - 1 else { continue }
                switch folder {
                case .album(let album):
                    if try r.memberships(ofAsset: other.id).contains(where: { $0.albumID == album.id }) { return other }
                case .allPhotos:
                    if !other.hidden { return other }
                case .smart(.favorites):
                    if other.favorite && !other.hidden { return other }
                case .smart(.hidden):
                    if other.hidden { return other }
                default: break
                }
            }
            return nil
        }
    }

    /// How a close in `folder` brought `asset` back from Recently Deleted within the
    /// minute, if it did and the photo is still as it came back (not changed, not
    /// deleted again since).
    func restoredByClose(_ asset: Asset, in folder: Item) -> SaveWindow.Restored? {
        guard let restored = saves.restored(asset.id, in: folder.ino), restored.sha256 == asset.sha256,
              !asset.isTrashed else { return nil }
        return restored
    }

    /// Puts a photo that a save's temporary file (`name`, taken away by `removal`) brought
    /// back from Recently Deleted back there as it was, in the caller's transaction: its
    /// name first (unless another photo took it since), so that the sidecars beside it
    /// go with it, then its entry made by the close, then its deletion time.
    func putBack(_ asset: Asset, as name: String, by removal: Rules.Removal, _ restored: SaveWindow.Restored,
                 _ tx: Transaction) throws {
        if Names.key(asset.name) != Names.key(restored.name), try tx.assetNameFree(Names.key(restored.name), for: asset.id) {
            try tx.renameAsset(asset.id, to: restored.name)
        }
        if removal != .trash { try remove(asset, as: name, by: removal, tx) }
        try tx.trash(asset.id, at: restored.trashedAt)
    }

    /// What `rm` of a photo's entry does, in the caller's transaction. Returns the album
    /// entries it took away with it (deleting for good).
    @discardableResult
    func remove(_ asset: Asset, as name: String, by removal: Rules.Removal, _ tx: Transaction) throws -> [Membership] {
        switch removal {
        case .leaveAlbum(let album): try tx.removeMembership(album: album, name: name)
        case .trash: try tx.trash(asset.id)
        case .unmarkFavorite: try tx.setFavorite(asset.id, false)
        case .unhide: try tx.setHidden(asset.id, false)
        case .deleteForGood: return try tx.deleteAsset(asset.id)
        }
        return []
    }

    // MARK: mkdir and rmdir

    /// mkdir makes an album, in Albums/ or in an album; anywhere else it is EPERM. A
    /// `mode` (the caller's umask applied, by the kernel) that keeps the group or others
    /// from reading or entering is kept, as a `chmod` would keep it: `mktemp -d`,
    /// rsync's partial folder and a program under `umask 077` make folders nobody else
    /// may read. Any other folder takes the default (0777 less the mount's umask): the
    /// usual 0755 of a shell's umask 022, or of Samba's directory mask, would otherwise
    /// take from a shared library (`-o umask=002`) its group's right to add photos.
    public func mkdir(parent: UInt64, name bytes: [UInt8], mode: UInt32? = nil, pid: Int32 = 0) throws -> Attributes {
        try checkWritable()
        let name = try validName(bytes)
        let folder = try library.read { try self.folder(parent, in: $0) }
        let trash = Rules.makeTrashFolder(in: Rules.Folder(folder), isRoot: parent == FixedInode.root, name: name)
        let parentAlbum = try trash?.parent ?? Rules.makeFolder(in: Rules.Folder(folder), name: name, folderName: folder.displayName)
        // `.thumbnails` is taken in folders that list photos; the top of Albums/ lists
        // none, and there it is an album's name like any (`cp -r DCIM/. Albums/`).
        let isThumbnails = Self.isThumbnailsFolderName(name) && folder.node != .albumsRoot
        if isThumbnails, case .album = folder,
           try library.plainFiles(in: Node.thumbnails(of: parent).ino).isEmpty {
            // A tree with its own .thumbnails/ (Android's DCIM) copied in: cp makes the
            // folder without looking first. It is not listed, so to a tool it does not
            // exist until something is copied into it; mkdir is then EEXIST as usual.
            if case .album(let album) = folder { newAlbums.madeThumbnails(of: album.id) }
            return try attributes(of: .thumbnails(of: parent))
        }
        let taken = try lookupEntry(in: folder, name: name) != nil
        if isThumbnails || taken {
            throw FSError(EEXIST, "\(name) exists", logged: false)
        }
        let album = try library.write { tx in
            let made = try tx.createAlbum(named: name, in: parentAlbum, role: trash?.role)
            guard let mode, mode & 0o055 != 0o055 else { return made }
            try tx.setAlbumMode(id: made.id, mode: mode & 0o7777)
            return try tx.album(id: made.id) ?? made
        }
        newAlbums.made(album.id, by: pid)
        // The listing only. The kernel made the new name's entry from this reply, and
        // dropping it after (names are dropped after the reply) would unhash the folder
        // under a process that was quick to `cd` into it: its getcwd then fails with
        // ENOENT (`mkdir d && cd d && git init` did, once in a whole run of the suite).
        afterChange(folders: [parent])
        return try attributes(of: .album(album))
    }

    /// rmdir deletes an album that lists nothing (its made thumbnails, and photos in
    /// Recently Deleted or hidden, do not count: `Transaction.deleteAlbum`); one whose
    /// `.thumbnails/` holds files copied in is ENOTEMPTY, as a folder holding a folder
    /// of files is on a disk (it lists that `.thumbnails/`, and `rm -r` removes them
    /// first); anything else is EPERM.
    public func rmdir(parent: UInt64, name bytes: [UInt8]) throws {
        try checkWritable()
        let name = try validName(bytes)
        let folder = try library.read { try self.folder(parent, in: $0) }
        try againWhileChangedMeanwhile(tries: 20, { "\($0) changed meanwhile through another host: looking again" }) { _ in
            try rmdir(name, in: folder, parent: parent)
        }
    }

    /// rmdir of `name` in `folder` (inode `parent`), as its look finds it now.
    private func rmdir(_ name: String, in folder: Item, parent: UInt64) throws {
        guard let entry = try lookupEntry(in: folder, name: name) else { throw FSError.noEntry(name) }
        switch entry {
        case .album(let album):
            try refuseIfThumbnailsHoldFiles(of: UInt64(album.id), named: album.name)
            let unseen = try library.write { tx in
                try expectShown(entry, as: name, in: folder, tx)
                return try tx.deleteAlbum(id: album.id)
            }
            if !unseen.isEmpty {
                Log.info("removed album \(album.name), which listed nothing; \(unseen.count) photo(s) in Recently Deleted or hidden were in it and no longer are")
            }
            afterChange(folders: [parent, UInt64(album.id)], entries: [(parent, name)])
            invalidate(folders: [], files: Set(unseen.map { UInt64($0) }), names: [])  // their link counts
        case .thumbnails(let photos):
            // Derived: removing it changes nothing (rm -r of an album), unless files were
            // copied into it.
            try refuseIfThumbnailsHoldFiles(of: photos, named: folder.displayName)
        case .sharedThumbnails, .sharedSize:
            return  // derived: removing it changes nothing (rm -r of an album)
        case .asset, .plain, .thumbnail, .sharedThumbnail:
            throw FSError(ENOTDIR, "\(name) is not a folder", logged: false)
        default:
            throw FSError.notPermitted("cannot remove \(name): it is a fixed folder of the library")
        }
    }

    /// ENOTEMPTY while the `.thumbnails/` of `folder` (named `name`) holds files copied in: a folder that
    /// holds files is not removed (nor replaced by a rename) on any disk, and nothing
    /// copied in is lost.
    func refuseIfThumbnailsHoldFiles(of folder: UInt64, named name: String) throws {
        if !(try library.plainFiles(in: Node.thumbnails(of: folder).ino, limit: 1)).isEmpty {
            throw FSError(ENOTEMPTY, "\(name)/.thumbnails/ holds files copied into it", logged: false)
        }
    }

    // MARK: link

    /// ln of a photo: into an album (a membership), into Favorites or Hidden (marks it),
    /// into All Photos (nothing changes); EPERM elsewhere. ln of a plain file: a second
    /// name for it, wherever a file may be created (`linkPlain`).
    public func link(ino: UInt64, newParent: UInt64, newName bytes: [UInt8]) throws -> Attributes {
        try checkWritable()
        let name = try validName(bytes)
        return try afterCloses(of: { try item(ino) }, files: { [$0] }) { linked in
            try link(linked, ino: ino, newParent: newParent, name: name)
        }
    }

    /// ln of `linked`, what inode `ino` is (a photo or a plain file), as `name` in folder
    /// `newParent`.
    private func link(_ linked: Item?, ino: UInt64, newParent: UInt64, name: String) throws -> Attributes {
        guard let linked else { throw FSError.noEntry("inode \(ino)") }  // removed meanwhile
        if case .plain(let file) = linked { return try linkPlain(file, newParent: newParent, name: name) }
        guard case .asset(let asset) = linked else { throw FSError.notPermitted("only files can be linked") }
        if asset.isTrashed { throw FSError.notPermitted("\(asset.name) is in Recently Deleted: restore it first") }
        if Names.staysPlain(name) { return try linkAsPlainFile(asset, newParent: newParent, name: name) }
        let folder = try library.read { try self.folder(newParent, in: $0) }
        let effect = try Rules.link(into: Rules.Folder(folder), name: name, folderName: folder.displayName)
        if asset.hidden, effect != .hide {
            // Linked, it would show nowhere (hidden photos show in Hidden only).
            throw FSError.notPermitted("\(asset.name) is hidden: move it out of Smart Albums/Hidden first")
        }
        if case .joinAlbum = effect, (try lookupEntry(in: folder, name: name)) != nil {
            throw FSError(EEXIST, "\(name) exists", logged: false)
        }
        try library.write { tx in
            switch effect {
            case .joinAlbum(let album): try tx.addMembership(album: album, asset: asset.id, name: name)
            case .nothing: break
            case .markFavorite: try tx.setFavorite(asset.id, true)
            case .hide: try tx.setHidden(asset.id, true)
            }
        }
        let updated = try library.asset(id: asset.id) ?? asset
        afterChange(asset: updated, views: asset, folders: [newParent], entries: [(newParent, name)])
        return attributes(of: updated)
    }

    /// A hard link of a plain file (`ln`, `cp -al`, `rsync -H`, git's and mail tools'
    /// atomic creates): one more name for the same file, as on any disk. Made wherever a
    /// file may be created; the file then stays plain under every name
    /// (docs/namespace.md, "Hard links").
    private func linkPlain(_ file: PlainFile, newParent: UInt64, name: String) throws -> Attributes {
        let folder = try folderForNewFile(newParent, name: name)
        try library.write { tx in
            try tx.expectUnchanged(file)
            try expectFree(name, in: folder, tx)
            try tx.linkPlainFile(file, to: newParent, name: name)
        }
        invalidate([.attributes(UInt64(file.id))])  // its link count, under every name
        afterChange(folders: [newParent], entries: [(newParent, name)])
        guard let now = try library.plainFile(id: file.id) else { throw FSError.noEntry(file.name) }
        return try attributes(of: now)
    }

    /// ln of a photo under a name that stays plain (hidden, junk, a sidecar's), as
    /// `rsync -H`, `tar` and `cp -a` make when a tree has a photo under such a name too: a
    /// plain file with the photo's bytes as they are now (its blob, shared: nothing is
    /// copied), mode and mtime. A photo shows under names of albums only, so this name is
    /// a file of its own: the photo's next versions do not change it (docs/namespace.md,
    /// "Hard links"). A photo that shows other bytes than its version (being written, or
    /// emptied: truncated and closed) is linked as those: a copy of them, as they are now.
    private func linkAsPlainFile(_ asset: Asset, newParent: UInt64, name: String) throws -> Attributes {
        let folder = try folderForNewFile(newParent, name: name)
        let mode = asset.mode ?? Self.defaultFileMode
        func linkVersion() throws -> PlainFile {
            try library.write { tx in
                try expectFree(name, in: folder, tx)
                return try tx.createPlainFile(named: name, in: newParent, mode: mode, blob: asset.sha256, mtimeNs: asset.mtimeNanoseconds)
            }
        }
        func linkShown(by writer: Writer) throws -> PlainFile {
            guard let shown = writer.pendingAttributes(), let bytes = writer.readable().0 else { return try linkVersion() }
            let own = try newInodeNumber()
            do {
                try explained("cannot make \(name)") {
                    _ = try plainCopy(own, of: bytes, length: shown.size, mtimeNs: shown.mtimeNs)
                    try library.files.syncFolder(.plainFiles)
                }
                return try library.write { tx in
                    try expectFree(name, in: folder, tx)
                    return try tx.createPlainFile(named: name, in: newParent, mode: mode, id: own, mtimeNs: shown.mtimeNs)
                }
            } catch {
                discard(.plainFile(own))
                throw error
            }
        }
        // Inside the writer's `io`: no write or close changes the bytes while they are copied.
        let file = try writers.get(UInt64(asset.id)).map { writer in try writer.io { try linkShown(by: writer) } } ?? linkVersion()
        afterChange(folders: [newParent], entries: [(newParent, name)])
        return try attributes(of: file)
    }

    /// Plain file `own`'s bytes made as a copy of `length` bytes of `source`, with mtime
    /// `mtimeNs`, synced before a row names them; open for reading and writing.
    func plainCopy(_ own: Int64, of source: FileDescriptor, length: Int64, mtimeNs: Int64) throws -> FileDescriptor {
        let made = try library.files.open(.plainFile(own), flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
        try SystemCalls.copyAll(from: source, to: made, length: length)
        try made.setModificationTime(nanoseconds: mtimeNs)
        try made.sync()
        return made
    }

    // MARK: symbolic links

    /// ln -s: a link is a plain file of its folder whose bytes are its target, made
    /// wherever a file may be created. It stays a link under any name: never a photo, a
    /// sidecar that is read, or a save's next version (docs/namespace.md, "Symbolic
    /// links"). Its target is written and fsynced before the row that names it commits.
    public func symlink(parent: UInt64, name bytes: [UInt8], target: [UInt8]) throws -> Attributes {
        try checkWritable()
        let name = try validName(bytes)
        if target.isEmpty || target.contains(0) { throw FSError(EINVAL, "the link \(name) needs a target", logged: false) }
        if target.count >= Int(PATH_MAX) { throw FSError(ENAMETOOLONG, "the target of the link \(name) is too long", logged: false) }
        let folder = try folderForNewFile(parent, name: name)
        let id = try newInodeNumber()
        do {
            let file = try library.files.open(.plainFile(id), flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            try target.withUnsafeBytes { _ = try file.write($0, at: 0) }
            try file.sync()
            try library.files.syncFolder(LibraryPath.plainFile(id).parent)
            try library.write { tx in
                try expectFree(name, in: folder, tx)
                try tx.createPlainFile(named: name, in: parent, mode: 0o777, id: id, symlink: true)
            }
        } catch {
            discard(.plainFile(id))
            throw FSError.wrapping(error, "cannot create the link \(name)")
        }
        afterChange(folders: [parent])
        guard let file = try library.read({ try $0.plainFile(id: id) }) else { throw FSError.noEntry(name) }
        return try attributes(of: file)
    }

    /// readlink: a link's target. Anything else is EINVAL, as readlink(2) says.
    public func readlink(_ ino: UInt64) throws -> [UInt8] {
        guard case .plain(let file) = try existing(ino), file.isSymlink else {
            throw FSError(EINVAL, "\(ino) is not a symbolic link", logged: false)
        }
        let bytes = try library.files.open(file.bytes, flags: O_RDONLY)
        return try explained("cannot read the link \(file.name)") { try bytes.read(count: Int(PATH_MAX), at: 0) }
    }
}
