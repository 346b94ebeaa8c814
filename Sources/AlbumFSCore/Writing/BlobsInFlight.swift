import AlbumCore
import Foundation

/// Hashes whose bytes a close is placing now: linked to their blob name early
/// (`BlobStore.placeEarly`), no row naming them yet. Another close or save of the same
/// bytes waits for that one to land or to take them back: it must neither take the blob
/// for a crash's leftover and replace it (the first close's row would then name a file
/// that changed under it), nor lean on bytes not yet on disk, nor lose them to the
/// first close's undo. Identical bytes closed at the same moment are rare: one
/// condition serves every hash.
final class BlobsInFlight: @unchecked Sendable {
    private var placing = Set<String>()
    private let changed = NSCondition()

    /// Marks `sha256` as being placed by the caller, once no other close places it.
    func begin(_ sha256: String) {
        changed.lock()
        defer { changed.unlock() }
        while !placing.insert(sha256).inserted { changed.wait() }
    }

    func end(_ sha256: String) {
        changed.lock()
        placing.remove(sha256)
        changed.broadcast()
        changed.unlock()
    }

    /// Returns once no close places `sha256`.
    func waitWhilePlaced(_ sha256: String) {
        changed.lock()
        defer { changed.unlock() }
        while placing.contains(sha256) { changed.wait() }
    }
}
