import Foundation
import Glibc

/// A change to the library that another process made: another host's daemon, or a
/// command of any host. PostgreSQL's triggers send one per changed row
/// (`PostgresSchema`); the daemon turns them into the kernel invalidations it sends for
/// its own changes. A side that does not exist (what a new row was before, what a
/// removed row is after) is nil.
public enum LibraryChange: Sendable, Equatable {
    /// An asset's row: its display name and capture day before and after, and whether
    /// its bytes changed (a new version, a revert).
    case asset(id: Int64, before: Place?, after: Place?, bytesChanged: Bool)
    /// An entry of an album (`folder` is the album's id).
    case membership(asset: Int64, before: Entry?, after: Entry?)
    /// An album: `folder` is its parent album's id (0: the top of Albums/).
    case album(id: Int64, before: Entry?, after: Entry?)
    /// A plain file: `folder` is its folder's inode number.
    case plainFile(id: Int64, before: Entry?, after: Entry?)
    /// The mode of a folder that is not an album (chmod of All Photos, a date folder).
    case folderMode(ino: UInt64)
    /// Changes may have been missed (the listening connection was lost): everything
    /// the kernel caches may be stale.
    case unknown

    public struct Place: Sendable, Equatable {
        public let name: String
        public let day: Int64
    }

    public struct Entry: Sendable, Equatable {
        public let folder: Int64
        public let name: String
    }

    /// Parses a notification's payload (`PostgresSchema` says what it holds); nil for
    /// one this program does not know.
    static func parse(_ payload: String) -> LibraryChange? {
        if let array = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [Any], array.count == 2,
           array[0] as? String == "mode", let text = array[1] as? String, let ino = UInt64(text) {
            return .folderMode(ino: ino)
        }
        guard let array = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [Any], array.count >= 7,
              let kind = array[0] as? String, let id = (array[1] as? NSNumber)?.int64Value else { return nil }
        /// One side: its folder at `at`, its name at `at + 1`.
        func side(_ at: Int) -> Entry? {
            guard let folder = (array[at] as? NSNumber)?.int64Value, let name = array[at + 1] as? String else { return nil }
            return Entry(folder: folder, name: name)
        }
        let before = side(2), after = side(4)
        switch kind {
        case "asset":
            func place(_ side: Entry?) -> Place? { side.map { Place(name: $0.name, day: $0.folder) } }
            return .asset(id: id, before: place(before), after: place(after), bytesChanged: array[6] as? Bool ?? true)
        case "member": return .membership(asset: id, before: before, after: after)
        case "album": return .album(id: id, before: before, after: after)
        case "plain": return .plainFile(id: id, before: before, after: after)
        default: return nil
        }
    }
}

/// Listens to a PostgreSQL library's changes on a connection of its own, on a thread of
/// its own, and hands each batch that other processes committed to `deliver` (this
/// process's own writes are told apart by their server process, the writer
/// connection's). A lost connection is retried every second; once back, `deliver` gets
/// `.unknown`, since what was sent meanwhile is lost (PostgreSQL keeps no
/// notifications for a listener that is not connected).
public final class ChangeListener: @unchecked Sendable {
    private let conninfo: String
    private let ownPID: @Sendable () -> Int32?
    private let deliver: @Sendable ([LibraryChange]) -> Void
    private let stopped = Locked(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Signalled once the first LISTEN is in place (a change committed after `start`
    /// returns is never missed).
    private let listening = DispatchSemaphore(value: 0)

    /// Nil for a library on SQLite: there is nobody else to listen to.
    public init?(library: Library, deliver: @escaping @Sendable ([LibraryChange]) -> Void) {
        guard case .postgres(let conninfo) = library.backend else { return nil }
        self.conninfo = conninfo
        self.deliver = deliver
        ownPID = { [weak library] in library?.writerBackendPID }
    }

    /// Starts listening; returns once the first connection listens (or failed once).
    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "albumfs changes"
        thread.start()
        _ = listening.wait(timeout: .now() + 30)
    }

    /// Stops the thread (within a second) and waits for it.
    public func stop() {
        stopped.withLock { $0 = true }
        finished.wait()
    }

    private func run() {
        defer { finished.signal() }
        var first = true
        while !stopped.withLock({ $0 }) {
            do {
                let connection = try PostgresConnection(conninfo)
                try connection.listen(PostgresSchema.channel)
                if first { listening.signal() } else { deliver([.unknown]) }
                first = false
                while !stopped.withLock({ $0 }) {
                    let notes = try connection.notifications(timeout: 1)
                    let own = ownPID()
                    let changes = notes.filter { $0.senderPID != own }.compactMap { LibraryChange.parse($0.payload) }
                    if !changes.isEmpty { deliver(changes) }
                }
            } catch {
                Log.warning("listening to the library's changes in PostgreSQL: \(error); trying again in a second")
                if first { listening.signal(); first = false }
                sleep(1)
            }
        }
    }
}
