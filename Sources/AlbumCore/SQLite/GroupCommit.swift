import Foundation
import Glibc

/// Durable commits of a SQLite library, several at a time (group commit).
///
/// The writer connection commits with `PRAGMA synchronous = NORMAL`: COMMIT writes the
/// transaction's pages into the write-ahead log (`library.db-wal`) and returns without
/// waiting for the disk, so the writer lock is held for SQL only. A durable write then
/// waits here until one `fdatasync` of the log that started after its COMMIT has
/// returned. Writers that commit while such a sync runs share the next one: with `cp`
/// in parallel, Samba clients or NFS, several closes wait for the disk once instead of
/// one after the other under the lock (each in its own COMMIT with `synchronous = FULL`,
/// as before 2026-12-04). The log only grows by appends in commit order, so a sync that
/// covers a commit covers every commit before it: no durable write becomes durable
/// before one that returned earlier. SQLite still syncs the log itself before each
/// checkpoint, and the database file after it.
///
/// A failed sync is final for this process: Linux reports a failed writeback once, and
/// the pages it could not write may be gone from the cache, so a later sync that
/// succeeds proves nothing about them. Every durable write after it fails with the
/// first error (EIO on the mount, and the log says why) until the library is opened
/// again.
final class GroupCommit: @unchecked Sendable {
    private let files: LibraryFiles
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var committed: UInt64 = 0
    private var synced: UInt64 = 0
    private var syncing = false
    private var failure: LibraryError?
    private var rounds: UInt64 = 0
    private var durableWrites: UInt64 = 0
    /// Touched only by the writer that syncs (one at a time, see `syncing`).
    private var log: FileDescriptor?

    init(files: LibraryFiles) { self.files = files }

    /// Numbers a commit whose pages are in the log now. Called with the writer lock held,
    /// right after COMMIT, so that numbers follow the log's order.
    func noteCommit() -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        committed += 1
        return committed
    }

    /// Durable writes so far (each waited here), and the syncs of the log that made
    /// them so.
    var counts: (commits: UInt64, syncs: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        return (durableWrites, rounds)
    }

    /// Returns once commit `number` (from `noteCommit`) is on disk; throws if the sync
    /// that should have made it so failed.
    func waitUntilDurable(_ number: UInt64) throws {
        condition.lock()
        defer { condition.unlock() }
        durableWrites += 1
        while true {
            if let failure { throw failure }
            if synced >= number { return }
            if syncing {
                condition.wait()
                continue
            }
            // Nobody is syncing: this writer syncs for every commit made so far.
            syncing = true
            let target = committed
            condition.unlock()
            let result = Result { try syncLog() }
            condition.lock()
            syncing = false
            rounds += 1
            switch result {
            case .success: synced = max(synced, target)
            case .failure(let error):
                let reason = (error as? LibraryError)?.description ?? "\(error)"
                failure = LibraryError.io("the library's database log could not be written to disk (\(reason)); the last changes may be lost: unmount, and run albumfs check", errno: EIO)
                Log.error(failure!.description)
            }
            condition.broadcast()
        }
    }

    /// fdatasync of the log, through a descriptor of our own (SQLite's is its
    /// connection's, not to be shared between threads). The first time, the library's
    /// folder is synced too, so that the log's name is on disk as well.
    private func syncLog() throws {
        if let log, try log.status().st_nlink > 0 {
            try log.syncData()
            return
        }
        // Not open yet, or SQLite removed the log (it does so only after checkpointing
        // all of it into the database, and syncing that): the log there now.
        let opened = try files.open(.databaseLog, flags: O_RDONLY)
        try files.syncFolder(.root)
        try opened.syncData()
        log = opened
    }
}
