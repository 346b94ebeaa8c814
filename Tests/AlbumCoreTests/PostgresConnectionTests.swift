import AlbumCore
import Foundation
import TestSupport
import XCTest

/// The libpq connection that the PostgreSQL backend (PRODUCT.md section 8, several
/// hosts) is to be built on, against a real server of the test's own: prepared
/// statements with text parameters, NULLs and 64-bit numbers, serialization failures
/// retried, and LISTEN/NOTIFY delivered at commit and not before.
final class PostgresConnectionTests: XCTestCase {
    var server: PostgresServer!

    override func setUpWithError() throws {
        server = try PostgresServer()
    }

    override func tearDown() {
        server?.stop()
        server = nil
    }

    func testPreparedStatementsRoundTripTextNumbersAndNull() throws {
        let db = try PostgresConnection(server.conninfo())
        try db.execute("CREATE TABLE t (id bigint PRIMARY KEY, name text, taken bigint)")
        let names = ["IMG_0001.JPG", "Ärger und Ölsardinen.heic", "雪.jpg", "with 'quotes'; DROP TABLE t; --"]
        for (i, name) in names.enumerated() {
            try db.query("INSERT INTO t VALUES ($1, $2, $3)", [String(Int64.max - Int64(i)), name, i == 2 ? nil : String(Int64.min + 1)])
        }
        let rows = try db.query("SELECT id, name, taken FROM t ORDER BY id DESC")
        XCTAssertEqual(rows.map { $0[1] }, names)
        XCTAssertEqual(rows.first?[0], String(Int64.max))
        XCTAssertEqual(rows.map { $0[2] }, [String(Int64.min + 1), String(Int64.min + 1), nil, String(Int64.min + 1)])
        // The same statement again uses the prepared one; a bad one says what and where.
        XCTAssertEqual(try db.query("SELECT count(*) FROM t WHERE name = $1", ["雪.jpg"]), [["1"]])
        XCTAssertThrowsError(try db.query("INSERT INTO t VALUES ($1, $2, $3)", [String(Int64.max), "again", nil])) { error in
            XCTAssertEqual((error as? PostgresError)?.sqlState, "23505", "\(error)")  // unique_violation
        }
    }

    /// Two connections move the same row at once under SERIALIZABLE: one of them is
    /// ended with 40001 and run again, and no increment is lost.
    func testConflictingTransactionsAreRetriedAndLoseNothing() throws {
        let setup = try PostgresConnection(server.conninfo())
        try setup.execute("CREATE TABLE counter (id int PRIMARY KEY, n bigint); INSERT INTO counter VALUES (1, 0)")
        let a = try PostgresConnection(server.conninfo()), b = try PostgresConnection(server.conninfo())
        var attemptsOfA = 0
        try a.transaction { tx in
            attemptsOfA += 1
            let n = try XCTUnwrap(Int(try XCTUnwrap(tx.query("SELECT n FROM counter WHERE id = 1")[0][0])))
            if attemptsOfA == 1 {
                // b commits its increment between a's read and a's write.
                try b.transaction { other in
                    try other.query("UPDATE counter SET n = n + 1 WHERE id = 1")
                }
            }
            try tx.query("UPDATE counter SET n = $1 WHERE id = 1", [String(n + 1)])
        }
        XCTAssertEqual(attemptsOfA, 2, "the first attempt must have been ended by the conflict")
        XCTAssertEqual(try setup.query("SELECT n FROM counter WHERE id = 1"), [["2"]])
    }

    /// A listener gets a notification when the sender's transaction commits, not
    /// before, with its payload, and only on the channels it listens to.
    func testNotificationsArriveAtCommit() throws {
        let listener = try PostgresConnection(server.conninfo())
        let sender = try PostgresConnection(server.conninfo())
        try listener.listen("albumfs_changes")
        try sender.execute("BEGIN")
        try sender.query("SELECT pg_notify('albumfs_changes', $1)", ["asset 1042"])
        try sender.query("SELECT pg_notify('other_channel', $1)", ["not for us"])
        XCTAssertEqual(try listener.notifications(timeout: 0), [], "delivered before the commit")
        try sender.execute("COMMIT")
        let got = try listener.notifications(timeout: 10)
        XCTAssertEqual(got, [PostgresNotification(channel: "albumfs_changes", payload: "asset 1042", senderPID: sender.backendPID)])
        XCTAssertThrowsError(try listener.listen("bad; name"))
    }
}
