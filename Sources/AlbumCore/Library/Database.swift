/// Which SQL a database speaks, for the few statements that differ (the schema, the
/// checks of a database's own integrity). Every other statement of the storage core is
/// written once, in SQL both understand (`?` placeholders, `ON CONFLICT`, `RETURNING`).
public enum SQLDialect: Sendable {
    case sqlite
    case postgres
}

/// What kind of transaction `Database.transaction` opens.
public enum TransactionKind: Sendable {
    /// A write transaction: it holds the library's single writer lock from its first
    /// statement (SQLite `BEGIN IMMEDIATE`; on PostgreSQL a transaction-scoped advisory
    /// lock that every host's writers take), so that writers are serialized as one
    /// writer and never deadlock. `durable`: on disk when the commit returns.
    case write(durable: Bool)
    /// A read-only snapshot: every statement sees the library as of the first one.
    case snapshot
}

/// One connection to the library's database: SQLite (`SQLiteConnection`, the embedded
/// default) or PostgreSQL (`PostgresDatabase`, several hosts). Not thread-safe: the
/// library hands each connection to one thread at a time. Statements are prepared once
/// per connection and cached.
public protocol Database: AnyObject {
    var dialect: SQLDialect { get }

    /// Runs statements that take no parameters and return no rows.
    func execute(_ sql: String) throws

    /// Runs `sql` with `values` bound to its `?` placeholders, calling `each` with every
    /// row until it returns false.
    func step(_ sql: String, _ values: [SQLValue], _ each: (Row) throws -> Bool) throws

    /// Rows changed by the last statement.
    var changes: Int { get }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it
    /// throws.
    func transaction<T>(_ kind: TransactionKind, _ body: () throws -> T) throws -> T

    /// The database's plan for `sql`, one line per step.
    func queryPlan(_ sql: String) throws -> [String]
}

extension Database {
    /// The end of every transaction, after its BEGIN: `body`, then COMMIT, or ROLLBACK
    /// when either throws.
    func committing<T>(_ body: () throws -> T) throws -> T {
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs a statement that returns no rows.
    public func run(_ sql: String, _ values: any SQLConvertible...) throws {
        try step(sql, values.map(\.sqlValue)) { _ in true }
    }

    public func run(_ sql: String, bindings values: [any SQLConvertible]) throws {
        try step(sql, values.map(\.sqlValue)) { _ in true }
    }

    /// All rows of a query, each mapped by `map`.
    public func query<T>(_ sql: String, _ values: any SQLConvertible..., map: (Row) throws -> T) throws -> [T] {
        try query(sql, bindings: values, map: map)
    }

    /// All rows of a query whose values are a list (an `IN (?, ?, ...)`).
    public func query<T>(_ sql: String, bindings values: [any SQLConvertible], map: (Row) throws -> T) throws -> [T] {
        var result: [T] = []
        try step(sql, values.map(\.sqlValue)) { row in
            result.append(try map(row))
            return true
        }
        return result
    }

    /// The first row of a query, mapped by `map`, or nil when there is none.
    public func first<T>(_ sql: String, _ values: any SQLConvertible..., map: (Row) throws -> T) throws -> T? {
        var found: T?
        try step(sql, values.map(\.sqlValue)) { row in
            found = try map(row)
            return false
        }
        return found
    }

    /// The integer in the first column of the first row, or nil.
    public func scalar(_ sql: String, _ values: any SQLConvertible...) throws -> Int64? {
        var found: Int64?
        try step(sql, values.map(\.sqlValue)) { row in
            found = row.isNull(0) ? nil : row.int64(0)
            return false
        }
        return found
    }
}
