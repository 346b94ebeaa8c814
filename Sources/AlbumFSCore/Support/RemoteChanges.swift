import AlbumCore

extension FileSystem {
    /// Changes another host committed to a library several hosts serve (PostgreSQL's
    /// notifications, `ChangeListener`): the kernel forgets what they touched, as it does
    /// after this host's own changes (`afterChange`). Generous where a row does not say
    /// enough (an asset's row does not say which views showed it): every view's listing
    /// and the asset's old name in each are dropped, which costs the kernel a lookup
    /// and nothing else.
    public func afterRemoteChanges(_ changes: [LibraryChange]) {
        touch()
        var folders = Set<UInt64>(), files = Set<UInt64>()
        var names: [(UInt64, String)] = []
        let views: [Node] = [.allPhotos] + SmartAlbum.allCases.map { .smart($0) }
        func entry(_ folder: UInt64, _ name: String) {
            folders.insert(folder)
            names.append((folder, name))
        }
        for change in changes {
            switch change {
            case .asset(let id, let before, let after, let bytesChanged):
                // Deleted for good: before the kernel is told, which asks this daemon again.
                if after == nil { keepAttributesIfHeld(gone: id) }
                files.insert(UInt64(id))
                files.insert(Node.thumbnail(asset: id).ino)
                if bytesChanged { contentChanged(asset: id) }
                views.forEach { folders.insert($0.ino) }
                for place in [before, after].compactMap({ $0 }) {
                    for view in views + [.day(Int(place.day))] { entry(view.ino, place.name) }
                    let day = Int(place.day), month = day / 100, year = day / 10000
                    entry(Node.byDate.ino, DateNames.year(year))
                    entry(Node.year(year).ino, DateNames.month(month))
                    entry(Node.month(month).ino, DateNames.day(day))
                }
                // Trashed, hidden or restored: its entries come and go in its albums.
                // Its shared thumbnails (in views, and in each album) carry its mtime and
                // are made anew from new bytes: their attributes go too, as after a change
                // made here (`touchedBy`).
                let memberships = (try? library.read({ try $0.memberships(ofAsset: id) })) ?? []
                files.formUnion(Self.sharedThumbnailInodes(of: id, entries: memberships))
                for membership in memberships { entry(FixedInode.folder(ofAlbum: membership.albumID), membership.name) }
            case .membership(let asset, let before, let after):
                files.insert(UInt64(asset))  // its link count
                for side in [before, after].compactMap({ $0 }) { entry(FixedInode.folder(ofAlbum: side.folder), side.name) }
            case .album(let id, let before, let after):
                files.insert(FixedInode.folder(ofAlbum: id))
                for side in [before, after].compactMap({ $0 }) { entry(FixedInode.folder(ofAlbum: side.folder), side.name) }
            case .plainFile(let id, let before, let after):
                files.insert(UInt64(id))
                for side in [before, after].compactMap({ $0 }) { entry(UInt64(bitPattern: side.folder), side.name) }
            case .folderMode(let ino):
                files.insert(ino)  // its attributes
            case .unknown:
                // Nothing says what changed: the folders every walk starts from. Names
                // and attributes cached deeper stay until they expire (docs/scale.md).
                Log.warning("changes made through other hosts may have been missed; the top folders are read again")
                for folder in [Node.root, .albumsRoot, .allPhotos, .byDate, .smartAlbums] + views { folders.insert(folder.ino) }
            }
        }
        invalidate(folders: folders, files: files, names: names)
    }
}
