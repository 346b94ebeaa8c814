import AlbumCore
import Dispatch
import Glibc

/// `.thumbnails/` folders. Listing one never waits for a decoder: made thumbnails are
/// listed with their attributes, the others by name only (and made in the background).
/// A stat or an open of one thumbnail may wait for that one; the bridge answers such
/// requests off its FUSE worker threads (`mayWaitForThumbnail`), so that slow decoders
/// never hold them.
extension FileSystem {
    /// The thumbnail of an asset at the mount's size, made now if it is missing (this
    /// request waits for it); nil when its bytes cannot be decoded.
    func thumbnailWaitingIfNeeded(of asset: Asset) throws -> Thumbnail? {
        thumbnails.thumbnail(for: asset, size: options.thumbnailSize)
    }

    /// `use` of the thumbnail of an asset at `size`, made now if it is missing (this
    /// request waits for it); nil when its bytes cannot be decoded. A file deleted since
    /// it was last found (someone emptied `thumbnails/`, as they may at any time) is made
    /// again, once: `use` finding it gone (ENOENT) is tried again with the new one.
    func withThumbnail<T>(of asset: Asset, size: Int, _ use: (Thumbnail) throws -> T) throws -> T? {
        var again = false
        while true {
            guard let thumbnail = thumbnails.thumbnail(for: asset, size: size) else { return nil }
            do {
                return try use(thumbnail)
            } catch let error as LibraryError where error.errno == ENOENT && !again {
                thumbnails.missing(sha256: asset.sha256, size: size)
                again = true
            }
        }
    }

    /// A thumbnail that could not be had: ENOENT when its bytes cannot be decoded (it
    /// is not listed either), EIO when the decoder failed for now (it is tried again at
    /// the next look). ENOENT then would tell an NFS server that a handle it holds is
    /// stale for good.
    func thumbnailMissing(of asset: Asset, _ what: String, size: Int? = nil) -> FSError {
        if thumbnails.failed(sha256: asset.sha256, size: size ?? options.thumbnailSize) { return FSError.noEntry(what) }
        return FSError(EIO, "\(what) could not be made now (the decoder failed; see the log); it is tried again at the next look", logged: false)
    }

    /// Whether a request may wait for a thumbnail to be made: a stat or an open of
    /// `ino`, or (`name` given) a lookup of `name` in folder `ino`. The bridge runs those
    /// off its FUSE worker threads, so that any number of them wait while every other
    /// request is answered. Only a request about a thumbnail not yet made (nor known to
    /// fail) may wait: one about a made thumbnail, a file copied in or a thumbnail
    /// folder itself is answered in place, never in line behind the ones that wait.
    public func mayWaitForThumbnail(_ ino: UInt64, name asked: [UInt8]? = nil) -> Bool {
        // A lookup of "." is an NFS server finding a handle's node: a stat of that node.
        let name = asked == [0x2E] ? nil : asked
        switch ino & Node.tagMask {
        case Node.thumbnailTag, Node.sharedThumbnailTag:
            guard name == nil else { return false }  // not a folder: ENOTDIR at once
            // Found made before, its photo unchanged since: no read of the photo's row.
            if let found = thumbnailsFound.get(ino), thumbnails.cached(sha256: found.sha256, size: found.size) != nil {
                return false
            }
        case Node.thumbnailsDirTag, Node.sharedSizeTag:
            guard name != nil else { return false }  // the folder itself
        default:
            return false
        }
        do {
            let mark = thumbnailsFound.mark()
            let item: Item?
            if let name {
                let folder = try library.read { try self.folder(ino, in: $0) }
                item = try lookupEntry(in: folder, name: try validName(name))
            } else {
                item = try library.read { try self.item(ino, in: $0) }
            }
            let asset: Asset, size: Int
            switch item {
            case .thumbnail(let a)?: (asset, size) = (a, options.thumbnailSize)
            case .sharedThumbnail(let entry)?: (asset, size) = (entry.asset, sharedSourceSize(large: entry.large))
            default: return false
            }
            if thumbnails.cached(sha256: asset.sha256, size: size) != nil {
                if name == nil { thumbnailsFound.found(ino, sha256: asset.sha256, size: size, since: mark) }
                return false
            }
            return !thumbnails.failed(sha256: asset.sha256, size: size)
        } catch {
            return false  // the request itself says what is wrong, at once
        }
    }

    func thumbnailAttributes(_ asset: Asset, _ file: Thumbnail) -> Attributes {
        fileAttributes(ino: Node.thumbnail(asset: asset.id).ino, permissions: thumbnailPermissions(of: asset), size: file.size,
                       mtimeNs: file.mtimeNs, ctimeNs: file.mtimeNs)
    }

    /// A thumbnail is read-only, and readable by whom the photo is: a photo made private
    /// (`chmod 600`) shows no one else its picture at a smaller size either.
    func thumbnailPermissions(of asset: Asset) -> UInt32 {
        0o444 & (asset.mode ?? Self.defaultFileMode)
    }

    /// Entries of a `.thumbnails/` folder: `NAME.jpg` for each asset of its folder, in
    /// the folder's order and with its cookies. Made thumbnails come with attributes,
    /// missing ones by name (and are queued to be made); ones that cannot be made, ones
    /// removed, and ones whose name a file copied in took are left out; none while files
    /// copied in are there, unless the mount lists thumbnails.
    func thumbnailEntries(in folderIno: UInt64, after: Int64, limit: Int, _ r: any LibraryRecords) throws -> [DirectoryEntry] {
        guard let folder = try item(folderIno, in: r) else { return [] }
        var entries: [(name: String, asset: Asset, cookie: Int64)] = []
        if let view = folder.view {
            entries = try r.assets(in: view, after: after, limit: limit).map { ($0.name, $0, Cookie.asset($0.sortKey)) }
        } else if case .album(let album) = folder {
            entries = try r.members(ofAlbum: album.id, after: after, limit: limit, trashed: album.role == .trashFiles).map { ($0.0.name, $0.1, Cookie.asset($0.0.sortKey)) }
        }
        let size = options.thumbnailSize
        // A file copied in under a thumbnail's name is listed instead of it (`occupant`).
        let thumbnailsIno = Node.thumbnails(of: folderIno).ino
        let copiedIn = folder.view == nil ? Set(try r.plainFiles(in: thumbnailsIno).map { Names.key($0.name) }) : []
        // A .thumbnails/ that holds files copied in lists those only (they come before
        // these entries), so that the tree copies out as it came in; the thumbnails made
        // there are still found by name. A mount that lists thumbnails lists both.
        if !copiedIn.isEmpty && !options.listThumbnails { return [] }
        let someRemoved = removedThumbnails.anyRemoved(in: thumbnailsIno)
        var out: [DirectoryEntry] = []
        for entry in entries {
            let name = entry.name + ".jpg"
            if !copiedIn.isEmpty && copiedIn.contains(Names.key(name)) { continue }
            if someRemoved && removedThumbnails.isRemoved(name, in: thumbnailsIno) { continue }
            if let made = thumbnails.cached(sha256: entry.asset.sha256, size: size) {
                out.append(DirectoryEntry(name: name, attributes: thumbnailAttributes(entry.asset, made), cookie: entry.cookie))
            } else if !thumbnails.failed(sha256: entry.asset.sha256, size: size) {
                out.append(DirectoryEntry(name: name, ino: Node.thumbnail(asset: entry.asset.id).ino, cookie: entry.cookie))
                prefetchThumbnail(entry.asset, urgent: true)
            }
        }
        return out
    }

    /// Queues a thumbnail to be made in the background, so that a file manager finds it
    /// ready. After an import it waits until imports have been quiet for a couple of
    /// seconds (a copy of a whole card is not slowed down by its thumbnails); one that a
    /// listing showed missing (`urgent`) goes first. At most `prefetchLimit` wait; the
    /// rest are made on first look.
    func prefetchThumbnail(_ asset: Asset, urgent: Bool = false) {
        guard thumbnails.cached(sha256: asset.sha256, size: options.thumbnailSize) == nil else { return }
        prefetch.withLock { queue in
            if !urgent { queue.lastImportNs = nowNanoseconds() }
            guard queue.assets.count < Self.prefetchLimit, queue.queued.insert(asset.sha256).inserted else { return }
            if urgent { queue.urgent.append(asset) } else { queue.assets.append(asset) }
        }
        if urgent { makeQueuedThumbnails(now: nowNanoseconds()) }
    }

    /// Starts the queued thumbnails: the urgent ones at once, the others once imports
    /// have been quiet for `quietSeconds`.
    ///
    /// Urgent ones (a listing showed them missing: someone is looking at that folder now)
    /// are made on every core, in listing order, by the same cache that serves opens, so
    /// that a viewer opening them one by one joins the making of each instead of making
    /// it a second time. The others are made one at a time on the low-priority worker.
    func makeQueuedThumbnails(now: Int64, quietSeconds: Double = 2) {
        if stopped.withLock({ $0 }) { return }
        let (urgent, later) = prefetch.withLock { queue -> ([Asset], [Asset]) in
            guard !queue.running else { return ([], []) }
            let urgent = queue.urgent
            queue.urgent.removeAll()
            var later: [Asset] = []
            if Double(now - queue.lastImportNs) / 1e9 >= quietSeconds {
                later = queue.assets
                queue.assets.removeAll()
            }
            if !urgent.isEmpty || !later.isEmpty { queue.running = true }
            return (urgent, later)
        }
        guard !urgent.isEmpty || !later.isEmpty else { return }
        let lanes = min(urgent.count, decoder.lanes)
        backgroundWork.enter()
        // The block holds nothing that holds the library: the core it reaches through
        // `self` is let go when `make` returns, before `stop()` hears the work ended.
        // (A core let go after, on this thread, closed the library's last SQLite
        // connection there, which removed its `-shm` while a test removed the folder.)
        DispatchQueue.global(qos: .utility).async { [weak self, backgroundWork] in
            self?.make(urgent: urgent, lanes: lanes, later: later, quietSeconds: quietSeconds)
            backgroundWork.leave()
        }
    }

    /// The work `makeQueuedThumbnails` started: `urgent` on `lanes` lanes of the
    /// foreground decoders, then `later` on the background one.
    private func make(urgent: [Asset], lanes: Int, later: [Asset], quietSeconds: Double) {
        let size = options.thumbnailSize
        @Sendable func make(_ asset: Asset, with cache: ThumbnailCache) {
            if stopped.withLock({ $0 }) { return }
            if cache.thumbnail(for: asset, size: size) != nil { thumbnailMade(asset) }
            prefetch.withLock { _ = $0.queued.remove(asset.sha256) }
        }
        let next = Locked(0)
        DispatchQueue.concurrentPerform(iterations: lanes) { _ in
            while let index = next.withLock({ i -> Int? in
                guard i < urgent.count else { return nil }
                defer { i += 1 }
                return i
            }) {
                make(urgent[index], with: thumbnails)
            }
        }
        for asset in later { make(asset, with: backgroundThumbnails) }
        prefetch.withLock { $0.running = false }
        // More may have been queued meanwhile.
        makeQueuedThumbnails(now: nowNanoseconds(), quietSeconds: quietSeconds)
    }

    /// A thumbnail made in the background: the `.thumbnails/` listings that showed it by
    /// name only are dropped, so that the next listing has its attributes.
    private func thumbnailMade(_ asset: Asset) {
        var folders: [UInt64] = [Node.thumbnails(of: FixedInode.allPhotos).ino, Node.thumbnails(of: Node.day(asset.takenDay).ino).ino]
        for membership in (try? library.read({ try $0.memberships(ofAsset: asset.id) })) ?? [] {
            folders.append(Node.thumbnails(of: UInt64(membership.albumID)).ino)
        }
        invalidate(folders.map { .listing($0) } + [.attributes(Node.thumbnail(asset: asset.id).ino)])
    }

    struct PrefetchQueue {
        var assets: [Asset] = []
        var urgent: [Asset] = []
        var queued: Set<String> = []
        var lastImportNs: Int64 = 0
        var running = false
    }

    static let prefetchLimit = 4096
}

/// Thumbnails a stat or an open found made, by thumbnail inode, with their photo's hash
/// then, valid until the library next changes: the next stat or open of one is answered
/// without reading the photo's row (a viewer opening a folder's thumbnails again paid
/// for that read on every one, twice: to learn whether the request may wait,
/// `mayWaitForThumbnail`, and in the open). Forgotten, all of them, at every change of
/// the library (`FileSystem.touch`, which every change made here or by another host
/// goes through, trashing and deleting a photo included) and of a photo's bytes
/// (`contentChanged`); a row read before a change is not kept after it (`mark`).
final class ThumbnailsFound: Sendable {
    private struct State {
        var found: [UInt64: (sha256: String, size: Int)] = [:]
        /// Times they were all forgotten.
        var forgotten: UInt64 = 0
    }

    private let state = Locked(State())
    /// Beyond this many, they are all forgotten: a stat costs one read again.
    static let limit = 65_536

    func get(_ ino: UInt64) -> (sha256: String, size: Int)? { state.withLock { $0.found[ino] } }

    /// Taken before the photo's row is read, for `found`.
    func mark() -> UInt64 { state.withLock { $0.forgotten } }

    /// Thumbnail `ino` of the photo whose hash a row read after `mark` said is made.
    func found(_ ino: UInt64, sha256: String, size: Int, since mark: UInt64) {
        state.withLock { s in
            guard s.forgotten == mark else { return }
            if s.found.count >= Self.limit { s.found.removeAll() }
            s.found[ino] = (sha256, size)
        }
    }

    func forgetAll() {
        state.withLock { s in
            s.forgotten &+= 1
            s.found.removeAll()
        }
    }
}
