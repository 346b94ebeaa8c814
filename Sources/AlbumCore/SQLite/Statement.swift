import CSQLite

/// A value bound to a statement parameter.
public enum SQLValue: Sendable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])
}

public protocol SQLConvertible {
    var sqlValue: SQLValue { get }
}

extension Int: SQLConvertible { public var sqlValue: SQLValue { .int(Int64(self)) } }
extension Int64: SQLConvertible { public var sqlValue: SQLValue { .int(self) } }
extension UInt64: SQLConvertible { public var sqlValue: SQLValue { .int(Int64(bitPattern: self)) } }
extension Int32: SQLConvertible { public var sqlValue: SQLValue { .int(Int64(self)) } }
extension Bool: SQLConvertible { public var sqlValue: SQLValue { .int(self ? 1 : 0) } }
extension Double: SQLConvertible { public var sqlValue: SQLValue { .double(self) } }
extension String: SQLConvertible { public var sqlValue: SQLValue { .text(self) } }
extension Optional: SQLConvertible where Wrapped: SQLConvertible {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

extension SQLValue: SQLConvertible { public var sqlValue: SQLValue { self } }
extension Array: SQLConvertible where Element == UInt8 { public var sqlValue: SQLValue { .blob(self) } }

/// A prepared statement, owned by its connection's cache. `deinit` finalizes it.
public final class Statement {
    let handle: OpaquePointer
    unowned let connection: SQLiteConnection
    let sql: String

    init(connection: SQLiteConnection, sql: String) throws {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw connection.error(rc, sql) }
        self.handle = statement
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func bind(_ values: [SQLValue]) throws {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .int(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .double(let v): rc = sqlite3_bind_double(handle, index, v)
            case .text(let v):
                rc = v.utf8CString.withUnsafeBufferPointer {
                    shim_sqlite3_bind_text_transient(handle, index, $0.baseAddress, Int32($0.count - 1))
                }
            case .blob(let v):
                rc = v.withUnsafeBytes {
                    shim_sqlite3_bind_blob_transient(handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count))
                }
            }
            guard rc == SQLITE_OK else { throw connection.error(rc, sql) }
        }
    }

    /// Steps once: true when a row is ready, false when done.
    func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.error(rc, sql)
            sqlite3_reset(handle)
            throw error
        }
    }
}

/// The current row of a query; valid only inside the closure it is passed to. SQLite's
/// values are read from the statement; PostgreSQL's arrive as text and are parsed.
public struct Row {
    private enum Source {
        case sqlite(OpaquePointer)
        case text([String?])
    }
    private let source: Source

    init(sqlite statement: OpaquePointer) { source = .sqlite(statement) }
    init(text values: [String?]) { source = .text(values) }

    private func value(_ column: Int32) -> String? {
        guard case .text(let values) = source, Int(column) < values.count else { return nil }
        return values[Int(column)]
    }

    public func isNull(_ column: Int32) -> Bool {
        switch source {
        case .sqlite(let s): return sqlite3_column_type(s, column) == SQLITE_NULL
        case .text: return value(column) == nil
        }
    }
    public func int64(_ column: Int32) -> Int64 {
        switch source {
        case .sqlite(let s): return sqlite3_column_int64(s, column)
        case .text:
            guard let text = value(column) else { return 0 }
            if let number = Int64(text) { return number }
            if text == "t" { return 1 }  // a boolean expression
            return Double(text).map { Int64($0) } ?? 0  // a numeric (sum, avg)
        }
    }
    public func int(_ column: Int32) -> Int { Int(int64(column)) }
    public func double(_ column: Int32) -> Double {
        switch source {
        case .sqlite(let s): return sqlite3_column_double(s, column)
        case .text: return value(column).flatMap(Double.init) ?? 0
        }
    }
    public func bool(_ column: Int32) -> Bool { int64(column) != 0 }
    public func text(_ column: Int32) -> String {
        switch source {
        case .sqlite(let s):
            guard let pointer = sqlite3_column_text(s, column) else { return "" }
            let count = Int(sqlite3_column_bytes(s, column))
            return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
        case .text: return value(column) ?? ""
        }
    }
    public func blob(_ column: Int32) -> [UInt8] {
        switch source {
        case .sqlite(let s):
            let count = Int(sqlite3_column_bytes(s, column))
            guard count > 0, let pointer = sqlite3_column_blob(s, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: pointer, count: count))
        case .text:
            // bytea in PostgreSQL's hex output: \x0a1b...
            return PostgresDatabase.bytes(ofHex: value(column) ?? "")
        }
    }
    public func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }
    public func optionalInt(_ column: Int32) -> Int? { isNull(column) ? nil : int(column) }
    public func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }
    public func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
}
