import AlbumCore
import Dispatch

/// A committing file's bytes pushed to disk while a decoder worker reads what they are
/// (about as long as each, for a phone's photo): the blob's own fsync in
/// `BlobStore.place` then finds nothing left to write. Its error is the close's error:
/// a failed writeback is reported once per open file, so it must not be dropped here
/// and hoped for in the second fsync.
final class SyncAhead: Sendable {
    private let group = DispatchGroup()
    private let failure = Locked<(any Error)?>(nil)

    init(_ descriptor: FileDescriptor) {
        group.enter()
        DispatchQueue.global(qos: .userInitiated).async { [group, failure] in
            do { try descriptor.sync() } catch { failure.withLock { $0 = error } }
            group.leave()
        }
    }

    /// Waits for the fsync; throws what it threw.
    func finish() throws {
        group.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }
}
