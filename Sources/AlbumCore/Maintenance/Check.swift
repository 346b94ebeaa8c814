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
            try r.db.query("SELECT sha256, size FROM blobs") { ($0.text(0), $0.int64(1)) }
        }
        var rowSize: [String: Int64] = [:]
        for (hash, size) in blobRows { rowSize[hash] = size }
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

        // Every file in originals/ is re-hashed.
        let files = try blobs.allFiles()
        let fileSet = Set(files.map(\.name))
        let total = files.count
        var damaged: [String] = []
        for (index, (folder, name)) in files.enumerated() {
            guard isSHA256Hex(name), String(name.prefix(2)) == folder else {
                report.notes.append("stray file in originals/: \(folder)/\(name)")
                continue
            }
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
        // Orphans: files no row uses (a crash between placing a blob and committing).
        for (_, hash) in files where isSHA256Hex(hash) && usedBy[hash] == nil {
            report.notes.append("orphan blob \(hash) (no asset uses it; gc removes it)")
        }
        for (hash, _) in blobRows where usedBy[hash] == nil && !fileSet.contains(hash) {
            report.notes.append("blob row \(hash) has neither file nor user")
            if repair {
                try write { tx in try tx.db.run("DELETE FROM blobs WHERE sha256 = ?", hash) }
                report.repairs.append("removed the blob row \(hash)")
            }
        }

        // Derived counters.
        let drift = try read { r in
            try r.db.query("SELECT a.id, a.links, (SELECT count(*) FROM memberships m WHERE m.asset_id = a.id) FROM assets a WHERE a.links != (SELECT count(*) FROM memberships m WHERE m.asset_id = a.id)") {
                ($0.int64(0), $0.int(1), $0.int(2))
            }
        }
        for (id, stored, actual) in drift {
            report.problems.append("asset \(id): link count \(stored), but \(actual) memberships")
            if repair {
                try write { tx in try tx.db.run("UPDATE assets SET links = ? WHERE id = ?", actual, id) }
                report.repairs.append("asset \(id): link count set to \(actual)")
            }
        }
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
            report.problems.removeAll { $0.contains("link count") || $0.contains("missing parent") }
        }
        return report
    }

    var healHint: String { "copy the intact file into the library again (or albumfs import it) to repair it" }
}
