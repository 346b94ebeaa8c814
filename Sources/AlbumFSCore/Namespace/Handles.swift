import AlbumCore
import Glibc

/// An open file: what reads come from and writes go to.
final class OpenFile: Sendable {
    enum State: Sendable {
        /// Bytes only read: a blob, a plain file's bytes, a thumbnail. The descriptor is
        /// this handle's.
        case readOnly(FileDescriptor)
        /// A file being written, shared by every handle of the inode.
        case writer(Writer)
    }

    let ino: UInt64
    let state: State
    let mode: IOMode

    init(ino: UInt64, state: State, mode: IOMode = .cached) {
        self.ino = ino
        self.state = state
        self.mode = mode
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
    func register(_ file: FileDescriptor) -> Int32?
    func unregister(_ id: Int32)
}

/// Open files by handle number (the `fh` the kernel passes back), and the I/O mode of
/// every inode with open files. The backing-file ioctls run outside the table's lock, as
/// libfuse's passthrough_hp does: the lock is held to read and change the table only.
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

    struct FileKey: Equatable, Sendable {
        let device: UInt64
        let inode: UInt64

        init?(_ file: FileDescriptor) {
            guard let st = try? file.status() else { return nil }
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

    /// Adds an open file. `readOnly` opens of `passthroughCandidate` (a blob, a thumbnail)
    /// go to passthrough when it is on and the inode has no cached opens; everything
    /// else is cached. EBUSY for a read-only open of another blob than the one the inode
    /// is open in passthrough with (its photo got a new version in between).
    func add(ino: UInt64, state: OpenFile.State, passthroughCandidate: FileDescriptor?) throws -> OpenFile {
        if let candidate = passthroughCandidate, let backingFiles = backing.withLock({ $0 }), let key = FileKey(candidate) {
            enum Plan { case cached, share(Int32), register }
            let plan: Plan = try table.withLock { s in
                var io = s.inodes[ino] ?? InodeIO()
                if io.cachedHandles > 0 { return .cached }
                guard var current = io.passthrough else { return .register }
                guard current.file == key else {
                    throw FSError(EBUSY, "inode \(ino) changed while an older version is open for reading; open it again once that is closed")
                }
                current.handles += 1
                io.passthrough = current
                s.inodes[ino] = io
                return .share(current.backingID)
            }
            switch plan {
            case .share(let id):
                return OpenFile(ino: ino, state: state, mode: .passthrough(backingID: id))
            case .register:
                // The ioctl outside the lock; then install it, unless another open of the
                // inode got there first (share theirs and drop ours) or a cached open came.
                if let id = backingFiles.register(candidate) {
                    let (mode, unused) = table.withLock { s -> (IOMode, Int32?) in
                        var io = s.inodes[ino] ?? InodeIO()
                        defer { s.inodes[ino] = io }
                        if var current = io.passthrough, current.file == key {
                            current.handles += 1
                            io.passthrough = current
                            return (.passthrough(backingID: current.backingID), id)
                        }
                        if io.cachedHandles > 0 || io.passthrough != nil {
                            io.cachedHandles += 1
                            return (.cached, id)
                        }
                        io.passthrough = Passthrough(backingID: id, file: key, handles: 1)
                        return (.passthrough(backingID: id), nil)
                    }
                    if let unused { backingFiles.unregister(unused) }
                    return OpenFile(ino: ino, state: state, mode: mode)
                }
            case .cached:
                break
            }
        }
        // Writers, plain files, and reads without passthrough. Should the inode be in
        // passthrough (a race with the guards), the kernel refuses this open with EIO.
        table.withLock { s in
            var io = s.inodes[ino] ?? InodeIO()
            io.cachedHandles += 1
            s.inodes[ino] = io
        }
        return OpenFile(ino: ino, state: state, mode: .cached)
    }

    /// The handle number of an open file just added.
    func handle(for file: OpenFile) -> UInt64 {
        table.withLock { s in
            let handle = s.next
            s.next += 1
            s.files[handle] = file
            return handle
        }
    }

    func get(_ handle: UInt64) -> OpenFile? { table.withLock { $0.files[handle] } }

    @discardableResult
    func remove(_ handle: UInt64) -> OpenFile? {
        let (file, unregister) = table.withLock { s -> (OpenFile?, Int32?) in
            guard let file = s.files.removeValue(forKey: handle) else { return (nil, nil) }
            var io = s.inodes[file.ino] ?? InodeIO()
            var unregister: Int32?
            switch file.mode {
            case .cached: io.cachedHandles -= 1
            case .passthrough:
                if var current = io.passthrough {
                    current.handles -= 1
                    if current.handles > 0 {
                        io.passthrough = current
                    } else {
                        // The kernel holds its own reference for as long as it needs one;
                        // the id is only for opens still to come.
                        unregister = current.backingID
                        io.passthrough = nil
                    }
                }
            }
            s.inodes[file.ino] = io.isEmpty ? nil : io
            return (file, unregister)
        }
        if let unregister { backing.withLock { $0 }?.unregister(unregister) }
        return file
    }

    /// Every handle still open (a test counts what a mount leaves behind).
    var count: Int { table.withLock { $0.files.count } }
}

extension FileSystem {
    /// How a read is to be served: from a descriptor at an offset (the bridge splices it
    /// to the kernel without copying). The descriptor is pinned by this value: it stays
    /// open until the bridge has sent the reply, whatever happens to the file meanwhile.
    public struct ReadSource: Sendable {
        public let file: FileDescriptor
        public let offset: Int64
        public let size: Int
    }

    /// Result of open: the handle, and whether the kernel may keep cached pages (an
    /// asset's content never changes under a given version).
    public struct Opened: Sendable {
        public let handle: UInt64
        public let keepCache: Bool
        /// Opened to be read only: its close needs no flush.
        public var readOnly = false
        /// How the kernel is to serve its reads, as the handle table decided at the open.
        public let mode: IOMode
    }

    /// Adds an open file to the handle table: its handle, with the mode decided there.
    func opened(ino: UInt64, _ state: OpenFile.State, keepCache: Bool, readOnly: Bool = false,
                passthroughCandidate: FileDescriptor? = nil) throws -> Opened {
        let file = try handles.add(ino: ino, state: state, passthroughCandidate: passthroughCandidate)
        let handle = handles.handle(for: file)
        return Opened(handle: handle, keepCache: keepCache, readOnly: readOnly, mode: file.mode)
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
        switch file.state {
        case .readOnly(let fd):
            return ReadSource(file: fd, offset: offset, size: size)
        case .writer(let writer):
            let (fd, clone) = writer.readable()
            if let fd { return ReadSource(file: fd, offset: offset, size: size) }
            // A copy that has no bytes of its own yet reads its source; a photo opened for
            // writing and not written yet reads its own blob.
            if let clone { return ReadSource(file: try library.openBlob(of: clone), offset: offset, size: size) }
            guard case .asset(let id) = writer.target, let asset = try library.asset(id: id) else {
                throw FSError(EIO, "inode \(file.ino) has no bytes to read")
            }
            return ReadSource(file: try library.openBlob(of: asset), offset: offset, size: size)
        }
    }
}
