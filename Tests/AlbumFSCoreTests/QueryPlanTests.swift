import AlbumCore
import AlbumFSCore
import Foundation
import TestSupport
import XCTest

/// Every SQL statement that browsing the whole tree prepares is checked with SQLite's
/// `EXPLAIN QUERY PLAN`: none may read a whole table, and none of the paged listings may
/// sort its rows in a temporary b-tree (a page of 50 must cost an index seek, not a sort
/// of 100,000 rows). A new query without its index fails here.
final class QueryPlanTests: XCTestCase {
    var temp: TempDirectory!
    var library: Library!
    var fs: FileSystem!

    override func setUpWithError() throws {
        temp = TempDirectory()
    }

    /// A library with an album of a third of `count` assets of every kind and state,
    /// and the filesystem core over it; its metadata in `database` (PostgreSQL) if given.
    func build(count: Int = 3000, database: String? = nil) throws {
        library = try Library.create(at: temp.sub("lib"), database: database)
        let trips = try library.write { try $0.createAlbum(named: "Trips", in: 0) }
        let rome = try library.write { try $0.createAlbum(named: "Rome", in: trips.id) }
        let template = try XCTUnwrap(try library.importFile(
            at: Samples.directory + "/photos/jpg/gps/DSCN0010.jpg", originalName: "DSCN0010.jpg",
            destination: ImportDestination(album: rome.id)).asset)
        // Enough rows of every kind that a plan without its index would show a scan.
        var random = SplitMix(seed: 7)
        let kinds: [MediaKinds] = [[], [], [], .screenshot, .panorama, .animated, .raw, .selfie, .live]
        var items: [SyntheticAsset] = []
        for n in 0..<count {
            var item = SyntheticAsset(name: "IMG_\(n).JPG", takenAt: 1_500_000_000 + Int64(random.next() % 200_000_000))
            item.kinds = kinds[Int(random.next() % UInt64(kinds.count))]
            item.mediaType = random.next() % 10 == 0 ? .video : .photo
            item.favorite = random.next() % 10 == 0
            item.hidden = random.next() % 30 == 0
            item.trashed = random.next() % 30 == 0
            items.append(item)
        }
        try library.addSyntheticAssets(Array(items[0..<count / 3]), sha256: template.sha256, album: rome.id)
        try library.addSyntheticAssets(Array(items[(count / 3)...]), sha256: template.sha256)
        fs = FileSystem(library: library, options: MountOptions())
    }

    override func tearDown() {
        fs?.stop()
        fs = nil
        library = nil
        let failure = temp.remove()
        // Background work the core started (thumbnails made ahead) must have ended with
        // `stop()`: one still writing leaves the library half removed.
        XCTAssertFalse(FileManager.default.fileExists(atPath: temp.path), "\(temp.path) was not removed whole: \(failure ?? "")")
    }

    /// Lists every folder in pages of 50 (as the kernel asks), looks up and stats every
    /// entry, and reads every asset's xattrs, as `ls -lR` and `getfattr -R` would.
    func browse(_ ino: UInt64, depth: Int = 0) throws {
        var after: Int64 = 0
        while true {
            let page = try fs.readdir(ino, after: after, limit: 50)
            guard let last = page.last else { break }
            after = last.cookie
            for entry in page where entry.name != "." && entry.name != ".." {
                let attributes = try fs.lookup(parent: ino, name: Array(entry.name.utf8)).attributes
                _ = try fs.getattr(attributes.ino)
                if attributes.kind == .directory {
                    if depth < 6 { try browse(attributes.ino, depth: depth + 1) }
                } else if entry.name.hasPrefix("IMG_1") || entry.name.hasPrefix("DSCN") {
                    for name in try fs.listxattr(attributes.ino) { _ = try? fs.getxattr(attributes.ino, name: name) }
                }
            }
        }
    }

    /// Sorts that are allowed, because the rows sorted are few whatever the library:
    /// the memberships of one asset in one album (the name it has there, preferring the
    /// one asked for).
    static let boundedSorts = [
        "FROM memberships WHERE album_id = ? AND asset_id = ? ORDER BY name_key = ? DESC LIMIT 1",
    ]

    /// The same on PostgreSQL, with its generic plans (the ones it uses for any values of
    /// the parameters). Whether a scan or a sort is cheaper depends on how many rows a
    /// table has, and this library's albums, plain files and xattrs are few; so the
    /// planner is told to avoid both (`enable_seqscan`, `enable_sort` off), and a plan
    /// that still has one has no index that serves it. The number of rows does not
    /// matter then: 300 assets take every path browsing takes.
    func testEveryBrowsingQueryUsesAnIndexOnPostgreSQL() throws {
        let database = try PostgresServer.shared().makeDatabase()
        defer { try? PostgresServer.shared().dropDatabase(database) }
        let statements = try PreparedSQL.recording {
            try build(count: 300, database: database)
            try browse(FixedInode.root)
        }
        XCTAssertGreaterThan(statements.count, 10, "browsing should have prepared the view and album queries")
        var offenders: [String] = []
        // PostgresSchema's own look at the catalog is not browsing.
        for sql in statements.sorted() where !sql.contains("pg_catalog") {
            let plan = try library.read { r in
                try r.db.execute("SET enable_seqscan = off; SET enable_sort = off")
                return try r.db.queryPlan(sql)
            }
            let paged = sql.contains("LIMIT")
            for step in plan {
                let fullScan = step.contains("Seq Scan on ")
                let sort = paged && step.range(of: #"(^|->  )Sort "#, options: .regularExpression) != nil
                    && !Self.boundedSorts.contains(where: sql.contains)
                if fullScan || sort {
                    offenders.append("\(step)\n    in: \(sql.split(whereSeparator: \.isNewline).joined(separator: " "))")
                }
            }
        }
        XCTAssertTrue(offenders.isEmpty, "queries without their index:\n" + offenders.joined(separator: "\n"))
    }

    func testEveryBrowsingQueryUsesAnIndex() throws {
        // Recorded from the start: a statement is recorded when a connection first
        // prepares it, and building the library already prepares some of the lookups.
        let statements = try PreparedSQL.recording {
            try build()
            try browse(FixedInode.root)
        }
        XCTAssertGreaterThan(statements.count, 10, "browsing should have prepared the view and album queries")
        var offenders: [String] = []
        for sql in statements.sorted() {
            let plan = try library.read { try $0.db.queryPlan(sql) }
            let paged = sql.contains("LIMIT")
            for step in plan {
                let fullScan = step.range(of: #"^SCAN \w+( AS \w+)?$"#, options: .regularExpression) != nil
                    && !step.contains("CONSTANT ROW")
                let sort = paged && step.contains("USE TEMP B-TREE FOR ORDER BY")
                    && !Self.boundedSorts.contains(where: sql.contains)
                if fullScan || sort {
                    offenders.append("\(step)\n    in: \(sql.split(whereSeparator: \.isNewline).joined(separator: " "))")
                }
            }
        }
        XCTAssertTrue(offenders.isEmpty, "queries without their index:\n" + offenders.joined(separator: "\n"))
    }
}
