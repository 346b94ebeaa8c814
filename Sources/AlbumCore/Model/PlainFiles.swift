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
    /// The row of the name it was found by (`dirIno`, `name`): `id` for the name it was
    /// made with, another for each hard link (`ln`) made since. Every name shows the
    /// file: its number, bytes, mode, times and xattrs are those of row `id`.
    public var entry: Int64
    /// How many names it has (`st_nlink`).
    public var links: Int
    /// An access time set on it (`touch -a`, `cp -a`, `tar`; 0: none was, and its mtime
    /// shows). Reads leave it, as on a disk mounted noatime.
    public var atimeNs: Int64

    /// The columns `init(row:)` reads, from `PlainFile.rows`: `n` is a name's row, `p`
    /// the file's.
    static let columns = "p.id, n.dir_ino, n.name, p.mode, p.mtime_ns, p.changed_ns, p.blob_sha256, p.unfinished, n.id, p.links, p.atime_ns"
    /// Every name's row joined with its file's.
    static let rows = "plain_files n JOIN plain_files p ON p.id = coalesce(n.link_of, n.id)"

    init(row: Row) {
        id = row.int64(0)
        dirIno = UInt64(bitPattern: row.int64(1))
        name = row.text(2)
        mode = UInt32(truncatingIfNeeded: row.int64(3))
        mtimeNs = row.int64(4)
        changedNs = row.int64(5)
        blobSHA256 = row.optionalText(6)
        unfinished = row.bool(7)
        entry = row.int64(8)
        links = Int(row.int64(9))
        atimeNs = row.int64(10)
    }

    /// It has other names than this one: it stays a plain file under every name (its
    /// bytes never become a photo, which would be another file with another number).
    public var isLinked: Bool { links > 1 }

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
    /// The file numbered `id`, under the name it was made with (or has since, when that
    /// one went while links remained).
    public func plainFile(id: Int64) throws -> PlainFile? {
        try db.first("SELECT \(PlainFile.columns) FROM \(PlainFile.rows) WHERE n.id = ? AND n.link_of IS NULL", id, map: PlainFile.init)
    }

    public func plainFile(named name: String, in dirIno: UInt64) throws -> PlainFile? {
        try db.first("SELECT \(PlainFile.columns) FROM \(PlainFile.rows) WHERE n.dir_ino = ? AND n.name_key = ?",
                     Int64(bitPattern: dirIno), Names.key(name), map: PlainFile.init)
    }

    /// The names of a folder that are plain files, by their rows (`entry`), after row
    /// `after`.
    public func plainFiles(in dirIno: UInt64, after: Int64 = 0, limit: Int = Int.max) throws -> [PlainFile] {
        try db.query("SELECT \(PlainFile.columns) FROM \(PlainFile.rows) WHERE n.dir_ino = ? AND n.id > ? ORDER BY n.id LIMIT ?",
                     Int64(bitPattern: dirIno), after, limit, map: PlainFile.init)
    }

    /// Every name of the file numbered `id`, the one it was made with first.
    public func names(ofPlainFile id: Int64) throws -> [PlainFile] {
        try db.query("SELECT \(PlainFile.columns) FROM \(PlainFile.rows) WHERE n.id = ? OR n.link_of = ? ORDER BY n.link_of IS NOT NULL, n.id",
                     id, id, map: PlainFile.init)
    }

    /// Every row's number: the files' (whose bytes are `plainFile(id)`) and their other
    /// names' (which have no bytes).
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

    /// Removes a plain file, every name of it; the caller removes its bytes once this
    /// commits. `becomingPhoto`: its number lives on as a photo's, and so do its
    /// attributes (a file with several names never becomes one).
    @discardableResult
    public func deletePlainFile(_ id: Int64, becomingPhoto: Bool = false) throws -> PlainFile {
        guard let file = try plainFile(id: id) else { throw LibraryError.notFound("plain file \(id)") }
        if file.isLinked {
            for other in try names(ofPlainFile: id) where other.entry != id { try touchFolder(other.dirIno) }
        }
        try db.run("DELETE FROM plain_files WHERE id = ? OR link_of = ?", id, id)
        if !becomingPhoto { try db.run("DELETE FROM xattrs WHERE ino = ?", id) }
        try touchFolder(file.dirIno)
        return file
    }

    /// rm of one name of a plain file (`file` as found by that name). Returns the file
    /// when that was its last name, for the caller to remove its bytes once this
    /// commits; nil when other names keep it. The name it was made with going first, the
    /// oldest link takes its place in the file's row.
    @discardableResult
    public func removePlainName(_ file: PlainFile) throws -> PlainFile? {
        guard file.isLinked else { return try deletePlainFile(file.id) }
        if file.entry != file.id {
            try db.run("DELETE FROM plain_files WHERE id = ? AND link_of = ?", file.entry, file.id)
        } else {
            guard let next = try names(ofPlainFile: file.id).first(where: { $0.entry != file.id }) else {
                throw LibraryError.notFound("a link of plain file \(file.id)")
            }
            try db.run("DELETE FROM plain_files WHERE id = ?", next.entry)
            try db.run("UPDATE plain_files SET dir_ino = ?, name = ?, name_key = ? WHERE id = ?",
                       Int64(bitPattern: next.dirIno), next.name, Names.key(next.name), file.id)
        }
        try db.run("UPDATE plain_files SET links = links - 1, changed_ns = ? WHERE id = ?", nowNanoseconds(), file.id)
        try touchFolder(file.dirIno)
        return nil
    }

    /// ln of a plain file (`file`): a second name for it, `name` in folder `dirIno`,
    /// which must be free (the caller checks every kind of entry there).
    public func linkPlainFile(_ file: PlainFile, to dirIno: UInt64, name: String) throws {
        try Names.validate(name)
        if try plainFile(named: name, in: dirIno) != nil { throw LibraryError.exists(name) }
        try makeWayForPlainFile(named: name, in: dirIno)
        try db.run("""
            INSERT INTO plain_files(id, dir_ino, name, name_key, mode, mtime_ns, changed_ns, link_of)
            VALUES (?, ?, ?, ?, 0, 0, 0, ?)
            """, try allocateID(), Int64(bitPattern: dirIno), name, Names.key(name), file.id)
        try db.run("UPDATE plain_files SET links = links + 1, changed_ns = ? WHERE id = ?", nowNanoseconds(), file.id)
        try touchFolder(dirIno)
    }

    /// Moves or renames one name of a plain file (`file` as found by that name). A plain
    /// file's name there is replaced (rename(2)): the file it named is returned when that
    /// was its last name, for the caller to remove its bytes. Any other entry there is the
    /// caller's business.
    @discardableResult
    public func movePlainFile(_ file: PlainFile, to dirIno: UInt64, name: String) throws -> PlainFile? {
        try Names.validate(name)
        var replaced: PlainFile?
        if let other = try plainFile(named: name, in: dirIno), other.entry != file.entry {
            replaced = try removePlainName(other)
        }
        try makeWayForPlainFile(named: name, in: dirIno)
        try db.run("UPDATE plain_files SET dir_ino = ?, name = ?, name_key = ? WHERE id = ?",
                   Int64(bitPattern: dirIno), name, Names.key(name), file.entry)
        try db.run("UPDATE plain_files SET changed_ns = ? WHERE id = ?", nowNanoseconds(), file.id)
        try touchFolder(file.dirIno)
        try touchFolder(dirIno)
        return replaced
    }

    /// Records that a user set the mtime of a plain file (rsync sets it on its temp file
    /// before the rename that makes it a photo; the photo keeps it).
    public func setPlainFileMtime(_ id: Int64, nanoseconds: Int64) throws {
        try db.run("UPDATE plain_files SET mtime_ns = ?, changed_ns = ? WHERE id = ?", nanoseconds, nowNanoseconds(), id)
    }

    /// Records a change of a plain file's bytes made without a writer (a truncate by
    /// path): its ctime, and what another host's close of it finds changed
    /// (`expectUnchanged`).
    public func plainFileBytesChanged(_ id: Int64) throws {
        try db.run("UPDATE plain_files SET changed_ns = ? WHERE id = ?", nowNanoseconds(), id)
    }

    /// Records the access time a user set on a plain file.
    public func setPlainFileAtime(_ id: Int64, nanoseconds: Int64) throws {
        try db.run("UPDATE plain_files SET atime_ns = ?, changed_ns = ? WHERE id = ?", nanoseconds, nowNanoseconds(), id)
    }

    public func setPlainFileMode(_ id: Int64, mode: UInt32) throws {
        try db.run("UPDATE plain_files SET mode = ?, changed_ns = ? WHERE id = ?", Int64(mode & 0o1777), nowNanoseconds(), id)
    }

    /// Throws `changedMeanwhile` unless the name `file` was found by (its `entry`) is still
    /// that file, as it was found: same folder and name, mode, times, link count. Only
    /// another host can change a row between a look and a write here: this host's
    /// changes of one file are kept apart by the kernel's inode lock and the writer's
    /// `io` (`afterCloses`). A caller that acted on what it found would undo the other
    /// host's change, or act on a row that is gone (docs/scale.md, "A close through one
    /// host, a rename through another").
    public func expectUnchanged(_ file: PlainFile) throws {
        let now = try db.first("SELECT \(PlainFile.columns) FROM \(PlainFile.rows) WHERE n.id = ?", file.entry, map: PlainFile.init)
        guard now == file else { throw LibraryError.changedMeanwhile(file.name) }
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
        let files = try db.query("""
            SELECT \(PlainFile.columns) FROM \(PlainFile.rows) WHERE n.unfinished = \(library.unfinishedMark)
            """, map: PlainFile.init)
        for file in files { try deletePlainFile(file.id) }
        return files
    }
}
