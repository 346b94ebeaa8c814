import AlbumCore

extension FileSystem {
    /// After a change: the library's time moves on, and the kernel forgets what the
    /// change touched.
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
        var inodes = Set(folders)
        var names = entries
        let now = nowSeconds()
        func collect(_ a: Asset, withNames: Bool) {
            inodes.insert(UInt64(a.id))
            inodes.insert(Node.thumbnail(asset: a.id).ino)
            var views: [Node] = [.allPhotos, .day(a.takenDay)] + SmartAlbum.allCases.map { .smart($0) }
            // Only the views that show it (as it was, or is).
            views = views.filter { view in view.view.map { $0.contains(a, now: now) } ?? true }
            let year = a.takenDay / 10000, month = a.takenDay / 100
            for (folder, child) in [(Node.byDate, DateNames.year(year)), (.year(year), DateNames.month(month)),
                                    (.month(month), DateNames.day(a.takenDay))] {
                inodes.insert(folder.ino)
                if withNames { names.append((folder.ino, child)) }
            }
            for membership in (try? library.read({ try $0.memberships(ofAsset: a.id) })) ?? [] {
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
        // The .thumbnails/ folder beside each folder that lists assets.
        for (folder, name) in names where Node(ino: folder)?.listsAssets == true {
            names.append((Node.thumbnails(of: folder).ino, name + ".jpg"))
        }
        for folder in inodes where Node(ino: folder)?.listsAssets == true {
            inodes.insert(Node.thumbnails(of: folder).ino)
        }
        invalidate(inodes.sorted().map { .inode($0) } + names.map { .entry(parent: $0.0, name: $0.1) })
    }

    /// Invalidations of folders and names only.
    func afterChange(folders: [UInt64], entries: [(UInt64, String)]) {
        afterChange(asset: nil, views: nil, folders: folders, entries: entries)
    }
}
