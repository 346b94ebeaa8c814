import CSystem
import Glibc

/// An open file descriptor that owns itself: it is closed when the last reference goes,
/// never earlier. Whoever uses one holds a reference for as long as they use it (a read
/// the bridge splices from keeps its descriptor alive until the reply is sent), so a
/// descriptor can never be closed under a user, nor its number reused for another file
/// meanwhile. Every call on it goes through `SystemCalls`, which retries EINTR and turns
/// failures into `LibraryError.io` naming the file.
public final class FileDescriptor: Sendable, CustomStringConvertible {
    public let raw: Int32
    /// What it is, for error messages ("originals/ab/abcd...", "plain/1042").
    public let label: String

    /// Takes ownership of `raw`, which must be an open descriptor.
    public init(adopting raw: Int32, label: String) {
        self.raw = raw
        self.label = label
    }

    deinit { _ = Glibc.close(raw) }

    public var description: String { "\(label) (fd \(raw))" }

    // MARK: reading and writing

    /// Reads up to `buffer.count` bytes at `offset`; 0 at end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try SystemCalls.retrying("read", label) { pread(raw, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Reads exactly `count` bytes at `offset`, or fewer at the end of the file.
    public func read(count: Int, at offset: Int64) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = try bytes.withUnsafeMutableBytes {
                try read(into: UnsafeMutableRawBufferPointer(rebasing: $0[done...]), at: offset + Int64(done))
            }
            if n == 0 { break }
            done += n
        }
        return Array(bytes.prefix(done))
    }

    /// Writes the bytes at `offset`; returns how many were written (all but on error).
    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws -> Int {
        var done = 0
        while done < bytes.count {
            let n = try SystemCalls.retrying("write", label) {
                pwrite(raw, bytes.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
            }
            done += n
        }
        return done
    }

    /// Appends at the current offset (a descriptor opened to be written front to back).
    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            done += try SystemCalls.retrying("write", label) { Glibc.write(raw, bytes.baseAddress! + done, bytes.count - done) }
        }
    }

    // MARK: metadata

    public func status() throws -> stat {
        var st = stat()
        _ = try SystemCalls.retrying("fstat", label) { fstat(raw, &st) }
        return st
    }

    public func size() throws -> Int64 { Int64(try status().st_size) }

    public func truncate(to size: Int64) throws {
        _ = try SystemCalls.retrying("ftruncate", label) { ftruncate(raw, off_t(size)) }
    }

    /// fallocate(2): `mode` 0 reserves space and may grow the file, FALLOC_FL_KEEP_SIZE
    /// only reserves, FALLOC_FL_PUNCH_HOLE and FALLOC_FL_ZERO_RANGE make a range zeros.
    public func allocate(mode: Int32, offset: Int64, length: Int64) throws {
        try SystemCalls.allocate(raw, mode: mode, offset: offset, length: length, label)
    }

    public func sync() throws {
        _ = try SystemCalls.retrying("fsync", label) { fsync(raw) }
    }

    /// fdatasync(2): the bytes, and what reading them back needs (the size), not the times.
    public func syncData() throws {
        _ = try SystemCalls.retrying("fdatasync", label) { fdatasync(raw) }
    }

    public func setMode(_ mode: UInt32) throws {
        _ = try SystemCalls.retrying("fchmod", label) { fchmod(raw, mode_t(mode)) }
    }

    /// Sets only the mtime.
    public func setModificationTime(nanoseconds: Int64) throws {
        var times = [timespec(tv_sec: 0, tv_nsec: SystemCalls.utimeOmit), SystemCalls.timespec(nanoseconds: nanoseconds)]
        _ = try SystemCalls.retrying("futimens", label) { futimens(raw, &times) }
    }

    /// Starts writing a range to disk without waiting, so that a later fsync has less to do.
    public func startWriteback(offset: Int64, length: Int64) {
        _ = shim_start_writeback(raw, off_t(offset), off_t(length))
    }

    public func adviseSequential() {
        _ = posix_fadvise(raw, 0, 0, POSIX_FADV_SEQUENTIAL)
    }

    /// A path another process of this user can open the same file by (the decoder workers
    /// read what the daemon opened, never a path of their own).
    public var procPath: String { "/proc/\(getpid())/fd/\(raw)" }
}
