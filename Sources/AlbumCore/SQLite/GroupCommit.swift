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
/// A failed sync of the log ends the process (`stop`), as PostgreSQL does: Linux
/// reports a failed writeback once and may have dropped the pages it could not write,
/// so nothing can say any more which commits are on disk; and the callers of a write
/// that failed after its COMMIT would undo file work (a blob, a plain file's bytes)
/// that committed rows name. Ended, the library is as a crash leaves it: every write
/// that returned before is on disk, and the next open recovers the rest.
final class GroupCommit: @unchecked Sendable {
    private let files: LibraryFiles
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var committed: UInt64 = 0
    private var synced: UInt64 = 0
    private var syncing = false
    private var rounds: UInt64 = 0
    private var durableWrites: UInt64 = 0
    /// A sync is scheduled for commits that are to be on disk soon (`syncSoon`).
    private var soonScheduled = false
    /// Touched only by the writer that syncs (one at a time, see `syncing`), and by init.
    private var log: FileDescriptor?
    /// Runs before each sync (tests hold a sync with it: `Library.setBeforeLogSync`).
    private let beforeSync = Locked<(@Sendable () -> Void)?>(nil)

    func setBeforeSync(_ hook: (@Sendable () -> Void)?) { beforeSync.withLock { $0 = hook } }

    /// `openLog`: opens the log now (a library opened for writing: SQLite made it when it
    /// opened the database in WAL mode), so that a descriptor that cannot be had is an
    /// error of the open, not of a commit; and syncs the library's folder, so that the
    /// log's name is on disk too.
    init(files: LibraryFiles, openLog: Bool) throws {
        self.files = files
        if openLog { log = try Self.openLog(files) }
    }

    /// A descriptor of the log, its name made durable (the library's folder synced).
    private static func openLog(_ files: LibraryFiles) throws -> FileDescriptor {
        let log = try files.open(.databaseLog, flags: O_RDONLY)
        try files.syncFolder(.root)
        return log
    }

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

    /// Returns once commit `number` (from `noteCommit`) is on disk.
    func waitUntilDurable(_ number: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        durableWrites += 1
        syncLocked(upTo: number)
    }

    /// Returns once every commit made so far is on disk (an fsync of a file whose mode or
    /// times were committed to be on disk soon).
    func makeCommittedDurable() {
        condition.lock()
        defer { condition.unlock() }
        syncLocked(upTo: committed)
    }

    /// Commits made so far are on disk within `delay` seconds, as a file system's journal
    /// commits a chmod or a utimensat (ext4 within 5 s), or sooner with the next durable
    /// commit, or `makeCommittedDurable`. One sync is scheduled at a time; it covers every
    /// commit before it runs.
    func syncSoon(within delay: Double = 5) {
        condition.lock()
        let schedule = !soonScheduled
        soonScheduled = true
        condition.unlock()
        guard schedule else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            condition.lock()
            defer { condition.unlock() }
            soonScheduled = false
            // A library whose last connection closed meanwhile has no log left: SQLite
            // checkpointed all of it into the database and synced that before it removed
            // it. So this sync never opens the log again once it is gone (that would
            // fail, and end the process), and finds nothing to do then.
            syncLocked(upTo: committed, reopening: false)
        }
    }

    /// Syncs the log until commit `number` is on disk; called with `condition` held.
    /// `reopening`: a log SQLite removed is opened again (see `syncLog`).
    private func syncLocked(upTo number: UInt64, reopening: Bool = true) {
        while synced < number {
            if syncing {
                condition.wait()
                continue
            }
            // Nobody is syncing: this writer syncs for every commit made so far.
            syncing = true
            let target = committed
            condition.unlock()
            do { try syncLog(reopening: reopening) } catch { GroupCommit.stop(because: error) }
            condition.lock()
            syncing = false
            rounds += 1
            synced = max(synced, target)
            condition.broadcast()
        }
    }

    /// Ends the process after a failed sync of the log (see the type's comment), with a
    /// line in the log that says what happened and what to do.
    static func stop(because error: any Error) -> Never {
        let reason = (error as? LibraryError)?.description ?? "\(error)"
        Log.error("the library's database log could not be written to disk (\(reason)): albumfs stops here, as after a crash. Every change whose close or command returned before this is on disk; the one in progress may be. Unmount (fusermount3 -u MOUNTPOINT), mount again, and run albumfs check")
        _exit(74)  // EX_IOERR
    }

    /// fdatasync of the log, through a descriptor of our own (SQLite's is its
    /// connection's, not to be shared between threads).
    private func syncLog(reopening: Bool = true) throws {
        beforeSync.withLock { $0 }?()
        if let marker = Self.failingSyncMarker, access(marker, F_OK) == 0 {
            // The tests' way to fail a sync: every sync once this file exists.
            throw LibraryError.io("fdatasync library.db-wal (ALBUMFS_TEST_FAIL_LOG_SYNC)", errno: EIO)
        }
        if let log, try log.status().st_nlink > 0 {
            try log.syncData()
            return
        }
        // Removed since it was opened, and not to be opened again: nothing to sync.
        if log != nil && !reopening { return }
        // Not opened yet (a library opened to read), or SQLite removed the log (it does
        // so only once its last connection closes, after checkpointing all of it into
        // the database and syncing that): the log there now.
        let opened = try Self.openLog(files)
        try opened.syncData()
        log = opened
    }

    private static let failingSyncMarker = ProcessInfo.processInfo.environment["ALBUMFS_TEST_FAIL_LOG_SYNC"]
}
