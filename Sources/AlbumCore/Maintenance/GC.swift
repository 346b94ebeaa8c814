import Glibc

public struct GCReport: Sendable {
    public var purgedAssets = 0
    public var removedBlobs = 0
    public var freedBytes: Int64 = 0
    public var removedThumbnails = 0
}

extension Library {
    /// Purges Recently Deleted past its 30 days, then removes blobs that no asset or
    /// version uses, and thumbnails of blobs that are gone.
    public func gc(now: Int64 = nowSeconds()) throws -> GCReport {
        var report = GCReport()
        let cutoff = now - Library.trashRetentionSeconds
        let expired = try read { db in
            try db.query("SELECT id FROM assets WHERE trashed_at IS NOT NULL AND trashed_at <= ?", cutoff) { $0.int64(0) }
        }
        for id in expired {
            try write { db in try deleteAsset(id, db: db) }
            report.purgedAssets += 1
        }
        // Unused blob rows go first (in one transaction), then their files: a crash in
        // between leaves orphan files, which the next gc removes.
        let unused = try write { db -> [(String, Int64)] in
            let rows = try db.query("""
                SELECT sha256, size FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM assets a WHERE a.sha256 = b.sha256)
                AND NOT EXISTS (SELECT 1 FROM versions v WHERE v.sha256 = b.sha256)
                """) { ($0.text(0), $0.int64(1)) }
            for (hash, _) in rows { try db.run("DELETE FROM blobs WHERE sha256 = ?", hash) }
            return rows
        }
        var gone = Set<String>()
        for (hash, size) in unused {
            try blobs.remove(hash)
            gone.insert(hash)
            report.removedBlobs += 1
            report.freedBytes += size
        }
        // Orphan files with no row at all.
        let known = Set(try read { db in try db.query("SELECT sha256 FROM blobs") { $0.text(0) } })
        for hash in blobs.allHashes() where isSHA256Hex(hash) && !known.contains(hash) && !gone.contains(hash) {
            var st = stat()
            if stat(blobs.path(for: hash), &st) == 0 { report.freedBytes += Int64(st.st_size) }
            try blobs.remove(hash)
            gone.insert(hash)
            report.removedBlobs += 1
        }
        report.removedThumbnails = removeThumbnails(keeping: known)
        return report
    }

    /// Removes cached thumbnails whose blob is no longer in the library.
    func removeThumbnails(keeping known: Set<String>) -> Int {
        var removed = 0
        guard let sizes = opendir(paths.thumbnails) else { return 0 }
        defer { closedir(sizes) }
        while let sizeEntry = readdir(sizes) {
            let sizeName = direntName(sizeEntry)
            if sizeName.hasPrefix(".") { continue }
            let sizeDir = "\(paths.thumbnails)/\(sizeName)"
            guard let prefixes = opendir(sizeDir) else { continue }
            while let prefixEntry = readdir(prefixes) {
                let prefix = direntName(prefixEntry)
                if prefix.hasPrefix(".") { continue }
                let dir = "\(sizeDir)/\(prefix)"
                guard let files = opendir(dir) else { continue }
                while let fileEntry = readdir(files) {
                    let file = direntName(fileEntry)
                    if file.hasPrefix(".") { continue }
                    let hash = String(file.prefix(64))
                    if !known.contains(hash) && unlink("\(dir)/\(file)") == 0 { removed += 1 }
                }
                closedir(files)
            }
            closedir(prefixes)
        }
        return removed
    }
}
