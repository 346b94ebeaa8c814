import AlbumCore
import Dispatch
import Glibc

extension FileSystem {
    /// The thumbnail of an asset at the mount's size: made now if missing, nil when its
    /// bytes cannot be decoded.
    func thumbnailFile(asset id: Int64) throws -> Thumbnail? {
        guard let asset = try library.asset(id: id) else { return nil }
        return thumbnail(of: asset)
    }

    /// The thumbnail of an asset, made if missing from a blob that is what was stored
    /// (never through a link out of the library).
    func thumbnail(of asset: Asset) -> Thumbnail? {
        let size = options.thumbnailSize
        if let done = thumbnails.cached(sha256: asset.sha256, size: size) { return done }
        // A photo that could not be decoded before is not opened again on every look.
        if thumbnails.failed(sha256: asset.sha256, size: size) { return nil }
        guard let fd = try? library.openBlob(of: asset) else { return nil }
        close(fd)
        return thumbnails.thumbnail(for: asset, blob: library.blobs.path(for: asset.sha256), size: size)
    }

    func thumbnailAttributes(_ asset: Int64, _ file: Thumbnail) -> Attributes {
        fileAttributes(ino: Node.thumbnail(asset: asset).ino, permissions: 0o444, size: file.size,
                       mtimeNs: file.mtimeNs, ctimeNs: file.mtimeNs)
    }

    /// Entries of a `.thumbnails/` folder: `NAME.jpg` for each asset of its folder that
    /// has (or can be given) a thumbnail, in the folder's order and with its cookies.
    /// Missing thumbnails of a page are made in parallel.
    func thumbnailEntries(in folderIno: UInt64, after: Int64, limit: Int) throws -> [DirectoryEntry] {
        guard let folder = Node(ino: folderIno) else { return [] }
        var entries: [(name: String, asset: Asset, cookie: Int64)] = []
        if let view = folder.view {
            entries = try library.assets(in: view, after: after, limit: limit).map { ($0.name, $0, Cookie.asset($0.sortKey)) }
        } else if case .object(let id) = folder {
            entries = try library.members(ofAlbum: id, after: after, limit: limit).map { ($0.0.name, $0.1, Cookie.asset($0.0.sortKey)) }
        }
        let size = options.thumbnailSize
        // Each cached thumbnail is stat'ed once; only the missing ones are made.
        let cached = entries.map { thumbnails.cached(sha256: $0.asset.sha256, size: size) }
        let missing = zip(entries, cached).filter { $0.1 == nil }.map { $0.0.asset }
        let made = Locked<[Int64: Thumbnail]>([:])
        DispatchQueue.concurrentPerform(iterations: missing.count) { i in
            if let file = self.thumbnail(of: missing[i]) {
                made.withLock { $0[missing[i].id] = file }
            }
        }
        return entries.indices.compactMap { i in
            let entry = entries[i]
            guard let file = cached[i] ?? made.withLock({ $0[entry.asset.id] }) else { return nil }
            return DirectoryEntry(name: entry.name + ".jpg", attributes: thumbnailAttributes(entry.asset.id, file),
                                  cookie: entry.cookie)
        }
    }

    /// After an import: the thumbnail is made in the background, so that a file manager
    /// opening the album finds it ready. Made once imports have been quiet for a couple
    /// of seconds (a copy of a whole card is not slowed down by its thumbnails), on
    /// decoders of low priority; at most `prefetchLimit` wait, the rest are made on
    /// first look.
    func prefetchThumbnail(_ asset: Asset) {
        guard thumbnails.cached(sha256: asset.sha256, size: options.thumbnailSize) == nil else { return }
        prefetchQueue.withLock { queue in
            queue.lastImportNs = nowNanoseconds()
            if queue.assets.count < Self.prefetchLimit { queue.assets.append(asset) }
        }
    }

    /// Starts the queued thumbnails once imports have been quiet for `quietSeconds`.
    public func makeQueuedThumbnails(quietSeconds: Double = 2) {
        let now = nowNanoseconds()
        let batch = prefetchQueue.withLock { queue -> [Asset] in
            guard !queue.assets.isEmpty, !queue.running,
                  Double(now - queue.lastImportNs) / 1e9 >= quietSeconds else { return [] }
            queue.running = true
            defer { queue.assets.removeAll() }
            return queue.assets
        }
        guard !batch.isEmpty else { return }
        let cache = backgroundThumbnails, blobs = library.blobs, size = options.thumbnailSize, queue = prefetchQueue
        DispatchQueue.global(qos: .utility).async {
            for asset in batch {
                _ = cache.thumbnail(for: asset, blob: blobs.path(for: asset.sha256), size: size)
            }
            queue.withLock { $0.running = false }
        }
    }

    struct PrefetchQueue {
        var assets: [Asset] = []
        var lastImportNs: Int64 = 0
        var running = false
    }

    static let prefetchLimit = 4096
}
