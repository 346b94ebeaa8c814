import CSQLite
import Foundation

/// An error from SQLite, with the statement that caused it.
public struct SQLiteError: Error, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public let sql: String?

    public var description: String {
        if let sql { return "SQLite error \(code): \(message) (in: \(sql))" }
        return "SQLite error \(code): \(message)"
    }

    /// SQLITE_FULL: the disk is full.
    public var isDiskFull: Bool { code & 0xff == SQLITE_FULL }
    /// SQLITE_CONSTRAINT: a unique or foreign key constraint failed.
    public var isConstraint: Bool { code & 0xff == SQLITE_CONSTRAINT }
}

/// One SQLite connection. Not thread-safe: the library hands each connection to one
/// thread at a time (see `ConnectionPool`). Prepared statements are cached for the life
/// of the connection, and finalized with it.
public final class Connection: @unchecked Sendable {
    let handle: OpaquePointer
    private var cache: [String: Statement] = [:]

    public init(path: String, readOnly: Bool = false) throws {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE))
            | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message, sql: nil)
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
        SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements that take no parameters and return no rows.
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(message)
            throw SQLiteError(code: rc, message: text, sql: sql)
        }
    }

    /// A prepared statement for `sql`, reset and with its bindings cleared.
    public func prepare(_ sql: String) throws -> Statement {
        if let statement = cache[sql] {
            statement.reset()
            return statement
        }
        let statement = try Statement(connection: self, sql: sql)
        cache[sql] = statement
        PreparedSQL.note(sql)
        return statement
    }

    /// SQLite's plan for `sql`, one line per step ("SEARCH a USING INDEX ...").
    public func queryPlan(_ sql: String) throws -> [String] {
        let explain = try Statement(connection: self, sql: "EXPLAIN QUERY PLAN " + sql)
        var lines: [String] = []
        while try explain.step() {
            lines.append(Row(statement: explain).text(3))
        }
        return lines
    }

    /// Runs a statement that returns no rows.
    public func run(_ sql: String, _ values: any SQLConvertible...) throws {
        try run(sql, bindings: values)
    }

    public func run(_ sql: String, bindings values: [any SQLConvertible]) throws {
        let statement = try prepare(sql)
        try statement.bind(values.map(\.sqlValue))
        while try statement.step() {}
        statement.reset()
    }

    /// All rows of a query, each mapped by `map`.
    public func query<T>(_ sql: String, _ values: any SQLConvertible..., map: (Row) throws -> T) throws -> [T] {
        try query(sql, bindings: values, map: map)
    }

    /// All rows of a query whose values are a list (an `IN (?, ?, ...)`).
    public func query<T>(_ sql: String, bindings values: [any SQLConvertible], map: (Row) throws -> T) throws -> [T] {
        let statement = try prepare(sql)
        try statement.bind(values.map(\.sqlValue))
        defer { statement.reset() }
        var result: [T] = []
        while try statement.step() {
            result.append(try map(Row(statement: statement)))
        }
        return result
    }

    /// The first row of a query, mapped by `map`, or nil when there is none.
    public func first<T>(_ sql: String, _ values: any SQLConvertible..., map: (Row) throws -> T) throws -> T? {
        let statement = try prepare(sql)
        try statement.bind(values.map(\.sqlValue))
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return try map(Row(statement: statement))
    }

    /// The integer in the first column of the first row, or nil.
    public func scalar(_ sql: String, _ values: any SQLConvertible...) throws -> Int64? {
        let statement = try prepare(sql)
        try statement.bind(values.map(\.sqlValue))
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        let row = Row(statement: statement)
        return row.isNull(0) ? nil : row.int64(0)
    }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    public var changes: Int { Int(sqlite3_changes(handle)) }
    public var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in a transaction. `immediate` takes the write lock at the start, so
    /// that two writers never deadlock upgrading their locks.
    public func transaction<T>(immediate: Bool = true, _ body: () throws -> T) throws -> T {
        try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}

/// The SQL texts connections prepare, recorded while `recording` runs: the query-plan
/// test records what browsing asks of SQLite and checks every plan. Off otherwise (one
/// atomic load per new statement, and statements are prepared once per connection).
public enum PreparedSQL {
    private static let texts = Locked<Set<String>?>(nil)

    static func note(_ sql: String) {
        texts.withLock { $0?.insert(sql) }
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
