import AlbumCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// `albumfs migrate` (PRODUCT.md section 8): a library used through a mount (imports,
/// albums, links, favorites, captions, a new version, a trashed photo, plain files and a
/// sidecar) moves to PostgreSQL and back with every row kept, inode numbers included;
/// `albumfs check` passes on both sides, and the migrated library mounts and works.
final class MigrateTests: XCTestCase {
    var temp: TempDirectory!
    var database: String?
    var mount: MountedLibrary?
    let gps = Samples.directory + "/photos/jpg/gps"

    override func setUpWithError() throws {
        try requireFUSE()
        temp = TempDirectory("albumfs-migrate")
    }

    override func tearDown() {
        mount?.unmount()
        if let database { try? PostgresServer.shared().dropDatabase(database) }
        temp?.remove()
    }

    @discardableResult
    func sh(_ command: String, file: StaticString = #filePath, line: UInt = #line) throws -> Processes.Result {
        let result = try Processes.shell(command)
        XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)", file: file, line: line)
        return result
    }

    /// Every row of the library, as text: what must survive a migration unchanged.
    func rows(_ lib: String) throws -> [String] {
        let library = try Library.open(at: lib, access: .reader)
        let queries: [(String, String)] = [
            ("SELECT value FROM meta WHERE key = 'next_object_id'", "i"),
            ("SELECT sha256, size, mtime_ns, damaged FROM blobs ORDER BY sha256", "tiii"),
            ("""
             SELECT id, name, name_key, original_name, sha256, size, version, media_type, format, kinds, taken_at, taken_offset,
                    taken_day, sort_key, mtime_ns, width, height, orientation, latitude, longitude, make, model, duration,
                    favorite, hidden, added_at, changed_ns, trashed_at, links, mode, rating, keywords, caption
             FROM assets ORDER BY id
             """, "itttt" + "iiit" + "iiiiiiiii" + "rrttr" + "iiiiiiii" + "tt"),
            ("SELECT asset_id, version, sha256, size, created_at FROM versions ORDER BY asset_id, version", "iitii"),
            ("SELECT id, parent_id, name, name_key, created_at, mtime_ns, changed_ns, mode, role FROM albums ORDER BY id", "iittiiiii"),
            ("SELECT id, album_id, asset_id, name, name_key, sort_key, added_at FROM memberships ORDER BY id", "iiittii"),
            ("""
             SELECT id, dir_ino, name, mode, mtime_ns, changed_ns, blob_sha256, unfinished, xmp, trashed_with, trashed_from
             FROM plain_files ORDER BY id
             """, "iitiiitiTii"),
            ("SELECT ino, name, value FROM xattrs ORDER BY ino, name", "itb"),
            ("SELECT ino, asset_id, own_number FROM aliases ORDER BY ino", "iii"),
        ]
        return try library.read(snapshot: true) { r in
            try queries.flatMap { sql, types in
                try r.db.query(sql) { row in
                    types.enumerated().map { index, type -> String in
                        let i = Int32(index)
                        if row.isNull(i) { return "null" }
                        switch type {
                        case "i": return String(row.int64(i))
                        case "r": return String(row.double(i))
                        case "b": return row.blob(i).map { String($0, radix: 16) }.joined(separator: ".")
                        default: return row.text(i)
                        }
                    }.joined(separator: "|")
                }
            }
        }
    }

    func testALibraryMovesToPostgreSQLAndBackWithEveryRowKept() throws {
        let lib = temp.sub("lib")
        XCTAssertTrue(try Processes.albumfs("init", lib).ok)
        let sqliteMount = try MountedLibrary(library: lib, temp: temp, name: "one")
        mount = sqliteMount
        let m = sqliteMount.mountpoint
        try sh("""
            cd '\(m)' && mkdir Albums/Trip Albums/Trip/Day1 Albums/Other && cp '\(gps)'/DSCN00*.jpg Albums/Trip/ \
            && cp '\(gps)/DSCN0010.jpg' Albums/Trip/Day1/ && ln Albums/Trip/DSCN0012.jpg Albums/Other/Twelve.jpg \
            && setfattr -n user.albumfs.favorite -v 1 Albums/Trip/DSCN0021.jpg \
            && setfattr -n user.xdg.comment -v 'A caption' Albums/Trip/DSCN0025.jpg \
            && cat '\(gps)/DSCN0012.jpg' > Albums/Trip/DSCN0010.jpg && rm 'All Photos/DSCN0027.jpg' \
            && echo notes > Albums/Trip/notes.txt && printf '<x:xmpmeta xmlns:x="adobe:ns:meta/"/>' > Albums/Trip/DSCN0021.xmp \
            && chmod 600 Albums/Trip/DSCN0025.jpg && ln Albums/Trip/notes.txt Albums/Other/notes-link.txt
            """)
        let inodeBefore = try FileManager.default.attributesOfItem(atPath: m + "/Albums/Trip/DSCN0021.jpg")[.systemFileNumber] as? Int
        // A mounted library is not migrated.
        let busy = try Processes.run(Processes.albumfs, ["migrate", lib, "--to", "sqlite"], timeout: 60)
        XCTAssertNotEqual(busy.status, 0, "migrate of a library on SQLite to SQLite")
        let database = try PostgresServer.shared().makeDatabase()
        self.database = database
        let refused = try Processes.run(Processes.albumfs, ["migrate", lib, "--to", database], timeout: 60)
        XCTAssertNotEqual(refused.status, 0, "migrate while mounted")
        XCTAssertTrue(refused.stderr.contains("in use"), refused.stderr)
        sqliteMount.unmount()
        let before = try rows(lib)
        XCTAssertGreaterThan(before.count, 30)

        // The refused run left the database empty: the real one needs it so.
        let target = database
        let moved = try Processes.run(Processes.albumfs, ["migrate", lib, "--to", target], timeout: 120)
        XCTAssertEqual(moved.status, 0, moved.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: lib + "/library.db"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: lib + "/library.db.migrated"), "the old metadata is kept aside")
        XCTAssertEqual(try rows(lib), before, "every row on PostgreSQL as it was on SQLite")
        let checkedPG = try Processes.albumfs("check", lib)
        XCTAssertTrue(checkedPG.ok, checkedPG.stdout + checkedPG.stderr)

        // The library on PostgreSQL mounts, reads, keeps its numbers, and takes new photos.
        let pgMount = try MountedLibrary(library: lib, temp: temp, name: "two", options: ["host=a"])
        mount = pgMount
        let p = pgMount.mountpoint
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: p + "/Albums/Trip/DSCN0010.jpg")),
                       try Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0012.jpg")), "the new version's bytes")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: p + "/Albums/Trip/DSCN0021.jpg")[.systemFileNumber] as? Int,
                       inodeBefore)
        XCTAssertEqual(try String(contentsOfFile: p + "/Albums/Trip/notes.txt", encoding: .utf8), "notes\n")
        XCTAssertEqual(try sh("stat -c '%i %h' '\(p)/Albums/Trip/notes.txt' '\(p)/Albums/Other/notes-link.txt' | uniq").stdout.split(separator: " ").last,
                       "2\n", "a hard link's two names: one file")
        try sh("cp '\(Samples.directory)/photos/jpg/gps/DSCN0010.jpg' '\(p)/Albums/Other/Again.jpg' && mkdir '\(p)/Albums/New'")
        pgMount.unmount()
        let onPostgres = try rows(lib)
        XCTAssertNotEqual(onPostgres, before)

        let back = try Processes.run(Processes.albumfs, ["migrate", lib, "--to", "sqlite"], timeout: 120)
        XCTAssertEqual(back.status, 0, back.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: lib + "/database.conf"))
        XCTAssertEqual(try rows(lib), onPostgres, "every row on SQLite again as it was on PostgreSQL")
        let checked = try Processes.albumfs("check", lib)
        XCTAssertTrue(checked.ok, checked.stdout + checked.stderr)
        let again = try MountedLibrary(library: lib, temp: temp, name: "three")
        mount = again
        XCTAssertTrue(FileManager.default.fileExists(atPath: again.mountpoint + "/Albums/New"))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: again.mountpoint + "/Albums/Other/Again.jpg")),
                       try Data(contentsOf: URL(fileURLWithPath: gps + "/DSCN0010.jpg")))
    }
}
