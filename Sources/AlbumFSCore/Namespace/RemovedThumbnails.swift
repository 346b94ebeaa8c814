import AlbumCore

/// Thumbnails a user removed (`rm .thumbnails/IMG_1.jpg.jpg`): gone from that folder
/// for as long as the mount runs, as a removed file is gone. A made thumbnail is derived,
/// so nothing is lost, but a tool that removes a file to write its own under the name
/// (`tar x` of a tree with its own `.thumbnails/`: `O_EXCL` fails, unlink, again) must
/// then find the name free; one that was told "removed" and still found it looped
/// forever. In memory: the next mount shows them again. At most `capacity` are kept, the
/// oldest go first (they come back).
final class RemovedThumbnails: Sendable {
    static let capacity = 10_000

    private struct State {
        var removed: Set<Slot> = []
        var order: [Slot] = []
    }

    private struct Slot: Hashable {
        let folder: UInt64
        let key: String
    }

    private let state = Locked(State())

    /// `name` in the `.thumbnails/` folder `folder` was removed.
    func remove(_ name: String, in folder: UInt64) {
        let slot = Slot(folder: folder, key: Names.key(name))
        state.withLock { s in
            guard s.removed.insert(slot).inserted else { return }
            s.order.append(slot)
            if s.order.count > Self.capacity { s.removed.remove(s.order.removeFirst()) }
        }
    }

    func isRemoved(_ name: String, in folder: UInt64) -> Bool {
        state.withLock { s in s.removed.isEmpty ? false : s.removed.contains(Slot(folder: folder, key: Names.key(name))) }
    }

    /// Whether any was removed in `folder` (a listing asks once, not per entry).
    func anyRemoved(in folder: UInt64) -> Bool {
        state.withLock { s in s.removed.contains { $0.folder == folder } }
    }
}
