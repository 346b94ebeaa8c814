import Glibc

public struct GCReport: Sendable {
    public var purgedAssets = 0
    public var removedBlobs = 0
    public var freedBytes: Int64 = 0
    public var removedThumbnails = 0
}

extension Library {
    /// Purges Recently Deleted past its 30 days, then removes blobs that no asset,
    /// version or plain file uses, and thumbnails of blobs that are gone.
    /// `afterListing`: what runs between reading the photos past their 30 days and
    /// purging them (where other hosts are mounted, anything: a restore, for a test);
    /// `beforeOrphans`: between finding blob files without a row and removing them (an
    /// import of the same bytes, for a test).
    public func gc(now: Int64 = nowSeconds(), afterListing: () throws -> Void = {},
                   beforeOrphans: () throws -> Void = {}) throws -> GCReport {
        var report = GCReport()
        let cutoff = now - Transaction.trashRetentionSeconds
        let expired = try read { r in
            try r.db.query("SELECT id FROM assets WHERE trashed_at IS NOT NULL AND trashed_at <= ?", cutoff) { $0.int64(0) }
        }
        try afterListing()
        for id in expired {
            // Asked again in the transaction that deletes it: another host may have
            // restored it (or a save moved its deletion time) since the list was read.
            let purged = try write { tx -> Bool in
                guard let asset = try tx.asset(id: id), let trashedAt = asset.trashedAt, trashedAt <= cutoff else { return false }
                _ = try tx.deleteAsset(id)
                return true
            }
            if purged { report.purgedAssets += 1 }
        }
        // Unused blob rows and their files go in one transaction, the files removed while
        // it holds the writers' lock: a host importing the same bytes meanwhile either
        // committed before (the blob is used, and stays) or looks after (and finds the
        // file gone: `placedBlobMtime`). A crash between the removals and the commit
        // leaves unused rows without files, which `check --repair` removes.
        let unused = try write { tx -> [(String, Int64)] in
            let rows = try tx.db.query("""
                SELECT sha256, size FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM assets a WHERE a.sha256 = b.sha256)
                AND NOT EXISTS (SELECT 1 FROM versions v WHERE v.sha256 = b.sha256)
                AND NOT EXISTS (SELECT 1 FROM plain_files p WHERE p.blob_sha256 = b.sha256)
                """) { ($0.text(0), $0.int64(1)) }
            for (hash, _) in rows { try tx.db.run("DELETE FROM blobs WHERE sha256 = ?", hash) }
            for (hash, _) in rows { try blobs.remove(hash) }
            return rows
        }
        var gone = Set<String>()
        for (hash, size) in unused {
            gone.insert(hash)
            report.removedBlobs += 1
            report.freedBytes += size
        }
        // Orphan files with no row at all (a crash between placing a blob and committing).
        // Where other hosts place blobs too, a file without a row may be one being
        // imported right now: only those older than an hour are orphans there.
        // Each is asked again, and removed, in a transaction: another host may have
        // imported the very bytes meanwhile and found the file in place (a placement
        // that finds a file checks it is still there in its transaction,
        // `expectBlobInPlace`, and the writers' lock orders the two), so it either
        // committed before, and its row keeps the file, or looks after, finds it gone
        // and places the bytes again.
        let known = Set(try read { r in try r.db.query("SELECT sha256 FROM blobs") { $0.text(0) } })
        let orphans = try blobs.allFiles().map(\.name).filter { isSHA256Hex($0) && !known.contains($0) && !gone.contains($0) }
        try beforeOrphans()
        if !orphans.isEmpty {
            let removed = try write { tx -> [(String, Int64)] in
                var removed: [(String, Int64)] = []
                for hash in orphans where try tx.blobRecord(hash) == nil {
                    let st = try files.status(.blob(hash))
                    if let st, isOtherHostsWork(st, now: now) { continue }
                    try blobs.remove(hash)
                    removed.append((hash, st.map { Int64($0.st_size) } ?? 0))
                }
                return removed
            }
            for (hash, size) in removed {
                gone.insert(hash)
                report.removedBlobs += 1
                report.freedBytes += size
            }
        }
        // Healing bytes' second names that a crash left (`BlobStore.healLeftovers`).
        for leftover in try blobs.healLeftovers() {
            if let st = try files.status(leftover), isOtherHostsWork(st, now: now) { continue }
            try files.remove(leftover)
        }
        report.removedThumbnails = try removeThumbnails(keeping: known)
        try removeUnnamedPlainBytes(now: now)
        return report
    }

    /// Removes cached thumbnails whose blob is no longer in the library.
    func removeThumbnails(keeping known: Set<String>) throws -> Int {
        var removed = 0
        for size in try files.names(in: .thumbnails) where !size.hasPrefix(".") {
            let sizeFolder = LibraryPath.thumbnails.appending(size)
            for prefix in try files.names(in: sizeFolder) where !prefix.hasPrefix(".") {
                let folder = sizeFolder.appending(prefix)
                for file in try files.names(in: folder) where !file.hasPrefix(".") {
                    if !known.contains(String(file.prefix(64))), try files.remove(folder.appending(file)) { removed += 1 }
                }
            }
        }
        return removed
    }
}
