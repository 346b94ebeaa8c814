import AlbumCore
import Glibc

/// A refusal or failure of a filesystem operation: the errno the caller sees, and a
/// one-line reason for the log.
public struct FSError: Error, CustomStringConvertible {
    public let errno: Int32
    public let reason: String
    /// Whether the refusal is worth a log line (a lookup miss is not).
    public let logged: Bool

    public init(_ errno: Int32, _ reason: String, logged: Bool = true) {
        self.errno = errno
        self.reason = reason
        self.logged = logged
    }

    public var description: String { "\(reason) (\(String(cString: strerror(errno))))" }

    static func noEntry(_ what: String) -> FSError { FSError(ENOENT, "\(what): no such file or folder", logged: false) }
    static func notPermitted(_ why: String) -> FSError { FSError(EPERM, why) }

    /// The one mapping from any error to an errno: library errors carry theirs, SQLite's
    /// disk-full is ENOSPC, anything unexpected is EIO.
    public static func from(_ error: Error) -> FSError {
        switch error {
        case let error as FSError: return error
        case let error as LibraryError:
            return FSError(error.errno, error.description, logged: error.errno != ENOENT)
        case let error as SQLiteError:
            if error.isDiskFull { return FSError(ENOSPC, "database: disk full") }
            return FSError(EIO, "database: \(error)")
        default:
            return FSError(EIO, "unexpected error: \(error)")
        }
    }
}
