import AlbumCore
import Glibc

/// A refusal or failure of a filesystem operation: the errno the caller sees, a one-line
/// reason, the error it came from (kept, never flattened into the message), and where in
/// the source it was raised. The bridge logs the whole chain once per failed request.
public struct FSError: Error, CustomStringConvertible {
    public let errno: Int32
    public let message: String
    public let cause: (any Error)?
    /// Whether the refusal is worth a log line (a lookup miss is not).
    public let logged: Bool
    public let file: String
    public let line: Int

    public init(_ errno: Int32, _ message: String, cause: (any Error)? = nil, logged: Bool = true,
                file: String = #fileID, line: Int = #line) {
        self.errno = errno
        self.message = message
        self.cause = cause
        self.logged = logged
        self.file = file
        self.line = line
    }

    /// The reason, then each cause in turn: "cannot import IMG.jpg: write staging/...: No
    /// space left on device".
    public var description: String {
        var text = message
        var next = cause
        while let error = next {
            if let inner = error as? FSError {
                text += ": " + inner.message
                next = inner.cause
            } else {
                text += ": \(error)"
                next = nil
            }
        }
        return text + " (\(String(cString: strerror(errno))))"
    }

    /// Where it was raised, for the debug log.
    public var location: String { "\(file):\(line)" }

    static func noEntry(_ what: String, file: String = #fileID, line: Int = #line) -> FSError {
        FSError(ENOENT, "\(what): no such file or folder", logged: false, file: file, line: line)
    }

    /// An open of inode `ino` whose file was removed since the kernel found it: `rm`, or
    /// another file renamed over its name, between the kernel's lookup and its OPEN (an
    /// `O_CREAT|O_TRUNC` open of a name that `rsync` or an editor's save replaces at that
    /// moment: 4 in 10 such opens failed with `ENOENT` in a two-thread loop), when the
    /// file is not kept for such opens (`HeldByKernel`). `ESTALE` makes the kernel walk
    /// the path once more, revalidating each name, and open what the name holds now (or
    /// create it): the open then comes after the removal, as it may on any disk. An open
    /// with nothing to walk again (`/proc/PID/fd/N` of an `O_PATH` descriptor, a
    /// server's file handle) gets `ESTALE` itself, as from NFS.
    static func removedBeforeItsOpen(_ ino: UInt64, file: String = #fileID, line: Int = #line) -> FSError {
        FSError(ESTALE, "inode \(ino) was removed before its open: to be looked up again", logged: false, file: file, line: line)
    }

    static func notPermitted(_ why: String, file: String = #fileID, line: Int = #line) -> FSError {
        FSError(EPERM, why, file: file, line: line)
    }

    /// The one mapping from any error to an errno: library errors carry theirs,
    /// SQLite's disk-full is ENOSPC, anything unexpected is EIO. The daemon's own table
    /// of open files full (`EMFILE`, or SQLite unable to open a file for it) is `ENFILE`
    /// to the caller, whose own limit is not the one reached (`DescriptorLimit`).
    public static func errno(of error: any Error) -> Int32 {
        switch error {
        case let error as FSError: return error.errno
        case let error as LibraryError: return error.errno == EMFILE ? ENFILE : error.errno
        case let error as SQLiteError: return error.isDiskFull ? ENOSPC : error.isOutOfDescriptors ? ENFILE : EIO
        case let error as PostgresError: return error.isDiskFull ? ENOSPC : EIO
        case let error as DecoderError: return error.isPermanent ? EINVAL : EIO
        default: return EIO
        }
    }

    /// Any error as an FSError: an FSError as it is, anything else wrapped with its
    /// errno and kept as the cause.
    public static func from(_ error: any Error, file: String = #fileID, line: Int = #line) -> FSError {
        if let error = error as? FSError { return error }
        let code = errno(of: error)
        let logged = !(code == ENOENT && error is LibraryError)
        return FSError(code, "\(error)", cause: nil, logged: logged, file: file, line: line)
    }

    /// `error` explained: the errno of `error`, this message, and `error` as the cause.
    public static func wrapping(_ error: any Error, _ message: String, file: String = #fileID, line: Int = #line) -> FSError {
        FSError(errno(of: error), message, cause: error, logged: (error as? FSError)?.logged ?? true, file: file, line: line)
    }
}

/// Runs `body`, explaining any error it throws with `message` (its errno and cause kept).
func explained<T>(_ message: @autoclosure () -> String, file: String = #fileID, line: Int = #line,
                  _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch LibraryError.changedMeanwhile(let what) {
        // Not a failure yet: the caller's loop looks again (`againWhileChangedMeanwhile`).
        throw LibraryError.changedMeanwhile(what)
    } catch {
        throw FSError.wrapping(error, message(), file: file, line: line)
    }
}
