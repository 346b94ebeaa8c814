/// The modes of folders that are not albums (the root, `Albums/`, `All Photos/`, the
/// smart albums, the date folders), as `chmod` set them: kept in `meta`, one key each.
/// Albums keep theirs in their own row.
extension LibraryRecords {
    static func folderModeKey(_ ino: UInt64) -> String { "folder_mode:\(ino)" }

    /// The mode `chmod` gave folder `ino`, if any.
    public func folderMode(_ ino: UInt64) throws -> UInt32? {
        try db.scalar("SELECT value FROM meta WHERE key = ?", Self.folderModeKey(ino)).map { UInt32(truncatingIfNeeded: $0) }
    }

    /// Every mode `chmod` gave such a folder, by inode number.
    public func folderModes() throws -> [UInt64: UInt32] {
        let rows = try db.query("SELECT key, value FROM meta WHERE key LIKE 'folder_mode:%'") { ($0.text(0), $0.int64(1)) }
        var modes: [UInt64: UInt32] = [:]
        for (key, value) in rows {
            if let ino = UInt64(key.dropFirst("folder_mode:".count)) { modes[ino] = UInt32(truncatingIfNeeded: value) }
        }
        return modes
    }
}

extension Transaction {
    public func setFolderMode(_ ino: UInt64, _ mode: UInt32) throws {
        try db.run("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                   Self.folderModeKey(ino), Int64(mode & 0o7777))
    }
}
