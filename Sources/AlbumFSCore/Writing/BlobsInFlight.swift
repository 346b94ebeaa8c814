import AlbumCore
import Glibc

/// Hashes whose bytes a close is placing now: linked to their blob name early
/// (`BlobStore.placeEarly`), no row naming them yet. Another close or save of the same
/// bytes waits for that one to land or to take them back: it must neither take the blob
/// for a crash's leftover and replace it (the first close's row would then name a file
/// that changed under it), nor lean on bytes not yet on disk, nor lose them to the
/// first close's undo. Identical bytes closed at the same moment are rare; the wait is a
/// short poll.
final class BlobsInFlight: Sendable {
    private let placing = Locked(Set<String>())

    /// Marks `sha256` as being placed by the caller, once no other close places it.
    func begin(_ sha256: String) {
        while !placing.withLock({ $0.insert(sha256).inserted }) { usleep(1000) }
    }

    func end(_ sha256: String) { _ = placing.withLock { $0.remove(sha256) } }

    /// Returns once no close places `sha256`.
    func waitWhilePlaced(_ sha256: String) {
        while placing.withLock({ $0.contains(sha256) }) { usleep(1000) }
    }
}
