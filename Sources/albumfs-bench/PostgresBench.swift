import AlbumCore
import Foundation
import Glibc

/// The PostgreSQL column (issue 17): the same listing, lookup and `cp -r` import on a
/// library whose metadata is in PostgreSQL as on the same library in SQLite (the ratio
/// is PostgreSQL / SQLite), and how soon a second host lists a photo copied in through
/// the first. The server is the benchmark's own (mount-scripts/scratch-postgres), on this
/// machine, reached by its Unix socket, with its durable defaults.
enum PostgresBench {
    static func run(dir: String, albumSize: Int, libraryAssets: Int, smallPhotos: Int) throws {
        let server = try ScratchPostgres(folder: dir + "/postgres")
        defer { server.stop() }
        Harness.say("  PG rows: metadata in PostgreSQL (a server of the benchmark's own, Unix socket, fsync on); ratio = PostgreSQL / SQLite")
        try listing(dir: dir, server: server, albumSize: albumSize, libraryAssets: libraryAssets)
        try importing(dir: dir, server: server, count: smallPhotos)
        try latency(dir: dir, server: server)
    }

    static let baselineName = "the same on SQLite"

    /// ls -l and a lookup of one name in ten over an album, find over All Photos; cold
    /// (every cache dropped, PostgreSQL's own shared buffers excepted) and warm.
    private static func listing(dir: String, server: ScratchPostgres, albumSize: Int, libraryAssets: Int) throws {
        let seed = try DataSets.seedPhoto(in: dir)
        let sqlitePath = dir + "/pg-list.sqlite.library", postgresPath = dir + "/pg-list.postgres.library"
        let database = try server.makeDatabase("list")
        var names: [String] = []
        var allPhotos = 0
        for (path, db) in [(sqlitePath, nil), (postgresPath, Optional(database))] {
            let (library, folders) = try DataSets.listLibrary(at: path, database: db, seed: seed, sizes: [albumSize],
                                                              libraryAssets: libraryAssets)
            allPhotos = folders.last?.1 ?? 0
            if names.isEmpty {
                let album = try library.album(path: ["Album \(albumSize)"])!
                names = try library.members(ofAlbum: album.id).map(\.0.name)
            }
        }
        // The planner's statistics, as autovacuum would have gathered them by now.
        try PostgresConnection(database).execute("ANALYZE")
        let lookups = dir + "/pg-list.names"
        try names.enumerated().filter { $0.offset % 10 == 0 }.map(\.element).joined(separator: "\n")
            .write(toFile: lookups, atomically: true, encoding: .utf8)

        let sqliteMount = try BenchMount(library: sqlitePath, mountpoint: dir + "/pg-list.sqlite.mnt")
        defer { sqliteMount.unmount() }
        let postgresMount = try BenchMount(library: postgresPath, mountpoint: dir + "/pg-list.postgres.mnt")
        defer { postgresMount.unmount() }
        let album = "Albums/Album \(albumSize)"
        let commands: [(String, (String) -> String)] = [
            ("ls -l, album of \(albumSize)", { "ls -l \(Harness.q($0 + "/" + album)) > /dev/null" }),
            ("stat \(names.count / 10) names, album of \(albumSize)",
             { "cd \(Harness.q($0 + "/" + album)) && xargs -d '\\n' stat -c %s < \(Harness.q(lookups)) > /dev/null" }),
            ("find, All Photos of \(allPhotos)",
             { "find \(Harness.q($0 + "/All Photos")) -type f -not -path '*/.thumbnails/*' | wc -l > /dev/null" }),
        ]
        for (label, command) in commands {
            let run = { (root: String) -> () throws -> Void in { _ = try Harness.sh(command(root)) } }
            if Harness.canDropCaches {
                let drop = { Harness.dropCaches() }
                let sqlite = try Harness.median(prepare: drop, run(sqliteMount.mountpoint))
                let postgres = try Harness.median(prepare: drop, run(postgresMount.mountpoint))
                Harness.record("PG: \(label), cold", ours: postgres, baseline: sqlite, baselineName: baselineName)
            } else {
                Harness.skipCold("PG: " + label)
            }
            try run(sqliteMount.mountpoint)(); try run(postgresMount.mountpoint)()
            let sqlite = try Harness.median(Harness.runs, run(sqliteMount.mountpoint))
            let postgres = try Harness.median(Harness.runs, run(postgresMount.mountpoint))
            Harness.record("PG: \(label), warm", ours: postgres, baseline: sqlite, baselineName: baselineName)
        }
    }

    /// `cp -r` of small photos (the per-file cost: every close() is a durable commit) into
    /// a fresh library of each kind.
    private static func importing(dir: String, server: ScratchPostgres, count: Int) throws {
        let card = try ImportBench.smallCard(in: dir, count: count)
        try Harness.sh("cat \(Harness.q(card))/* > /dev/null")
        let runs = max(1, min(Harness.runs, 3))
        let mountpoint = dir + "/pg-import.mnt"
        let sqlite = try ImportBench.timeCopy(card, into: dir + "/pg-import.sqlite.library", mountpoint: mountpoint, runs: runs,
                                              fresh: Harness.freshLibrary)
        var made = 0
        let postgres = try ImportBench.timeCopy(card, into: dir + "/pg-import.postgres.library", mountpoint: mountpoint, runs: runs) { path in
            made += 1
            try Harness.freshLibrary(path, database: try server.makeDatabase("import\(made)"))
        }
        Harness.record("PG: cp -r \(count) small photos into an album", ours: postgres, baseline: sqlite, baselineName: baselineName)
        Harness.record("  per file", ours: postgres / Double(count), baseline: sqlite / Double(count), baselineName: baselineName, unit: "ms")
    }

    /// Two hosts (two daemons with their own host names) on one PostgreSQL library: host b
    /// has listed an album; a photo is copied into it through host a; how long after
    /// that `cp` returned host b lists it (its listing is dropped on a's notification).
    private static func latency(dir: String, server: ScratchPostgres, trials: Int = 21) throws {
        let library = dir + "/pg-hosts.library"
        try Harness.freshLibrary(library, database: try server.makeDatabase("hosts"))
        let a = try BenchMount(library: library, mountpoint: dir + "/pg-hosts.a", options: "host=a")
        defer { a.unmount() }
        let b = try BenchMount(library: library, mountpoint: dir + "/pg-hosts.b", options: "host=b")
        defer { b.unmount() }
        // A photo of its own: its comment is changed after each trial, so that each copy
        // is a new photo.
        let photo = dir + "/pg-hosts.jpg"
        try Harness.sh("cp \(Harness.q(try DataSets.seedPhoto(in: dir))) \(Harness.q(photo))")
        try Harness.sh("mkdir \(Harness.q(a.mountpoint))/Albums/Latency")
        let album = b.mountpoint + "/Albums/Latency"
        // b lists the album before the first trial, as before every other.
        _ = try wait("host b to list the new album") { (try? FileManager.default.contentsOfDirectory(atPath: album)) != nil }
        var waits: [Double] = []
        for trial in 0..<trials {
            let name = "P\(trial).jpg"
            guard !names(album).contains(name) else { throw BenchError("\(name) listed before it was copied") }
            try Harness.sh("cp \(Harness.q(photo)) \(Harness.q(a.mountpoint + "/Albums/Latency/" + name))")
            waits.append(try wait("host b to list \(name)") { names(album).contains(name) })
            try Harness.sh("exiftool -q -overwrite_original -Comment=\(trial) \(Harness.q(photo))")
        }
        waits.sort()
        Harness.record("PG: host b lists a cp through host a after", ours: waits[waits.count / 2], baseline: nil,
                       baselineName: String(format: "median of %d; the slowest %.2f ms", trials, waits.last! * 1000), unit: "ms")
    }

    /// Polls `condition` until it holds (10 s at most); how long that took.
    private static func wait(_ what: String, _ condition: () -> Bool) throws -> Double {
        let start = Harness.now()
        while !condition() {
            guard Harness.now() - start < 10 else { throw BenchError("waited 10 s for \(what)") }
            usleep(100)
        }
        return Harness.now() - start
    }

    private static func names(_ folder: String) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
    }
}

/// A PostgreSQL server of the benchmark's own, started and stopped by
/// mount-scripts/scratch-postgres (named by ALBUMFS_SCRATCH_POSTGRES: mount-scripts/bench
/// sets it).
final class ScratchPostgres {
    let folder: String
    let conninfo: String
    private var running = true

    init(folder: String) throws {
        guard let script = ProcessInfo.processInfo.environment["ALBUMFS_SCRATCH_POSTGRES"] else {
            throw BenchError("ALBUMFS_SCRATCH_POSTGRES is not set: run the benchmark with mount-scripts/bench")
        }
        self.folder = folder
        self.script = script
        conninfo = try Harness.sh("\(Harness.q(script)) start \(Harness.q(folder))").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private let script: String

    /// A new, empty database; its connection string.
    func makeDatabase(_ name: String) throws -> String {
        let server = try PostgresConnection(conninfo)
        if try !server.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]).isEmpty {
            try server.execute("DROP DATABASE \(name)")
        }
        try server.execute("CREATE DATABASE \(name)")
        return conninfo.replacingOccurrences(of: "dbname=postgres", with: "dbname=\(name)")
    }

    func stop() {
        guard running else { return }
        running = false
        _ = try? Harness.sh("\(Harness.q(script)) stop \(Harness.q(folder))", check: false)
    }

    deinit { stop() }
}
