import CSystem
import Glibc

/// The one fence between AlbumFS and the kernel's file calls: every call's result is
/// checked here, `EINTR` is retried here and nowhere else, and a failure becomes a
/// `LibraryError.io` that names the call, the file and the errno. The filesystem core
/// makes no file calls of its own; it goes through this, `FileDescriptor` and
/// `LibraryFiles`.
public enum SystemCalls {
    /// Runs `call` until it does not fail with EINTR; a negative result throws.
    @discardableResult
    static func retrying<T: BinaryInteger>(_ name: String, _ what: String?, _ call: () -> T) throws -> Int {
        while true {
            let result = call()
            if result >= 0 { return Int(result) }
            let code = errno
            if code == EINTR { continue }
            throw LibraryError.io(what.map { "\(name) \($0)" } ?? name, errno: code)
        }
    }

    // MARK: files outside the library (sources of `albumfs import`, mountpoints, logs)

    /// Opens a file by path (never one of the library's: those go through `LibraryFiles`).
    public static func open(_ path: String, flags: Int32, mode: UInt32 = 0o600) throws -> FileDescriptor {
        let fd = try retrying("open", path) { Glibc.open(path, flags | O_CLOEXEC, mode_t(mode)) }
        return FileDescriptor(adopting: Int32(fd), label: path)
    }

    /// lstat(2); nil when there is nothing at `path` (ENOENT, ENOTDIR), an error otherwise.
    public static func status(_ path: String, followLinks: Bool = true) throws -> stat? {
        var st = stat()
        while true {
            let rc = fstatat(AT_FDCWD, path, &st, followLinks ? 0 : AT_SYMLINK_NOFOLLOW)
            if rc == 0 { return st }
            let code = errno
            if code == EINTR { continue }
            if code == ENOENT || code == ENOTDIR { return nil }
            throw LibraryError.io("stat \(path)", errno: code)
        }
    }

    public static func fileSystemStatus(_ path: String) throws -> statvfs {
        var s = statvfs()
        try retrying("statvfs", path) { statvfs(path, &s) }
        return s
    }

    /// The names in a folder (not `.` and `..`), as the bytes they are.
    public static func names(in path: String) throws -> [[UInt8]] {
        guard let dir = opendir(path) else { throw LibraryError.io("opendir \(path)", errno: errno) }
        defer { closedir(dir) }
        var names: [[UInt8]] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: UInt8.self, capacity: 256) { p in
                    Array(UnsafeBufferPointer(start: p, count: strlen(UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self))))
                }
            }
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
        return names
    }

    /// Sets an extended attribute of a path (not used by the filesystem core itself; the
    /// tests drive a mount with it).
    public static func setAttribute(_ path: String, _ name: String, _ value: [UInt8]) throws {
        try retrying("setxattr", path) { CSystem.setxattr(path, name, value, value.count, 0) }
    }

    /// An extended attribute of a path.
    public static func attribute(_ path: String, _ name: String) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = try retrying("getxattr", path) { CSystem.getxattr(path, name, &buffer, buffer.count) }
        return Array(buffer.prefix(n))
    }

    // MARK: copying

    /// Copies `length` bytes between descriptors inside the kernel (a reflink or a
    /// server-side copy where the filesystem can). Returns the bytes copied (0 at end).
    public static func copyRange(from input: FileDescriptor, at inOffset: inout Int64, to output: FileDescriptor,
                                 at outOffset: inout Int64, length: Int) throws -> Int {
        var i = off_t(inOffset), o = off_t(outOffset)
        let n = try retrying("copy_file_range", "\(input.label) to \(output.label)") {
            shim_copy_file_range(input.raw, &i, output.raw, &o, length)
        }
        inOffset = Int64(i)
        outOffset = Int64(o)
        return n
    }

    /// fallocate(2) of a descriptor: space reserved (the size kept or grown), a hole
    /// punched, a range zeroed, as `mode` says.
    public static func allocate(_ fd: Int32, mode: Int32, offset: Int64, length: Int64, _ what: String) throws {
        try retrying("fallocate", what) { shim_fallocate(fd, mode, off_t(offset), off_t(length)) }
    }

    /// Copies the first `length` bytes of `input` into `output` from offset 0.
    public static func copyAll(from input: FileDescriptor, to output: FileDescriptor, length: Int64) throws {
        var inOffset: Int64 = 0, outOffset: Int64 = 0
        var remaining = length
        while remaining > 0 {
            let n = try copyRange(from: input, at: &inOffset, to: output, at: &outOffset, length: Int(min(remaining, 1 << 30)))
            if n == 0 { break }
            remaining -= Int64(n)
        }
    }

    // MARK: processes

    /// A pipe whose ends close on exec (only the ends a child gets by dup2 survive).
    public static func pipe() throws -> (read: FileDescriptor, write: FileDescriptor) {
        var fds: [Int32] = [0, 0]
        try retrying("pipe2", nil) { shim_pipe_cloexec(&fds) }
        return (FileDescriptor(adopting: fds[0], label: "pipe"), FileDescriptor(adopting: fds[1], label: "pipe"))
    }

    // MARK: times

    /// The tv_nsec that leaves a time unchanged in utimensat/futimens.
    public static var utimeOmit: Int { Int(shim_utime_omit()) }

    /// A timespec from nanoseconds since the epoch.
    public static func timespec(nanoseconds ns: Int64) -> Glibc.timespec {
        var seconds = ns / 1_000_000_000
        var rest = ns % 1_000_000_000
        if rest < 0 { rest += 1_000_000_000; seconds -= 1 }
        return Glibc.timespec(tv_sec: Int(seconds), tv_nsec: Int(rest))
    }

    /// Sets only the mtime of a path outside the library (of a link itself, never what it
    /// points to).
    public static func setModificationTime(path: String, nanoseconds: Int64) throws {
        var times = [Glibc.timespec(tv_sec: 0, tv_nsec: utimeOmit), timespec(nanoseconds: nanoseconds)]
        try retrying("utimensat", path) { utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) }
    }
}

extension Glibc.stat {
    public var isRegularFile: Bool { (st_mode & S_IFMT) == S_IFREG }
    public var isDirectory: Bool { (st_mode & S_IFMT) == S_IFDIR }
    public var modificationNanoseconds: Int64 { st_mtim.nanoseconds }
    public var changeNanoseconds: Int64 { st_ctim.nanoseconds }
}
