import AlbumCore
import Dispatch

/// The next page of a folder's listing, read while the kernel takes in the last one.
///
/// A large folder is listed as a chain of READDIRPLUS requests: the kernel sends the next
/// only after it has built a dentry and an inode for every entry of the last reply, so
/// the daemon's part (the query, the attributes) and the kernel's part took turns, and
/// one of the two cores idled. Before the bridge answers a full page, it has the next one
/// read on another thread; the request for it finds it ready, or waits for the read
/// already under way instead of starting another.
///
/// A page read ahead is a little older than the request it answers, so it answers only
/// when nothing can have changed in between. Its `Stamp`, taken when it was asked for,
/// must equal the one taken when its request comes:
/// - `generation` moves on at every change made through this mount or reported by
///   another host (`FileSystem.touch`), and around every `setattr` (a plain file cut
///   short or given a mode changes no row the listing reads, or no row at all);
/// - the library's write count moves on around every write transaction;
/// - the writers' epoch moves on whenever a file is opened for writing or closed, and
///   no page is read or served while one is open (a writer's size grows with each
///   write, without a change).
/// A page also answers only within `maxAge` of being asked for (a listing left half
/// read leaves one behind), and only folders whose entries come from the library alone
/// are read ahead: not the thumbnail folders, whose entries appear as thumbnails get made.
final class ListingAhead: Sendable {
    struct Key: Hashable {
        let ino: UInt64
        let after: Int64
        let limit: Int
    }

    /// What must not have moved between a page's read and its request.
    struct Stamp: Equatable {
        let generation: UInt64
        let libraryWrites: UInt64
        let writers: UInt64
    }

    static let maxAge: Double = 1
    /// Pages kept at once: one per listing under way is enough, for a few at once.
    static let capacity = 8

    private enum Progress {
        case waiting
        case reading
        case read([DirectoryEntry]?)
        /// Its request came before the read started: it read the page itself.
        case abandoned
    }

    private final class Page: Sendable {
        let stamp: Stamp
        let askedAt = monotonicSeconds()
        let done = DispatchGroup()
        let progress = Locked(Progress.waiting)

        init(stamp: Stamp) {
            self.stamp = stamp
            done.enter()
        }
    }

    private struct State {
        var generation: UInt64 = 0
        var pages: [Key: Page] = [:]
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "albumfs.listing-ahead", qos: .userInitiated, attributes: .concurrent)
    /// Pages that answered their request.
    let served = Locked(0)

    var generation: UInt64 { state.withLock { $0.generation } }

    /// Something changed: pages read so far may be out of date.
    func changed() {
        state.withLock { s in
            s.generation &+= 1
            s.pages.removeAll()
        }
    }

    /// Starts reading the page at `key` with `read`, unless a recent read of it is under
    /// way. `stamp` is the stamp now.
    func readAhead(_ key: Key, stamp: Stamp, _ read: @escaping @Sendable () -> [DirectoryEntry]?) {
        let page: Page? = state.withLock { s in
            if let existing = s.pages[key], monotonicSeconds() - existing.askedAt < Self.maxAge { return nil }
            s.pages.removeValue(forKey: key)
            if s.pages.count >= Self.capacity, let oldest = s.pages.min(by: { $0.value.askedAt < $1.value.askedAt })?.key {
                s.pages.removeValue(forKey: oldest)
            }
            let page = Page(stamp: stamp)
            s.pages[key] = page
            return page
        }
        guard let page else { return }
        queue.async {
            defer { page.done.leave() }
            let start = page.progress.withLock { progress -> Bool in
                guard case .waiting = progress else { return false }
                progress = .reading
                return true
            }
            guard start else { return }
            let entries = read()
            page.progress.withLock { $0 = .read(entries) }
        }
    }

    /// The page read ahead at `key`, if one was and its stamp is `stamp` (the stamp
    /// now); it is taken (each page answers one request).
    func take(_ key: Key, stamp: Stamp) -> [DirectoryEntry]? {
        guard let page = state.withLock({ $0.pages.removeValue(forKey: key) }) else { return nil }
        guard page.stamp == stamp, monotonicSeconds() - page.askedAt < Self.maxAge else { return nil }
        // A read not started yet (every thread of the pool busy) is not waited for; one
        // under way is: it started before this request did.
        let started = page.progress.withLock { progress -> Bool in
            guard case .waiting = progress else { return true }
            progress = .abandoned
            return false
        }
        guard started, page.done.wait(timeout: .now() + .seconds(1)) == .success else { return nil }
        guard case .read(let entries?) = page.progress.withLock({ $0 }) else { return nil }
        served.withLock { $0 += 1 }
        return entries
    }

    /// Returns once every read asked for so far has ended.
    func settle() {
        queue.sync(flags: .barrier) {}
    }
}

extension FileSystem {
    /// The stamp of a page read now, or nil while a file is open for writing.
    private var listingStamp: ListingAhead.Stamp? {
        guard let writers = writers.quietEpoch else { return nil }
        return ListingAhead.Stamp(generation: listingAhead.generation, libraryWrites: library.writeCount, writers: writers)
    }

    /// Reads the page of `ino` after `after` ahead of its request, where that is safe
    /// (see `ListingAhead`). The bridge calls it before it answers a full page ending at
    /// cookie `after`.
    public func listAhead(_ ino: UInt64, after: Int64, limit: Int) {
        guard Self.readsAhead(ino), let stamp = listingStamp else { return }
        listingAhead.readAhead(ListingAhead.Key(ino: ino, after: after, limit: limit), stamp: stamp) { [self] in
            // Opened for writing since it was asked for: the page will not answer.
            guard writers.quietEpoch == stamp.writers else { return nil }
            return try? library.read(snapshot: true) { r in try readdir(ino, after: after, limit: limit, r) }
        }
    }

    /// How many listing requests a page read ahead answered.
    public var listingPagesReadAhead: Int { listingAhead.served.withLock { $0 } }

    /// Returns once every page read ahead so far has been read (for tests).
    public func settleListingsAhead() { listingAhead.settle() }

    /// The page read ahead for this request, if there is one still good.
    func pageReadAhead(_ ino: UInt64, after: Int64, limit: Int) -> [DirectoryEntry]? {
        guard Self.readsAhead(ino), let stamp = listingStamp else { return nil }
        return listingAhead.take(ListingAhead.Key(ino: ino, after: after, limit: limit), stamp: stamp)
    }

    /// Folders whose listing comes from the library's rows alone.
    static func readsAhead(_ ino: UInt64) -> Bool {
        switch Node(ino: ino) {
        case .allPhotos, .smart, .day, .object, .albumsRoot: return true
        default: return false
        }
    }
}
