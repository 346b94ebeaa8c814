import AlbumCore
import Glibc

/// An open file: what reads come from.
final class OpenFile: @unchecked Sendable {
    enum Source {
        /// An asset's blob (read-only), or a thumbnail.
        case readOnly(fd: Int32)
        /// A scratch file's bytes, read and written in place.
        case scratch(fd: Int32, id: Int64)
    }

    let ino: UInt64
    let source: Source

    init(ino: UInt64, source: Source) {
        self.ino = ino
        self.source = source
    }

    var fd: Int32 {
        switch source {
        case .readOnly(let fd), .scratch(let fd, _): return fd
        }
    }

    deinit { close(fd) }
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
    /// How an open file is to be served: from a file descriptor at an offset (the
    /// bridge splices it to the kernel without copying).
    public struct ReadSource: Sendable {
        public let fd: Int32
        public let offset: Int64
        public let size: Int
    }

    /// Result of open: the handle, and whether the kernel may keep cached pages (an
    /// asset's content never changes under a given version).
    public struct Opened: Sendable {
        public let handle: UInt64
        public let keepCache: Bool
    }

    public func open(_ ino: UInt64, flags: Int32) throws -> Opened {
        guard let node = Node(ino: ino) else { throw FSError.noEntry("inode \(ino)") }
        let writing = flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0
        switch node {
        case .object(let id):
            guard let object = try object(id) else { throw FSError.noEntry("inode \(ino)") }
            switch object {
            case .album: throw FSError(EISDIR, "is a folder", logged: false)
            case .asset(let asset):
                if writing { return try openForWriting(asset, ino: ino, flags: flags) }
                let path = library.blobs.path(for: asset.sha256)
                let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    throw FSError(EIO, "the original of asset \(asset.id) (\(asset.name)) cannot be opened: \(String(cString: strerror(errno))); run albumfs check")
                }
                return Opened(handle: handles.add(OpenFile(ino: ino, source: .readOnly(fd: fd))), keepCache: true)
            case .scratch(let file):
                if options.readOnly && writing { throw FSError(EROFS, "read-only mount") }
                let path = library.scratchPath(file.id)
                let fd = Glibc.open(path, (flags & (O_ACCMODE | O_TRUNC | O_APPEND)) | O_CLOEXEC)
                guard fd >= 0 else { throw FSError(EIO, "scratch file \(file.name) cannot be opened: \(String(cString: strerror(errno)))") }
                return Opened(handle: handles.add(OpenFile(ino: ino, source: .scratch(fd: fd, id: file.id))), keepCache: false)
            }
        case .thumbnail(let asset):
            if writing { throw FSError(EPERM, "thumbnails are read-only") }
            guard let file = try thumbnailFile(asset: asset) else { throw FSError.noEntry("thumbnail of \(asset)") }
            let fd = Glibc.open(file.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw FSError(EIO, "thumbnail \(file.path) cannot be opened") }
            return Opened(handle: handles.add(OpenFile(ino: ino, source: .readOnly(fd: fd))), keepCache: true)
        default:
            throw FSError(EISDIR, "is a folder", logged: false)
        }
    }

    public func read(handle: UInt64, size: Int, offset: Int64) throws -> ReadSource {
        guard let file = handles.get(handle) else { throw FSError(EBADF, "read of an unknown handle \(handle)") }
        return ReadSource(fd: file.fd, offset: offset, size: size)
    }

    public func release(handle: UInt64) {
        handles.remove(handle)
    }

    /// Files being written, found by name before they are imported.
    func pendingFile(in folderIno: UInt64, key: String) -> Attributes? {
        nil  // the write side comes with the writes issue
    }

    func openForWriting(_ asset: Asset, ino: UInt64, flags: Int32) throws -> Opened {
        throw FSError(EROFS, "writing into \(asset.name): not supported yet")
    }
}
