import Foundation
import Glibc

/// An open library: its files, database connections and lock. One per process.
///
/// Writes go through one writer connection, serialized by a lock, each in a
/// `BEGIN IMMEDIATE` transaction that the caller owns (`write`): one filesystem operation
/// is one transaction, all or nothing. Reads take a connection of their own from a pool,
/// so that readers on many threads never wait for each other (WAL mode).
public final class Library: Sendable {
    /// The library folder, absolute.
    public let root: String
    public let files: LibraryFiles
    public let blobs: BlobStore
    let writer: Locked<WriterConnection>
    let readers: ConnectionPool
    private let lock: LibraryLock?

    /// How an open library is locked against other processes.
    public enum Access: Sendable {
        /// Shared use: commands that only read (info, stats, albums, check).
        case reader
        /// Sole use: a mount, or a command that writes (import, gc, check --repair).
        case exclusive
    }

    /// Creates a new library at `path`: the directory (0700), its subdirectories and the
    /// database. The directory may exist if it is empty.
    @discardableResult
    public static func create(at path: String) throws -> Library {
        let root = Library.normalized(path)
        if let st = try SystemCalls.status(root) {
            if try SystemCalls.status(root + "/" + LibraryPath.database.relative) != nil {
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
        // Create the database file ourselves so that it is private from the start;
        // SQLite gives its -wal and -shm files the same mode.
        _ = try files.open(.database, flags: O_CREAT | O_EXCL | O_WRONLY, mode: 0o600)
        return try Library(root: root, access: .exclusive)
    }

    /// Opens an existing library. An exclusive open takes the library's lock, or uses
    /// `lock` when the caller took it already (the mount takes it before it forks).
    public static func open(at path: String, access: Access, lock: LibraryLock? = nil) throws -> Library {
        let root = Library.normalized(path)
        guard try SystemCalls.status(root + "/" + LibraryPath.database.relative) != nil else {
            throw LibraryError.notALibrary(root)
        }
        return try Library(root: root, access: access, lock: lock)
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

    private init(root: String, access: Access, lock givenLock: LibraryLock? = nil) throws {
        self.root = root
        lock = access == .exclusive ? try (givenLock ?? LibraryLock(path: root)) : nil
        files = try LibraryFiles(root: root)
        blobs = BlobStore(files: files)
        if access == .exclusive {
            // Folders a newer layout added or renamed, so that old libraries work.
            if files.exists(.oldScratch) && !files.exists(.plainFiles) {
                try files.rename(.oldScratch, to: .plainFiles, replace: false)
            }
            for folder in LibraryPath.folders { try files.makeFolder(folder) }
        }
        let connection = try Connection(path: files.absolute(.database))
        try connection.execute("PRAGMA journal_mode = WAL")
        // FULL: a commit is on disk when it returns (close() == 0 means durable).
        try connection.execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
        try Library.tune(connection)
        try Schema.migrate(connection)
        writer = Locked(WriterConnection(connection))
        readers = ConnectionPool(path: files.absolute(.database))
        if access == .exclusive {
            // Whatever a crashed process left in staging/ was never imported: a file is
            // part of the library only once its rows are committed.
            Staging(files: files).clean()
            try recoverPlainFiles()
        }
    }

    static func tune(_ connection: Connection) throws {
        try connection.execute("PRAGMA mmap_size = 268435456; PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY")
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
    }

    /// Runs `body` in a write transaction: every change it makes is committed together,
    /// or none is (a thrown error rolls back).
    public func write<T>(_ durability: Durability = .durable, _ body: (Transaction) throws -> T) throws -> T {
        try writer.withLock { w in
            try w.setDurability(durability)
            return try w.connection.transaction { try body(Transaction(db: w.connection, library: self)) }
        }
    }

    /// Runs `body` with a reader connection; `snapshot` makes every statement see one
    /// snapshot of the library.
    public func read<T>(snapshot: Bool = false, _ body: (Records) throws -> T) throws -> T {
        try readers.withConnection { db in
            if snapshot { return try db.transaction(immediate: false) { try body(Records(db: db, library: self)) } }
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
    func removeUnnamedPlainBytes() throws -> Int {
        let known = Set(try read { try $0.allPlainFileIDs() })
        var removed = 0
        for name in try files.names(in: .plainFiles) where Int64(name).map({ !known.contains($0) }) ?? true {
            if try files.remove(LibraryPath.plainFiles.appending(name)) { removed += 1 }
        }
        return removed
    }
}

/// The writer connection and the durability its next commit has.
final class WriterConnection {
    let connection: Connection
    private var durability: Library.Durability = .durable

    init(_ connection: Connection) { self.connection = connection }

    func setDurability(_ wanted: Library.Durability) throws {
        guard wanted != durability else { return }
        try connection.execute(wanted == .durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        durability = wanted
    }
}

/// Reader connections, one per concurrent reader, reused.
final class ConnectionPool: @unchecked Sendable {
    private let path: String
    private let idle = Locked<[Connection]>([])

    init(path: String) { self.path = path }

    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        let connection = try idle.withLock { $0.popLast() } ?? open()
        defer { idle.withLock { $0.append(connection) } }
        return try body(connection)
    }

    private func open() throws -> Connection {
        let connection = try Connection(path: path)
        try connection.execute("PRAGMA query_only = 1")
        try Library.tune(connection)
        return connection
    }
}

/// An advisory lock (flock) on the library directory, held for the life of a mount or
/// a writing command, so that two processes never write one library at once.
public final class LibraryLock: Sendable {
    private let descriptor: FileDescriptor

    public init(path: String) throws {
        let root = Library.normalized(path)
        guard try SystemCalls.status(root + "/" + LibraryPath.database.relative) != nil else {
            throw LibraryError.notALibrary(root)
        }
        descriptor = try SystemCalls.open(root, flags: O_RDONLY | O_DIRECTORY)
        while flock(descriptor.raw, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == EWOULDBLOCK { throw LibraryError.locked(root) }
            throw LibraryError.io("cannot lock \(root)", errno: code)
        }
    }
}
