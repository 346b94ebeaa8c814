import AlbumCore

extension FileSystem {
    /// After a change: the library's time moves on, and the kernel forgets what the
    /// change touched. An asset may show in every view, in its albums and their
    /// `.thumbnails/`, so all of those are invalidated (their listings and the asset's
    /// names in them); `before` is the asset as it was, when its name or date changed.
    func afterChange(asset: Asset? = nil, views before: Asset? = nil, folders: [UInt64] = [],
                     entries: [(UInt64, String)] = []) {
        touch()
        var inodes = Set(folders)
        var names = entries
        for a in [asset, before].compactMap({ $0 }) {
            inodes.insert(UInt64(a.id))
            inodes.insert(Node.thumbnail(asset: a.id).ino)
            let year = a.takenDay / 10000, month = a.takenDay / 100
            var views: [Node] = [.allPhotos, .day(a.takenDay)] + SmartAlbum.allCases.map { .smart($0) }
            for (folder, child) in [(Node.byDate, DateNames.year(year)), (.year(year), DateNames.month(month)),
                                    (.month(month), DateNames.day(a.takenDay))] {
                inodes.insert(folder.ino)
                names.append((folder.ino, child))
            }
            inodes.insert(Node.root.ino)
            for membership in (try? library.memberships(ofAsset: a.id)) ?? [] {
                views.append(.object(membership.albumID))
                names.append((UInt64(membership.albumID), membership.name))
            }
            for view in views {
                inodes.insert(view.ino)
                names.append((view.ino, a.name))
            }
        }
        // The .thumbnails/ folder beside each folder that lists assets.
        for (folder, name) in names where Node(ino: folder)?.listsAssets == true {
            names.append((Node.thumbnails(of: folder).ino, name + ".jpg"))
        }
        for folder in inodes where Node(ino: folder)?.listsAssets == true {
            inodes.insert(Node.thumbnails(of: folder).ino)
        }
        invalidate(inodes.sorted().map { .inode($0) } + names.map { .entry(parent: $0.0, name: $0.1) })
    }
}
