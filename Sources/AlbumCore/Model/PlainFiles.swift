import Glibc

/// A plain file of a folder (PRODUCT.md section 3): anything in a folder that is not a
/// photo or video of the library. Hidden files, client junk (`.DS_Store`, `Thumbs.db`),
/// empty files, text, sidecars, files still being written, a save tool's backup. Kept,
/// readable, writable, renamable and deletable, never shown in any other folder. It
/// becomes a photo when it is closed with photo content under a visible name, or
/// renamed to one.
///
/// Its bytes are its own file, `LibraryPath.plainFile(id)`, written in place; or, until
/// it is first written, a blob it shares (`blobSHA256`: the previous version of a photo
/// that a save tool renamed away).
public struct PlainFile: Sendable, Equatable {
    public var id: Int64
    public var dirIno: UInt64
    public var name: String
    public var mode: UInt32
    /// An mtime a user set (0: none was set; the bytes file's own mtime counts then).
    public var mtimeNs: Int64
    public var changedNs: Int64
    /// The blob whose bytes this file has, when it has none of its own.
    public var blobSHA256: String?
    /// Created through the mount and not closed yet.
    public var unfinished: Bool

    static let columns = "id, dir_ino, name, mode, mtime_ns, changed_ns, blob_sha256, unfinished"

    init(row: Row) {
        id = row.int64(0)
        dirIno = UInt64(bitPattern: row.int64(1))
        name = row.text(2)
        mode = UInt32(truncatingIfNeeded: row.int64(3))
        mtimeNs = row.int64(4)
        changedNs = row.int64(5)
        blobSHA256 = row.optionalText(6)
        unfinished = row.bool(7)
    }

    /// Where its bytes are.
    public var bytes: LibraryPath { blobSHA256.map(LibraryPath.blob) ?? .plainFile(id) }

    /// An mtime set through the mount, if any.
    public var explicitMtimeNs: Int64? { mtimeNs != 0 ? mtimeNs : nil }

    /// A symbolic link: its bytes are its target. The row's mode then carries `S_IFLNK`
    /// (every other plain file's mode is its permission bits only).
    public var isSymlink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }
}

// MARK: - reads

extension LibraryRecords {
    public func plainFile(id: Int64) throws -> PlainFile? {
        try db.first("SELECT \(PlainFile.columns) FROM plain_files WHERE id = ?", id, map: PlainFile.init)
    }

    public func plainFile(named name: String, in dirIno: UInt64) throws -> PlainFile? {
        try db.first("SELECT \(PlainFile.columns) FROM plain_files WHERE dir_ino = ? AND name_key = ?",
                     Int64(bitPattern: dirIno), Names.key(name), map: PlainFile.init)
    }

    /// Plain files of a folder by id, after id `after`.
    public func plainFiles(in dirIno: UInt64, after: Int64 = 0, limit: Int = Int.max) throws -> [PlainFile] {
        try db.query("SELECT \(PlainFile.columns) FROM plain_files WHERE dir_ino = ? AND id > ? ORDER BY id LIMIT ?",
                     Int64(bitPattern: dirIno), after, limit, map: PlainFile.init)
    }

    func allPlainFileIDs() throws -> [Int64] {
        try db.query("SELECT id FROM plain_files") { $0.int64(0) }
    }
}

// MARK: - changes

extension Transaction {
    /// Adds a plain file's row (its bytes file is the caller's). `id`: one the caller
    /// reserved (nil allocates). A plain file of that name in the folder is EEXIST.
    /// `symlink`: the file is a symbolic link (its bytes are its target; mode 0777).
    @discardableResult
    public func createPlainFile(named name: String, in dirIno: UInt64, mode: UInt32, id: Int64? = nil,
                                unfinished: Bool = false, blob: String? = nil, mtimeNs: Int64 = 0,
                                symlink: Bool = false) throws -> PlainFile {
        try Names.validate(name)
        if try plainFile(named: name, in: dirIno) != nil { throw LibraryError.exists(name) }
        // A file being written may yet become the very photo whose entry this is (a
        // deleted photo copied back in): its entry gives way when the file is finished
        // as a plain file (`finishPlainFile`).
        if !unfinished { try makeWayForPlainFile(named: name, in: dirIno) }
        let id = try id ?? allocateID()
        try db.run("""
            INSERT INTO plain_files(id, dir_ino, name, name_key, mode, mtime_ns, changed_ns, blob_sha256, unfinished)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, id, Int64(bitPattern: dirIno), name, Names.key(name), Int64(symlink ? UInt32(S_IFLNK) | 0o777 : mode & 0o1777), mtimeNs, nowNanoseconds(), blob, unfinished ? library.unfinishedMark : 0)
        try touchFolder(dirIno)
        return try plainFile(id: id)!
    }

    /// Removes a plain file's row; the caller removes its bytes once this commits.
    /// `becomingPhoto`: its number lives on as a photo's, and so do its attributes.
    @discardableResult
    public func deletePlainFile(_ id: Int64, becomingPhoto: Bool = false) throws -> PlainFile {
        guard let file = try plainFile(id: id) else { throw LibraryError.notFound("plain file \(id)") }
        try db.run("DELETE FROM plain_files WHERE id = ?", id)
        if !becomingPhoto { try db.run("DELETE FROM xattrs WHERE ino = ?", id) }
        try touchFolder(file.dirIno)
        return file
    }

    /// Moves or renames a plain file. A plain file of that name at the target is replaced
    /// (rename(2)) and returned, for the caller to remove its bytes; any other entry there
    /// is the caller's business.
    @discardableResult
    public func movePlainFile(_ id: Int64, to dirIno: UInt64, name: String) throws -> PlainFile? {
        try Names.validate(name)
        guard let file = try plainFile(id: id) else { throw LibraryError.notFound("plain file \(id)") }
        var replaced: PlainFile?
        if let other = try plainFile(named: name, in: dirIno), other.id != id {
            replaced = try deletePlainFile(other.id)
        }
        try makeWayForPlainFile(named: name, in: dirIno)
        try db.run("UPDATE plain_files SET dir_ino = ?, name = ?, name_key = ?, changed_ns = ? WHERE id = ?",
                   Int64(bitPattern: dirIno), name, Names.key(name), nowNanoseconds(), id)
        try touchFolder(file.dirIno)
        try touchFolder(dirIno)
        return replaced
    }

    /// Records that a user set the mtime of a plain file (rsync sets it on its temp file
    /// before the rename that makes it a photo; the photo keeps it).
    public func setPlainFileMtime(_ id: Int64, nanoseconds: Int64) throws {
        try db.run("UPDATE plain_files SET mtime_ns = ?, changed_ns = ? WHERE id = ?", nanoseconds, nowNanoseconds(), id)
    }

    public func setPlainFileMode(_ id: Int64, mode: UInt32) throws {
        try db.run("UPDATE plain_files SET mode = ?, changed_ns = ? WHERE id = ?", Int64(mode & 0o1777), nowNanoseconds(), id)
    }

    /// The file was closed: it is no longer one being written.
    public func finishPlainFile(_ id: Int64) throws {
        try db.run("UPDATE plain_files SET unfinished = 0 WHERE id = ? AND unfinished != 0", id)
        if let file = try plainFile(id: id) { try makeWayForPlainFile(named: file.name, in: file.dirIno) }
    }

    /// A plain file that shared a blob has its own bytes now (it was written).
    public func plainFileOwnsItsBytes(_ id: Int64) throws {
        try db.run("UPDATE plain_files SET blob_sha256 = NULL, changed_ns = ? WHERE id = ?", nowNanoseconds(), id)
    }

    /// Rows of files that were created and never closed; their bytes are the caller's.
    func discardUnfinishedPlainFiles() throws -> [PlainFile] {
        // This host's only (the mark is a literal: SQLite's partial index on
        // `unfinished = 1` serves it).
        let files = try db.query("SELECT \(PlainFile.columns) FROM plain_files WHERE unfinished = \(library.unfinishedMark)",
                                 map: PlainFile.init)
        for file in files { try deletePlainFile(file.id) }
        return files
    }
}
