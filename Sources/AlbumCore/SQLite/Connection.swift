import CSQLite
import Foundation

/// An error from SQLite, with the statement that caused it.
public struct SQLiteError: Error, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public let sql: String?
    /// The errno of the system call that failed under it (`sqlite3_system_errno`), or 0.
    public var systemErrno: Int32 = 0

    public var description: String {
        if let sql { return "SQLite error \(code): \(message) (in: \(sql))" }
        return "SQLite error \(code): \(message)"
    }

    /// SQLITE_FULL: the disk is full.
    public var isDiskFull: Bool { code & 0xff == SQLITE_FULL }
    /// SQLITE_CANTOPEN for want of a descriptor: a new connection, or its log, could not
    /// be opened at this process's limit of open files (`DescriptorLimit`).
    public var isOutOfDescriptors: Bool { code & 0xff == SQLITE_CANTOPEN && DescriptorLimit.isReached(systemErrno) }
    /// SQLITE_CONSTRAINT: a unique or foreign key constraint failed.
    public var isConstraint: Bool { code & 0xff == SQLITE_CONSTRAINT }
}

/// One SQLite connection. Not thread-safe: the library hands each connection to one
/// thread at a time (see `ConnectionPool`). Prepared statements are cached for the life
/// of the connection, and finalized with it.
public final class SQLiteConnection: Database, @unchecked Sendable {
    let handle: OpaquePointer
    private var cache: [String: Statement] = [:]
    /// Whether commits wait for the disk now (`PRAGMA synchronous`: FULL or NORMAL).
    private var durableCommits = true

    public var dialect: SQLDialect { .sqlite }

    public init(path: String, readOnly: Bool = false) throws {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE))
            | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            var failure = SQLiteError(code: rc, message: message, sql: nil)
            if let db {
                failure.systemErrno = sqlite3_system_errno(db)
                sqlite3_close_v2(db)
            }
            throw failure
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        // A writer may hold the lock for the length of one import transaction.
        sqlite3_busy_timeout(db, 30_000)
    }

    deinit {
        cache.removeAll()  // statements finalize in their deinit, before the close
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, _ sql: String?) -> SQLiteError {
        var failure = SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
        failure.systemErrno = sqlite3_system_errno(handle)
        return failure
    }

    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(message)
            var failure = SQLiteError(code: rc, message: text, sql: sql)
            failure.systemErrno = sqlite3_system_errno(handle)  // a new connection opens its log here
            throw failure
        }
    }

    /// A prepared statement for `sql`, reset and with its bindings cleared.
    func prepare(_ sql: String) throws -> Statement {
        if let statement = cache[sql] {
            statement.reset()
            return statement
        }
        let statement = try Statement(connection: self, sql: sql)
        cache[sql] = statement
        PreparedSQL.note(sql)
        return statement
    }

    public func step(_ sql: String, _ values: [SQLValue], _ each: (Row) throws -> Bool) throws {
        let statement = try prepare(sql)
        try statement.bind(values)
        defer { statement.reset() }
        while try statement.step() {
            if !(try each(Row(sqlite: statement.handle))) { break }
        }
    }

    /// SQLite's plan for `sql`, one line per step ("SEARCH a USING INDEX ...").
    public func queryPlan(_ sql: String) throws -> [String] {
        let explain = try Statement(connection: self, sql: "EXPLAIN QUERY PLAN " + sql)
        var lines: [String] = []
        while try explain.step() {
            lines.append(Row(sqlite: explain.handle).text(3))
        }
        return lines
    }

    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// A write takes the write lock at the start (`BEGIN IMMEDIATE`), so that two
    /// writers never deadlock upgrading their locks; its durability is the connection's
    /// `PRAGMA synchronous`, switched only when it changes. (A library's writes commit
    /// with NORMAL and are made durable by `GroupCommit`; schema changes use FULL.)
    public func transaction<T>(_ kind: TransactionKind, _ body: () throws -> T) throws -> T {
        switch kind {
        case .write(let durable):
            if durable != durableCommits {
                // FULL: a commit is on disk when it returns (close() == 0 means durable).
                try execute(durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
                durableCommits = durable
            }
            try execute("BEGIN IMMEDIATE")
        case .snapshot:
            try execute("BEGIN DEFERRED")
        }
        return try committing(body)
    }
}

/// The SQL texts connections prepare, recorded while `recording` runs: the query-plan
/// test records what browsing asks of SQLite and checks every plan. Off otherwise (one
/// atomic load per new statement, and statements are prepared once per connection).
public enum PreparedSQL {
    private static let texts = Locked<Set<String>?>(nil)

    static func note(_ sql: String) {
        _ = texts.withLock { $0?.insert(sql) }
    }

    /// Runs `body` and returns the SQL prepared during it (new statements only: a
    /// statement already cached by a connection is not prepared again).
    public static func recording(_ body: () throws -> Void) rethrows -> Set<String> {
        texts.withLock { $0 = [] }
        defer { texts.withLock { $0 = nil } }
        try body()
        return texts.withLock { $0 ?? [] }
    }
}
