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

/// Open files by handle number (the `fh` the kernel passes back).
final class HandleTable: Sendable {
    private let table = Locked<(next: UInt64, files: [UInt64: OpenFile])>((1, [:]))

    func add(_ file: OpenFile) -> UInt64 {
        table.withLock { state in
            let handle = state.next
            state.next += 1
            state.files[handle] = file
            return handle
        }
    }

    func get(_ handle: UInt64) -> OpenFile? { table.withLock { $0.files[handle] } }

    @discardableResult
    func remove(_ handle: UInt64) -> OpenFile? { table.withLock { $0.files.removeValue(forKey: handle) } }

    var count: Int { table.withLock { $0.files.count } }
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
                return Opened(handle: handles.add(OpenFile(ino: ino, state: .readOnly(fd: fd))), keepCache: true, readOnly: true)
            case .scratch(let file):
                if writing { try checkWritable() }
                let fd: Int32
                do {
                    fd = try library.openScratch(file.id, flags: flags & (O_ACCMODE | O_TRUNC | O_APPEND))
                } catch {
                    throw FSError(EIO, "scratch file \(file.name) cannot be opened: \(error)")
                }
                return Opened(handle: handles.add(OpenFile(ino: ino, state: .scratch(fd: fd, id: file.id))), keepCache: false)
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
            return Opened(handle: handles.add(OpenFile(ino: ino, state: .readOnly(fd: fd))), keepCache: true, readOnly: true)
        default:
            throw FSError(EISDIR, "is a folder", logged: false)
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
