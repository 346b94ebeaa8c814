import Foundation
import Glibc

/// Where `Library.migrate` moves a library's metadata.
public enum MigrationTarget: Sendable {
    /// A PostgreSQL database (libpq connection string or URI), which must be empty.
    case postgres(String)
    /// `library.db` in the library folder.
    case sqlite
}

extension Library {
    /// The tables, parents before children (foreign keys), and the rows of each to copy.
    private static let migratedTables: [(name: String, filter: String)] = [
        ("meta", "WHERE key <> 'schema_version'"), ("blobs", ""), ("assets", ""), ("versions", ""), ("albums", ""),
        ("memberships", ""), ("plain_files", ""), ("xattrs", ""), ("aliases", ""),
    ]

    /// Moves the metadata of the library at `path` to `target`, every row as it is
    /// (inode numbers, versions, memberships, xattrs, plain files), in one transaction
    /// of the target; the blobs and other files stay where they are. No process may use
    /// the library meanwhile: from SQLite it takes the library's lock, from PostgreSQL
    /// every host's. The old metadata is kept aside (`library.db.migrated`,
    /// `database.conf.migrated`), never deleted. Returns the rows copied, by table.
    @discardableResult
    public static func migrate(at path: String, to target: MigrationTarget) throws -> [String: Int] {
        let root = normalized(path)
        switch (try backend(ofLibrary: root), target) {
        case (nil, _):
            throw LibraryError.notALibrary(root)
        case (.sqlite, .postgres(let conninfo)):
            return try migrateToPostgres(root, conninfo)
        case (.postgres(let conninfo), .sqlite):
            return try migrateToSQLite(root, conninfo)
        case (.sqlite, .sqlite), (.postgres, .postgres):
            throw LibraryError.refused("\(root) keeps its metadata there already")
        }
    }

    private static func migrateToPostgres(_ root: String, _ conninfo: String) throws -> [String: Int] {
        let lock = try LibraryLock(path: root)
        let files = try LibraryFiles(root: root)
        let target = try PostgresDatabase(conninfo)
        try PostgresSchema.create(target)
        let copied: [String: Int]
        do {
            let source = try Library.open(at: root, access: .exclusive, lock: lock)
            copied = try source.read(snapshot: true) { r in
                try target.transaction(.write(durable: true)) {
                    // The rows come with their link counts; no notification is owed to
                    // anyone (nobody can have listened yet).
                    for (table, _) in migratedTables { try target.execute("ALTER TABLE \(table) DISABLE TRIGGER USER") }
                    let counts = try copyTables(from: r.db, to: target, columnsFrom: target)
                    try target.execute("""
                        SELECT setval(pg_get_serial_sequence('memberships', 'id'), coalesce(max(id), 0) + 1, false) FROM memberships
                        """)
                    for (table, _) in migratedTables { try target.execute("ALTER TABLE \(table) ENABLE TRIGGER USER") }
                    return counts
                }
            }
            // Everything in library.db itself before it is put aside.
            try source.writer.withLock { try $0.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        let settings = try files.open(.databaseSettings, flags: O_CREAT | O_EXCL | O_WRONLY, mode: 0o600)
        try Array((conninfo + "\n").utf8).withUnsafeBytes { _ = try settings.write($0, at: 0) }
        try settings.sync()
        // From here the library is on PostgreSQL (until the rename, library.db wins).
        try files.rename(.database, to: LibraryPath(LibraryPath.database.relative + ".migrated"), replace: false)
        for suffix in ["-wal", "-shm"] { _ = try files.remove(LibraryPath(LibraryPath.database.relative + suffix)) }
        try files.syncFolder(LibraryPath("."))
        withExtendedLifetime(lock) {}
        return copied
    }

    private static func migrateToSQLite(_ root: String, _ conninfo: String) throws -> [String: Int] {
        let files = try LibraryFiles(root: root)
        // Every host's lock: none may serve the library meanwhile.
        let hosts = ((try? files.names(in: .hosts)) ?? []).filter { $0.hasSuffix(".lock") }.map { String($0.dropLast(5)) }
        let locks = try hosts.map { try LibraryLock(path: root, host: $0) }
        let building = LibraryPath(LibraryPath.database.relative + ".migrating")
        _ = try files.remove(building)
        _ = try files.open(building, flags: O_CREAT | O_EXCL | O_WRONLY, mode: 0o600)
        let copied: [String: Int]
        do {
            let source = try Library.open(at: root, access: .reader)
            let target = try SQLiteConnection(path: files.absolute(building))
            try target.execute("PRAGMA foreign_keys = ON")
            try Schema.migrate(target)
            copied = try source.read(snapshot: true) { r in
                try target.transaction(.write(durable: true)) {
                    let counts = try copyTables(from: r.db, to: target, columnsFrom: r.db)
                    // SQLite's triggers counted the memberships again on top of the
                    // counts copied; a host's mark on a file being written becomes the
                    // one-host mark, so that the next start discards it.
                    try target.run("UPDATE assets SET links = (SELECT count(*) FROM memberships m WHERE m.asset_id = assets.id)")
                    try target.run("UPDATE plain_files SET unfinished = 1 WHERE unfinished <> 0")
                    return counts
                }
            }
        }
        try files.rename(building, to: .database, replace: false)
        try files.rename(.databaseSettings, to: LibraryPath(LibraryPath.databaseSettings.relative + ".migrated"), replace: false)
        try files.syncFolder(LibraryPath("."))
        withExtendedLifetime(locks) {}
        return copied
    }

    /// Copies every table's rows; the columns and their types are read from the
    /// PostgreSQL side's catalog (both schemas have the same columns).
    private static func copyTables(from source: any Database, to target: any Database,
                                   columnsFrom catalog: any Database) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for (table, filter) in migratedTables {
            let columns = try catalog.query("""
                SELECT column_name, data_type FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position
                """, table) { ($0.text(0), $0.text(1)) }
            let list = columns.map(\.0).joined(separator: ", ")
            var insert = "INSERT INTO \(table)(\(list)) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
            // meta's rows exist in a new database already.
            if table == "meta" { insert += " ON CONFLICT(key) DO UPDATE SET value = excluded.value" }
            var count = 0
            try source.step("SELECT \(list) FROM \(table) \(filter)", []) { row in
                let values: [SQLValue] = columns.enumerated().map { index, column in
                    let i = Int32(index)
                    if row.isNull(i) { return .null }
                    switch column.1 {
                    case "bigint", "integer": return .int(row.int64(i))
                    case "double precision": return .double(row.double(i))
                    case "bytea": return .blob(row.blob(i))
                    default: return .text(row.text(i))
                    }
                }
                try target.step(insert, values) { _ in true }
                count += 1
                return true
            }
            counts[table] = count
        }
        return counts
    }
}
