import AlbumCore
import Glibc

/// Photo bytes arriving under a name in a folder, by a close or by a rename: what they
/// become (PRODUCT.md section 3, "Import rules" and "Saving in place keeps the photo"),
/// decided in this order:
///
/// 1. Over a photo's entry of that name: that photo's next version.
/// 2. Under a name a photo left by a rename in this folder within the minute: that
///    photo's next version; its renamed-away name becomes a plain file with the previous
///    bytes (the save tool's backup).
/// 3. Where the folder does not import (the top of Albums/, a hidden name): a plain file.
/// 4. Bytes the library holds already, as an asset this folder does not show: that asset
///    is added here (a membership, a mark, back from Recently Deleted). As an asset the
///    folder shows already (under another name), or only as hidden assets: a new asset
///    sharing the blob (Photos' Duplicate), so that editing one never changes the other,
///    and a hidden photo is never shown by a copy of its bytes (added here, it would
///    stay hidden and the file just made would vanish from its folder; shown again, a
///    photo its owner hid would show everywhere).
///    (docs/namespace.md, "Bytes the library holds")
/// 5. Else a new asset, with the inode number the file had.
///
/// Saves never dedupe (1 and 2 make a version whatever other asset has these bytes).
enum Destiny {
    case version(of: Asset, vacated: SaveWindow.Vacated?)
    case stayPlain(Rules.Refusal)
    case existing(Asset, ImportDestination)
    case duplicate(of: Asset, ImportDestination)
    case newAsset(ImportDestination)

    /// The asset these bytes go to, or are a copy of.
    var asset: Asset? {
        switch self {
        case .version(let photo, _): return photo
        case .existing(let asset, _), .duplicate(let asset, _): return asset
        case .stayPlain, .newAsset: return nil
        }
    }
}

/// The asset a destiny names left the library before the landing's transaction.
private struct DestinyLeft: Error {
    let asset: Asset
}

/// Photo bytes, hashed and read, whose blob may still have to be placed.
struct PhotoBytes {
    let sha256: String
    let size: Int64
    let metadata: MediaMetadata
    /// When they were last written.
    let writtenNs: Int64
    /// The file they are in, when they are not a blob yet (a plain file's bytes, a copy
    /// in staging).
    let file: HashedFile?
}

/// What a landing did, for the caller's invalidations and clean-up.
struct Landed {
    /// The asset the bytes are now.
    let asset: Asset
    /// The asset before (a new version: the photo as it was).
    let before: Asset?
    /// A save tool's backup made from the previous version.
    let backup: PlainFile?
    /// Whether the bytes made a new asset (a file that became a photo by itself).
    let isNew: Bool
}

extension FileSystem {
    /// What the first bytes of a file closed or renamed to a visible name say it cannot
    /// be, before anything reads all of it: the sniffer's reason (an empty file's too),
    /// or nil when they may begin a photo or a video, which are then hashed and read by
    /// the decoder. A database or an archive kept in an album is closed after every small
    /// change, and hashing all of it at each close cost 0.7 s for 1 GB (docs/namespace.md,
    /// "Plain files"). `name`: the one the sniffer is told (a camera RAW is told from a
    /// TIFF by it); `file`: the file's, for an error.
    func cannotBeMedia(_ fd: FileDescriptor, name: String, file: String) throws -> (why: String, empty: Bool)? {
        let header = try explained("cannot read \(file)") { try fd.read(count: Sniffer.headerLength, at: 0) }
        guard case .unsupported(let why) = Sniffer.sniff(header, name: name) else { return nil }
        return (why, header.isEmpty)
    }

    /// What photo bytes arriving as `name` in `folder` become. `over`: the photo whose
    /// entry has that name; `excluding`: an asset never to dedupe against (the one being
    /// moved); `preferring`: the asset the bytes were copied from, when known (a copy
    /// made by copy_file_range).
    func destiny(of sha256: String, name: String, folder: Item, over: Asset?, excluding: Int64? = nil,
                 preferring: Int64? = nil) throws -> Destiny {
        if let over { return .version(of: over, vacated: nil) }
        let kind = Rules.Folder(folder)
        if Rules.keepsSaves(kind), let vacated = saves.vacatedBy(folder: folder.ino, name: name),
           let photo = try library.read({ try $0.asset(id: vacated.asset) }), !photo.isTrashed, vacated.asset != excluding {
            return .version(of: photo, vacated: vacated)
        }
        let destination: ImportDestination
        switch Rules.importDestination(in: kind, name: name) {
        case .failure(let refusal): return .stayPlain(refusal)
        case .success(let d): destination = d
        }
        let holders = try library.read { try $0.assets(withSHA256: sha256) }.filter { $0.id != excluding }
        guard let existing = holders.first else { return .newAsset(destination) }
        // The assets with these bytes that this folder does not show yet, and are not
        // hidden: the bytes arrive as one of them (no second asset). Several hold them
        // when one is a Duplicate of another: the one copied from, else the one of this
        // name (a copy of a folder that showed both, or its tar), else the first.
        let shown = try holders.filter { asset in try folderShows(folder, asset) }
        let candidates = holders.filter { asset in !asset.hidden && !shown.contains { $0.id == asset.id } }
        let key = Names.key(name)
        let named = { (asset: Asset) throws -> Bool in
            if Names.key(asset.name) == key || Names.key(asset.originalName) == key { return true }
            return try self.library.read { try $0.memberships(ofAsset: asset.id) }.contains { Names.key($0.name) == key }
        }
        if let chosen = try candidates.first(where: { $0.id == preferring }) ?? candidates.first(where: named) {
            return .existing(chosen, destination)
        }
        // A photo copied where it shows is a Duplicate, as Photos makes one; else the
        // bytes are the first photo that holds them.
        if let shown = shown.first { return .duplicate(of: shown, destination) }
        if let first = candidates.first { return .existing(first, destination) }
        return .duplicate(of: existing, destination)
    }

    /// Whether a folder shows an asset now.
    func folderShows(_ folder: Item, _ asset: Asset) throws -> Bool {
        switch folder {
        case .album(let album):
            guard !asset.isTrashed && !asset.hidden else { return false }
            return try library.read { try $0.memberships(ofAsset: asset.id) }.contains { $0.albumID == album.id }
        default:
            return folder.view?.contains(asset) ?? false
        }
    }

    /// Carries out a destiny in one transaction, after the blob is placed (when the
    /// bytes are not one yet). `clear`: what must go first, in the same transaction (the
    /// plain file that held the bytes, a temporary photo that vanishes, the entry that
    /// moves). The arriving file's inode number is `fileID`: a new asset takes it, an
    /// existing one is known by it from now on.
    /// `placed`: the bytes were placed as their blob already (`BlobStore.placeEarly`,
    /// synced by the caller); this landing owns that placement from here, and takes it
    /// back if its transaction fails.
    /// `inFlight`: the caller marked these bytes as being placed (`BlobsInFlight`).
    /// `mode`: the arriving file's, when not the default; a new version takes it only as
    /// `modeASaveGives` says.
    /// `decide`: how the destiny was decided, to decide it again when the asset it names
    /// left the library between the decision and the landing's transaction (another
    /// process removed the photo these bytes were to join or copy); without it, the
    /// landing fails then.
    func land(_ bytes: PhotoBytes, as name: String, in folder: Item, destiny decided: Destiny, fileID: Int64,
              explicitMtimeNs: Int64?, mode: UInt32?, placed: BlobStore.Placement? = nil, inFlight: Bool = false,
              decide: (() throws -> Destiny)? = nil, clear: (Transaction) throws -> Void) throws -> Landed {
        var destiny = decided
        var placement = placed
        if placed == nil, let file = bytes.file {
            // A close placing these same bytes now has linked them without a row yet:
            // wait until it has landed or taken them back, then look.
            if !inFlight { blobsInFlight.waitWhilePlaced(bytes.sha256) }
            placement = try explained("cannot store \(name)") { try library.placeBlob(file) }
        }
        /// What the photo's writing handles take with the backup name of a save through
        /// the name it left (prepared by `withBackupHandles`).
        var handover: PlainHandover?
        /// The destiny carried out, in the landing's transaction.
        func carry(_ destiny: Destiny, _ tx: Transaction) throws -> Landed {
            switch destiny {
            case .stayPlain:
                preconditionFailure("a plain file does not land")
            case .version(let photo, let vacated):
                let before = try tx.asset(id: photo.id) ?? photo
                let backup = try saveVersion(tx, of: before, bytes: bytes, explicitMtimeNs: explicitMtimeNs,
                                             vacated: vacated, handover: handover, folder: folder, name: name)
                if let given = modeASaveGives(mode), given != (before.mode ?? Self.defaultFileMode) {
                    try tx.setMode(photo.id, given)
                }
                if fileID != photo.id {
                    // The arriving file's number now stands for the photo, and its
                    // attributes go to it; but a photo renamed over this one that lives
                    // on (in other folders, in Recently Deleted) keeps both.
                    if try tx.asset(id: fileID) == nil {
                        try tx.addAlias(ino: fileID, asset: photo.id)
                    } else {
                        try tx.copyAttributes(of: fileID, to: photo.id)
                    }
                }
                return Landed(asset: try tx.asset(id: photo.id)!, before: before, backup: backup, isNew: false)
            case .existing(let asset, let destination):
                _ = try tx.addExisting(asset.id, destination: destination)
                // A photo back from Recently Deleted where views list photos by their
                // own names (All Photos) takes the name it was copied back under, so
                // that the file is where it was made; unless another photo has it.
                if asset.isTrashed, destination.album == nil, Names.key(asset.name) != Names.key(name),
                   try tx.assetNameFree(Names.key(name), for: asset.id) {
                    try tx.renameAsset(asset.id, to: name)
                }
                if let explicitMtimeNs { try tx.setMtime(asset.id, nanoseconds: explicitMtimeNs) }
                try tx.addAlias(ino: fileID, asset: asset.id, keepsItsNumber: true)
                return Landed(asset: try tx.asset(id: asset.id)!, before: asset, backup: nil, isNew: false)
            case .duplicate(let source, let destination):
                let (asset, _) = try tx.duplicate(source, id: fileID, name: name, destination: destination,
                                                  explicitMtimeNs: explicitMtimeNs, mode: mode)
                return Landed(asset: asset, before: nil, backup: nil, isNew: true)
            case .newAsset(let destination):
                let new = NewAsset(id: fileID, sha256: bytes.sha256, size: bytes.size, metadata: bytes.metadata,
                                   originalName: name, fileMtimeNs: bytes.writtenNs, explicitMtimeNs: explicitMtimeNs,
                                   mode: mode)
                let (asset, _) = try tx.insertAsset(new, destination: destination)
                return Landed(asset: asset, before: nil, backup: nil, isNew: true)
            }
        }
        /// The landing's transaction.
        func carryOut(_ tx: Transaction) throws -> Landed {
            if placed?.created == true { try tx.adoptPlacedBlob(bytes.sha256, size: bytes.size) }
            // Found in place, or placed by another host a moment before this one's link
            // (a placement that did not create the file): that host may take it back.
            if placement?.created != true, bytes.file != nil { try tx.expectBlobInPlace(bytes.sha256) }
            // Marks a copy that keeps attributes set on the file while it was a plain
            // file (taken first: the landing would hand its attributes on as they are).
            let marks = try tx.plainFile(id: fileID) != nil ? try tx.takeMarks(writtenOn: fileID) : []
            try clear(tx)
            let carried = try carry(destiny, tx)
            guard !marks.isEmpty else { return carried }
            try tx.applyMarks(marks, to: carried.asset.id)
            return Landed(asset: try tx.asset(id: carried.asset.id) ?? carried.asset, before: carried.before,
                          backup: carried.backup, isNew: carried.isNew)
        }
        var landed: Landed?
        // A new version's opens for reading may meet it from its commit until the kernel
        // has dropped the photo's attributes (`OpensAcrossSaves`).
        var saving = inodesASaveChanges(destiny)
        var save = opensAcrossSaves.begin(saving)
        defer { opensAcrossSaves.end(saving, begun: save) }
        do {
            for attempt in 1...3 where landed == nil {
                do {
                    landed = try withBackupHandles(destiny, prepared: { handover = $0 }) {
                        try library.write { tx -> Landed in
                            if decide != nil, let asset = destiny.asset, try tx.asset(id: asset.id) == nil {
                                throw DestinyLeft(asset: asset)
                            }
                            return try carryOut(tx)
                        }
                    }
                } catch let left as DestinyLeft {
                    guard attempt < 3, let decide else { throw LibraryError.notFound("asset \(left.asset.id) (\(left.asset.name))") }
                    destiny = try decide()
                    if case .stayPlain(let refusal) = destiny { throw FSError(EAGAIN, refusal.reason) }
                    opensAcrossSaves.end(saving, begun: save)
                    saving = inodesASaveChanges(destiny)
                    save = opensAcrossSaves.begin(saving)
                }
            }
        } catch {
            if let placement { library.takeBack(placement) }
            throw error
        }
        guard let landed else { throw LibraryError.corrupt("a landing ended without landing") }
        if let before = landed.before, before.sha256 != landed.asset.sha256 {
            // At once, before the photo's readers are told anything else: its next opens
            // start without the old pages, and on a kernel inode that no reader of the
            // old bytes holds, whose size the kernel asks again.
            contentChanged(landed.asset)
            // The photo, its thumbnail and its shared thumbnails (`inodesASaveChanges`).
            let changed = Set(saving + [UInt64(landed.asset.id), Node.thumbnail(asset: landed.asset.id).ino]).sorted()
            for ino in changed { movePastReaders(ino) }
            invalidate(changed.map { .attributes($0) })
        }
        if let file = bytes.file, placement?.created == true { library.blobs.seal(bytes.sha256, descriptor: file.descriptor) }
        if case .version(_, let vacated?) = destiny { saves.settle(folder: folder.ino, name: vacated.name) }
        if landed.isNew, Rules.keepsSaves(Rules.Folder(folder)) {
            saves.madeByClose(landed.asset.id, in: folder.ino, writtenNs: bytes.writtenNs)
        }
        if case .existing(let asset, _) = destiny {
            // Not made by this close, whatever made it moments ago (a copy since deleted).
            saves.forget(asset.id)
            if let trashedAt = asset.trashedAt, Rules.keepsSaves(Rules.Folder(folder)) {
                saves.restoredByClose(asset.id, in: folder.ino, sha256: asset.sha256, name: asset.name, trashedAt: trashedAt)
            } else if Rules.keepsSaves(Rules.Folder(folder)) {
                saves.joinedByClose(asset.id, in: folder.ino)
            }
        }
        // The photo got bytes by another way than its own writer's close. Its own bytes
        // copied in elsewhere: shown empty for a minute (truncated and closed, a save in
        // between), it shows them again, so that the copy shows what it was made from;
        // not while a handle is open on it, whose next write goes on with the save. Its
        // next version renamed over it (or closed under the name it left): that version
        // wins over bytes other handles were still writing into it.
        switch destiny {
        case .existing(let photo, _):
            endEmptied(ofAsset: photo.id, because: "\(name) brought its bytes")
        case .version(let photo, _):
            supersedePendingBytes(ofAsset: photo.id, replacing: landed.before, with: landed.asset, by: name)
        default:
            break
        }
        return landed
    }

    /// A save through the name a photo left (`destiny` a version with `vacated`): `land`
    /// runs inside the `io` of the photo's writer, if it has one, with what its writing
    /// handles take with the backup name prepared (`prepared`), and hands them to the
    /// backup once it is made. As on a disk, where `mv P.jpg P.jpg~` moves the file its
    /// handles write into: what they write goes to the backup, neither into the new
    /// version nor nowhere. Any other landing runs as it is.
    private func withBackupHandles(_ destiny: Destiny, prepared: (PlainHandover?) -> Void,
                                   _ land: () throws -> Landed) throws -> Landed {
        guard case .version(let decided, let vacated?) = destiny, let writer = writers.get(UInt64(decided.id)) else {
            prepared(nil)
            return try land()
        }
        return try writer.io {
            // The photo as it is now, under its writer's lock (its version for a copy).
            let photo = (try? library.asset(id: decided.id)) ?? decided
            let handover = try prepareHandover(of: writer, photo: photo, to: vacated.renamedTo)
            prepared(handover)
            let landed: Landed
            do {
                landed = try land()
            } catch {
                if let handover { cancelHandover(handover, of: writer) }
                throw error
            }
            guard let handover else { return landed }
            guard let backup = landed.backup, backup.id == handover.own else {
                // The tool removed its backup name before the save: the handles' file has
                // no name left (their bytes are superseded, `supersedePendingBytes`).
                cancelHandover(handover, of: writer)
                return landed
            }
            if completeHandover(handover, of: writer, photo: photo) {
                Log.info("\(photo.name) got its next version under the name it left: its open handles write on into its backup \(backup.name)")
            }
            return landed
        }
    }

    /// The files whose bytes a landing of `destiny` changes: the photo, its thumbnail and
    /// its shared thumbnails (which carry its mtime).
    func inodesASaveChanges(_ destiny: Destiny) -> [UInt64] {
        guard case .version(let photo, _) = destiny else { return [] }
        let entries = (try? library.read { try $0.memberships(ofAsset: photo.id) }) ?? []
        return [UInt64(photo.id), Node.thumbnail(asset: photo.id).ino] + Self.sharedThumbnailInodes(of: photo.id, entries: entries)
    }

    /// A photo's next version, in the caller's transaction. With `vacated` (the photo
    /// left `vacated.name` for `vacated.renamedTo` moments ago, and the new bytes arrive
    /// under the name it left): the photo takes its name back, and the renamed-away name
    /// becomes a plain file holding the previous version's bytes (the tool's backup:
    /// visible, deletable, sharing the old blob), or, with `handover`, the bytes the
    /// photo's writing handles take with that name (`PlainHandover`). Returns that backup.
    func saveVersion(_ tx: Transaction, of photo: Asset, bytes: PhotoBytes, explicitMtimeNs: Int64?,
                     vacated: SaveWindow.Vacated?, handover: PlainHandover?, folder: Item, name: String) throws -> PlainFile? {
        // The same bytes again (cp of the photo over itself) change nothing, unless the tool
        // set an mtime (cp -p).
        if photo.sha256 != bytes.sha256 || explicitMtimeNs != nil {
            try tx.addVersion(of: photo.id, sha256: bytes.sha256, size: bytes.size, metadata: bytes.metadata,
                              mtimeNs: explicitMtimeNs ?? bytes.writtenNs)
            // An mtime the tool set (cp -p, rsync -t) dates a photo whose bytes carry no
            // date, as it does at an import.
            if let explicitMtimeNs, bytes.metadata.capture == nil { try tx.setMtime(photo.id, nanoseconds: explicitMtimeNs) }
        }
        guard let vacated else { return nil }
        var backupLeft = false
        switch folder {
        case .album(let album):
            if let entry = try tx.membership(named: vacated.renamedTo, inAlbum: album.id), entry.assetID == photo.id {
                try tx.moveMembership(from: album.id, name: vacated.renamedTo, to: album.id, name: name)
                backupLeft = true
            } else if try tx.membership(named: name, inAlbum: album.id) == nil {
                // The tool removed its backup before writing: the photo comes back anyway.
                try tx.addMembership(album: album.id, asset: photo.id, name: name)
            }
        case .allPhotos:
            if Names.key(photo.name) == Names.key(vacated.renamedTo), try tx.assetNameFree(Names.key(name), for: photo.id) {
                try tx.renameAsset(photo.id, to: name)
                backupLeft = true
            }
        case .smart(.favorites), .smart(.hidden):
            // As in All Photos: renamed to a visible backup name (`P.jpg_original`), the
            // photo takes its name back and the backup stays a plain file; renamed to a
            // hidden one, it left the view (unmarked) and that name is a plain file
            // already: it comes back marked.
            if case .smart(.favorites) = folder, !photo.favorite { try tx.setFavorite(photo.id, true) }
            if case .smart(.hidden) = folder, !photo.hidden { try tx.setHidden(photo.id, true) }
            if Names.key(photo.name) != Names.key(name), try tx.assetNameFree(Names.key(name), for: photo.id) {
                backupLeft = Names.key(photo.name) == Names.key(vacated.renamedTo)
                try tx.renameAsset(photo.id, to: name)
            }
        default:
            break
        }
        guard backupLeft else { return nil }
        let mode = photo.mode ?? Self.defaultFileMode
        if let handover {
            return try tx.createPlainFile(named: vacated.renamedTo, in: folder.ino, mode: mode, id: handover.own, mtimeNs: handover.mtimeNs)
        }
        return try tx.createPlainFile(named: vacated.renamedTo, in: folder.ino, mode: mode, blob: photo.sha256, mtimeNs: photo.mtimeNanoseconds)
    }

    /// The invalidations of a landing: the photo everywhere it shows (as it was and is),
    /// the names the caller knows changed, and the backup's name. (A new version's own
    /// kernel inode was dealt with by `land`, at its commit.)
    func afterLanding(_ landed: Landed, folder: Item, entries: [(UInt64, String)]) {
        var names = entries
        if let backup = landed.backup {
            names.append((backup.dirIno, backup.name))
            // The backup's name led to the photo (a tool reads its backup before it
            // writes the next version): the kernel's entry of it, standing for the photo,
            // is stale before the reply, so that a change of the backup right after never
            // reaches the photo (12 of 40 rounds of `mv P P~; cat P~; mv .t P; chmod P~`
            // changed the photo's mode). The name's own invalidation comes after the reply.
            invalidate([.allNames])
        }
        afterChange(asset: landed.asset, views: landed.before, folders: [folder.ino], entries: names)
        if landed.before?.sha256 != landed.asset.sha256 { prefetchThumbnail(landed.asset) }
    }
}
