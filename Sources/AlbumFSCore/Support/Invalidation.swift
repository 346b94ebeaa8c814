import AlbumCore

extension FileSystem {
    /// After a change: the library's time moves on, and the kernel forgets what the
    /// change touched. Listings and attributes are dropped before the reply (the kernel
    /// holds no lock that dropping them needs), so that a program that lists or stats
    /// right after its own change sees it; names are dropped just after the reply (see
    /// the bridge's `Bridge.enqueue`). A file whose bytes changed is opened without the
    /// kernel's cached pages next time (`contentChanged`).
    ///
    /// - `asset`: the asset as it is now; the listings of every view that shows it, of
    ///   its albums and of the `.thumbnails/` beside them are dropped (a name that
    ///   appears needs no more: the kernel keeps no negative entries of this mount).
    /// - `before`: the asset as it was, when names or places went away (renamed,
    ///   trashed, unmarked, moved to another day): its old names are dropped too.
    /// - `folders`, `entries`: listings and names the caller knows changed.
    func afterChange(asset: Asset? = nil, views before: Asset? = nil, folders: [UInt64] = [],
                     entries: [(UInt64, String)] = []) {
        touch()
        let touched = touchedBy(asset: asset, views: before, folders: folders, entries: entries)
        invalidate(folders: touched.folders, files: touched.files, names: touched.names)
    }

    /// The names of `asset` everywhere it shows, dropped without a change: its kernel
    /// inode moved (`openElsewhere`, `moveAway`), so lookups must reach the daemon again,
    /// while its listings and attributes, and the library's time, stay as they are. Those
    /// names are dropped after the reply; every cached name is made stale before it
    /// (`Invalidation.allNames`, as `movePastReaders` does), so that a `stat` or a change
    /// by path right after reaches the new kernel inode.
    func forgetNames(of asset: Asset) {
        invalidate([.allNames])
        invalidate(folders: [], files: [], names: touchedBy(views: asset).names)
    }

    /// What a change of `asset` (see `afterChange`) touches: listings, attributes, names.
    private func touchedBy(asset: Asset? = nil, views before: Asset? = nil, folders: [UInt64] = [],
                           entries: [(UInt64, String)] = []) -> (folders: Set<UInt64>, files: Set<UInt64>, names: [(UInt64, String)]) {
        var inodes = Set(folders)
        var files = Set<UInt64>()
        var names = entries
        let now = nowSeconds()
        // Each asset's album entries, read once (a read transaction each: this runs
        // after every change of a photo).
        var entriesOf: [Int64: [Membership]] = [:]
        func memberships(of id: Int64) -> [Membership] {
            if let known = entriesOf[id] { return known }
            let read = (try? library.read({ try $0.memberships(ofAsset: id) })) ?? []
            entriesOf[id] = read
            return read
        }
        func collect(_ a: Asset, withNames: Bool) {
            files.insert(UInt64(a.id))
            files.insert(Node.thumbnail(asset: a.id).ino)
            var views: [Node] = [.allPhotos, .day(a.takenDay)] + SmartAlbum.allCases.map { .smart($0) }
            // Only the views that show it (as it was, or is).
            views = views.filter { view in view.view.map { $0.contains(a, now: now) } ?? true }
            let year = a.takenDay / 10000, month = a.takenDay / 100
            for (folder, child) in [(Node.byDate, DateNames.year(year)), (.year(year), DateNames.month(month)),
                                    (.month(month), DateNames.day(a.takenDay))] {
                inodes.insert(folder.ino)
                if withNames { names.append((folder.ino, child)) }
            }
            if withNames {
                // Its sidecars, beside it or gone to Recently Deleted with it.
                let sidecars = (try? library.read { r in
                    try r.sidecars(of: a).map { ($0.dirIno, $0.name) } + r.trashedSidecars(of: a.id).map { ($0.dirIno, $0.name) }
                }) ?? []
                names += sidecars
                inodes.formUnion(sidecars.map(\.0))
            }
            for membership in memberships(of: a.id) {
                views.append(.object(membership.albumID))
                if withNames { names.append((UInt64(membership.albumID), membership.name)) }
            }
            for view in views {
                inodes.insert(view.ino)
                if withNames { names.append((view.ino, a.name)) }
            }
        }
        if let asset { collect(asset, withNames: false) }
        if let before { collect(before, withNames: true) }
        // A shared thumbnail carries the photo's mtime: its attributes change with it.
        for a in [asset, before].compactMap({ $0 }) {
            files.formUnion(Self.sharedThumbnailInodes(of: a.id, entries: memberships(of: a.id)))
        }
        return (inodes, files, names)
    }

    /// Sends the invalidations of changed folders, files and names, with the thumbnail
    /// folders beside every folder that lists assets: `.thumbnails/` and the shared
    /// repository's (whose names are hashes of the entries' names).
    func invalidate(folders: Set<UInt64>, files: Set<UInt64>, names: [(UInt64, String)]) {
        var inodes = folders
        var names = names
        for (folder, name) in names where Node(ino: folder)?.listsAssets == true {
            names.append((Node.thumbnails(of: folder).ino, name + ".jpg"))
            let shared = Self.sharedName(name)  // a hash: one for both sizes
            for size in Self.sharedSizes {
                names.append((Node.sharedSize(of: folder, large: size.large).ino, shared))
            }
        }
        for folder in inodes {
            switch Node(ino: folder) {
            case let node? where node.listsAssets:
                inodes.insert(Node.thumbnails(of: folder).ino)
                for size in Self.sharedSizes { inodes.insert(Node.sharedSize(of: folder, large: size.large).ino) }
            case .thumbnails(let owner)?:
                // An album lists its .thumbnails/ while files copied in are there.
                inodes.insert(owner)
            default: break
            }
        }
        // A name is often there twice (the caller's, and the same entry found as the
        // asset's): each is sent once.
        var sent = Set<String>()
        let unique = names.filter { sent.insert("\($0.0)/\($0.1)").inserted }
        invalidate(inodes.sorted().map { .listing($0) } + files.sorted().map { .attributes($0) }
                   + unique.map { .entry(parent: $0.0, name: $0.1) })
    }

    /// A file's bytes changed (a new version): its next open starts without the pages
    /// the kernel kept of the old ones.
    func contentChanged(_ asset: Asset) { contentChanged(asset: asset.id) }

    func contentChanged(asset id: Int64) {
        contentChanges.withLock { changed in
            changed.insert(UInt64(id))
            changed.insert(Node.thumbnail(asset: id).ino)
        }
        thumbnailsFound.forgetAll()
    }

    /// Whether the kernel may keep its cached pages of `ino` at this open (false once
    /// after its bytes changed).
    func mayKeepCache(_ ino: UInt64) -> Bool {
        contentChanges.withLock { $0.remove(ino) == nil }
    }

    /// Invalidations of folders and names only.
    func afterChange(folders: [UInt64], entries: [(UInt64, String)] = []) {
        afterChange(asset: nil, views: nil, folders: folders, entries: entries)
    }
}
