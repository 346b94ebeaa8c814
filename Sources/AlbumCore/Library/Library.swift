import Foundation
import Glibc

/// An open library: its files, database connections and lock. One per process.
///
/// Writes go through one writer connection, serialized by a lock, each in a write
/// transaction that the caller owns (`write`): one filesystem operation is one
/// transaction, all or nothing. Reads take a connection of their own from a pool, so
/// that readers on many threads never wait for each other.
///
/// The metadata lives in SQLite (`library.db`, one host, the library locked
/// exclusively) or in PostgreSQL (`database.conf` names the database; several hosts,
/// each with its own lock and staging folder; docs/scale.md).
public final class Library: Sendable {
    /// The library folder, absolute.
    public let root: String
    public let files: LibraryFiles
    public let blobs: BlobStore
    /// Hashes this process is placing now (closes of the mount, imports on every core).
    public let blobsInFlight = BlobsInFlight()
    /// Where the metadata lives.
    public let backend: Backend
    /// This host's name in a library that several hosts serve (PostgreSQL); "local" for
    /// SQLite.
    public let host: String
    let writer: Locked<any Database>
    /// Durable commits of a SQLite library wait for the disk here, outside the writer
    /// lock, several at a time. nil with PostgreSQL, whose server makes each commit
    /// durable itself.
    private let groupCommit: GroupCommit?
    /// See `unfinishedMark(backend:host:)`.
    let unfinishedMark: Int64
    let readers: ConnectionPool
    private let lock: LibraryLock?
    private let writes = Locked(WriteTally())
    /// See `setBeforeWrite`.
    private let beforeWrite = Locked<(@Sendable () -> Bool)?>(nil)

    /// Moves on when a write transaction starts and when it ends: a value read before
    /// and after something was read from the library says whether a write may have
    /// happened meanwhile, through this process.
    public var writeCount: UInt64 { writes.withLock { $0.started &+ $0.ended } }

    /// Write transactions of this process started and ended so far.
    public struct WriteTally: Sendable, Equatable {
        public var started: UInt64 = 0
        public var ended: UInt64 = 0
    }

    public var writeTally: WriteTally { writes.withLock { $0 } }

    /// Whether no write can have committed between `before` (taken with `writeTally`)
    /// and now: none of this process was under way then, none started since, and no
    /// other process or host writes to this library (SQLite: the mount is its only
    /// writer).
    public func noWriteCommitted(since before: WriteTally) -> Bool {
        backend == .sqlite && before.started == before.ended && writes.withLock { $0.started } == before.started
    }

    public enum Backend: Sendable, Equatable {
        case sqlite
        /// A libpq connection string or URI.
        case postgres(String)
    }

    /// How an open library is locked against other processes.
    public enum Access: Sendable {
        /// Shared use: commands that only read (info, stats, albums, check).
        case reader
        /// Sole use: a mount, or a command that writes (import, gc, check --repair).
        /// With PostgreSQL, sole use of this host's part (its lock and staging folder).
        case exclusive
    }

    /// Creates a new library at `path`: the directory (0700), its subdirectories and the
    /// database (`database`: a PostgreSQL connection string or URI, whose database must
    /// be empty; nil for SQLite). The directory may exist if it is empty.
    @discardableResult
    public static func create(at path: String, database: String? = nil) throws -> Library {
        let root = Library.normalized(path)
        if let st = try SystemCalls.status(root) {
            if try SystemCalls.status(root + "/" + LibraryPath.database.relative) != nil
                || SystemCalls.status(root + "/" + LibraryPath.databaseSettings.relative) != nil {
                throw LibraryError.alreadyALibrary(root)
            }
            guard st.isDirectory else { throw LibraryError.io("\(root) exists and is not a directory", errno: ENOTDIR) }
            if !(try SystemCalls.names(in: root)).isEmpty {
                throw LibraryError.io("\(root) is not empty; choose an empty or new directory", errno: ENOTEMPTY)
            }
            try SystemCalls.retrying("chmod", root) { chmod(root, 0o700) }
        } else {
            try SystemCalls.retrying("mkdir", root) { mkdir(root, 0o700) }
        }
        let files = try LibraryFiles(root: root)
        for folder in LibraryPath.folders { try files.makeFolder(folder) }
        if let database {
            try PostgresSchema.create(try PostgresDatabase(database))
            // Private: the settings may hold a password.
            let settings = try files.open(.databaseSettings, flags: O_CREAT | O_EXCL | O_WRONLY, mode: 0o600)
            try Array((database + "\n").utf8).withUnsafeBytes { _ = try settings.write($0, at: 0) }
            try settings.sync()
        } else {
            // Create the database file ourselves so that it is private from the start;
            // SQLite gives its -wal and -shm files the same mode.
            _ = try files.open(.database, flags: O_CREAT | O_EXCL | O_WRONLY, mode: 0o600)
        }
        return try Library(root: root, access: .exclusive)
    }

    /// Opens an existing library. An exclusive open takes the library's lock (this
    /// host's, with PostgreSQL), or uses `lock` when the caller took it already (the
    /// mount takes it before it forks). `host`: this host's name (default: the
    /// environment's `ALBUMFS_HOST`, else the machine's name).
    public static func open(at path: String, access: Access, lock: LibraryLock? = nil, host: String? = nil) throws -> Library {
        try Library(root: Library.normalized(path), access: access, lock: lock, host: host)
    }

    /// Where a library's metadata lives, or nil when `root` is not a library.
    public static func backend(ofLibrary root: String) throws -> Backend? {
        let root = Library.normalized(root)
        if try SystemCalls.status(root + "/" + LibraryPath.database.relative) != nil { return .sqlite }
        let settings = root + "/" + LibraryPath.databaseSettings.relative
        guard try SystemCalls.status(settings) != nil else { return nil }
        guard let text = try? String(contentsOfFile: settings, encoding: .utf8) else {
            throw LibraryError.io("cannot read \(settings)", errno: EACCES)
        }
        let conninfo = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !conninfo.isEmpty else { throw LibraryError.corrupt("\(settings) is empty: it should name the library's PostgreSQL database") }
        return .postgres(conninfo)
    }

    /// This host's name: `ALBUMFS_HOST`, else the machine's name; letters, digits, `.`,
    /// `-` and `_` only, since it names a folder.
    public static func hostName(_ given: String? = nil) throws -> String {
        var name = given ?? ProcessInfo.processInfo.environment["ALBUMFS_HOST"] ?? ""
        if name.isEmpty {
            var buffer = [CChar](repeating: 0, count: 256)
            gethostname(&buffer, buffer.count - 1)
            name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        guard !name.isEmpty, name != ".", name != "..", name.count <= 64,
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
            throw LibraryError.invalidName("host name \"\(name)\": use letters, digits, '.', '-' and '_'", errno: EINVAL)
        }
        return name
    }

    /// Where a library file is, for a process that has not opened the library (the
    /// mount's log, set up before the library is opened).
    public static func absolute(_ path: LibraryPath, inLibrary library: String) -> String {
        normalized(library) + "/" + path.relative
    }

    static func normalized(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    private init(root: String, access: Access, lock givenLock: LibraryLock? = nil, host givenHost: String? = nil) throws {
        self.root = root
        guard let backend = try Library.backend(ofLibrary: root) else { throw LibraryError.notALibrary(root) }
        self.backend = backend
        host = backend == .sqlite ? "local" : try Library.hostName(givenHost)
        unfinishedMark = Library.unfinishedMark(backend: backend, host: host)
        lock = access == .exclusive ? try (givenLock ?? LibraryLock(path: root, host: givenHost)) : nil
        let staging = backend == .sqlite ? LibraryPath.staging : LibraryPath.hostStaging(host)
        files = try LibraryFiles(root: root, staging: staging)
        blobs = BlobStore(files: files, shared: backend != .sqlite)
        if access == .exclusive {
            // Folders a newer layout added or renamed, so that old libraries work.
            if files.exists(.oldScratch) && !files.exists(.plainFiles) {
                try files.rename(.oldScratch, to: .plainFiles, replace: false)
            }
            for folder in LibraryPath.folders + [staging] { try files.makeFolder(folder) }
        }
        switch backend {
        case .sqlite:
            let connection = try SQLiteConnection(path: files.absolute(.database))
            try connection.execute("PRAGMA journal_mode = WAL")
            try connection.execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
            try Library.tune(connection)
            try Schema.migrate(connection)
            writer = Locked(connection)
            groupCommit = try GroupCommit(files: files, openLog: access == .exclusive)
            let path = files.absolute(.database)
            readers = ConnectionPool {
                let connection = try SQLiteConnection(path: path)
                try connection.execute("PRAGMA query_only = 1")
                try Library.tune(connection)
                return connection
            }
        case .postgres(let conninfo):
            let connection = try PostgresDatabase(conninfo)
            try PostgresSchema.migrate(connection)
            writer = Locked(connection)
            groupCommit = nil
            readers = ConnectionPool {
                let connection = try PostgresDatabase(conninfo)
                try connection.execute("SET default_transaction_read_only = on")
                return connection
            }
        }
        if access == .exclusive {
            // Whatever a crashed process left in (this host's) staging/ was never
            // imported: a file is part of the library only once its rows are committed.
            Staging(files: files).clean()
            try recoverPlainFiles()
        }
    }

    /// Each connection reads through its own memory map of the database's first 64 MiB
    /// (no copy into SQLite's cache), beyond it into its own 16 MiB cache. Pages of the
    /// map that were read count in the daemon's resident size: with the whole file
    /// mapped, one walk of All Photos of 1,000,000 left the daemon at 374 MB in `top`
    /// (docs/performance.md, "Scale").
    static func tune(_ connection: SQLiteConnection) throws {
        try connection.execute("PRAGMA mmap_size = 67108864; PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY")
    }

    /// What marks this host's plain files that are being written (`unfinished`): 1 with
    /// SQLite; with PostgreSQL a number of the host's name, so that a host that starts
    /// discards only its own (`recoverPlainFiles`).
    private static func unfinishedMark(backend: Backend, host: String) -> Int64 {
        guard backend != .sqlite else { return 1 }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 63 bits, never 0 or 1
        for byte in host.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int64(hash >> 1) | 2
    }

    /// Whether a file of the library's without a row may be another host's work in
    /// progress (a blob or a plain file being created, whose row is not committed yet):
    /// where several hosts serve the library, one touched within the last hour.
    func isOtherHostsWork(_ st: stat, now: Int64) -> Bool {
        backend != .sqlite && Int64(st.st_ctim.tv_sec) > now - 3600
    }

    /// The PostgreSQL server process of the writer connection: notifications it sent
    /// are this daemon's own changes.
    public var writerBackendPID: Int32? {
        writer.withLock { ($0 as? PostgresDatabase)?.backendPID }
    }

    /// How much a commit waits for the disk.
    public enum Durability: Sendable {
        /// On disk when the commit returns (fsync of the WAL): imports, versions, and every
        /// change a user makes by name.
        case durable
        /// In the WAL and seen by every reader at once, on disk with the next durable
        /// commit or checkpoint: the row of a file just created, which a crash may lose
        /// along with the bytes that were still being written to it.
        case lazy
        /// As `lazy`, and on disk within seconds even when no durable commit follows
        /// (`GroupCommit.syncSoon`), or at once with `makeCommittedDurable` (an fsync):
        /// a plain file's mode and times, as durable as a file system makes a chmod or
        /// a utimensat.
        case soon
    }

    /// Runs `body` in a write transaction: every change it makes is committed together,
    /// or none is (a thrown error rolls back).
    /// With SQLite the commit itself never waits for the disk; a durable one is made so
    /// afterwards, outside the writer lock, together with the commits of other writers
    /// that commit meanwhile (`GroupCommit`).
    public func write<T>(_ durability: Durability = .durable, _ body: (Transaction) throws -> T) throws -> T {
        if let hook = beforeWrite.withLock({ $0 }), hook() { beforeWrite.withLock { $0 = nil } }
        writes.withLock { $0.started &+= 1 }
        defer { writes.withLock { $0.ended &+= 1 } }
        let (result, commit) = try writer.withLock { db in
            let syncedByServer = durability != .lazy && groupCommit == nil
            let result = try db.transaction(.write(durable: syncedByServer)) { try body(Transaction(db: db, library: self)) }
            return (result, groupCommit?.noteCommit())
        }
        if let commit, let groupCommit {
            switch durability {
            case .durable: groupCommit.waitUntilDurable(commit)
            case .soon: groupCommit.syncSoon()
            case .lazy: break
            }
        }
        return result
    }

    /// Returns once every commit made so far is on disk: an fsync of a file whose row
    /// changed by a `lazy` or `soon` commit. (PostgreSQL's commits are on disk when they
    /// return, but for `lazy` ones, whose rows a crash may lose with their file.)
    public func makeCommittedDurable() {
        groupCommit?.makeCommittedDurable()
    }

    /// Durable commits of this process so far, and the syncs of SQLite's log that made
    /// them so (fewer when writers committed at once); nil with PostgreSQL.
    public var durableCommits: (commits: UInt64, syncs: UInt64)? { groupCommit?.counts }

    /// The tests' way to hold a sync of SQLite's log: `hook` runs on the syncing writer's
    /// thread before each sync, outside every lock (nil: none).
    public func setBeforeLogSync(_ hook: (@Sendable () -> Void)?) { groupCommit?.setBeforeSync(hook) }

    /// The tests' way to let another host act between a step of this one and the write
    /// transaction that follows it (a race otherwise won once in thousands of calls):
    /// `hook` runs on the writing thread before each write transaction begins, outside
    /// every lock of this library, until it returns true; then it is dropped.
    public func setBeforeWrite(_ hook: (@Sendable () -> Bool)?) { beforeWrite.withLock { $0 = hook } }

    /// Runs `body` with a reader connection; `snapshot` makes every statement see one
    /// snapshot of the library.
    public func read<T>(snapshot: Bool = false, _ body: (Records) throws -> T) throws -> T {
        try readers.withConnection { db in
            if snapshot { return try db.transaction(.snapshot) { try body(Records(db: db, library: self)) } }
            return try body(Records(db: db, library: self))
        }
    }

    // MARK: start-up recovery

    /// Plain files that were created through a mount and never closed (the daemon died
    /// while they were written) are discarded, as a file in staging/ would be: nobody was
    /// told they were written. Bytes in plain/ that no row names are removed.
    private func recoverPlainFiles() throws {
        let unfinished = try write { tx in try tx.discardUnfinishedPlainFiles() }
        for file in unfinished {
            Log.warning("discarded \(file.name): it was being written when albumfs stopped, and never closed")
        }
        try removeUnnamedPlainBytes()
        for file in unfinished { try files.remove(.plainFile(file.id)) }
    }

    /// Removes bytes in plain/ that no plain file's row names (a plain file deleted while
    /// the daemon ran, whose bytes removal failed; sidecars deleted for good with their
    /// photo). Returns how many.
    @discardableResult
    func removeUnnamedPlainBytes(now: Int64 = nowSeconds()) throws -> Int {
        let known = Set(try read { try $0.allPlainFileIDs() })
        var removed = 0
        for name in try files.names(in: .plainFiles) where Int64(name).map({ !known.contains($0) }) ?? true {
            if let st = try files.status(LibraryPath.plainFiles.appending(name)), isOtherHostsWork(st, now: now) { continue }
            if try files.remove(LibraryPath.plainFiles.appending(name)) { removed += 1 }
        }
        return removed
    }
}

/// Reader connections, one per concurrent reader, reused.
final class ConnectionPool: @unchecked Sendable {
    private let open: () throws -> any Database
    private let idle = Locked<[any Database]>([])

    init(open: @escaping () throws -> any Database) { self.open = open }

    func withConnection<T>(_ body: (any Database) throws -> T) throws -> T {
        let connection = try idle.withLock { $0.popLast() } ?? open()
        defer { idle.withLock { $0.append(connection) } }
        return try body(connection)
    }
}

/// An advisory lock (flock), held for the life of a mount or a writing command, so that
/// two processes never write one library at once: on the library directory (SQLite), or
/// on this host's lock file (`hosts/HOST.lock`, PostgreSQL: each host has its own).
public final class LibraryLock: Sendable {
    private let descriptor: FileDescriptor

    public init(path: String, host: String? = nil) throws {
        let root = Library.normalized(path)
        switch try Library.backend(ofLibrary: root) {
        case nil:
            throw LibraryError.notALibrary(root)
        case .sqlite:
            descriptor = try SystemCalls.open(root, flags: O_RDONLY | O_DIRECTORY)
        case .postgres:
            let files = try LibraryFiles(root: root)
            try files.makeFolder(.hosts)
            descriptor = try files.open(.hostLock(try Library.hostName(host)), flags: O_RDWR | O_CREAT, mode: 0o600)
        }
        while flock(descriptor.raw, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == EWOULDBLOCK { throw LibraryError.locked(root) }
            throw LibraryError.io("cannot lock \(root)", errno: code)
        }
    }
}
