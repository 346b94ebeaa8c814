import CSystem
import Glibc

/// The Linux calls Swift's Glibc module does not declare (they need _GNU_SOURCE).
public enum SystemCalls {
    /// Copies `length` bytes between descriptors inside the kernel (a reflink or a
    /// server-side copy where the filesystem can). Returns the bytes copied, or -1 and
    /// errno.
    public static func copyFileRange(_ input: Int32, _ inOffset: inout Int64, _ output: Int32, _ outOffset: inout Int64, _ length: Int) -> Int {
        var i = off_t(inOffset), o = off_t(outOffset)
        let n = shim_copy_file_range(input, &i, output, &o, length)
        inOffset = Int64(i)
        outOffset = Int64(o)
        return n
    }

    /// Copies a whole range, looping over short copies. Throws with errno on failure.
    public static func copyAll(from input: Int32, to output: Int32, length: Int64) throws {
        var inOffset: Int64 = 0, outOffset: Int64 = 0
        var remaining = length
        while remaining > 0 {
            let n = copyFileRange(input, &inOffset, output, &outOffset, Int(min(remaining, 1 << 30)))
            if n < 0 { throw LibraryError.io("copy_file_range", errno: errno) }
            if n == 0 { break }
            remaining -= Int64(n)
        }
    }

    /// Opens a path below a folder descriptor, refusing to leave it: no `..`, no
    /// symbolic link on the way. Returns -1 and errno on failure.
    public static func openBeneath(_ dirfd: Int32, _ path: String, flags: Int32, mode: UInt32 = 0o600) -> Int32 {
        shim_open_beneath(dirfd, path, flags | O_CLOEXEC, mode)
    }

    /// A pipe whose ends close on exec (only the ends a child gets by dup2 survive).
    public static func pipeCloseOnExec() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard shim_pipe_cloexec(&fds) == 0 else { throw LibraryError.io("pipe2", errno: errno) }
        return (fds[0], fds[1])
    }

    /// Starts writing a range of a file to disk without waiting, so that a later fsync
    /// has less to wait for.
    public static func startWriteback(fd: Int32, offset: Int64, length: Int64) {
        _ = shim_start_writeback(fd, off_t(offset), off_t(length))
    }

    /// The tv_nsec that leaves a time unchanged in utimensat/futimens.
    public static var utimeOmit: Int { Int(shim_utime_omit()) }

    /// A timespec from nanoseconds since the epoch.
    public static func timespec(nanoseconds ns: Int64) -> Glibc.timespec {
        var seconds = ns / 1_000_000_000
        var rest = ns % 1_000_000_000
        if rest < 0 { rest += 1_000_000_000; seconds -= 1 }
        return Glibc.timespec(tv_sec: Int(seconds), tv_nsec: Int(rest))
    }

    /// Sets only the mtime of a descriptor.
    public static func setMtime(fd: Int32, nanoseconds: Int64) {
        var times = [Glibc.timespec(tv_sec: 0, tv_nsec: utimeOmit), timespec(nanoseconds: nanoseconds)]
        futimens(fd, &times)
    }

    /// Sets only the mtime of a path (of a link itself, never what it points to).
    public static func setMtime(path: String, nanoseconds: Int64) {
        var times = [Glibc.timespec(tv_sec: 0, tv_nsec: utimeOmit), timespec(nanoseconds: nanoseconds)]
        utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
    }
}
