/// Figures for `albumfs stats`.
public struct LibraryStats: Sendable {
    public var assets = 0, photos = 0, videos = 0
    public var favorites = 0, hidden = 0, trashed = 0
    public var albums = 0, memberships = 0
    public var versions = 0
    public var blobs = 0
    public var blobBytes: Int64 = 0
    public var oldestCapture: Int64?
    public var newestCapture: Int64?
    public var schemaVersion = 0
}

extension Library {
    public func stats() throws -> LibraryStats {
        try read(snapshot: true) { r in
            let db = r.db
            var s = LibraryStats()
            func count(_ sql: String) throws -> Int { Int(try db.scalar(sql) ?? 0) }
            s.assets = try count("SELECT count(*) FROM assets")
            s.photos = try count("SELECT count(*) FROM assets WHERE media_type = 1")
            s.videos = try count("SELECT count(*) FROM assets WHERE media_type = 2")
            s.favorites = try count("SELECT count(*) FROM assets WHERE favorite = 1")
            s.hidden = try count("SELECT count(*) FROM assets WHERE hidden = 1")
            s.trashed = try count("SELECT count(*) FROM assets WHERE trashed_at IS NOT NULL")
            s.albums = try count("SELECT count(*) FROM albums WHERE role IS NULL")
            s.memberships = try count("SELECT count(*) FROM memberships")
            s.versions = try count("SELECT count(*) FROM versions")
            s.blobs = try count("SELECT count(*) FROM blobs")
            s.blobBytes = try db.scalar("SELECT coalesce(sum(size), 0) FROM blobs") ?? 0
            s.oldestCapture = try db.scalar("SELECT min(taken_at) FROM assets")
            s.newestCapture = try db.scalar("SELECT max(taken_at) FROM assets")
            s.schemaVersion = Int(try db.scalar(db.dialect == .sqlite ? "PRAGMA user_version"
                                                : "SELECT value FROM meta WHERE key = 'schema_version'") ?? 0)
            return s
        }
    }
}
