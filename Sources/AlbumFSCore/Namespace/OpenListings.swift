import AlbumCore

/// The listings programs have open (one per OPENDIR), and what each read before which
/// change: so that the kernel does not keep a listing it took in partly before a change
/// and partly after it.
///
/// The kernel keeps a folder's listing (`cache_readdir`) as it takes in a listing's pages,
/// and the daemon drops it after each change (`.listing`, before the change's reply).
/// The drop removes the pages the kernel has, not a page on its way: a page read before
/// the change whose reply the kernel takes in after the drop goes into the cache
/// (`fuse_add_dirent_to_cache` checks only that it comes next), and the pages after it
/// are read after the change. The kernel checks a kept listing against the folder's mtime
/// and change count as of when it began keeping it, which catches most such changes; not
/// when a second program started listing the folder between the drop and that page's
/// arrival (the kernel then dates the cache after the change), nor when a program stopped
/// reading before the listing's end and another completes the cache later. A new photo
/// landing at its writer's close was then listed twice until the folder's next change:
/// once as the file being written (among the plain files), once as the photo
/// (`ListingCacheTests`).
///
/// So a listing that read a page before a change of its folder drops the kernel's listing
/// once more at its end (its empty page, which the kernel asks for only after it took in
/// every page before) and at its close: by then every page it read is in the kernel, and
/// nothing it read stale can arrive after the drop. docs/namespace.md, "Caching".
///
/// And a listing read across a landing names the photo once: a file it returned among
/// the plain files is left out among the photos (`returning`), as a file on a disk is
/// listed once however it is written meanwhile.
final class OpenListings: Sendable {
    private struct Listing {
        let folder: UInt64
        /// The change count before its earliest read since it was last found up to date.
        var oldestRead: UInt64?
        /// The files it returned among the plain files (number and name) since it
        /// started: one of them that lands as a photo meanwhile is listed again among the
        /// photos, and is left out there.
        var plainReturned = Set<PlainEntry>()
    }

    private struct PlainEntry: Hashable {
        let ino: UInt64
        let name: String
    }

    private struct State {
        /// Changes of folders' listings, counted.
        var changes: UInt64 = 0
        /// The count at each folder's last change (only those that may matter to a
        /// listing still open).
        var lastChange: [UInt64: UInt64] = [:]
        var listings: [UInt64: Listing] = [:]
        var nextHandle: UInt64 = 1
    }

    private let state = Locked(State())

    /// A listing of `folder` opened: its handle.
    func open(_ folder: UInt64) -> UInt64 {
        state.withLock { s in
            let handle = s.nextHandle
            s.nextHandle += 1
            s.listings[handle] = Listing(folder: folder)
            return handle
        }
    }

    /// The listing `handle` is about to read a page.
    func reading(_ handle: UInt64) {
        state.withLock { s in
            if let listing = s.listings[handle], listing.oldestRead == nil { s.listings[handle]?.oldestRead = s.changes }
        }
    }

    /// `page`, read for `handle` after cookie `after`, without the files it returned
    /// before among the plain files that are now among the photos (a file being written
    /// that landed as a photo since: one file, listed once, as on a disk).
    func returning(_ page: [DirectoryEntry], after: Int64, for handle: UInt64) -> [DirectoryEntry] {
        state.withLock { s in
            // Taken out while changed, so that its set is not copied at each page.
            guard var listing = s.listings.removeValue(forKey: handle) else { return page }
            if after == 0 { listing.plainReturned.removeAll() }  // read again from the start
            let page = page.filter { entry in
                if entry.cookie >= Cookie.firstObject, entry.cookie < Cookie.assetTag, entry.attributes?.kind != .directory {
                    listing.plainReturned.insert(PlainEntry(ino: entry.ino, name: entry.name))
                } else if entry.cookie >= Cookie.assetTag, !listing.plainReturned.isEmpty {
                    return !listing.plainReturned.contains(PlainEntry(ino: entry.ino, name: entry.name))
                }
                return true
            }
            s.listings[handle] = listing
            return page
        }
    }

    /// `folders`' listings changed (called before the kernel is told): one change.
    func changed(_ folders: [UInt64]) {
        guard !folders.isEmpty else { return }
        state.withLock { s in
            s.changes += 1
            for folder in folders { s.lastChange[folder] = s.changes }
            if s.lastChange.count > 1024 {
                // A change matters only to a listing that read before it.
                let oldest = s.listings.values.compactMap(\.oldestRead).min() ?? s.changes
                s.lastChange = s.lastChange.filter { $0.value > oldest }
            }
        }
    }

    /// The listing `handle` is at its end, or closed (`closing` forgets it): its folder, if
    /// it read a page before a change of it. Either way it starts over from now on.
    func folderReadBeforeAChange(_ handle: UInt64, closing: Bool) -> UInt64? {
        state.withLock { s in
            guard let listing = s.listings[handle] else { return nil }
            if closing {
                s.listings.removeValue(forKey: handle)
            } else {
                s.listings[handle]?.oldestRead = nil
                s.listings[handle]?.plainReturned.removeAll()
            }
            guard let read = listing.oldestRead, let changed = s.lastChange[listing.folder], changed > read else { return nil }
            return listing.folder
        }
    }
}

extension FileSystem {
    /// A program opened folder `ino` to list it: the handle its pages are asked with.
    public func openListing(_ ino: UInt64) -> UInt64 {
        openListings.open(ino)
    }

    /// Up to `limit` entries of folder `ino` after cookie `after`, for the open listing
    /// `listing`, without a file it already returned (`OpenListings.returning`). An empty
    /// page is the listing's end: see `OpenListings`.
    public func readdir(_ ino: UInt64, after: Int64, limit: Int, listing: UInt64) throws -> [DirectoryEntry] {
        openListings.reading(listing)
        var cookie = after
        while true {
            let page = try readdir(ino, after: cookie, limit: limit)
            guard let last = page.last else {
                dropListingIfReadBeforeAChange(listing, closing: false)
                return page
            }
            // A page left empty would end the listing: the next one is read instead.
            let kept = openListings.returning(page, after: cookie, for: listing)
            if !kept.isEmpty { return kept }
            cookie = last.cookie
        }
    }

    /// The program closed the listing `listing`.
    public func closeListing(_ listing: UInt64) {
        dropListingIfReadBeforeAChange(listing, closing: true)
    }

    private func dropListingIfReadBeforeAChange(_ listing: UInt64, closing: Bool) {
        guard let folder = openListings.folderReadBeforeAChange(listing, closing: closing) else { return }
        // Not a change: sent without counting one, so that other open listings are not
        // taken for stale by it.
        sendInvalidations([.listing(folder)])
    }
}
