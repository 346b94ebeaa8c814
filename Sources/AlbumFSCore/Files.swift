import AlbumCore
import Glibc

/// An open file: what reads come from and writes go to.
final class OpenFile: @unchecked Sendable {
    enum State {
        /// An asset's blob (read-only), or a thumbnail. The descriptor is this handle's.
        case readOnly(fd: Int32)
        /// A scratch file's bytes, read and written in place.
        case scratch(fd: Int32, id: Int64)
        /// A file being written (new, or a new version), shared by its handles.
        case writer(Writer)
    }

    let ino: UInt64
    let state: State
    /// Set once by the handle table, before the handle is handed out.
    fileprivate(set) var mode: IOMode = .cached

    init(ino: UInt64, state: State) {
        self.ino = ino
        self.state = state
    }

    /// The descriptor reads come from.
    var readFD: Int32 {
        switch state {
        case .readOnly(let fd), .scratch(let fd, _): return fd
        case .writer(let writer): return writer.withLock { writer.fd }
        }
    }

    deinit {
        switch state {
        case .readOnly(let fd), .scratch(let fd, _): close(fd)
        case .writer: break  // the writer owns its descriptor
        }
    }
}

/// How the kernel serves an open file's reads: from the FUSE inode's page cache filled
/// by READ requests (`cached`), or straight from a backing file that the kernel reads
/// itself (`passthrough`: FUSE passthrough, no request at all).
///
/// The kernel keeps an inode in one mode at a time: while it is open in passthrough,
/// every other open of it must be passthrough with the same backing file, or the open
/// fails with EIO. So a photo open in passthrough cannot be written or replaced until
/// it is closed (ETXTBSY, see `refuseChangeWhileReadInPassthrough`), and its readers
/// all share one backing id.
public enum IOMode: Sendable, Equatable {
    case cached
    case passthrough(backingID: Int32)
}

/// Registers descriptors as passthrough backing files with the kernel (the bridge does
/// it with ioctls on /dev/fuse).
public protocol BackingFiles: Sendable {
    /// The backing id of `fd`, or nil when the kernel refuses it.
    func register(fd: Int32) -> Int32?
    func unregister(_ id: Int32)
}

/// Open files by handle number (the `fh` the kernel passes back), and the I/O mode of
/// every inode with open files.
final class HandleTable: Sendable {
    private struct Passthrough {
        let backingID: Int32
        /// The backing file (st_dev, st_ino): opens of the same blob share its id.
        let file: FileKey
        var handles: Int
    }

    private struct InodeIO {
        var cachedHandles = 0
        var passthrough: Passthrough?
        var isEmpty: Bool { cachedHandles == 0 && passthrough == nil }
    }

    struct FileKey: Equatable {
        let device: UInt64
        let inode: UInt64

        init?(fd: Int32) {
            var st = stat()
            guard fstat(fd, &st) == 0 else { return nil }
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
        }
    }

    private struct State {
        var next: UInt64 = 1
        var files: [UInt64: OpenFile] = [:]
        var inodes: [UInt64: InodeIO] = [:]
    }

    private let table = Locked(State())
    private let backing = Locked<(any BackingFiles)?>(nil)

    func enablePassthrough(_ files: any BackingFiles) { backing.withLock { $0 = files } }

    /// Whether `ino` is open in passthrough now.
    func inPassthrough(_ ino: UInt64) -> Bool { table.withLock { $0.inodes[ino]?.passthrough != nil } }

    /// Adds an open file. Read-only opens go to passthrough when it is on and the inode
    /// has no cached opens; everything else is cached. Throws EBUSY for a read-only open
    /// of another blob than the one the inode is open in passthrough with (its photo got
    /// a new version in between, which the guards make a race of microseconds).
    func add(_ file: OpenFile) throws -> UInt64 {
        let backingFiles = backing.withLock { $0 }
        return try table.withLock { state in
            var io = state.inodes[file.ino] ?? InodeIO()
            let mode: IOMode
            if let backingFiles, case .readOnly(let fd) = file.state, io.cachedHandles == 0, let key = FileKey(fd: fd) {
                if var current = io.passthrough {
                    guard current.file == key else {
                        throw FSError(EBUSY, "inode \(file.ino) changed while an older version is open for reading; open it again once that is closed")
                    }
                    current.handles += 1
                    io.passthrough = current
                    mode = .passthrough(backingID: current.backingID)
                } else if let id = backingFiles.register(fd: fd) {
                    io.passthrough = Passthrough(backingID: id, file: key, handles: 1)
                    mode = .passthrough(backingID: id)
                } else {
                    io.cachedHandles += 1
                    mode = .cached
                }
            } else {
                // Writers, scratch files, and reads without passthrough. Should the inode
                // be in passthrough (a race with the guards), the kernel refuses this
                // open with EIO.
                io.cachedHandles += 1
                mode = .cached
            }
            let handle = state.next
            state.next += 1
            file.mode = mode
            state.files[handle] = file
            state.inodes[file.ino] = io
            return handle
        }
    }

    func get(_ handle: UInt64) -> OpenFile? { table.withLock { $0.files[handle] } }

    @discardableResult
    func remove(_ handle: UInt64) -> OpenFile? {
        let backingFiles = backing.withLock { $0 }
        return table.withLock { state in
            guard let file = state.files.removeValue(forKey: handle) else { return nil }
            var io = state.inodes[file.ino] ?? InodeIO()
            switch file.mode {
            case .cached: io.cachedHandles -= 1
            case .passthrough:
                if var current = io.passthrough {
                    current.handles -= 1
                    if current.handles > 0 {
                        io.passthrough = current
                    } else {
                        // The kernel holds its own reference for as long as it needs
                        // one; the id is only for opens still to come.
                        backingFiles?.unregister(current.backingID)
                        io.passthrough = nil
                    }
                }
            }
            state.inodes[file.ino] = io.isEmpty ? nil : io
            return file
        }
    }
}

extension FileSystem {
    /// How a read is to be served: from a file descriptor at an offset (the bridge
    /// splices it to the kernel without copying).
    public struct ReadSource: Sendable {
        public let fd: Int32
        public let offset: Int64
        public let size: Int
        /// A descriptor opened just for this read, to be closed after the reply.
        public let closeAfter: Bool
    }

    /// Result of open: the handle, and whether the kernel may keep cached pages (an
    /// asset's content never changes under a given version).
    public struct Opened: Sendable {
        public let handle: UInt64
        public let keepCache: Bool
        /// Opened to be read only: its close needs no flush.
        public var readOnly = false
        /// How the kernel is to serve its reads, as the handle table decided at the open
        /// (carried here so that the bridge needs no second look-up under its lock).
        public let mode: IOMode
    }

    /// Adds an open file to the handle table: its handle, with the mode decided there.
    func opened(_ file: OpenFile, keepCache: Bool, readOnly: Bool = false) throws -> Opened {
        let handle = try handles.add(file)
        return Opened(handle: handle, keepCache: keepCache, readOnly: readOnly, mode: file.mode)
    }

    public func open(_ ino: UInt64, flags: Int32) throws -> Opened {
        guard let node = Node(ino: ino) else { throw FSError.noEntry("inode \(ino)") }
        let writing = flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0
        if let writer = writers.get(ino), writer.withLock({ writer.isNewFile || writing || writer.dirty }) {
            return try openForWriting(nil, ino: ino, flags: flags)
        }
        switch node {
        case .object(let id):
            guard let object = try object(id) else { throw FSError.noEntry("inode \(ino)") }
            switch object {
            case .album: throw FSError(EISDIR, "is a folder", logged: false)
            case .asset(let asset):
                if writing { return try openForWriting(asset, ino: ino, flags: flags) }
                let fd = try library.openBlob(of: asset)
                return try opened(OpenFile(ino: ino, state: .readOnly(fd: fd)), keepCache: true, readOnly: true)
            case .scratch(let file):
                if writing { try checkWritable() }
                let fd: Int32
                do {
                    fd = try library.openScratch(file.id, flags: flags & (O_ACCMODE | O_TRUNC | O_APPEND))
                } catch {
                    throw FSError(EIO, "scratch file \(file.name) cannot be opened: \(error)")
                }
                return try opened(OpenFile(ino: ino, state: .scratch(fd: fd, id: file.id)), keepCache: false)
            }
        case .thumbnail(let asset):
            if writing { throw FSError.notPermitted("thumbnails are made by AlbumFS and cannot be changed") }
            guard let file = try thumbnailFile(asset: asset) else { throw FSError.noEntry("thumbnail of \(asset)") }
            let fd: Int32
            do {
                fd = try library.openInside(String(file.path.dropFirst(library.paths.root.count + 1)), flags: O_RDONLY)
            } catch {
                throw FSError(EIO, "thumbnail \(file.path) cannot be opened: \(error)")
            }
            return try opened(OpenFile(ino: ino, state: .readOnly(fd: fd)), keepCache: true, readOnly: true)
        default:
            throw FSError(EISDIR, "is a folder", logged: false)
        }
    }

    /// Turns on FUSE passthrough for read-only opens of assets and thumbnails, once the
    /// kernel has agreed to it at INIT.
    public func enablePassthrough(_ files: any BackingFiles) { handles.enablePassthrough(files) }

    /// A photo open for reading in passthrough cannot change until it is closed: the
    /// kernel would refuse every open of the new version (see `IOMode`).
    func refuseChangeWhileReadInPassthrough(_ ino: UInt64, _ name: @autoclosure () -> String) throws {
        if handles.inPassthrough(ino) {
            throw FSError(ETXTBSY, "\(name()) is open for reading (passthrough); it can be replaced once it is closed")
        }
    }

    public func read(handle: UInt64, size: Int, offset: Int64) throws -> ReadSource {
        guard let file = handles.get(handle) else { throw FSError(EBADF, "read of an unknown handle \(handle)") }
        if case .writer(let writer) = file.state, let clone = writer.withLock({ writer.cloneOf }) {
            // A copy that has no bytes of its own yet reads its source.
            let fd = try library.openBlob(of: clone)
            return ReadSource(fd: fd, offset: offset, size: size, closeAfter: true)
        }
        return ReadSource(fd: file.readFD, offset: offset, size: size, closeAfter: false)
    }

    /// A file being created, found by name before it is imported.
    func pendingFile(in folderIno: UInt64, key: String) -> Attributes? {
        guard let writer = writers.newFile(in: folderIno, key: key) else { return nil }
        return writer.withLock { writerAttributes(writer) }
    }
}
