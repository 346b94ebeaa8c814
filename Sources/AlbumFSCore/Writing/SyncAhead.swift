import AlbumCore
import Dispatch

/// A committing file's bytes pushed to disk while a decoder worker reads what they are
/// (about as long as each, for a phone's photo): the blob's own fsync in
/// `BlobStore.place` then finds nothing left to write. With `folders` (the blob was
/// linked into place early, `BlobStore.placeEarly`), the folders that name it are
/// synced next, on the same thread: the file's fsync commits the journal transaction
/// that holds the link too, so theirs find little left (measured on ext4 here, a 151 KB
/// file: fsync of the file 0.33 ms, then of its folder 0.11 ms more; the two at once
/// 0.51 ms). Its error is the close's error: a failed writeback is reported once per
/// open file, so it must not be dropped here and hoped for in the second fsync.
final class SyncAhead: Sendable {
    private let group = DispatchGroup()
    private let failure = Locked<(any Error)?>(nil)

    init(_ descriptor: FileDescriptor, folders: [LibraryPath] = [], files: LibraryFiles? = nil) {
        run {
            try descriptor.sync()
            if let files { for folder in folders { try files.syncFolder(folder) } }
        }
    }

    private func run(_ body: @escaping @Sendable () throws -> Void) {
        group.enter()
        DispatchQueue.global(qos: .userInitiated).async { [group, failure] in
            do { try body() } catch { failure.withLock { $0 = $0 ?? error } }
            group.leave()
        }
    }

    /// Waits for the syncs; throws what the first that failed threw.
    func finish() throws {
        group.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }
}
