import Glibc

/// Errors of the storage core. Each one names what went wrong and, where there is
/// something to do about it, what to do; the command line prints `description` as its
/// one line, and the mount maps `errno` onto the reply.
public enum LibraryError: Error, CustomStringConvertible, Equatable {
    case notALibrary(String)
    case alreadyALibrary(String)
    case newerSchema(found: Int, known: Int)
    case locked(String)
    case notFound(String)
    case exists(String)
    case refused(String)          // not a supported photo or video
    case invalidName(String, errno: Int32)
    case notPermitted(String)
    case notEmpty(String)
    case io(String, errno: Int32)
    case corrupt(String)
    /// A row changed between the caller's look at it and its transaction (through another
    /// host of the library): the caller looks again and starts over.
    case changedMeanwhile(String)

    public var description: String {
        switch self {
        case .notALibrary(let path):
            return "\(path) is not an AlbumFS library (no library.db); create one with: albumfs init \(path)"
        case .alreadyALibrary(let path):
            return "\(path) already holds an AlbumFS library; use it, or choose an empty or new directory"
        case .newerSchema(let found, let known):
            return "the library has schema version \(found), newer than this albumfs knows (\(known)); upgrade albumfs"
        case .locked(let path):
            return "the library \(path) is in use by another albumfs process (a mount or a command); unmount it or wait for it to finish"
        case .notFound(let what): return "\(what): not found"
        case .exists(let what): return "\(what): already exists"
        case .refused(let why): return why
        case .invalidName(let why, _): return why
        case .notPermitted(let why): return why
        case .notEmpty(let what): return "\(what): not empty"
        case .io(let what, let code): return "\(what): \(String(cString: strerror(code)))"
        case .corrupt(let what): return what
        case .changedMeanwhile(let what): return "\(what) changed meanwhile through another host; try again"
        }
    }

    /// The errno a filesystem operation reports for this error.
    public var errno: Int32 {
        switch self {
        case .notALibrary, .notFound: return ENOENT
        case .alreadyALibrary, .exists: return EEXIST
        case .newerSchema: return EPROTO
        case .locked: return EBUSY
        case .refused: return EINVAL
        case .invalidName(_, let code): return code
        case .notPermitted: return EPERM
        case .notEmpty: return ENOTEMPTY
        case .io(_, let code): return code
        case .corrupt: return EIO
        case .changedMeanwhile: return EAGAIN
        }
    }
}
