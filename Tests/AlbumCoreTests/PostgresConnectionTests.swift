import AlbumCore
import Foundation
import TestSupport
import XCTest

/// The libpq connection that the PostgreSQL backend (PRODUCT.md section 8, several
/// hosts) is built on, against a real server (a database of the test's own): prepared
/// statements with text parameters, NULLs and 64-bit numbers, writers of two
/// connections serialized, and LISTEN/NOTIFY delivered at commit and not before.
final class PostgresConnectionTests: XCTestCase {
    var database: String!

    override func setUpWithError() throws {
        database = try PostgresServer.shared().makeDatabase()
    }

    override func tearDown() {
        if let database { try? PostgresServer.shared().dropDatabase(database) }
    }

    func testPreparedStatementsRoundTripTextNumbersAndNull() throws {
        let db = try PostgresConnection(database!)
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

    /// A PostgreSQL library of an older schema (6: Live Photo pairing by capture time
    /// alone) is brought forward when it is opened: version 7's indexes of photos and of
    /// videos by time replace the one by time, and a photo and a video of one stem pair.
    func testALibraryOfSchema6IsUpgradedWhenOpened() throws {
        let folder = TempDirectory("albumfs-pg-upgrade")
        defer { folder.remove() }
        let path = folder.sub("lib")
        _ = try Library.create(at: path, database: database)
        try PostgresConnection(database).execute("""
            CREATE INDEX assets_taken ON assets(taken_at); DROP INDEX assets_photos_taken; DROP INDEX assets_videos_taken;
            DROP TRIGGER meta_notify_mode ON meta; DROP FUNCTION albumfs_notify_mode();
            DROP INDEX plain_files_links; ALTER TABLE plain_files DROP COLUMN link_of, DROP COLUMN links, DROP COLUMN atime_ns;
            UPDATE meta SET value = 6 WHERE key = 'schema_version'
            """)
        func modeTriggers() throws -> [String] {
            try PostgresConnection(database).query("SELECT tgname FROM pg_trigger WHERE tgname = 'meta_notify_mode'").compactMap { $0[0] }
        }
        XCTAssertEqual(try modeTriggers(), [])
        func indexes() throws -> [String] {
            try PostgresConnection(database).query("SELECT indexname FROM pg_indexes WHERE tablename = 'assets' AND indexname LIKE 'assets_%taken' ORDER BY 1")
                .compactMap { $0[0] }
        }
        XCTAssertEqual(try indexes(), ["assets_taken"])

        let library = try Library.open(at: path, access: .exclusive)
        XCTAssertEqual(try indexes(), ["assets_photos_taken", "assets_videos_taken"])
        XCTAssertEqual(try PostgresConnection(database).query("SELECT value FROM meta WHERE key = 'schema_version'"),
                       [[String(10)]])
        XCTAssertEqual(try modeTriggers(), ["meta_notify_mode"], "schema 8: folder modes are told to other hosts")
        XCTAssertEqual(try PostgresConnection(database).query("""
            SELECT column_name FROM information_schema.columns WHERE table_name = 'plain_files' AND column_name IN ('link_of', 'links', 'atime_ns') ORDER BY 1
            """), [["atime_ns"], ["link_of"], ["links"]], "schema 10: hard links and access times of plain files")
        // A Live Photo: a photo and a video of one stem, taken at the same second.
        let livePath = folder.sub("beach.jpg")
        try MediaFactory.image(at: livePath, width: 64, height: 48, exif: [
            "exif-ifd2-DateTimeOriginal": "2019:07:24 18:02:11", "exif-ifd2-OffsetTimeOriginal": "+00:00",
        ])
        let photo = try XCTUnwrap(try library.importFile(at: livePath, originalName: "beach.jpg", destination: .library).asset)
        let video = try XCTUnwrap(try library.importFile(at: Samples.directory + "/videos/beach-2019-07-24.mov", originalName: "beach.mov",
                                                         destination: .library).asset)
        XCTAssertEqual(try library.assets(in: .smart(.livePhotos)).map(\.name), [photo.name])
        // Its video deleted for good, the photo is a photo again.
        try library.write { _ = try $0.deleteAsset(video.id) }
        XCTAssertEqual(try library.assets(in: .smart(.livePhotos)).map(\.name), [])
    }

    /// Two connections read a counter and write it plus one at the same moment, each in
    /// a write transaction: the writers' lock makes the second wait for the first, so
    /// no increment is lost (READ COMMITTED alone would lose one).
    func testWriteTransactionsOfTwoConnectionsAreSerialized() throws {
        try PostgresConnection(database).execute("CREATE TABLE counter (id bigint PRIMARY KEY, n bigint); INSERT INTO counter VALUES (1, 0)")
        let conninfo: String = database
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            do {
                let db = try PostgresDatabase(conninfo)
                try db.transaction(.write(durable: true)) {
                    let n = try db.scalar("SELECT n FROM counter WHERE id = ?", 1) ?? -1
                    usleep(300_000)  // the other writer arrives meanwhile
                    try db.run("UPDATE counter SET n = ? WHERE id = ?", n + 1, 1)
                }
            } catch {
                XCTFail("\(error)")
            }
        }
        XCTAssertEqual(try PostgresConnection(database).query("SELECT n FROM counter WHERE id = 1"), [["2"]])
    }

    /// A write naming a row that another host removed between the caller's look and the
    /// writers' lock (a foreign key with nothing to point at) is `changedMeanwhile`, so
    /// that the caller looks again: before, an `rm` of a photo that a save through the
    /// other host had just made vanish failed with EIO. Nothing of it is committed.
    func testAWriteNamingARowRemovedMeanwhileIsChangedMeanwhile() throws {
        let conn = try PostgresConnection(database)
        try conn.execute("CREATE TABLE parents (id bigint PRIMARY KEY); CREATE TABLE children (id bigint PRIMARY KEY, parent bigint REFERENCES parents(id))")
        let db = try PostgresDatabase(database)
        XCTAssertThrowsError(try db.transaction(.write(durable: true)) {
            try db.run("INSERT INTO parents VALUES (?)", 1)
            try db.run("INSERT INTO children VALUES (?, ?)", 1, 2)
        }) { error in
            guard case LibraryError.changedMeanwhile = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try conn.query("SELECT count(*) FROM parents"), [["0"]], "the transaction is rolled back")
    }

    /// A write whose connection is lost during its `COMMIT`, after the server committed
    /// it (its session ended by an administrator, or the server stopped, at that moment),
    /// succeeds: the writer asks a new session what became of the transaction. Before,
    /// it was taken as a failure, and a save that had committed reported an error. A
    /// server of the test's own makes the moment last: its commits wait for a standby
    /// that never comes (`synchronous_standby_names`, in this database only), once
    /// committed on its own disk; the test ends the writer's session in that wait,
    /// where the server sends no reply to the `COMMIT`.
    func testACommitWhoseConnectionIsLostAfterTheServerCommittedSucceeds() throws {
        let server = try PostgresServer()
        let admin = try PostgresConnection(server.conninfo())
        defer {
            // No commit waits for the standby any more: the server stops at once.
            try? admin.execute("ALTER SYSTEM RESET synchronous_standby_names")
            try? admin.execute("SELECT pg_reload_conf()")
            server.stop()
        }
        // This session's own commits never wait (the server applies a reload to a
        // session between its statements, maybe after the next one).
        try admin.execute("SET synchronous_commit = 'local'")
        try admin.execute("ALTER SYSTEM SET synchronous_standby_names = 'nowhere'")
        try admin.execute("ALTER SYSTEM SET synchronous_commit = 'local'")
        try admin.execute("SELECT pg_reload_conf()")
        try admin.execute("CREATE DATABASE waits")
        let table = try PostgresConnection(server.conninfo("waits"))
        try table.execute("SET synchronous_commit = 'local'; CREATE TABLE t (x bigint)")
        try admin.execute("ALTER DATABASE waits SET synchronous_commit = 'on'")
        let db = try PostgresDatabase(server.conninfo("waits"))
        let ended = Locked(false)
        let adminInfo = server.conninfo()
        let killer = Thread {
            guard let watcher = try? PostgresConnection(adminInfo) else { return }
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let pid = (try? watcher.query("SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'"))?.first?.first ?? nil {
                    _ = try? watcher.query("SELECT pg_terminate_backend($1::int)", [pid])
                    ended.withLock { $0 = true }
                    return
                }
                usleep(10_000)
            }
        }
        killer.start()
        XCTAssertNoThrow(try db.transaction(.write(durable: true)) { try db.run("INSERT INTO t VALUES (?)", 1) })
        XCTAssertTrue(ended.withLock { $0 }, "the writer's session was ended while its COMMIT waited")
        XCTAssertEqual(try table.query("SELECT count(*) FROM t"), [["1"]], "the row was committed")
        XCTAssertNoThrow(try db.transaction(.write(durable: false)) { try db.run("INSERT INTO t VALUES (?)", 2) },
                         "the writer goes on, on its new session")
        XCTAssertEqual(try table.query("SELECT count(*) FROM t"), [["2"]])
    }

    /// A listener gets a notification when the sender's transaction commits, not
    /// before, with its payload, and only on the channels it listens to.
    func testNotificationsArriveAtCommit() throws {
        let listener = try PostgresConnection(database!)
        let sender = try PostgresConnection(database!)
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
