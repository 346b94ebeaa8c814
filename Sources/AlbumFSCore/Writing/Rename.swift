import AlbumCore
import Glibc

/// mv: what moving or renaming means depends on what moves and where it leaves and
/// lands (`Rules`), and on the minute of a save (`SaveWindow`). Every refusal comes
/// before anything changes, and each rename is one transaction: a refused or failed
/// rename changes nothing, and no byte of the file it moves is lost.
extension FileSystem {
    public static let renameNoReplace: UInt32 = 1
    public static let renameExchange: UInt32 = 2
    /// overlayfs's flag: leave a whiteout device where the source was. No tool but
    /// overlayfs asks for it, and a rename that ignored it would break that promise.
    public static let renameWhiteout: UInt32 = 4

    public func rename(parent: UInt64, name nameBytes: [UInt8], newParent: UInt64, newName newBytes: [UInt8], flags: UInt32) throws {
        try checkWritable()
        // Swapping two names is one step on a disk; here a name may be an album
        // membership, a plain file or a save in progress, and no tool a photo library
        // meets needs it (`mv --exchange` and `exch` are rare), so it is refused, as
        // many filesystems do: callers fall back to two renames.
        if flags & Self.renameExchange != 0 { throw FSError(EINVAL, "rename with RENAME_EXCHANGE is not supported") }
        if flags & Self.renameWhiteout != 0 { throw FSError(EINVAL, "rename with RENAME_WHITEOUT is not supported") }
        let name = try validName(nameBytes)
        let newName = try validName(newBytes)
        let (from, to) = try library.read { r in (try folder(parent, in: r), try folder(newParent, in: r)) }
        var moved: UInt64?
        try afterCloses(of: { try renamed(name, from: from, to: to, newName: newName) },
                        files: { [$0.0, $0.1] }) { source, target in
            try rename(source, from: from, name: name, target: target, to: to, newName: newName,
                       parent: parent, newParent: newParent, flags: flags)
            // Only a photo's number can live on while its name shows something else.
            if case .asset = source { moved = source.ino }
        }
        // The kernel's entry the rename moves names another object from now on when the
        // new name shows something else than the inode renamed (a photo renamed to a
        // hidden name, which is a plain file of its own there; a photo a close had made
        // a name of, renamed over another photo) while that inode lives on as itself (the
        // photo, in its other folders). On a disk the inode moves with the name; here the
        // kernel would keep the moved entry, standing for the photo, under the new name
        // until the name's invalidation, which can only come after the reply (the rename
        // holds both folders' locks): a `chmod` of the new name right after changed the
        // photo (3 of 30 rounds). Every cached name is made stale instead, before the reply.
        if let moved, (try? lookupEntry(in: to, name: newName))??.ino != moved, (try? item(moved))??.ino == moved {
            invalidate([.allNames])
        }
    }

    /// The entries a rename moves and replaces.
    private func renamed(_ name: String, from: Item, to: Item, newName: String) throws -> (Item, Item?) {
        guard let source = try lookupEntry(in: from, name: name) else { throw FSError.noEntry(name) }
        return (source, try occupant(in: to, name: newName))
    }

    /// A rename of `source` over `target` (nil: none), with no close of either in progress.
    private func rename(_ source: Item, from: Item, name: String, target: Item?, to: Item, newName: String,
                        parent: UInt64, newParent: UInt64, flags: UInt32) throws {
        var target = target
        if let t = target, t.ino == source.ino {
            // The same file: a rename of its case or normalization, or (POSIX) two names of
            // one file, which changes nothing.
            if parent != newParent || Names.key(name) != Names.key(newName) { return }
            target = nil
        }
        if target != nil && flags & Self.renameNoReplace != 0 { throw FSError(EEXIST, "\(newName) exists", logged: false) }
        // A plain file renamed over stays for the kernel's inode while the kernel holds it.
        try removingPlainFile(target?.plainFile) {
            switch source {
            case .album(let album):
                try moveAlbum(album, from: from, name: name, to: to, newName: newName, replacing: target)
            case .plain(let file):
                try movePlain(file, from: from, to: to, newName: newName, replacing: target)
            case .asset(let asset):
                try moveAsset(asset, from: from, name: name, to: to, newName: newName, replacing: target)
            default:
                throw FSError.notPermitted("cannot move \(name): it is a fixed folder of the library")
            }
        }
    }

    // MARK: albums

    private func moveAlbum(_ album: Album, from: Item, name: String, to: Item, newName: String, replacing target: Item?) throws {
        let newParentAlbum = try Rules.moveAlbum(into: Rules.Folder(to), name: album.name, folderName: to.displayName)
        if Self.isThumbnailsFolderName(newName), to.node != .albumsRoot {
            throw FSError.notPermitted("\(newName) is the name of the thumbnails folder")
        }
        switch target {
        case nil: break
        case .album(let replaced)?:
            // An empty album is replaced (rename(2)); a full one is ENOTEMPTY, and so is one
            // whose .thumbnails/ holds files copied in (the library cannot see those).
            try refuseIfThumbnailsHoldFiles(of: UInt64(replaced.id), named: replaced.name)
        default: throw FSError(ENOTDIR, "\(newName) is not a folder", logged: false)
        }
        let oldParent = FixedInode.folder(ofAlbum: album.parentID)
        try library.write { tx in
            try expectShown(.album(album), as: name, in: from, tx)
            try tx.moveAlbum(id: album.id, to: newParentAlbum, name: newName)
        }
        afterChange(folders: [oldParent, to.ino, UInt64(album.id)], entries: [(oldParent, album.name), (to.ino, newName)])
    }

    // MARK: plain files

    /// A plain file moves with its bytes. Renamed to a visible name where photos are
    /// imported, with photo content, it becomes a photo (rsync's `.NAME.XXXXXX`, an
    /// editor's temporary file); over a photo, the photo's next version (not a photo:
    /// EINVAL, and nothing changes).
    private func movePlain(_ file: PlainFile, from: Item, to: Item, newName: String, replacing target: Item?) throws {
        try Rules.createFile(in: Rules.Folder(to), name: newName, folderName: to.displayName)
        var replacedPlain: PlainFile?
        var over: Asset?
        switch target {
        case nil: break
        case .plain(let other)?: replacedPlain = other
        case .asset(let photo)?:
            try Rules.writeInto(photo)
            over = photo
        case .thumbnail?, .sharedThumbnail?: throw FSError.notPermitted("thumbnails are made by AlbumFS and cannot be replaced")
        default: throw FSError(EISDIR, "\(newName) is a folder", logged: false)
        }
        let entries = [(from.ino, file.name), (to.ino, newName)]
        // A hidden backup (`.P.jpg.bak`) is a plain file: renamed on, it ends its save too.
        saves.backupMoved(folder: from.ino, name: file.name)
        func plainMove() throws {
            let replaced = try library.write { tx in
                try tx.expectUnchanged(file)
                try expectEntry(target, named: newName, in: to, renaming: .plain(file), tx)
                return try tx.movePlainFile(file, to: to.ino, name: newName)
            }
            if let replaced { removePlainBytes(replaced) }
            afterChange(folders: [from.ino, to.ino], entries: entries)
            // A sidecar renamed away gives back what it gave; one renamed into place
            // (an editor's temporary file, exiftool's `_exiftool_tmp`) is read.
            if Names.key(file.name) != Names.key(newName) || from.ino != to.ino { sidecarWent(named: file.name, in: from.ino) }
            readSidecarIfOne(file.id)
        }
        if file.isSymlink {
            // A link stays a link under any name; it is no photo's next version.
            if let over { throw FSError(EINVAL, "refused to put the link \(file.name) over \(over.name): a link is not a photo; both are unchanged") }
            return try plainMove()
        }
        if file.isLinked {
            // A file with other names stays one file under all of them: its bytes become
            // no photo, which would be another file (docs/namespace.md, "Hard links").
            if let over { throw FSError(EINVAL, "refused to put \(file.name) over \(over.name): it has other names (hard links), and a photo's next version cannot; both are unchanged") }
            return try plainMove()
        }
        // Most renames of plain files can never make a photo: no need to read the file.
        if over == nil, case .stayPlain = try destiny(of: "", name: newName, folder: to, over: nil),
           saves.vacatedBy(folder: to.ino, name: newName) == nil {
            return try plainMove()
        }
        // The bytes as they are now; a writer still open keeps writing a version later
        // (its `io` is held: `afterCloses`).
        let writer = writers.get(UInt64(file.id))
        func keptPlain(_ why: String, empty: Bool) throws {
            if let over { throw FSError(EINVAL, "refused to put \(file.name) over \(over.name): \(why); both are unchanged") }
            try plainMove()
            if !empty, let moved = try library.read({ try $0.plainFile(id: file.id) }) { logKeptPlain(moved, why) }
        }
        do {
            var clock = PhaseClock()
            defer { clock.log("rename of \(file.name) to \(newName)") }
            let bytes = try openBytes(of: file)
            if let no = try cannotBeMedia(bytes, name: newName, file: file.name) { return try keptPlain(no.why, empty: no.empty) }
            // Bytes a writer of this host streamed and left whole need no second reading:
            // its digest, from the writer (its `io` is held) or as it left.
            var known: (sha256: String, size: Int64)?
            if file.blobSHA256 == nil {
                if let writer { known = (try? bytes.status()).flatMap { writer.keptDigest(of: file.id, matching: $0) } } else {
                    known = writers.digests.digest(of: file.id, bytes: bytes)
                }
            }
            let hashed = try explained("cannot read \(file.name)") {
                try HashedFile.hashing(file.bytes, descriptor: bytes, knownHash: { size in known?.size == size ? known?.sha256 : nil })
            }
            clock.mark(known == nil ? "hash" : "digest kept")
            // Bytes of its own (not a blob's, which is placed and synced already) are
            // linked into place and synced while the decoder reads them, as at a close;
            // only where they cannot become a photo's next version: a save takes the
            // photo writer's `io` as it lands, which a close of that photo holds while it
            // waits for the same bytes to be placed (`BlobsInFlight`).
            let placedEarly = file.blobSHA256 == nil && over == nil && saves.vacatedBy(folder: to.ino, name: newName) == nil
            func decided(_ kind: Classification, _ placement: () -> BlobStore.Placement?) throws -> Landed? {
                let metadata: MediaMetadata
                switch kind {
                case .notMedia(let why):
                    try keptPlain(why, empty: hashed.size == 0)
                    return nil
                case .media(let m):
                    metadata = m
                }
                clock.mark("metadata")
                let decide = { try self.destiny(of: hashed.sha256, name: newName, folder: to, over: over) }
                let fate = try decide()
                if case .stayPlain = fate {
                    try plainMove()
                    return nil
                }
                let photo = PhotoBytes(sha256: hashed.sha256, size: hashed.size, metadata: metadata, writtenNs: hashed.mtimeNs,
                                       file: file.blobSHA256 == nil ? hashed : nil)
                return try land(photo, as: newName, in: to, destiny: fate, fileID: file.id,
                                explicitMtimeNs: file.explicitMtimeNs,
                                mode: file.mode & 0o1777 == Self.defaultFileMode ? nil : file.mode & 0o1777,
                                placed: placement(), inFlight: placedEarly,
                                decide: over == nil ? decide : nil) { tx in
                    try tx.expectUnchanged(file)
                    try expectEntry(target, named: newName, in: to, renaming: .plain(file), tx)
                    if let replacedPlain { try tx.removePlainName(replacedPlain) }
                    try tx.deletePlainFile(file.id, becomingPhoto: true)
                }
            }
            let landed = placedEarly
                ? try classifyWhileSyncing(hashed, bytes, name: file.name, as: newName, decided)
                : try decided(try library.classify(hashed, name: newName, reader: decoder), { nil })
            guard let landed else { return }
            clock.mark("stored")
            writers.digests.forget(file.id)
            if file.blobSHA256 == nil { discard(.plainFile(file.id)) }
            if let replacedPlain { removePlainBytes(replacedPlain) }
            if let writer {
                writer.becamePhoto(landed.asset)
                writers.becameAsset(writer, landed.asset.id)
            }
            afterLanding(landed, folder: to, entries: entries)
            clock.mark("after")
        }
    }

    // MARK: photos

    /// A photo's entry moves: it leaves `from` and lands in `to` as `Rules` says (out of
    /// one album into another, unmarked, restored, renamed). Over another photo, that
    /// photo gets these bytes as its next version, and this entry goes (a temporary photo
    /// made by a close moments ago leaves no trace). To a hidden or junk name, the entry
    /// becomes a plain file with these bytes, and the photo leaves as `rm` would take it.
    /// An emptied photo (truncated and closed, `Writer.Phase.emptied`) moves as the
    /// empty file it shows: over a photo it is no photo (EINVAL), to a hidden name an
    /// empty plain file, and it claims no name a save vacated; so does one that a handle
    /// still writing it has cut to nothing.
    private func moveAsset(_ asset: Asset, from: Item, name: String, to: Item, newName: String, replacing target: Item?) throws {
        let fromKind = Rules.Folder(from), toKind = Rules.Folder(to)
        if asset.isTrashed, fromKind != .recentlyDeleted {
            if case .trashFiles = fromKind {} else { throw FSError.notPermitted("\(name) is in Recently Deleted") }
        }
        var replacedPlain: PlainFile?
        var over: Asset?
        switch target {
        case nil: break
        case .plain(let other)?: replacedPlain = other
        case .asset(let photo)?:
            try Rules.writeInto(photo)
            over = photo
        case .thumbnail?, .sharedThumbnail?: throw FSError.notPermitted("thumbnails are made by AlbumFS and cannot be replaced")
        default: throw FSError(EISDIR, "\(newName) is a folder", logged: false)
        }
        let entries = [(from.ino, name), (to.ino, newName)]
        let showsNoBytes = showsNoBytes(asset.id)
        // Out of a date view or a read-only smart album no photo's entry moves (EPERM),
        // but into the desktop trash (an rm): not to a hidden name, not over another photo.
        switch (fromKind, toKind) {
        case (_, .trashFiles), (_, .trashExpunged): break
        case (.dateView, _), (.view, _): _ = try Rules.moveOut(of: fromKind, name: name, folderName: from.displayName)
        default: break
        }

        let staysPlain = Names.staysPlain(newName)
        if !staysPlain, showsNoBytes, let over {
            throw FSError(EINVAL, "refused to put \(name) over \(over.name): \(name) was truncated to nothing, and an empty file is no photo; both are unchanged")
        }
        saves.backupMoved(folder: from.ino, name: name, asset: asset.id)
        if staysPlain {
            return try hidePhotoEntry(asset, from: from, name: name, to: to, newName: newName, replacing: replacedPlain)
        }

        // Over another photo, or onto the name a photo left moments ago: a save.
        let vacated = over == nil && !showsNoBytes && Rules.keepsSaves(toKind) ? saves.vacatedBy(folder: to.ino, name: newName) : nil
        let claimed = try vacated.flatMap { v in try library.asset(id: v.asset) }.flatMap { $0.id != asset.id && !$0.isTrashed ? $0 : nil }
        if let photo = over ?? claimed {
            try saveOver(photo, asset, from: from, name: name, to: to, newName: newName, vacated: over == nil ? vacated : nil,
                         replacing: replacedPlain, entries: entries)
            return
        }

        // An ordinary move.
        let arrival = try Rules.moveIn(to: toKind, from: fromKind, name: newName, folderName: to.displayName)
        // Restored into a date view: only into the day it shows in (the path its trash
        // info names); anywhere else the name would not be there after the move.
        if case .dateView = toKind, to.node != .day(asset.takenDay) {
            throw FSError.notPermitted("\(name) was taken on another day: restore it to its own day's folder, or into an album or All Photos")
        }
        // Into the desktop trash, from any folder: the photo keeps its albums for its
        // restore, as `rm` in All Photos keeps them.
        let departure: Rules.Departure
        switch arrival {
        case .trash, .deleteForGood:
            // Only from where `rm` may take it (not from a read-only view).
            _ = try Rules.remove(from: fromKind, name: name, folderName: from.displayName)
            departure = .stay
        // A rename inside Recently Deleted: the photo stays there, under its new name.
        case .rename where fromKind == .recentlyDeleted && toKind == .recentlyDeleted: departure = .stay
        default: departure = try Rules.moveOut(of: fromKind, name: name, folderName: from.displayName)
        }
        let sameFolder = from.ino == to.ino
        let comesBack: Bool
        switch departure {
        case .restore, .unhide: comesBack = true
        default: comesBack = false
        }
        // Favorites and Hidden show a photo under its name: a move there under another
        // name than the one it left (`mv A/P.jpg Favorites/Q.jpg`) renames it, so that
        // the name asked for is there. Under the same name it keeps the photo's own (an
        // album's entry may be named otherwise than the photo).
        let renamedThere = newName != asset.name && (sameFolder || Names.key(newName) != Names.key(name))
        let move = { try self.library.write { tx in
            try self.expectShown(.asset(asset), as: name, in: from, tx)
            try self.expectEntry(target, named: newName, in: to, renaming: .asset(asset), tx)
            if let replacedPlain { try tx.removePlainName(replacedPlain) }
            var moved = false
            switch departure {
            case .leaveAlbum(let album):
                if case .joinAlbum(let destination) = arrival {
                    try tx.moveMembership(from: album, name: name, to: destination, name: newName)
                    moved = true
                } else {
                    try tx.removeMembership(album: album, name: name)
                }
            case .unmarkFavorite where arrival != .markFavorite: try tx.setFavorite(asset.id, false)
            case .unhide where arrival != .hide: try tx.setHidden(asset.id, false)
            case .restore: try tx.restore(asset.id)
            default: break
            }
            switch arrival {
            case .trash(let filesFolder):
                try tx.trash(asset.id)
                try tx.addMembership(album: filesFolder, asset: asset.id, name: newName)
            case .deleteForGood:
                try tx.deleteAsset(asset.id)
                Log.info("deleted \(asset.name) for good (the desktop trash was emptied)")
            case .joinAlbum(let album) where !moved:
                if comesBack, let back = try tx.memberships(ofAsset: asset.id).first(where: { $0.albumID == album }) {
                    // The restore (or unhide) brought back the photo's own entry in that album: it
                    // takes the name the move gives, as one file moved into a folder is
                    // one entry there (not a second name of the photo beside its old one).
                    if Names.key(back.name) != Names.key(newName) {
                        try tx.moveMembership(from: album, name: back.name, to: album, name: newName)
                    }
                } else {
                    try tx.addMembership(album: album, asset: asset.id, name: newName)
                }
            case .rename:
                if newName != asset.name { try tx.renameAsset(asset.id, to: newName) }
            case .markFavorite:
                if !asset.favorite { try tx.setFavorite(asset.id, true) }
                if renamedThere { try tx.renameAsset(asset.id, to: newName) }
            case .hide:
                if !asset.hidden { try tx.setHidden(asset.id, true) }
                if renamedThere { try tx.renameAsset(asset.id, to: newName) }
            default: break
            }
        } }
        if arrival == .deleteForGood { try whileLeaving(asset, move) } else { try move() }
        if let replacedPlain { removePlainBytes(replacedPlain) }
        if sameFolder && Rules.keepsSaves(fromKind) && Names.key(name) != Names.key(newName) {
            saves.vacated(folder: from.ino, name: name, by: asset.id, renamedTo: newName)
        }
        afterChange(asset: try library.asset(id: asset.id), views: asset, folders: [from.ino, to.ino], entries: entries)
    }

    /// Photo `asset` renamed over `photo` (or onto the name `photo` left moments ago,
    /// `vacated`): its bytes are that photo's next version, and its entry goes from
    /// `from` (a temporary photo made by a close moments ago leaves no trace; one that
    /// brought a photo back from Recently Deleted puts it back; any other goes as `rm`
    /// would take it). Handles still open on it for writing go with the name, as a
    /// file's do on a disk: its writer becomes `photo`'s (`Writer.becameVersion`), so
    /// that `photo` shows the bytes they are writing and their close makes its next
    /// version after this one.
    private func saveOver(_ photo: Asset, _ asset: Asset, from: Item, name: String, to: Item, newName: String,
                          vacated: SaveWindow.Vacated?, replacing replacedPlain: PlainFile?,
                          entries: [(UInt64, String)]) throws {
        let removal = try Rules.remove(from: Rules.Folder(from), name: name, folderName: from.displayName)
        // Inside the writer's `io` (made for the while if it has none, `whileLeaving`): no
        // close commits the bytes being written meanwhile, and no open for writing comes
        // between the photo's vanishing and its handles' keeping what they had open.
        let writer = writers.writer(forAsset: asset.id)
        defer { forgetIfIdle(writer) }
        try writer.io {
            let fresh = saves.fresh(asset.id, in: from.ino)
            let memberships = try library.read { try $0.memberships(ofAsset: asset.id) }
            // Only a temporary photo that shows under this one name vanishes: one linked
            // under another name as well (`ln -f new.jpg old.jpg` links to a temporary
            // name, then renames it over) lives on under that name.
            let vanishes = fresh != nil && memberships.allSatisfy {
                FixedInode.folder(ofAlbum: $0.albumID) == from.ino && Names.key($0.name) == Names.key(name)
            }
            let version = vanishes ? versionForHandles(writer, of: asset) : nil
            // A temporary file whose close brought a photo back from Recently Deleted (the
            // same bytes): that photo goes back as it was, its name and deletion time.
            let restored = fresh == nil ? restoredByClose(asset, in: from) : nil
            let bytes = PhotoBytes(sha256: asset.sha256, size: asset.size, metadata: try library.read { try $0.bytesMetadata(of: asset) },
                                   writtenNs: asset.mtimeNs ?? fresh?.writtenNs ?? asset.mtimeNanoseconds, file: nil)
            let landed = try land(bytes, as: newName, in: to, destiny: .version(of: photo, vacated: vacated),
                                  fileID: asset.id, explicitMtimeNs: nil, mode: asset.mode) { tx in
                // Over `photo`, or onto the name it left (free, or a plain file's).
                let found: Item? = vacated == nil ? .asset(photo) : replacedPlain.map { .plain($0) }
                try expectShown(.asset(asset), as: name, in: from, tx)
                try expectEntry(found, named: newName, in: to, renaming: .asset(asset), tx)
                if let replacedPlain { try tx.removePlainName(replacedPlain) }
                if vanishes {
                    try tx.vanish(asset.id, into: photo.id)
                } else if let restored {
                    try putBack(asset, as: name, by: removal, restored, tx)
                } else {
                    try remove(asset, as: name, by: removal, tx)
                }
            }
            // Handles open on it write on into `photo`: before the kernel is told, so that
            // the photo's size is then the bytes being written.
            if writer.movesWithRename, writers.becameVersion(writer, of: photo.id) {
                let pending = writer.pendingCopy() != nil
                writer.becameVersion(of: photo.id)
                if pending {
                    Log.info("\(name) was renamed over \(photo.name) while being written: the bytes being written go with it, and their close makes \(photo.name)'s next version")
                }
            } else {
                // Handles that cannot go with the name (`photo` has a writer of its own)
                // keep what they had open, when the photo they had open is gone.
                handsKeep(version, writer)
            }
            if let replacedPlain { removePlainBytes(replacedPlain) }
            if vanishes {
                saves.forget(asset.id)
            } else if let restored {
                saves.forget(asset.id)
                if let now = try? library.asset(id: asset.id) { afterChange(asset: now, views: asset) }
                Log.info("saved \(name) over \(photo.name): it is \(photo.name)'s new version; \(restored.name), which its bytes had brought back, is in Recently Deleted again")
            } else {
                Log.info("saved \(asset.name) over \(photo.name): it is \(photo.name)'s new version; \(name) left \(from.displayName)")
                // It lives on elsewhere, maybe dated otherwise now (a sidecar it left).
                if let now = try? library.asset(id: asset.id) { afterChange(asset: now, views: asset) }
            }
            afterLanding(landed, folder: to, entries: entries + [(from.ino, asset.name)])
        }
    }

    /// A photo's entry renamed to a hidden or junk name (`.P.jpg.bak`) becomes a plain
    /// file there, and the photo leaves `from` as `rm` would take it. The plain file
    /// holds the bytes the name showed, and takes the handles writing the photo with it
    /// (`PlainHandover`); with no handle writing, the photo's current version (it shares
    /// the blob). An emptied photo stays emptied wherever it still is, as a truncated
    /// file's other links stay empty (until photo bytes come or its minute ends).
    private func hidePhotoEntry(_ asset: Asset, from: Item, name: String, to: Item, newName: String,
                                replacing replacedPlain: PlainFile?) throws {
        try Rules.createFile(in: Rules.Folder(to), name: newName, folderName: to.displayName)
        let removal = try Rules.remove(from: Rules.Folder(from), name: name, folderName: from.displayName)
        // Inside the writer's `io` (one made for the while if it has none): no close
        // commits those bytes meanwhile, and no open for writing begins.
        let writer = writers.writer(forAsset: asset.id)
        defer { forgetIfIdle(writer) }
        let handedOver: Bool = try writer.io {
            let handover = try prepareHandover(of: writer, photo: asset, to: newName)
            do {
                try library.write { tx in
                    try expectShown(.asset(asset), as: name, in: from, tx)
                    try expectEntry(replacedPlain.map { .plain($0) }, named: newName, in: to, renaming: .asset(asset), tx)
                    if let replacedPlain { try tx.removePlainName(replacedPlain) }
                    try remove(asset, as: name, by: removal, tx)
                    let mode = asset.mode ?? Self.defaultFileMode
                    if let handover {
                        try tx.createPlainFile(named: newName, in: to.ino, mode: mode, id: handover.own, mtimeNs: handover.mtimeNs)
                    } else {
                        try tx.createPlainFile(named: newName, in: to.ino, mode: mode, blob: asset.sha256, mtimeNs: asset.mtimeNanoseconds)
                    }
                }
            } catch {
                if let handover { cancelHandover(handover, of: writer) }
                throw error
            }
            return handover.map { completeHandover($0, of: writer, photo: asset) } ?? false
        }
        if handedOver {
            Log.info("\(name) was renamed to \(newName) while open for writing: what its handles write is that plain file's, and \(asset.name) shows its last version")
        }
        if let replacedPlain { removePlainBytes(replacedPlain) }
        if from.ino == to.ino && Rules.keepsSaves(Rules.Folder(from)) {
            saves.vacated(folder: from.ino, name: name, by: asset.id, renamedTo: newName)
        }
        afterChange(asset: try library.asset(id: asset.id), views: asset, folders: [from.ino, to.ino],
                    entries: [(from.ino, name), (to.ino, newName)])
    }

    /// `file` lost a name (its row's change committed): its own bytes go when that was
    /// its last one (what an open handle still needs stays, `keepAttributesIfOpen`);
    /// with names left, only its link count changed. When the library cannot say, the
    /// bytes stay (a start-up removes bytes that no row names).
    func removePlainBytes(_ file: PlainFile) {
        if file.isLinked {
            let remains: Bool
            do { remains = try library.plainFile(id: file.id) != nil } catch { remains = true }
            if remains {
                invalidate([.attributes(UInt64(file.id))])
                return
            }
        }
        keepAttributesIfOpen(file)
        if file.blobSHA256 == nil { discard(.plainFile(file.id)) }
        writers.get(UInt64(file.id))?.removed()
    }
}
