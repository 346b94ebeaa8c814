import Foundation

/// Hashes whose bytes this process is placing now: a close of the mount (linked to their
/// blob name early, `BlobStore.placeEarly`) or an import of `albumfs import` (one file
/// per core), no row naming them yet. Another close, save or import of the same bytes
/// waits for that one to land or to take them back: it must neither take the blob for a
/// crash's leftover and replace it (the first one's row would then name a file that
/// changed under it, or keep the other file's mtime), nor lean on bytes not yet on
/// disk, nor lose them to the first one's undo. Identical bytes placed at the same
/// moment are rare: one condition serves every hash. (Several hosts are kept apart by
/// their transactions instead: `Library.takeBack`.)
public final class BlobsInFlight: @unchecked Sendable {
    private var placing = Set<String>()
    private let changed = NSCondition()

    public init() {}

    /// Marks `sha256` as being placed by the caller, once no one else places it.
    public func begin(_ sha256: String) {
        changed.lock()
        defer { changed.unlock() }
        while !placing.insert(sha256).inserted { changed.wait() }
    }

    public func end(_ sha256: String) {
        changed.lock()
        placing.remove(sha256)
        changed.broadcast()
        changed.unlock()
    }

    /// Returns once no one places `sha256`.
    public func waitWhilePlaced(_ sha256: String) {
        changed.lock()
        defer { changed.unlock() }
        while placing.contains(sha256) { changed.wait() }
    }
}
