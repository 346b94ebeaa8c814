import AlbumCore
import AlbumFSCore
import Foundation
import Glibc

/// A failed call, with the errno a program would have seen.
public struct DriverError: Error, CustomStringConvertible, Equatable {
    public let errno: Int32
    public let call: String
    public var description: String { "\(call): \(String(cString: strerror(errno)))" }

    public init(errno: Int32, call: String) {
        self.errno = errno
        self.call = call
    }
}

/// What `stat` says of a path.
public struct PathStatus: Equatable, Sendable {
    public let ino: UInt64
    public let size: Int64
    public let mtimeNs: Int64
    public let ctimeNs: Int64
    public let nlink: UInt32
    public let isDirectory: Bool
    public let mode: UInt32
}

/// A filesystem driven by paths, the way programs drive it: the same behaviour suite runs
/// on the filesystem core in-process (`CoreDriver`) and on a real mount through system
/// calls (`MountDriver`), as rclone's vfstest runs one suite on its VFS and its mounts.
/// Paths are relative to the root of the mount. Every failure throws `DriverError`.
public protocol Driver: AnyObject {
    var name: String { get }
    /// The library behind the filesystem (opened for reading).
    var libraryPath: String { get }

    func open(_ path: String, _ flags: Int32, mode: UInt32) throws -> Int
    func write(_ handle: Int, _ bytes: [UInt8], at offset: Int64) throws
    func read(_ handle: Int, count: Int, at offset: Int64) throws -> [UInt8]
    func truncate(_ handle: Int, to size: Int64) throws
    /// truncate(2) by path.
    func truncate(_ path: String, to size: Int64) throws
    /// fallocate(2) of a handle (`mode` as in linux/falloc.h).
    func fallocate(_ handle: Int, mode: Int32, offset: Int64, length: Int64) throws
    func setMtime(_ handle: Int, nanoseconds: Int64) throws
    func fsync(_ handle: Int) throws
    func close(_ handle: Int) throws
    /// dup(2): a second descriptor of the same open. Each close of one is a flush (the
    /// opener's close); the open ends with the last (a release).
    func duplicate(_ handle: Int) throws -> Int

    func stat(_ path: String) throws -> PathStatus
    /// fstat of an open handle.
    func fstat(_ handle: Int) throws -> PathStatus
    /// The names in a folder, without `.`, `..` and `.thumbnails`.
    func list(_ path: String) throws -> [String]
    func mkdir(_ path: String) throws
    func rmdir(_ path: String) throws
    func unlink(_ path: String) throws
    func rename(_ from: String, _ to: String) throws
    func link(_ from: String, _ to: String) throws
    /// ln -s TARGET PATH.
    func symlink(_ target: String, _ path: String) throws
    /// A link's target (EINVAL for anything else).
    func readlink(_ path: String) throws -> String
    func setxattr(_ path: String, _ name: String, _ value: String) throws
    func getxattr(_ path: String, _ name: String) throws -> String
    func chmod(_ path: String, _ mode: UInt32) throws

    /// Moves the filesystem's clock of saves on (the minute of a save ends); a mount
    /// cannot, and says so by returning false.
    func advanceTime(seconds: Int64) -> Bool
    /// Starts a child process and waits for its end: forked now, it holds a copy of
    /// every open handle and closes them at its exec, as an editor's helper does.
    func runChildProcess() throws
    func stop()
}

extension Driver {
    /// `cp`: creates (or truncates) `path`, writes `bytes`, closes.
    public func put(_ path: String, _ bytes: [UInt8], mode: UInt32 = 0o644) throws {
        let h = try open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: mode)
        do {
            if !bytes.isEmpty { try write(h, bytes, at: 0) }
        } catch {
            try? close(h)
            throw error
        }
        try close(h)
    }

    public func put(_ path: String, file source: String) throws {
        try put(path, Array(try Data(contentsOf: URL(fileURLWithPath: source))))
    }

    /// `cat`.
    public func get(_ path: String) throws -> [UInt8] {
        let h = try open(path, O_RDONLY, mode: 0)
        defer { try? close(h) }
        var out: [UInt8] = []
        while true {
            let chunk = try read(h, count: 1 << 20, at: Int64(out.count))
            if chunk.isEmpty { break }
            out += chunk
        }
        return out
    }

    public func exists(_ path: String) -> Bool { (try? stat(path)) != nil }

    /// The errno `body` fails with, or nil when it succeeds.
    public func errno(_ body: () throws -> Void) -> Int32? {
        do {
            try body()
            return nil
        } catch let error as DriverError {
            return error.errno
        } catch {
            return -1
        }
    }

    public func library() throws -> Library { try Library.open(at: libraryPath, access: .reader) }
}

// MARK: - the filesystem core in-process

/// The filesystem core called directly, as the bridge calls it: paths resolved by
/// lookups from the root, files created, written, flushed and released as the kernel
/// would.
public final class CoreDriver: Driver {
    public let name = "in-process"
    public let libraryPath: String
    public let fs: FileSystem
    private var clock: Int64 = 0
    /// `node`: the kernel inode a mount's open would hold (the one its number had then),
    /// which `fstat` asks as the kernel does.
    private var handles: [Int: (ino: UInt64, handle: UInt64, node: UInt64)] = [:]
    private var nextHandle = 1

    /// `host`: the name of the host it serves the library as (a library several hosts
    /// serve, PostgreSQL; nil: `ALBUMFS_HOST` or the machine's name).
    public init(library: String, host: String? = nil) throws {
        libraryPath = library
        fs = FileSystem(library: try Library.open(at: library, access: .exclusive, host: host), options: MountOptions())
    }

    private func attempt<T>(_ call: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            // EIO says only that something went wrong: the test's output says what.
            if FSError.errno(of: error) == EIO { print("CoreDriver: \(call) failed with EIO: \(error)") }
            throw DriverError(errno: FSError.errno(of: error), call: call)
        }
    }

    private func components(_ path: String) -> [String] { path.split(separator: "/").map(String.init) }

    /// The inode of a path.
    private func resolve(_ path: String) throws -> UInt64 {
        var ino = FixedInode.root
        for part in components(path) {
            ino = try fs.lookup(parent: ino, name: Array(part.utf8)).attributes.ino
        }
        return ino
    }

    private func parentAndName(_ path: String) throws -> (UInt64, [UInt8]) {
        var parts = components(path)
        let name = parts.removeLast()
        return (try resolve(parts.joined(separator: "/")), Array(name.utf8))
    }

    /// As the kernel does: a call by path that gets ESTALE (the file moved to another
    /// kernel inode, `KernelNodes`, or was removed since its lookup) looks the path up
    /// again and is made once more.
    private func retryingStale<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error where FSError.errno(of: error) == ESTALE {
            return try body()
        }
    }

    /// The kernel's open: the path looked up, then OPEN of what it found, or CREATE when
    /// nothing is there and `O_CREAT` says so; after ESTALE (the file moved to another
    /// kernel inode, or went since the lookup) all of it once more.
    public func open(_ path: String, _ flags: Int32, mode: UInt32) throws -> Int {
        try attempt("open \(path)") {
            try retryingStale {
                let ino: UInt64
                do {
                    ino = try resolve(path)
                } catch let error where flags & O_CREAT != 0 && FSError.errno(of: error) == ENOENT {
                    let (parent, name) = try parentAndName(path)
                    let (attributes, created) = try fs.create(parent: parent, name: name, mode: mode, flags: flags, pid: getpid())
                    guard let created else { throw FSError(EIO, "create did not open") }
                    return remember(attributes.ino, created.handle)
                }
                if flags & O_CREAT != 0 && flags & O_EXCL != 0 { throw FSError(EEXIST, path) }
                return remember(ino, try fs.open(ino, flags: flags, pid: getpid()).handle)
            }
        }
    }

    private func remember(_ ino: UInt64, _ handle: UInt64) -> Int {
        let h = nextHandle
        nextHandle += 1
        handles[h] = (ino, handle, fs.nodeID(of: ino))
        return h
    }

    private func handle(_ h: Int) throws -> (ino: UInt64, handle: UInt64, node: UInt64) {
        guard let found = handles[h] else { throw DriverError(errno: EBADF, call: "handle \(h)") }
        return found
    }

    public func write(_ h: Int, _ bytes: [UInt8], at offset: Int64) throws {
        let handle = try handle(h).handle
        try attempt("write") {
            var done = 0
            while done < bytes.count {
                done += try bytes.withUnsafeBytes { raw in
                    try fs.write(handle: handle, bytes: UnsafeRawBufferPointer(rebasing: raw[done...]), offset: offset + Int64(done))
                }
            }
        }
    }

    public func read(_ h: Int, count: Int, at offset: Int64) throws -> [UInt8] {
        let handle = try handle(h).handle
        return try attempt("read") {
            let source = try fs.read(handle: handle, size: count, offset: offset)
            return try source.file.read(count: count, at: source.offset)
        }
    }

    public func truncate(_ h: Int, to size: Int64) throws {
        let (ino, handle, _) = try handle(h)
        _ = try attempt("ftruncate") { try fs.setattr(ino, .init(size: size, handle: handle)) }
    }

    public func truncate(_ path: String, to size: Int64) throws {
        _ = try attempt("truncate \(path)") { try retryingStale { try fs.setattr(try resolve(path), .init(size: size)) } }
    }

    public func fallocate(_ h: Int, mode: Int32, offset: Int64, length: Int64) throws {
        let handle = try handle(h).handle
        try attempt("fallocate") { try fs.fallocate(handle: handle, mode: mode, offset: offset, length: length) }
    }

    public func setMtime(_ h: Int, nanoseconds: Int64) throws {
        let (ino, handle, _) = try handle(h)
        _ = try attempt("futimens") { try fs.setattr(ino, .init(mtimeNs: nanoseconds, handle: handle)) }
    }

    public func fsync(_ h: Int) throws {
        let handle = try handle(h).handle
        try attempt("fsync") { try fs.fsync(handle: handle) }
    }

    public func close(_ h: Int) throws {
        let handle = try handle(h).handle
        handles.removeValue(forKey: h)
        let copiesLeft = handles.values.contains { $0.handle == handle }
        defer { if !copiesLeft { fs.release(handle: handle) } }
        try attempt("close") { try fs.flush(handle: handle) }
    }

    public func duplicate(_ h: Int) throws -> Int {
        let found = try handle(h)
        let copy = nextHandle
        nextHandle += 1
        handles[copy] = found
        return copy
    }

    public func stat(_ path: String) throws -> PathStatus {
        try attempt("stat \(path)") { Self.status(try fs.getattr(try resolve(path))) }
    }

    public func fstat(_ h: Int) throws -> PathStatus {
        let (ino, _, node) = try handle(h)
        return try attempt("fstat") { Self.status(try fs.getattr(ino, node: node)) }
    }

    private static func status(_ a: Attributes) -> PathStatus {
        PathStatus(ino: a.ino, size: a.size, mtimeNs: a.mtimeNs, ctimeNs: a.ctimeNs, nlink: a.nlink, isDirectory: a.kind == .directory,
                   mode: a.permissions)
    }

    public func list(_ path: String) throws -> [String] {
        try attempt("readdir \(path)") {
            try fs.readdir(try resolve(path), after: 0, limit: 100_000).map(\.name)
                .filter { $0 != "." && $0 != ".." && $0 != ".thumbnails" }
        }
    }

    public func mkdir(_ path: String) throws {
        try attempt("mkdir \(path)") {
            let (parent, name) = try parentAndName(path)
            _ = try fs.mkdir(parent: parent, name: name)
        }
    }

    public func rmdir(_ path: String) throws {
        try attempt("rmdir \(path)") {
            let (parent, name) = try parentAndName(path)
            try fs.rmdir(parent: parent, name: name)
        }
    }

    public func unlink(_ path: String) throws {
        try attempt("unlink \(path)") {
            let (parent, name) = try parentAndName(path)
            try fs.unlink(parent: parent, name: name)
        }
    }

    public func rename(_ from: String, _ to: String) throws {
        try attempt("rename \(from) \(to)") {
            let (a, x) = try parentAndName(from), (b, y) = try parentAndName(to)
            try fs.rename(parent: a, name: x, newParent: b, newName: y, flags: 0)
        }
    }

    public func link(_ from: String, _ to: String) throws {
        try attempt("link \(from) \(to)") {
            let (parent, name) = try parentAndName(to)
            _ = try fs.link(ino: try resolve(from), newParent: parent, newName: name)
        }
    }

    public func symlink(_ target: String, _ path: String) throws {
        try attempt("symlink \(path)") {
            let (parent, name) = try parentAndName(path)
            _ = try fs.symlink(parent: parent, name: name, target: Array(target.utf8))
        }
    }

    public func readlink(_ path: String) throws -> String {
        try attempt("readlink \(path)") { String(decoding: try fs.readlink(try resolve(path)), as: UTF8.self) }
    }

    public func setxattr(_ path: String, _ name: String, _ value: String) throws {
        try attempt("setxattr \(path)") { try fs.setxattr(try resolve(path), name: name, value: Array(value.utf8), flags: 0) }
    }

    public func getxattr(_ path: String, _ name: String) throws -> String {
        try attempt("getxattr \(path)") { String(decoding: try fs.getxattr(try resolve(path), name: name), as: UTF8.self) }
    }

    public func chmod(_ path: String, _ mode: UInt32) throws {
        _ = try attempt("chmod \(path)") { try fs.setattr(try resolve(path), .init(mode: mode)) }
    }

    public func advanceTime(seconds: Int64) -> Bool {
        clock += seconds * 1_000_000_000
        fs.tick(now: nowNanoseconds() + clock)
        return true
    }

    /// The kernel's part: a flush of every open handle, from the child's process.
    public func runChildProcess() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["10"]
        try child.run()
        // SIGKILL: the test process may block SIGTERM, and its children inherit the mask.
        defer { kill(child.processIdentifier, SIGKILL); child.waitUntilExit() }
        for (_, (_, handle, _)) in handles {
            try attempt("close in child \(child.processIdentifier)") { try fs.flush(handle: handle, pid: child.processIdentifier) }
        }
    }

    public func stop() {
        for (_, (_, handle, _)) in handles { fs.release(handle: handle) }
        handles.removeAll()
        fs.stop()
    }
}

// MARK: - a real mount

/// A real mount, driven through system calls.
public final class MountDriver: Driver {
    public let name = "mount"
    public let libraryPath: String
    public let mount: MountedLibrary
    private var fds: [Int: Int32] = [:]

    public init(library: String, temp: TempDirectory) throws {
        libraryPath = library
        mount = try MountedLibrary(library: library, temp: temp)
    }

    private func full(_ path: String) -> String { mount.mountpoint + "/" + path }

    private func check(_ rc: Int, _ call: String) throws {
        if rc < 0 { throw DriverError(errno: Glibc.errno, call: call) }
    }

    public func open(_ path: String, _ flags: Int32, mode: UInt32) throws -> Int {
        let fd = Glibc.open(full(path), flags | O_CLOEXEC, mode_t(mode))
        try check(Int(fd), "open \(path)")
        fds[Int(fd)] = fd
        return Int(fd)
    }

    private func fd(_ h: Int) throws -> Int32 {
        guard let fd = fds[h] else { throw DriverError(errno: EBADF, call: "handle \(h)") }
        return fd
    }

    public func write(_ h: Int, _ bytes: [UInt8], at offset: Int64) throws {
        let fd = try fd(h)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(offset + Int64(done))) }
            try check(n, "write")
            done += n
        }
    }

    public func read(_ h: Int, count: Int, at offset: Int64) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let n = pread(try fd(h), &buffer, count, off_t(offset))
        try check(n, "read")
        return Array(buffer.prefix(n))
    }

    public func truncate(_ h: Int, to size: Int64) throws { try check(Int(ftruncate(try fd(h), off_t(size))), "ftruncate") }
    public func truncate(_ path: String, to size: Int64) throws { try check(Int(Glibc.truncate(full(path), off_t(size))), "truncate \(path)") }

    public func fallocate(_ h: Int, mode: Int32, offset: Int64, length: Int64) throws {
        do {
            try SystemCalls.allocate(try fd(h), mode: mode, offset: offset, length: length, "handle \(h)")
        } catch LibraryError.io(_, let code) {
            throw DriverError(errno: code, call: "fallocate")
        }
    }

    public func setMtime(_ h: Int, nanoseconds: Int64) throws {
        var times = [timespec(tv_sec: 0, tv_nsec: SystemCalls.utimeOmit), SystemCalls.timespec(nanoseconds: nanoseconds)]
        try check(Int(futimens(try fd(h), &times)), "futimens")
    }

    public func fsync(_ h: Int) throws { try check(Int(Glibc.fsync(try fd(h))), "fsync") }

    public func close(_ h: Int) throws {
        let fd = try fd(h)
        fds.removeValue(forKey: h)
        try check(Int(Glibc.close(fd)), "close")
    }

    public func duplicate(_ h: Int) throws -> Int {
        let copy = fcntl(try fd(h), F_DUPFD_CLOEXEC, 0)
        try check(Int(copy), "dup")
        fds[Int(copy)] = copy
        return Int(copy)
    }

    public func stat(_ path: String) throws -> PathStatus {
        var st = Glibc.stat()
        try check(Int(lstat(full(path), &st)), "stat \(path)")
        return Self.status(st)
    }

    public func fstat(_ h: Int) throws -> PathStatus {
        var st = Glibc.stat()
        try check(Int(Glibc.fstat(try fd(h), &st)), "fstat")
        return Self.status(st)
    }

    private static func status(_ st: Glibc.stat) -> PathStatus {
        PathStatus(ino: UInt64(st.st_ino), size: Int64(st.st_size), mtimeNs: st.st_mtim.nanoseconds,
                   ctimeNs: st.st_ctim.nanoseconds, nlink: UInt32(st.st_nlink), isDirectory: st.isDirectory, mode: UInt32(st.st_mode) & 0o7777)
    }

    public func list(_ path: String) throws -> [String] {
        guard let dir = opendir(full(path)) else { throw DriverError(errno: Glibc.errno, call: "opendir \(path)") }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." && name != ".thumbnails" { names.append(name) }
        }
        return names
    }

    public func mkdir(_ path: String) throws { try check(Int(Glibc.mkdir(full(path), 0o755)), "mkdir \(path)") }
    public func rmdir(_ path: String) throws { try check(Int(Glibc.rmdir(full(path))), "rmdir \(path)") }
    public func unlink(_ path: String) throws { try check(Int(Glibc.unlink(full(path))), "unlink \(path)") }
    public func rename(_ from: String, _ to: String) throws { try check(Int(Glibc.rename(full(from), full(to))), "rename \(from) \(to)") }
    public func link(_ from: String, _ to: String) throws { try check(Int(Glibc.link(full(from), full(to))), "link \(from) \(to)") }
    public func chmod(_ path: String, _ mode: UInt32) throws { try check(Int(Glibc.chmod(full(path), mode_t(mode))), "chmod \(path)") }
    public func symlink(_ target: String, _ path: String) throws { try check(Int(Glibc.symlink(target, full(path))), "symlink \(path)") }

    public func readlink(_ path: String) throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        let n = Glibc.readlink(full(path), &buffer, buffer.count)
        try check(n, "readlink \(path)")
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public func setxattr(_ path: String, _ name: String, _ value: String) throws {
        do { try SystemCalls.setAttribute(full(path), name, Array(value.utf8)) } catch let error as LibraryError {
            throw DriverError(errno: error.errno, call: "setxattr \(path)")
        }
    }

    public func getxattr(_ path: String, _ name: String) throws -> String {
        do { return String(decoding: try SystemCalls.attribute(full(path), name), as: UTF8.self) } catch let error as LibraryError {
            throw DriverError(errno: error.errno, call: "getxattr \(path)")
        }
    }

    public func advanceTime(seconds: Int64) -> Bool { false }

    /// The open descriptors are close-on-exec: the child's exec closes its copies, and
    /// the kernel sends a flush for each.
    public func runChildProcess() throws {
        let result = try Processes.run("/bin/true", [])
        if !result.ok { throw DriverError(errno: EIO, call: "/bin/true exited \(result.status)") }
    }

    public func stop() {
        for (_, fd) in fds { _ = Glibc.close(fd) }
        fds.removeAll()
        mount.unmount()
    }
}
