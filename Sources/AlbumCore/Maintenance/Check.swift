import Glibc

/// What `albumfs check` found.
public struct CheckReport: Sendable {
    /// Problems that mean the library is not whole; each names the asset or row.
    public var problems: [String] = []
    /// Things that cost space but lose nothing (orphan blobs, leftovers in staging).
    public var notes: [String] = []
    /// What --repair did.
    public var repairs: [String] = []
    public var blobsChecked = 0
    public var bytesChecked: Int64 = 0

    public var isHealthy: Bool { problems.isEmpty }
}

extension Library {
    /// Verifies the database (integrity and foreign keys), re-hashes every blob, checks
    /// that every row points at an existing blob and reports orphans. With `repair`,
    /// fixes what can be fixed without losing anything: missing blob rows for intact
    /// files, rows of blobs that are gone and unused, counters that drifted. Orphan
    /// blob files are left to `gc`.
    public func check(repair: Bool = false, progress: ((Int, Int, Int64) -> Void)? = nil) throws -> CheckReport {
        var report = CheckReport()
        // PostgreSQL checks its pages itself and enforces every foreign key at each
        // statement; SQLite is asked.
        if backend == .sqlite {
            try read { r in
                let integrity = try r.db.query("PRAGMA integrity_check") { $0.text(0) }
                if integrity != ["ok"] { report.problems += integrity.map { "database integrity: \($0)" } }
                let fk = try r.db.query("PRAGMA foreign_key_check") { "\($0.text(0)) row \($0.int64(1)) points at a missing \($0.text(2)) row" }
                report.problems += fk.map { "database: \($0)" }
            }
        }

        // Blob rows and the assets and versions that use them.
        let blobRows = try read { r in
            try r.db.query("SELECT sha256, size, mtime_ns, damaged FROM blobs") {
                ($0.text(0), $0.int64(1), $0.optionalInt64(2), $0.bool(3))
            }
        }
        var rowSize: [String: Int64] = [:]
        var rowStamp: [String: (mtimeNs: Int64?, damaged: Bool)] = [:]
        for (hash, size, mtime, damaged) in blobRows {
            rowSize[hash] = size
            rowStamp[hash] = (mtime, damaged)
        }
        let uses = try read { r in
            try r.db.query("""
                SELECT a.sha256, a.id, a.name, 'asset' FROM assets a
                UNION ALL SELECT v.sha256, v.asset_id, a.name, 'version ' || v.version FROM versions v JOIN assets a ON a.id = v.asset_id
                UNION ALL SELECT p.blob_sha256, p.id, p.name, 'plain file' FROM plain_files p WHERE p.blob_sha256 IS NOT NULL
                """) { ($0.text(0), $0.int64(1), $0.text(2), $0.text(3)) }
        }
        var usedBy: [String: [(Int64, String)]] = [:]
        for (hash, id, name, _) in uses { usedBy[hash, default: []].append((id, name)) }
        func describe(_ hash: String) -> String {
            guard let users = usedBy[hash], !users.isEmpty else { return "blob \(hash)" }
            let names = Set(users.map { "asset \($0.0) (\($0.1))" }).sorted().joined(separator: ", ")
            return "\(names), blob \(hash)"
        }

        // Every file in originals/ that a row uses is re-hashed. One that none uses is an
        // orphan (below), never trusted and never read, which a crash may have left short.
        let files = try blobs.allFiles()
        let fileSet = Set(files.map(\.name))
        let total = files.count
        var damaged: [String] = []
        var intactButStamped: [(hash: String, size: Int64, mtimeNs: Int64)] = []
        for (index, (folder, name)) in files.enumerated() {
            guard isSHA256Hex(name), String(name.prefix(2)) == folder else {
                report.notes.append("stray file in originals/: \(folder)/\(name)")
                continue
            }
            guard usedBy[name] != nil else { continue }
            do {
                // Never through a link: a blob replaced by a link out of the library is a problem.
                let file = try blobs.open(name)
                file.adviseSequential()
                let hash = try file.sha256()
                let size = try file.size()
                report.blobsChecked += 1
                report.bytesChecked += size
                if hash != name {
                    report.problems.append("\(describe(name)): contents altered (hash is now \(hash)); \(healHint)")
                    damaged.append(name)
                } else if let expected = rowSize[name], expected != size {
                    report.problems.append("\(describe(name)): size \(size), expected \(expected); \(healHint)")
                    damaged.append(name)
                } else if let stamp = rowStamp[name] {
                    // Intact bytes that reads refuse all the same (`blobProblem`): a file
                    // whose time changed (a copy of the library without its times, cp -r)
                    // or one marked damaged and since put back by hand.
                    let mtime = try file.status().modificationNanoseconds
                    let why = stamp.damaged ? "was marked damaged, but its bytes are intact now"
                        : stamp.mtimeNs.map { $0 != mtime } == true ? "changed its modification time since it was stored (a copy of the library that did not keep times?), but its bytes are intact"
                        : nil
                    if let why {
                        intactButStamped.append((name, size, mtime))
                        if !repair { report.problems.append("\(describe(name)) \(why): reads fail until albumfs check --repair records it") }
                    }
                }
            } catch {
                report.problems.append("\(describe(name)): unreadable: \(error); \(healHint)")
                damaged.append(name)
            }
            progress?(index + 1, total, report.bytesChecked)
        }
        if repair && !damaged.isEmpty {
            try write { tx in for hash in damaged { try tx.markBlobDamaged(hash) } }
            report.repairs.append("marked \(damaged.count) damaged original(s): copying the intact file in again (or albumfs import of it) repairs each")
        }
        if repair && !intactButStamped.isEmpty {
            try write { tx in for blob in intactButStamped { try tx.healBlob(blob.hash, size: blob.size, mtimeNs: blob.mtimeNs) } }
            report.repairs.append("recorded \(intactButStamped.count) intact original(s) as they are on disk now: they read again")
        }

        // Rows pointing at blobs that are not there.
        for (hash, _) in usedBy where !fileSet.contains(hash) {
            report.problems.append("\(describe(hash)): blob file missing; \(healHint)")
        }
        for (hash, _, _, _) in uses where rowSize[hash] == nil {
            if fileSet.contains(hash) {
                report.notes.append("blob \(hash) has no blobs row")
                if repair, let st = try self.files.status(.blob(hash)) {
                    try write { tx in try tx.recordBlob(hash, size: Int64(st.st_size), mtimeNs: st.modificationNanoseconds) }
                    report.repairs.append("added the blobs row of \(hash)")
                }
            }
        }
        for leftover in try blobs.healLeftovers() {
            report.notes.append("\(leftover): healing bytes a crash left (gc removes them)")
        }
        // Orphans: files no row uses (a crash between placing a blob and committing).
        for (_, hash) in files where isSHA256Hex(hash) && usedBy[hash] == nil {
            report.notes.append("orphan blob \(hash) (no asset uses it; gc removes it)")
        }
        for (hash, _, _, _) in blobRows where usedBy[hash] == nil && !fileSet.contains(hash) {
            report.notes.append("blob row \(hash) has neither file nor user")
            if repair {
                try write { tx in try tx.db.run("DELETE FROM blobs WHERE sha256 = ?", hash) }
                report.repairs.append("removed the blob row \(hash)")
            }
        }

        // Plain files whose own bytes file is gone: every lookup of the name fails (EIO),
        // so the name cannot even be removed through the mount; --repair removes it.
        let plainFiles = try read { r in
            try r.db.query("SELECT id, name FROM plain_files WHERE blob_sha256 IS NULL AND unfinished = 0 AND link_of IS NULL") { ($0.int64(0), $0.text(1)) }
        }
        for (id, name) in plainFiles where try self.files.status(.plainFile(id)) == nil {
            // Removed meanwhile (check runs beside a mount, or another host's)?
            guard try read({ try $0.plainFile(id: id) }) != nil else { continue }
            if repair {
                try write { tx in if try tx.plainFile(id: id) != nil { _ = try tx.deletePlainFile(id) } }
                report.repairs.append("removed plain file \(name) (\(id)), whose bytes (\(LibraryPath.plainFile(id))) were missing")
            } else {
                report.problems.append("plain file \(name) (\(id)): its bytes (\(LibraryPath.plainFile(id))) are missing; albumfs check --repair removes the name")
            }
        }

        // Derived counters: each asset's count of its memberships, each plain file's of
        // its names (hard links).
        func recount(_ what: String, in table: String, of names: String, _ sql: String) throws {
            let drift = try read { r in try r.db.query(sql) { ($0.int64(0), $0.int(1), $0.int(2)) } }
            for (id, stored, actual) in drift {
                report.problems.append("\(what) \(id): link count \(stored), but \(actual) \(names)")
                if repair {
                    try write { tx in try tx.db.run("UPDATE \(table) SET links = ? WHERE id = ?", actual, id) }
                    report.repairs.append("\(what) \(id): link count set to \(actual)")
                }
            }
        }
        try recount("asset", in: "assets", of: "memberships", """
            SELECT a.id, a.links, (SELECT count(*) FROM memberships m WHERE m.asset_id = a.id) FROM assets a
            WHERE a.links != (SELECT count(*) FROM memberships m WHERE m.asset_id = a.id)
            """)
        try recount("plain file", in: "plain_files", of: "names", """
            SELECT p.id, p.links, 1 + (SELECT count(*) FROM plain_files n WHERE n.link_of = p.id) FROM plain_files p
            WHERE p.link_of IS NULL AND p.links != 1 + (SELECT count(*) FROM plain_files n WHERE n.link_of = p.id)
            """)
        // Names whose file is gone.
        let orphaned = "link_of IS NOT NULL AND link_of NOT IN (SELECT id FROM plain_files WHERE link_of IS NULL)"
        let orphanLinks = try read { r in
            try r.db.query("SELECT id, name FROM plain_files WHERE \(orphaned)") {
                "\($0.text(1)) (\($0.int64(0)))"
            }
        }
        report.problems += orphanLinks.map { "the name \($0) is a link to a plain file that is gone" }
        if repair && !orphanLinks.isEmpty {
            try write { tx in try tx.db.run("DELETE FROM plain_files WHERE \(orphaned)") }
            report.repairs.append("removed \(orphanLinks.count) name(s) of plain files that were gone")
        }
        // A name shown twice in one album (a photo's and a plain file's, or either and a
        // sub-album's): its listing shows both, and a lookup finds only the first (a
        // photo, then a sub-album, then a plain file). Every way to a new name checks the
        // others in its transaction; this says whether one did not.
        // (A photo's entry is shown where it is visible; in the desktop trash's files/, trashed.)
        let trashFiles = AlbumRole.trashFiles.rawValue
        let shown = "((al.role = \(trashFiles) AND a.trashed_at IS NOT NULL) OR (coalesce(al.role, 0) != \(trashFiles) AND \(AssetView.visible)))"
        let sharedNames = try read { r in
            try r.db.query("""
                SELECT al.name, m.name, 'a photo and a plain file' FROM memberships m JOIN albums al ON al.id = m.album_id
                    JOIN assets a ON a.id = m.asset_id JOIN plain_files p ON p.dir_ino = m.album_id AND p.name_key = m.name_key
                    WHERE \(shown)
                UNION ALL SELECT al.name, s.name, 'a photo and an album' FROM albums s JOIN albums al ON al.id = s.parent_id
                    JOIN memberships m ON m.album_id = s.parent_id AND m.name_key = s.name_key JOIN assets a ON a.id = m.asset_id
                    WHERE \(shown)
                UNION ALL SELECT al.name, s.name, 'an album and a plain file' FROM albums s JOIN albums al ON al.id = s.parent_id
                    JOIN plain_files p ON p.dir_ino = s.parent_id AND p.name_key = s.name_key
                """) { "\($0.text(0))/\($0.text(1)) names \($0.text(2))" }
        }
        report.problems += sharedNames.map { "\($0): the album lists the name twice; rename one through the mount (a lookup finds the photo, then the album, then the plain file)" }
        let danglingAlbums = try read { r in
            // The desktop trash folders live at the root of the mount (parent -1).
            try r.db.query("SELECT id, name FROM albums WHERE parent_id > 0 AND parent_id NOT IN (SELECT id FROM albums)") { "\($0.text(1)) (\($0.int64(0)))" }
        }
        report.problems += danglingAlbums.map { "album \($0) has a missing parent" }
        if repair && !danglingAlbums.isEmpty {
            try write { tx in try tx.db.run("UPDATE albums SET parent_id = 0 WHERE parent_id > 0 AND parent_id NOT IN (SELECT id FROM albums)") }
            report.repairs.append("moved \(danglingAlbums.count) album(s) with a missing parent to the top of Albums/")
        }
        if repair {
            report.problems.removeAll { $0.contains("link count") || $0.contains("missing parent") || $0.contains("a link to a plain file that is gone") }
        }
        return report
    }

    var healHint: String { "copy the intact file into the library again (or albumfs import it) to repair it" }
}
