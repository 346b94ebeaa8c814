import CPostgres
import Foundation

/// An error from PostgreSQL: its SQLSTATE (the five-character code that says what
/// happened, e.g. 40001 for a serialization failure), its message, and the statement.
public struct PostgresError: Error, CustomStringConvertible {
    public let sqlState: String?
    public let message: String
    public let sql: String?

    public var description: String {
        let code = sqlState.map { "PostgreSQL error \($0)" } ?? "PostgreSQL error"
        return sql.map { "\(code): \(message) (in: \($0))" } ?? "\(code): \(message)"
    }

    /// 53100, disk_full: the server's disk is full.
    public var isDiskFull: Bool { sqlState == "53100" }
}

/// A notification sent with NOTIFY to a channel this connection listens to.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    /// The server process that sent it (a connection knows its own: `backendPID`).
    public let senderPID: Int32

    public init(channel: String, payload: String, senderPID: Int32) {
        self.channel = channel
        self.payload = payload
        self.senderPID = senderPID
    }
}

/// One connection to PostgreSQL through libpq. Not thread-safe: one thread at a time,
/// as with `Connection` for SQLite. Statements are prepared once per connection, by name,
/// and run with text parameters; rows come back as text (`nil` for NULL).
public final class PostgresConnection: @unchecked Sendable {
    private let conn: OpaquePointer
    /// Statements prepared on this connection, by their SQL: the name each got.
    private var prepared: [String: String] = [:]

    /// `conninfo`: a libpq connection string (`host=/run/dir dbname=albumfs`) or URI
    /// (`postgresql://host/db`).
    public init(_ conninfo: String) throws {
        guard let conn = PQconnectdb(conninfo) else {
            throw PostgresError(sqlState: nil, message: "out of memory", sql: nil)
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = Self.text(PQerrorMessage(conn))
            PQfinish(conn)
            throw PostgresError(sqlState: nil, message: "cannot connect: \(message)", sql: nil)
        }
        self.conn = conn
    }

    deinit { PQfinish(conn) }

    /// The server process serving this connection.
    public var backendPID: Int32 { PQbackendPID(conn) }

    /// Whether the connection is gone (the server restarted or ended this session).
    /// libpq notices when a statement fails on it.
    public var isLost: Bool { PQstatus(conn) != CONNECTION_OK }

    /// Connects again with the same settings; statements are prepared again as used.
    public func reconnect() throws {
        PQreset(conn)
        prepared = [:]
        guard PQstatus(conn) == CONNECTION_OK else {
            throw PostgresError(sqlState: nil, message: "cannot connect again: \(Self.text(PQerrorMessage(conn)))", sql: nil)
        }
    }

    /// Runs SQL without parameters (several statements may be separated by `;`).
    public func execute(_ sql: String) throws {
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        try check(result, sql)
    }

    /// Runs `sql`, several statements, in one round trip, and returns the first column of
    /// the first row of the first statement's result (nil: no row, or NULL), read even
    /// when a later statement fails or the connection is lost during it; with the error
    /// of the first statement that failed, if one did.
    public func executeKeepingFirstValue(_ sql: String) -> (first: String?, error: PostgresError?) {
        guard PQsendQuery(conn, sql) == 1 else {
            return (nil, PostgresError(sqlState: nil, message: Self.text(PQerrorMessage(conn)), sql: sql))
        }
        var first: String?, error: PostgresError?, isFirst = true
        while let result = PQgetResult(conn) {
            defer { PQclear(result) }
            if isFirst, PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) > 0, PQgetisnull(result, 0, 0) == 0 {
                first = String(cString: PQgetvalue(result, 0, 0))
            }
            isFirst = false
            if error == nil {
                do { try check(result, sql) } catch let failed as PostgresError { error = failed } catch {}
            }
        }
        if error == nil, PQstatus(conn) != CONNECTION_OK {
            error = PostgresError(sqlState: nil, message: Self.text(PQerrorMessage(conn)), sql: sql)
        }
        return (first, error)
    }

    /// Rows changed by the last statement run with `query` (its command tag's count).
    public private(set) var changes = 0

    /// Runs `sql` (placeholders `$1`, `$2`, ...), prepared once on this connection, with
    /// `parameters` as text (nil: NULL). Returns the rows, each a column list.
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = []) throws -> [[String?]] {
        var rows: [[String?]] = []
        try query(sql, parameters, types: []) { rows.append($0); return true }
        return rows
    }

    /// Runs `sql` as `query` does, calling `each` with every row until it returns false.
    /// `types`: the parameters' type OIDs when the statement is prepared (0, or missing:
    /// the server infers the type from where the parameter stands).
    public func query(_ sql: String, _ parameters: [String?], types: [UInt32],
                      _ each: ([String?]) throws -> Bool) throws {
        let name: String
        if let known = prepared[sql] {
            name = known
        } else {
            name = "s\(prepared.count + 1)"
            let result = types.withUnsafeBufferPointer { oids in
                PQprepare(conn, name, sql, Int32(types.count), types.isEmpty ? nil : oids.baseAddress)
            }
            defer { PQclear(result) }
            try check(result, sql)
            prepared[sql] = name
        }
        let result = withCStrings(parameters) { values in
            PQexecPrepared(conn, name, Int32(parameters.count), values, nil, nil, 0)
        }
        defer { PQclear(result) }
        try check(result, sql)
        changes = Int(Self.text(PQcmdTuples(result))) ?? 0
        let count = PQntuples(result), columns = PQnfields(result)
        for row in 0..<count {
            let values: [String?] = (0..<columns).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            }
            if !(try each(values)) { break }
        }
    }

    /// Starts listening to `channel` (an SQL identifier: letters, digits, underscores).
    public func listen(_ channel: String) throws {
        guard channel.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw PostgresError(sqlState: nil, message: "not a channel name: \(channel)", sql: nil)
        }
        try execute("LISTEN \(channel)")
    }

    /// Notifications that have arrived, waiting up to `timeout` seconds for the first
    /// (0: only those already here). PostgreSQL delivers a notification when the
    /// transaction that sent it commits, never before, and never one sent while this
    /// connection was not listening (after a reconnection, the caller must assume it
    /// missed some).
    public func notifications(timeout: Double) throws -> [PostgresNotification] {
        var found = try drain()
        let deadline = Date().addingTimeInterval(timeout)
        while found.isEmpty {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { break }
            let ready = shim_pq_wait_readable(conn, Int32(min(left * 1000, 1000).rounded(.up)))
            if ready < 0 && errno != EINTR {
                throw PostgresError(sqlState: nil, message: "waiting for notifications: \(String(cString: strerror(errno)))", sql: nil)
            }
            found = try drain()
        }
        return found
    }

    /// Reads what the socket holds and returns the notifications libpq has parsed. A lost
    /// connection is an error (a listener that does not know it lost its connection
    /// would wait for ever, having missed what was sent meanwhile).
    private func drain() throws -> [PostgresNotification] {
        guard PQconsumeInput(conn) == 1, PQstatus(conn) == CONNECTION_OK else {
            throw PostgresError(sqlState: nil, message: "connection lost: \(Self.text(PQerrorMessage(conn)))", sql: nil)
        }
        var found: [PostgresNotification] = []
        while let notice = PQnotifies(conn) {
            found.append(PostgresNotification(channel: String(cString: notice.pointee.relname),
                                              payload: String(cString: notice.pointee.extra),
                                              senderPID: notice.pointee.be_pid))
            PQfreemem(notice)
        }
        return found
    }

    private func check(_ result: OpaquePointer?, _ sql: String) throws {
        guard let result else {
            throw PostgresError(sqlState: nil, message: Self.text(PQerrorMessage(conn)), sql: sql)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PostgresError(sqlState: state, message: Self.text(PQresultErrorMessage(result)), sql: sql)
        }
    }

    private static func text(_ pointer: UnsafePointer<CChar>?) -> String {
        pointer.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
    }
}

/// Calls `body` with `strings` as C strings (nil stays a null pointer), alive for the call.
private func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) throws -> R) rethrows -> R {
    let copies = strings.map { $0.map { strdup($0) } ?? nil }
    defer { copies.forEach { free($0) } }
    return try body(copies.map { $0.map { UnsafePointer($0) } })
}
