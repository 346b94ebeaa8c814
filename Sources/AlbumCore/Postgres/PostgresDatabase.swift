import Foundation

/// The storage core's statements on PostgreSQL: a `Database` over one libpq connection.
/// The SQL is the same text SQLite runs; the `?` placeholders become `$1`, `$2`, ... once
/// per statement, and values travel as text with their types given when the statement
/// is prepared.
///
/// Writers of every host are serialized by one transaction-scoped advisory lock taken
/// first in each write transaction: the same single-writer model as SQLite's
/// `BEGIN IMMEDIATE`, so that every read-then-write of the storage core (a free name, a
/// link count, the next inode number) stays correct with several hosts, at READ
/// COMMITTED, without retries. Readers never wait for it.
public final class PostgresDatabase: Database, @unchecked Sendable {
    let connection: PostgresConnection
    /// `?` SQL turned into `$n` SQL, once per statement.
    private var translated: [String: String] = [:]
    /// Whether a transaction is open (a lost connection is then that transaction's
    /// failure, never retried behind its back).
    private var inTransaction = false
    /// The advisory lock of the library's writers ("albumfs" in ASCII).
    static let writerLock: Int64 = 0x616c_6275_6d66_73

    public var dialect: SQLDialect { .postgres }

    public init(_ conninfo: String) throws {
        connection = try PostgresConnection(conninfo)
    }

    /// The server process of this connection (notifications say which one sent them).
    public var backendPID: Int32 { connection.backendPID }

    public func execute(_ sql: String) throws {
        try connection.execute(sql)
    }

    /// Runs `body`, connecting again first if the connection was lost, and once more
    /// after connecting again if it is lost during `body`: a server restart or a
    /// session it ended costs a statement outside a transaction nothing, and a
    /// transaction only its own failure.
    private func reconnecting<T>(_ body: () throws -> T) throws -> T {
        if connection.isLost { try connection.reconnect() }
        do {
            return try body()
        } catch where connection.isLost {
            Log.warning("the connection to PostgreSQL was lost; connecting again")
            try connection.reconnect()
            return try body()
        }
    }

    public func step(_ sql: String, _ values: [SQLValue], _ each: (Row) throws -> Bool) throws {
        let text: String
        if let known = translated[sql] {
            text = known
        } else {
            text = Self.numberingPlaceholders(sql)
            translated[sql] = text
            PreparedSQL.note(sql)
        }
        let parameters = values.map(Self.text(of:)), types = values.map(Self.type(of:))
        if inTransaction {
            try connection.query(text, parameters, types: types) { try each(Row(text: $0)) }
        } else {
            try reconnecting { try connection.query(text, parameters, types: types) { try each(Row(text: $0)) } }
        }
    }

    public var changes: Int { connection.changes }

    public func transaction<T>(_ kind: TransactionKind, _ body: () throws -> T) throws -> T {
        switch kind {
        case .write:
            try reconnecting { try execute("BEGIN ISOLATION LEVEL READ COMMITTED") }
        case .snapshot:
            try reconnecting { try execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") }
        }
        inTransaction = true
        defer { inTransaction = false }
        guard case .write(let durable) = kind else { return try committing(body) }
        return try committingWrite {
            try execute("SELECT pg_advisory_xact_lock(\(Self.writerLock))")
            // A lazy commit is in the server's WAL buffers at once, on disk within
            // wal_writer_delay: the same promise as SQLite's synchronous=NORMAL.
            if !durable { try execute("SET LOCAL synchronous_commit = off") }
            do {
                return try body()
            } catch let error as PostgresError where error.sqlState == Self.foreignKeyViolation {
                // A row this change names went between the caller's look and the writer
                // lock: another host removed it meanwhile (a photo a save made vanish, an
                // album deleted). The caller looks again (`changedMeanwhile`); with one
                // host (SQLite) every look and change of a call are in order, and there
                // such an error stays what it is: a defect.
                throw LibraryError.changedMeanwhile("a row it names (\(error.message.prefix { $0 != "\n" }))")
            }
        }
    }

    private static let foreignKeyViolation = "23503"

    /// `committing` for a write: a connection lost during its `COMMIT` leaves the outcome
    /// unknown, since the server may have committed before the session ended (a server
    /// stopped or a session ended by an administrator at that moment). Taken as a
    /// failure, a save that had committed reported an error, and its caller took back
    /// what the committed rows name (docs/scale.md). So the transaction's id is asked
    /// with the `COMMIT`, in the same round trip, and after such a loss a new session
    /// asks the server what became of it (`pg_xact_status`, made for this): committed,
    /// the write succeeded.
    private func committingWrite<T>(_ body: () throws -> T) throws -> T {
        let result: T
        do {
            result = try body()
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
        // No id when it wrote nothing: then nothing is lost either way.
        let (id, failed) = connection.executeKeepingFirstValue("SELECT pg_current_xact_id_if_assigned()::text; COMMIT")
        guard let failed else { return result }
        guard connection.isLost else {
            try? execute("ROLLBACK")
            throw failed
        }
        guard let id, committedAfterAll(id) else { throw failed }
        Log.warning("the connection to PostgreSQL was lost during a commit, which the server had made (transaction \(id)); going on")
        return result
    }

    /// Whether transaction `id`, whose `COMMIT` lost the connection, was committed:
    /// asked through a new session, and again while the server is still ending it.
    private func committedAfterAll(_ id: String) -> Bool {
        let deadline = nowNanoseconds() + 10 * nanosecondsPerSecond
        var warned = false
        while nowNanoseconds() < deadline {
            do {
                if connection.isLost { try connection.reconnect() }
                let status = try connection.query("SELECT pg_xact_status($1::xid8)", [id]).first?.first ?? nil
                if status != "in progress" { return status == "committed" }
            } catch {
                // Once: a server that is down answers the same every 20 ms.
                if !warned { Log.warning("asking PostgreSQL whether transaction \(id) was committed: \(error); asking again for 10 s") }
                warned = true
            }
            usleep(20_000)
        }
        Log.warning("PostgreSQL did not say whether transaction \(id) was committed; it is taken as failed")
        return false
    }

    /// PostgreSQL's generic plan for `sql`: the one it would use for any values of the
    /// parameters (PostgreSQL 15 has no `EXPLAIN (GENERIC_PLAN)`; a prepared statement
    /// run with `plan_cache_mode = force_generic_plan` and NULLs shows it, without
    /// running it).
    public func queryPlan(_ sql: String) throws -> [String] {
        let text = Self.numberingPlaceholders(sql)
        let parameters = text.filter { $0 == "$" }.count
        try execute("SET plan_cache_mode = force_generic_plan")
        try execute("PREPARE albumfs_plan AS " + text)
        defer {
            try? execute("DEALLOCATE albumfs_plan")
            try? execute("RESET plan_cache_mode")
        }
        let values = parameters == 0 ? "" : "(" + Array(repeating: "NULL", count: parameters).joined(separator: ", ") + ")"
        return try connection.query("EXPLAIN EXECUTE albumfs_plan" + values).map { $0.first.flatMap { $0 } ?? "" }
    }

    // MARK: values

    /// `?` placeholders numbered `$1`, `$2`, ...; a `?` inside a quoted string stays.
    static func numberingPlaceholders(_ sql: String) -> String {
        var result = ""
        result.reserveCapacity(sql.utf8.count + 16)
        var number = 0
        var quoted = false
        for character in sql {
            if character == "'" { quoted.toggle() }
            if character == "?" && !quoted {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }

    static func text(of value: SQLValue) -> String? {
        switch value {
        case .null: return nil
        case .int(let v): return String(v)
        case .double(let v):
            if v.isNaN { return "NaN" }
            if v.isInfinite { return v > 0 ? "Infinity" : "-Infinity" }
            return "\(v)"
        case .text(let v): return v
        case .blob(let v): return "\\x" + v.map { String($0, radix: 16).leftPadded(2) }.joined()
        }
    }

    /// Type OIDs (pg_type.h): int8 20, float8 701, text 25, bytea 17; 0 lets the server
    /// infer a NULL's type from where it stands.
    static func type(of value: SQLValue) -> UInt32 {
        switch value {
        case .null: return 0
        case .int: return 20
        case .double: return 701
        case .text: return 25
        case .blob: return 17
        }
    }

    /// The bytes of bytea's hex output (`\x0a1b`).
    static func bytes(ofHex text: String) -> [UInt8] {
        var digits = Array(text.utf8)
        if digits.count >= 2 && digits[0] == UInt8(ascii: "\\") && digits[1] == UInt8(ascii: "x") { digits.removeFirst(2) }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return 0
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var i = 0
        while i + 1 < digits.count {
            bytes.append(nibble(digits[i]) << 4 | nibble(digits[i + 1]))
            i += 2
        }
        return bytes
    }
}
