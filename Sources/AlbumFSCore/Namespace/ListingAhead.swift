import AlbumCore
import Dispatch

/// The next page of a folder's listing, read while the kernel takes in the last one.
///
/// A large folder is listed as a chain of READDIRPLUS requests: the kernel sends the next
/// only after it has built a dentry and an inode for every entry of the last reply, so
/// the daemon's part (the query, the attributes) and the kernel's part took turns, and
/// one of the two cores idled. Once the bridge has answered a full page, the next one is
/// read on another thread; the request for it finds it ready, or waits for the read
/// already under way instead of starting another.
///
/// A page read ahead is a little older than the request it answers, so it is served only
/// when nothing could have changed meanwhile:
/// - every change made through this mount or reported by another host moves
///   `generation` on (`FileSystem.touch`), and every write transaction the library's
///   write count: a page asked for before either moved is dropped;
/// - a page is neither read nor served while any file is open for writing (a writer's
///   size grows with each write, without a change);
/// - only folders whose entries come from the library alone are read ahead: not the
///   thumbnail folders, whose entries appear as thumbnails get made.
final class ListingAhead: Sendable {
    struct Key: Hashable {
        let ino: UInt64
        let after: Int64
        let limit: Int
    }

    private final class Page: Sendable {
        let generation: UInt64
        /// The library's write count when the read was asked for.
        let writes: UInt64
        let read = DispatchGroup()
        let entries = Locked<[DirectoryEntry]?>(nil)

        init(generation: UInt64, writes: UInt64) {
            self.generation = generation
            self.writes = writes
        }
    }

    private struct State {
        var generation: UInt64 = 0
        var pages: [Key: Page] = [:]
    }

    /// Pages kept at once: one per listing under way is enough, a few listings at once.
    static let capacity = 8

    private let state = Locked(State())
    /// Pages that answered their request.
    let served = Locked(0)
    private let queue = DispatchQueue(label: "albumfs.listing-ahead", qos: .userInitiated, attributes: .concurrent)

    /// Something changed: pages read so far may be out of date.
    func changed() {
        state.withLock { s in
            s.generation &+= 1
            s.pages.removeAll()
        }
    }

    /// Starts reading the page at `key` with `read`, unless it is being read already.
    /// `writes` is the library's write count now.
    func readAhead(_ key: Key, writes: UInt64, _ read: @escaping @Sendable () -> [DirectoryEntry]?) {
        let page: Page? = state.withLock { s in
            if s.pages[key] != nil { return nil }
            if s.pages.count >= Self.capacity, let oldest = s.pages.min(by: { $0.value.generation < $1.value.generation })?.key {
                s.pages.removeValue(forKey: oldest)
            }
            let page = Page(generation: s.generation, writes: writes)
            page.read.enter()
            s.pages[key] = page
            return page
        }
        guard let page else { return }
        queue.async {
            let entries = read()
            page.entries.withLock { $0 = entries }
            page.read.leave()
        }
    }

    /// The page read ahead at `key`, if one was and nothing changed since (`writes`: the
    /// library's write count now); it is taken (each page answers one request).
    func take(_ key: Key, writes: UInt64) -> [DirectoryEntry]? {
        guard let page = state.withLock({ $0.pages.removeValue(forKey: key) }) else { return nil }
        // The read under way started before this request did: waiting for it costs less
        // than reading again. A stuck read (a locked database) is not waited for long.
        guard page.read.wait(timeout: .now() + .seconds(1)) == .success else { return nil }
        let current = state.withLock { $0.generation }
        guard page.generation == current, page.writes == writes, let entries = page.entries.withLock({ $0 }) else { return nil }
        served.withLock { $0 += 1 }
        return entries
    }

    /// Returns once every read asked for so far has ended.
    func settle() {
        queue.sync(flags: .barrier) {}
    }
}

extension FileSystem {
    /// Reads the page of `ino` after `after` ahead of its request, where that is safe
    /// (see `ListingAhead`). The bridge calls it once it has answered a full page ending
    /// at cookie `after`.
    public func listAhead(_ ino: UInt64, after: Int64, limit: Int) {
        guard writers.isEmpty, Self.readsAhead(ino) else { return }
        listingAhead.readAhead(ListingAhead.Key(ino: ino, after: after, limit: limit), writes: library.writeCount) { [self] in
            guard writers.isEmpty else { return nil }
            return try? library.read(snapshot: true) { r in try readdir(ino, after: after, limit: limit, r) }
        }
    }

    /// How many listing requests a page read ahead answered.
    public var listingPagesReadAhead: Int { listingAhead.served.withLock { $0 } }

    /// Returns once every page read ahead so far has been read (for tests).
    public func settleListingsAhead() { listingAhead.settle() }

    /// The page read ahead for this request, if there is one still good.
    func pageReadAhead(_ ino: UInt64, after: Int64, limit: Int) -> [DirectoryEntry]? {
        // A file open for writing: its size may have grown since the page was read.
        guard Self.readsAhead(ino), writers.isEmpty else { return nil }
        return listingAhead.take(ListingAhead.Key(ino: ino, after: after, limit: limit), writes: library.writeCount)
    }

    /// Folders whose listing comes from the library's rows alone.
    static func readsAhead(_ ino: UInt64) -> Bool {
        switch Node(ino: ino) {
        case .allPhotos, .smart, .day, .object, .albumsRoot: return true
        default: return false
        }
    }
}
