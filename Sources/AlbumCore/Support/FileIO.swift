import Glibc

/// Thin, errno-preserving wrappers for the few file operations the core needs.
/// Every failure becomes a `LibraryError.io` naming the file.
enum FileIO {
    static let chunkSize = 1 << 20

    static func openRead(_ path: String) throws -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LibraryError.io(path, errno: errno) }
        return fd
    }

    /// Writes all of `buffer`, retrying short writes and EINTR.
    static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < buffer.count {
            let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw LibraryError.io("cannot write \(path)", errno: errno)
            }
            offset += n
        }
    }

    /// Reads up to `buffer.count` bytes, retrying EINTR. Returns 0 at end of file.
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, path: String) throws -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno != EINTR { throw LibraryError.io("cannot read \(path)", errno: errno) }
        }
    }

    static func fsync(_ fd: Int32, path: String) throws {
        if Glibc.fsync(fd) != 0 { throw LibraryError.io("cannot fsync \(path)", errno: errno) }
    }

    /// fsyncs a directory, so that a rename or create inside it is durable.
    static func fsyncDirectory(_ path: String) throws {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw LibraryError.io(path, errno: errno) }
        defer { close(fd) }
        try fsync(fd, path: path)
    }

    static func fileSize(_ fd: Int32) -> Int64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Hashes a whole file from its descriptor, from offset 0.
    static func sha256(fd: Int32, path: String) throws -> (hash: String, size: Int64) {
        var hasher = SHA256Hasher()
        var total: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let n = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            if n < 0 {
                if errno == EINTR { continue }
                throw LibraryError.io("cannot read \(path)", errno: errno)
            }
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
            total += Int64(n)
        }
        return (hasher.finalizeHex(), total)
    }
}
