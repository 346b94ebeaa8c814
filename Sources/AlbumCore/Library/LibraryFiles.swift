import CSystem
import Glibc

/// A file or folder of a library, relative to the library's folder. The layout of a
/// library (PRODUCT.md section 1, docs/storage-format.md) is spelled out here and
/// nowhere else.
public struct LibraryPath: Hashable, Sendable, CustomStringConvertible {
    public let relative: String

    init(_ relative: String) { self.relative = relative }

    public var description: String { relative }

    public static let database = LibraryPath("library.db")
    /// SQLite's write-ahead log of `library.db` (see `GroupCommit`).
    static let databaseLog = LibraryPath("library.db-wal")
    /// The library folder itself.
    static let root = LibraryPath(".")
    /// A library whose metadata is in PostgreSQL has this instead of `library.db`: the
    /// libpq connection string or URI of its database, on one line.
    public static let databaseSettings = LibraryPath("database.conf")
    /// Per-host lock files of a library several hosts serve.
    static let hosts = LibraryPath("hosts")
    static func hostLock(_ host: String) -> LibraryPath { LibraryPath("hosts/\(host).lock") }
    /// A host's own staging folder, when several hosts serve the library.
    static func hostStaging(_ host: String) -> LibraryPath { LibraryPath("staging/\(host)") }
    public static let originals = LibraryPath("originals")
    public static let thumbnails = LibraryPath("thumbnails")
    public static let staging = LibraryPath("staging")
    /// Bytes of plain files (files of a folder that are not photos or videos).
    public static let plainFiles = LibraryPath("plain")
    /// What `plain/` was called before schema 5.
    static let oldScratch = LibraryPath("scratch")
    public static let logs = LibraryPath("logs")

    /// The folders every library has.
    static let folders: [LibraryPath] = [.originals, .thumbnails, .staging, .plainFiles]

    /// A blob: `originals/ab/<sha256>`, where `ab` is the first two hex digits.
    public static func blob(_ sha256: String) -> LibraryPath { LibraryPath("originals/\(sha256.prefix(2))/\(sha256)") }

    /// The bytes of plain file `id`.
    public static func plainFile(_ id: Int64) -> LibraryPath { LibraryPath("plain/\(id)") }

    /// A cached thumbnail, keyed by content: `thumbnails/<size>/ab/<sha256>.<ext>`
    /// (`jpg` for the image, `failed` for a decoder's reason why there is none).
    public static func thumbnail(sha256: String, size: Int, ext: String) -> LibraryPath {
        LibraryPath("thumbnails/\(size)/\(sha256.prefix(2))/\(sha256).\(ext)")
    }

    public static func log(_ name: String) -> LibraryPath { LibraryPath("logs/\(name)") }

    /// A PNG of the shared thumbnail repository (`.sh_thumbnails`) of `side` pixels, for
    /// the bytes `sha256` under a name and mtime that `key` stands for (they are written
    /// into the PNG).
    public static func sharedThumbnail(sha256: String, side: Int, key: String) -> LibraryPath {
        LibraryPath("thumbnails/sh\(side)/\(sha256.prefix(2))/\(sha256)-\(key).png")
    }

    /// The folder this is in ("." for the library folder itself).
    public var parent: LibraryPath {
        guard let slash = relative.lastIndex(of: "/") else { return LibraryPath(".") }
        return LibraryPath(String(relative[..<slash]))
    }

    /// The last component.
    public var name: String {
        guard let slash = relative.lastIndex(of: "/") else { return relative }
        return String(relative[relative.index(after: slash)...])
    }

    public func appending(_ name: String) -> LibraryPath { LibraryPath(relative + "/" + name) }
}

/// The files of one library, reached only from the library's folder: every open goes
/// through `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` below it, and every rename,
/// link or removal happens in folders opened that way, so that no symbolic link put into
/// the library can lead a read or a write outside it.
public final class LibraryFiles: Sendable {
    /// The library folder's absolute path (for messages; never opened by path again).
    public let root: String
    private let rootFD: FileDescriptor
    /// Where this process stages files being written or imported: `staging/`, or its
    /// host's folder in it when several hosts serve the library.
    public let staging: LibraryPath

    /// `plain/`, opened once: a listing of a folder of plain files asks the size and mtime
    /// of each one's bytes there, and opening the folder again for each (a path walk and
    /// a close around one `fstatat`) was most of the daemon's time when smbd listed a
    /// folder of 3,000 (which it does before every new name, to rule out one that differs
    /// only in case). Nothing but a person's hand removes `plain/`, and the library's
    /// bytes with it; `thumbnails/`, which may go at any time, is opened each time.
    /// Opened to be read (not `O_PATH`), so that `syncFolder` syncs it through this too.
    private let plainFolder = Locked<FileDescriptor?>(nil)

    public init(root: String, staging: LibraryPath = .staging) throws {
        self.root = root
        self.staging = staging
        let fd = try SystemCalls.retrying("open", root) { Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        rootFD = FileDescriptor(adopting: Int32(fd), label: root)
    }

    /// Where a library file is, for a log line or a person.
    public func absolute(_ path: LibraryPath) -> String { root + "/" + path.relative }

    /// Opens a file of the library. A link anywhere on the way is refused (ELOOP or
    /// EXDEV, reported as EIO with a log line: something altered the library by hand).
    public func open(_ path: LibraryPath, flags: Int32, mode: UInt32 = 0o600) throws -> FileDescriptor {
        let fd = shim_open_beneath(rootFD.raw, path.relative, flags | O_CLOEXEC, mode)
        if fd >= 0 { return FileDescriptor(adopting: fd, label: path.relative) }
        let code = errno
        if code == EINTR { return try open(path, flags: flags, mode: mode) }
        if code == ELOOP || code == EXDEV {
            Log.error("\(absolute(path)) is a symbolic link or leads out of the library: refused")
            throw LibraryError.io("\(path) leads out of the library (a symbolic link?)", errno: EIO)
        }
        throw LibraryError.io("open \(absolute(path))", errno: code)
    }

    /// A folder of the library as a handle for the *at calls.
    private func folder(_ path: LibraryPath) throws -> FileDescriptor {
        if path.relative == "." { return rootFD }
        if path == .plainFiles {
            if let open = plainFolder.withLock({ $0 }) { return open }
            let opened = try open(path, flags: O_RDONLY | O_DIRECTORY)
            return plainFolder.withLock { cached in
                if cached == nil { cached = opened }
                return cached!
            }
        }
        return try openFolder(path)
    }

    private func openFolder(_ path: LibraryPath) throws -> FileDescriptor {
        let fd = shim_open_folder_beneath(rootFD.raw, path.relative)
        if fd >= 0 { return FileDescriptor(adopting: fd, label: path.relative) }
        let code = errno
        if code == ELOOP || code == EXDEV {
            Log.error("\(absolute(path)) is a symbolic link or leads out of the library: refused")
            throw LibraryError.io("\(path) leads out of the library (a symbolic link?)", errno: EIO)
        }
        throw LibraryError.io("open folder \(absolute(path))", errno: code)
    }

    /// Renames within the library. `replace: false` fails with EEXIST if `to` exists.
    public func rename(_ from: LibraryPath, to: LibraryPath, replace: Bool = true) throws {
        let a = try folder(from.parent), b = try folder(to.parent)
        try SystemCalls.retrying("rename", "\(from) to \(to)") {
            replace ? renameat(a.raw, from.name, b.raw, to.name) : shim_renameat_noreplace(a.raw, from.name, b.raw, to.name)
        }
    }

    /// A second name for a file (a hard link); EEXIST if `to` exists.
    public func link(_ from: LibraryPath, to: LibraryPath) throws {
        let a = try folder(from.parent), b = try folder(to.parent)
        try SystemCalls.retrying("link", "\(from) to \(to)") { linkat(a.raw, from.name, b.raw, to.name, 0) }
    }

    /// Removes a file; false when there was none.
    @discardableResult
    public func remove(_ path: LibraryPath) throws -> Bool {
        let dir: FileDescriptor
        do { dir = try folder(path.parent) } catch let error as LibraryError where error.errno == ENOENT { return false }
        while unlinkat(dir.raw, path.name, 0) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == ENOENT { return false }
            throw LibraryError.io("remove \(absolute(path))", errno: code)
        }
        return true
    }

    /// Creates a folder (0700); false when it was there already.
    @discardableResult
    public func makeFolder(_ path: LibraryPath) throws -> Bool {
        let dir = try folder(path.parent)
        while mkdirat(dir.raw, path.name, 0o700) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == EEXIST { return false }
            throw LibraryError.io("mkdir \(absolute(path))", errno: code)
        }
        return true
    }

    /// Creates a folder and every missing folder above it inside the library, as
    /// `mkdir -p` does: for folders the library may have lost while it is open (a user
    /// may delete `thumbnails/` at any time, PRODUCT.md section 1).
    public func makeFolders(_ path: LibraryPath) throws {
        if path.relative == "." { return }
        do {
            try makeFolder(path)
        } catch let error as LibraryError where error.errno == ENOENT {
            try makeFolders(path.parent)
            try makeFolder(path)
        }
    }

    /// fsyncs a folder, so that a rename, link or create inside it is durable.
    public func syncFolder(_ path: LibraryPath) throws {
        // The root and `plain/` (synced at every new plain file's first close) through
        // the descriptors held open: no open for each sync, and none to fail at the limit
        // of open files (`DescriptorLimit`), which would leave a closed file unfinished.
        if path.relative == "." { return try rootFD.sync() }
        if path == .plainFiles { return try folder(path).sync() }
        try open(path, flags: O_RDONLY | O_DIRECTORY).sync()
    }

    /// What is at `path` (never following a link), or nil when nothing is.
    public func status(_ path: LibraryPath) throws -> stat? {
        let dir: FileDescriptor
        do { dir = try folder(path.parent) } catch let error as LibraryError where error.errno == ENOENT { return nil }
        var st = stat()
        while fstatat(dir.raw, path.name, &st, AT_SYMLINK_NOFOLLOW) != 0 {
            let code = errno
            if code == EINTR { continue }
            if code == ENOENT || code == ENOTDIR { return nil }
            throw LibraryError.io("stat \(absolute(path))", errno: code)
        }
        return st
    }

    public func exists(_ path: LibraryPath) -> Bool { (try? status(path)) != nil }

    /// The names in a folder of the library, without `.` and `..`; none if it is missing.
    public func names(in path: LibraryPath) throws -> [String] {
        let fd: FileDescriptor
        do { fd = try open(path, flags: O_RDONLY | O_DIRECTORY) } catch let error as LibraryError where error.errno == ENOENT {
            return []
        }
        // fdopendir takes the descriptor over: give it a duplicate of ours.
        let copy = try SystemCalls.retrying("dup", path.relative) { fcntl(fd.raw, F_DUPFD_CLOEXEC, 0) }
        guard let dir = fdopendir(Int32(copy)) else {
            let code = errno
            _ = Glibc.close(Int32(copy))
            throw LibraryError.io("opendir \(absolute(path))", errno: code)
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A new, empty, private file in `staging/`, with a name nobody else has.
    public func makeStagingFile(prefix: String) throws -> (FileDescriptor, LibraryPath) {
        for _ in 0..<100 {
            let path = staging.appending("\(prefix)-\(UInt64.random(in: 0...UInt64.max).hex16).tmp")
            do {
                return (try open(path, flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o600), path)
            } catch let error as LibraryError where error.errno == EEXIST {
                continue
            }
        }
        throw LibraryError.io("cannot create a file in \(absolute(staging))", errno: EEXIST)
    }
}

extension UInt64 {
    var hex16: String { String(self, radix: 16).leftPadded(16) }
}
