import Glibc

/// A plain file of a folder that is never imported: a hidden file or client junk
/// (`.DS_Store`, `Thumbs.db`, `._IMG_0001.JPG`, an rsync temp file before its rename).
/// Its bytes are `scratch/<id>`.
public struct ScratchFile: Sendable, Equatable {
    public var id: Int64
    public var dirIno: UInt64
    public var name: String
    public var mode: UInt32
    public var mtimeNs: Int64
    public var changedNs: Int64

    static let columns = "id, dir_ino, name, mode, mtime_ns, changed_ns"

    public init(id: Int64, dirIno: UInt64, name: String, mode: UInt32, mtimeNs: Int64, changedNs: Int64) {
        self.id = id
        self.dirIno = dirIno
        self.name = name
        self.mode = mode
        self.mtimeNs = mtimeNs
        self.changedNs = changedNs
    }

    init(row: Row) {
        id = row.int64(0)
        dirIno = UInt64(bitPattern: row.int64(1))
        name = row.text(2)
        mode = UInt32(truncatingIfNeeded: row.int64(3))
        mtimeNs = row.int64(4)
        changedNs = row.int64(5)
    }
}

extension Library {
    public func scratchPath(_ id: Int64) -> String { "\(paths.scratch)/\(id)" }

    /// Opens a scratch file's bytes, never through a link.
    public func openScratch(_ id: Int64, flags: Int32) throws -> Int32 {
        try openInside("scratch/\(id)", flags: flags)
    }

    public func scratchFile(id: Int64) throws -> ScratchFile? {
        try read { db in try db.first("SELECT \(ScratchFile.columns) FROM scratch WHERE id = ?", id, map: ScratchFile.init) }
    }

    public func scratchFile(named name: String, in dirIno: UInt64) throws -> ScratchFile? {
        try read { db in
            try db.first("SELECT \(ScratchFile.columns) FROM scratch WHERE dir_ino = ? AND name_key = ?",
                         Int64(bitPattern: dirIno), Names.key(name), map: ScratchFile.init)
        }
    }

    /// Scratch files of a folder by id, after id `after`.
    public func scratchFiles(in dirIno: UInt64, after: Int64 = 0, limit: Int = Int.max) throws -> [ScratchFile] {
        try read { db in
            try db.query("SELECT \(ScratchFile.columns) FROM scratch WHERE dir_ino = ? AND id > ? ORDER BY id LIMIT ?",
                         Int64(bitPattern: dirIno), after, limit, map: ScratchFile.init)
        }
    }

    /// Creates an empty scratch file (its bytes file too). `id` may be one the caller
    /// reserved; nil allocates one.
    public func createScratchFile(named name: String, in dirIno: UInt64, mode: UInt32, id: Int64? = nil) throws -> ScratchFile {
        try Names.validate(name)
        let now = nowNanoseconds()
        return try write { db in
            if try db.scalar("SELECT 1 FROM scratch WHERE dir_ino = ? AND name_key = ?", Int64(bitPattern: dirIno), Names.key(name)) != nil {
                throw LibraryError.exists(name)
            }
            let id = try id ?? allocateID(db)
            close(try openInside("scratch/\(id)", flags: O_CREAT | O_WRONLY | O_TRUNC))
            // mtime_ns 0: no mtime was set on it yet (see markScratchMtime).
            try db.run("INSERT INTO scratch(id, dir_ino, name, name_key, mode, mtime_ns, changed_ns) VALUES (?, ?, ?, ?, ?, 0, ?)",
                       id, Int64(bitPattern: dirIno), name, Names.key(name), Int64(mode), now)
            if let album = albumID(ofDirIno: dirIno) { try touchAlbum(album, db: db) }
            return ScratchFile(id: id, dirIno: dirIno, name: name, mode: mode, mtimeNs: 0, changedNs: now)
        }
    }

    public func deleteScratchFile(_ id: Int64) throws {
        try write { db in
            guard let file = try db.first("SELECT \(ScratchFile.columns) FROM scratch WHERE id = ?", id, map: ScratchFile.init) else {
                throw LibraryError.notFound("scratch file \(id)")
            }
            try db.run("DELETE FROM scratch WHERE id = ?", id)
            try db.run("DELETE FROM xattrs WHERE ino = ?", id)
            if let album = albumID(ofDirIno: file.dirIno) { try touchAlbum(album, db: db) }
        }
        unlink(scratchPath(id))
    }

    /// Moves or renames a scratch file. A scratch file of that name at the target is
    /// replaced (rename(2) semantics); any other entry there is the caller's business.
    public func moveScratchFile(_ id: Int64, to dirIno: UInt64, name: String) throws {
        try Names.validate(name)
        var replaced: Int64?
        try write { db in
            guard let file = try db.first("SELECT \(ScratchFile.columns) FROM scratch WHERE id = ?", id, map: ScratchFile.init) else {
                throw LibraryError.notFound("scratch file \(id)")
            }
            if let other = try db.scalar("SELECT id FROM scratch WHERE dir_ino = ? AND name_key = ? AND id != ?",
                                         Int64(bitPattern: dirIno), Names.key(name), id) {
                try db.run("DELETE FROM scratch WHERE id = ?", other)
                try db.run("DELETE FROM xattrs WHERE ino = ?", other)
                replaced = other
            }
            try db.run("UPDATE scratch SET dir_ino = ?, name = ?, name_key = ?, changed_ns = ? WHERE id = ?",
                       Int64(bitPattern: dirIno), name, Names.key(name), nowNanoseconds(), id)
            if let album = albumID(ofDirIno: file.dirIno) { try touchAlbum(album, db: db) }
            if let album = albumID(ofDirIno: dirIno) { try touchAlbum(album, db: db) }
        }
        if let replaced { unlink(scratchPath(replaced)) }
    }

    /// Records that a user set the mtime of a scratch file (rsync sets it on its temp
    /// file before the rename that imports it; the asset keeps it).
    public func markScratchMtime(_ id: Int64, nanoseconds: Int64) throws {
        try write { db in
            try db.run("UPDATE scratch SET mtime_ns = ?, changed_ns = ? WHERE id = ?", nanoseconds, nowNanoseconds(), id)
        }
    }

    /// Drops a scratch file's row whose bytes were moved away (imported by a rename).
    public func forgetScratchFile(_ id: Int64) throws {
        try write { db in
            guard let file = try db.first("SELECT \(ScratchFile.columns) FROM scratch WHERE id = ?", id, map: ScratchFile.init) else { return }
            try db.run("DELETE FROM scratch WHERE id = ?", id)
            if let album = albumID(ofDirIno: file.dirIno) { try touchAlbum(album, db: db) }
        }
    }

    /// Sets a scratch file's permission bits. (Its size and times are those of its
    /// bytes file, which the mount writes and `utimensat`s directly.)
    public func setScratchMode(_ id: Int64, mode: UInt32) throws {
        try write { db in
            try db.run("UPDATE scratch SET mode = ?, changed_ns = ? WHERE id = ?", Int64(mode), nowNanoseconds(), id)
        }
    }

    /// The album a folder inode is, if it is one (albums are objects, ids >= 1000).
    func albumID(ofDirIno dirIno: UInt64) -> Int64? {
        dirIno >= UInt64(Schema.firstObjectID) && dirIno < (1 << 48) ? Int64(dirIno) : nil
    }
}
