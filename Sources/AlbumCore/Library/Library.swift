import Foundation
import Glibc

/// The directories and files of a library (PRODUCT.md section 1).
public struct LibraryPaths: Sendable {
    public let root: String
    public var database: String { root + "/library.db" }
    public var originals: String { root + "/originals" }
    public var thumbnails: String { root + "/thumbnails" }
    public var staging: String { root + "/staging" }
    public var scratch: String { root + "/scratch" }

    public init(root: String) {
        var path = root
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.root = path
    }
}

/// An open library: its database connections, blob store and lock. One per process.
///
/// Writes go through one writer connection, serialized by a lock, each in a
/// `BEGIN IMMEDIATE` transaction; reads take a connection of their own from a pool, so
/// that readers on many threads never wait for each other (WAL mode).
public final class Library: Sendable {
    public let paths: LibraryPaths
    public let blobs: BlobStore
    let writer: Locked<Connection>
    let readers: ConnectionPool
    private let lock: LibraryLock?
    /// The library folder's descriptor, opened on first use (see `openInside`).
    let rootDescriptor = Locked<Int32>(-1)

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
        let paths = LibraryPaths(root: path)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: paths.root, isDirectory: &isDirectory) {
            if FileManager.default.fileExists(atPath: paths.database) {
                throw LibraryError.alreadyALibrary(paths.root)
            }
            guard isDirectory.boolValue else {
                throw LibraryError.io("\(paths.root) exists and is not a directory", errno: ENOTDIR)
            }
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: paths.root)) ?? []
            if !entries.isEmpty {
                throw LibraryError.io("\(paths.root) is not empty; choose an empty or new directory", errno: ENOTEMPTY)
            }
            chmod(paths.root, 0o700)
        } else {
            try makeDirectory(paths.root)
        }
        for directory in [paths.originals, paths.thumbnails, paths.staging, paths.scratch] {
            try makeDirectory(directory)
        }
        // Create the database file ourselves so that it is private from the start;
        // SQLite gives its -wal and -shm files the same mode.
        let fd = Glibc.open(paths.database, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LibraryError.io(paths.database, errno: errno) }
        close(fd)
        return try Library(paths: paths, access: .exclusive)
    }

    /// Opens an existing library. An exclusive open takes the library's lock, or uses
    /// `lock` when the caller took it already (the mount takes it before it forks).
    public static func open(at path: String, access: Access, lock: LibraryLock? = nil) throws -> Library {
        let paths = LibraryPaths(root: path)
        guard FileManager.default.fileExists(atPath: paths.database) else {
            throw LibraryError.notALibrary(paths.root)
        }
        return try Library(paths: paths, access: access, lock: lock)
    }

    private init(paths: LibraryPaths, access: Access, lock givenLock: LibraryLock? = nil) throws {
        self.paths = paths
        lock = access == .exclusive ? try (givenLock ?? LibraryLock(path: paths.root)) : nil
        // Directories a newer layout added are created on open, so old libraries work.
        for directory in [paths.originals, paths.thumbnails, paths.staging, paths.scratch]
        where !FileManager.default.fileExists(atPath: directory) {
            try Library.makeDirectory(directory)
        }
        let connection = try Connection(path: paths.database)
        try connection.execute("PRAGMA journal_mode = WAL")
        // FULL: a commit is on disk when it returns (close() == 0 means durable).
        try connection.execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
        try Library.tune(connection)
        try Schema.migrate(connection)
        writer = Locked(connection)
        readers = ConnectionPool(path: paths.database)
        blobs = BlobStore(paths: paths)
        if access == .exclusive {
            // Whatever a crashed process left in staging/ was never imported: a file is
            // part of the library only once its rows are committed.
            _ = Staging(paths: paths).clean()
        }
    }

    deinit {
        rootDescriptor.withLock { if $0 >= 0 { close($0) } }
    }

    static func tune(_ connection: Connection) throws {
        try connection.execute("PRAGMA mmap_size = 268435456; PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY")
    }

    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw LibraryError.io("cannot create \(path)", errno: errno)
        }
    }

    /// Runs `body` in a write transaction on the writer connection.
    public func write<T>(_ body: (Connection) throws -> T) throws -> T {
        try writer.withLock { db in
            try db.transaction { try body(db) }
        }
    }

    /// Runs `body` with a reader connection. Use `readTransaction` when several
    /// statements must see one snapshot.
    public func read<T>(_ body: (Connection) throws -> T) throws -> T {
        try readers.withConnection(body)
    }

    /// Runs `body` in a read transaction: every statement sees the same snapshot.
    public func readTransaction<T>(_ body: (Connection) throws -> T) throws -> T {
        try readers.withConnection { db in
            try db.transaction(immediate: false) { try body(db) }
        }
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
    private let fd: Int32

    public init(path: String) throws {
        guard FileManager.default.fileExists(atPath: LibraryPaths(root: path).database) else {
            throw LibraryError.notALibrary(LibraryPaths(root: path).root)
        }
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw LibraryError.io("cannot open \(path)", errno: errno) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw LibraryError.locked(path) }
            throw LibraryError.io("cannot lock \(path)", errno: code)
        }
        self.fd = fd
    }

    deinit { close(fd) }
}
