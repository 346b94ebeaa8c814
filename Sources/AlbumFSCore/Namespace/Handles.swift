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
    /// The kernel inode it was opened through (`KernelNodes`): I/O modes are its.
    let node: UInt64
    let state: State
    let mode: IOMode
    /// Opened for writing. A handle opened only to read a writer's bytes (a viewer
    /// reading a photo while an editor writes it) shares the writer but is no writer:
    /// its close commits nothing, as closing a reader changes nothing on a disk.
    let writes: Bool
    /// The thread that opened it (0: not known). A copy of the descriptor that another
    /// process closes (a child forked while it was open) is no close of this open
    /// (`FileSystem.flush`). The thread, not its process: most files are closed by the
    /// thread that opened them, which then costs no look into /proc.
    let opener: Int32
    /// An open of a version of a photo or thumbnail counted among its kernel inode's
    /// readers: a cached one (`HandleTable.addCachedReader`), or a file server's in direct
    /// I/O beside a writer (`NodeIO.addDirectReader`).
    let readsVersion: Bool

    init(ino: UInt64, node: UInt64, state: State, mode: IOMode = .cached, writes: Bool, opener: Int32 = 0,
         readsVersion: Bool = false) {
        self.ino = ino
        self.node = node
        self.state = state
        self.mode = mode
        self.writes = writes
        self.opener = opener
        self.readsVersion = readsVersion
    }
}

/// How the kernel serves an open file's reads: from the FUSE inode's page cache filled
/// by READ requests (`cached`), or straight from a backing file that the kernel reads
/// itself (`passthrough`: FUSE passthrough, no request at all).
///
/// The kernel keeps a kernel inode in one mode at a time (fs/fuse/iomode.c): while it is
/// open in passthrough, every other open of it must be passthrough with the same backing
/// file, or the kernel fails it with EIO (even a direct-I/O open, on this kernel). So an
/// open that cannot be in passthrough (a writer) of a photo read in passthrough is sent
/// to a new kernel inode of the photo (`KernelNodes`, `FileSystem.opened`).
public enum IOMode: Sendable, Equatable {
    case cached
    case passthrough(backingID: Int32)
    /// Past the page cache (`FOPEN_DIRECT_IO`): every read and write is a request, no
    /// page of the kernel inode is filled from this handle, and each write drops the
    /// pages others cached of its range. The kernel gives such an open no I/O mode
    /// (fs/fuse/iomode.c), so the kernel lets passthrough readers open beside it; the
    /// handle table does not, when it writes (one size for the kernel inode, the
    /// writer's: `HandleTable.addReader`). For a file created
    /// to be written only, and for a writer that must share a kernel inode with cached
    /// readers of a version (`HandleTable.addCached`). `mmap` with `MAP_SHARED` of such a
    /// handle fails (`ENODEV`).
    case direct
}

/// Registers descriptors as passthrough backing files with the kernel (the bridge does
/// it with ioctls on /dev/fuse).
public protocol BackingFiles: Sendable {
    /// The backing id of `fd`, or nil when the kernel refuses it.
    func register(_ file: FileDescriptor) -> Int32?
    func unregister(_ id: Int32)
}

/// Open files by handle number (the `fh` the kernel passes back), and the I/O mode of
/// every kernel inode with open files. The backing-file ioctls run outside the table's
/// lock, as libfuse's passthrough_hp does: the lock is held to read and change the table
/// only. The kernel drops an open's mode before the daemon hears of its release, so the
/// table never believes a mode gone that the kernel still holds.
final class HandleTable: Sendable {
    private struct Passthrough {
        let backingID: Int32
        /// The backing file (st_dev, st_ino): opens of the same blob share its id.
        let file: FileKey
        var handles: Int
    }

    /// The size of the file that the readers of kernel inode `node` read, in passthrough
    /// or cached, if it has readers.
    func readersSize(_ node: UInt64) -> Int64? {
        table.withLock { s in
            guard let io = s.nodes[node] else { return nil }
            if let passthrough = io.passthrough { return passthrough.file.size }
            // Not beside handles open for writing: the file is the size of what they write.
            guard let readers = io.readers, io.writingHandles == 0 else { return nil }
            return readers.key.size
        }
    }

    /// The version that a kernel inode's cached readers read: the kernel fills the
    /// inode's pages from any of their handles, so they must all read the same file, as
    /// the kernel itself demands of opens in passthrough.
    private struct Readers {
        let key: FileKey
        let file: FileDescriptor
        var handles: Int
    }

    private struct NodeIO {
        /// Handles in the kernel's caching I/O mode: they fill the kernel inode's pages.
        var cachedHandles = 0
        /// Handles in direct I/O (`IOMode.direct`): no I/O mode, no pages.
        var directHandles = 0
        var passthrough: Passthrough?
        var readers: Readers?
        /// Handles open for writing, cached or direct.
        var writingHandles = 0
        /// Cached handles of a writer's bytes (open for writing, or reading the bytes being
        /// written; among `cachedHandles`): the pages they fill are of those bytes, which
        /// cached readers of a version must never read, nor they the readers' pages.
        var writerHandles = 0
        /// Whether a writer's handles are here: cached ones fill the pages, and every
        /// handle open for writing, direct ones too, sets the kernel inode's size (the
        /// readers of a version would see it as theirs; appends would start at theirs).
        var hasWriter: Bool { writerHandles > 0 || writingHandles > 0 }

        /// Counts a cached open of a version, `file` (`key`), among the readers: the
        /// bytes it is to read (theirs when `share`), or nil when they read another file.
        mutating func addReader(_ file: FileDescriptor, _ key: FileKey, share: Bool) -> FileDescriptor? {
            guard let bytes = joinReaders(file, key, share: share) else { return nil }
            cachedHandles += 1
            return bytes
        }
        /// Counts an open of a version beside a writer's handles that cannot be sent to
        /// another kernel inode (a file server's, by handle): in direct I/O, so that it
        /// neither reads the pages the writer's handles fill (they are the writer's bytes)
        /// nor fills them with its version (a write of part of a page leaves the page to
        /// be read, and the next read of it by any handle fills it: the editor's own
        /// `pread` then returned the version's bytes), and its reads are not cut at the
        /// kernel inode's size, which is the writer's. It is one of the readers of a
        /// version all the same (the readers' file, if they read another): the photo
        /// moves past it at the writer's save, as past cached readers, and once the
        /// writer's handles are gone the kernel inode reports that version's size.
        /// The kernel's nfsd reads by splice, which goes through the pages even in
        /// direct I/O (`filemap_splice_read`): not for it (docs/namespace.md).
        mutating func addDirectReader(_ file: FileDescriptor, _ key: FileKey) -> FileDescriptor {
            let bytes = joinReaders(file, key, share: true) ?? file
            directHandles += 1
            return bytes
        }
        /// One more reader of the version: `file`, or the readers' own when they read
        /// another and `share` says so (nil when not).
        private mutating func joinReaders(_ file: FileDescriptor, _ key: FileKey, share: Bool) -> FileDescriptor? {
            guard var readers else {
                readers = Readers(key: key, file: file, handles: 1)
                return file
            }
            guard readers.key == key || share else { return nil }
            readers.handles += 1
            self.readers = readers
            return readers.key == key ? file : readers.file
        }
        /// Kept for a writer sent here from a kernel inode held by readers: until it
        /// comes (or this time passes), readers open it cached, so that they cannot hold
        /// it in passthrough before the writer gets in.
        var reservedUntil: Double?
        var isEmpty: Bool { cachedHandles == 0 && directHandles == 0 && passthrough == nil && !reserved() }
        /// Whether a writer's reservation holds (the clock is read only when there is one).
        func reserved() -> Bool { reservedUntil.map { monotonicSeconds() < $0 } ?? false }
    }

    struct FileKey: Equatable, Sendable {
        let device: UInt64
        let inode: UInt64
        let size: Int64

        init?(_ file: FileDescriptor) {
            guard let st = try? file.status() else { return nil }
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
            size = Int64(st.st_size)
        }
    }

    private struct State {
        var next: UInt64 = 1
        var files: [UInt64: OpenFile] = [:]
        var nodes: [UInt64: NodeIO] = [:]
        /// Backing ids kept registered after their last close, the newest last: opening
        /// the same photo again (a viewer going back, a second reader) costs no ioctl.
        var idle: [(file: FileKey, id: Int32)] = []
    }

    /// How many backing ids stay registered with nothing open: each keeps its blob open
    /// in the kernel (an open file, its inode in memory; not its pages). Opening and
    /// closing the 500 photos of the read benchmark in a loop took 58 µs a photo without
    /// them and 46 µs with them (64 were too few for that loop to find any again).
    static let idleLimit = 1024

    private let table = Locked(State())
    private let backing = Locked<(any BackingFiles)?>(nil)

    func enablePassthrough(_ files: any BackingFiles) { backing.withLock { $0 = files } }

    /// Whether read-only opens may be in passthrough (the kernel agreed at INIT).
    var passthroughEnabled: Bool { backing.withLock { $0 != nil } }

    /// Whether kernel inode `node` is open in passthrough now.
    func inPassthrough(_ node: UInt64) -> Bool { table.withLock { $0.nodes[node]?.passthrough != nil } }

    /// Whether readers of a version hold kernel inode `node`, in passthrough or cached
    /// (`addCachedReader`): a change of the file's bytes is to be made on another one.
    func heldByReaders(_ node: UInt64) -> Bool {
        table.withLock { s in s.nodes[node].map { $0.passthrough != nil || $0.readers != nil } ?? false }
    }

    /// The bytes that the readers of a version through kernel inode `node` read (a
    /// photo's blob, a thumbnail; `OpenFile.readsVersion`), if it has any: the version
    /// the kernel's pages of that inode are of, and its size once no writer is there.
    func cachedReaderFile(on node: UInt64) -> FileDescriptor? {
        table.withLock { $0.nodes[node]?.readers?.file }
    }

    enum CachedReader {
        /// Added; `shared`: it reads the file the kernel inode's readers read, not its own.
        case added(OpenFile, shared: Bool)
        /// The kernel inode is read from another file (or in passthrough).
        case stale
    }

    /// Adds a cached read-only open of a version of a photo or thumbnail, `file`,
    /// through kernel inode `node`: only if the inode's other cached readers read the
    /// same file, or none does, and no writer's handles are open there (cached ones fill
    /// its pages; every handle open for writing sets its size), or `share` says this open
    /// is to read theirs (an open that cannot be looked up again: a file server's, the
    /// kernel's retry). Beside a writer's handles the kernel's retry shares their pages;
    /// a file server's (`server`) reads its version in direct I/O, past them
    /// (`NodeIO.addDirectReader`).
    func addCachedReader(ino: UInt64, node: UInt64, file: FileDescriptor, share: Bool, server: Bool = false) -> CachedReader {
        guard let key = FileKey(file) else { return .stale }
        let bytes: (FileDescriptor, IOMode)? = table.withLock { s in
            var io = s.nodes[node] ?? NodeIO()
            guard io.passthrough == nil else { return nil }
            if io.hasWriter && server {
                let bytes = io.addDirectReader(file, key)
                s.nodes[node] = io
                return (bytes, .direct)
            }
            guard !io.hasWriter || share, let bytes = io.addReader(file, key, share: share) else { return nil }
            s.nodes[node] = io
            return (bytes, .cached)
        }
        guard let (bytes, mode) = bytes else { return .stale }
        return .added(OpenFile(ino: ino, node: node, state: .readOnly(bytes), mode: mode, writes: false, readsVersion: true),
                      shared: bytes !== file)
    }

    /// Adds a read-only open of `candidate` (a blob, a thumbnail): in passthrough when it
    /// is on and the kernel inode has no cached opens, unless `mayStart` is false and no
    /// open holds it in passthrough yet (a file server's open: it holds files for as long
    /// as its clients do). When the kernel inode holds another file in passthrough than
    /// `candidate` (its photo got a new version while old readers stay), the kernel lets
    /// this open read only that one: it does with `shareOlder` (an open by a file handle,
    /// which cannot be looked up again), else it is nil and nothing is added. The same
    /// when it is cached (a file server's, or where a handle is open for writing) and the
    /// inode's other cached readers read another file (`NodeIO.addReader`), and when a
    /// writer's handles are there (`NodeIO.hasWriter`: the reader goes to another kernel
    /// inode, unless it cannot be sent, `shareOlder`; a file server's reads in direct I/O
    /// there, `NodeIO.addDirectReader`).
    func addReader(ino: UInt64, node: UInt64, candidate: FileDescriptor, mayStart: Bool, shareOlder: Bool = false) -> OpenFile? {
        guard let backingFiles = backing.withLock({ $0 }), let key = FileKey(candidate) else {
            // Without passthrough (or a file that cannot be told apart): cached, which
            // the kernel refuses while the kernel inode is in passthrough.
            return addCached(ino: ino, node: node, state: .readOnly(candidate), writes: false)
        }
        enum Plan { case cached(FileDescriptor), direct(FileDescriptor), share(Int32), register, stale }
        let plan: Plan = table.withLock { s in
            var io = s.nodes[node] ?? NodeIO()
            defer { s.nodes[node] = io.isEmpty ? nil : io }
            if var current = io.passthrough {
                guard current.file == key || shareOlder else { return .stale }
                current.handles += 1
                io.passthrough = current
                return .share(current.backingID)
            }
            if io.hasWriter {
                // A file server's (`mayStart` false) opens by handle, which the kernel does
                // not look up again: it reads its version past the pages, which are the
                // writer's (`NodeIO.addDirectReader`).
                if !mayStart { return .direct(io.addDirectReader(candidate, key)) }
                if !shareOlder { return .stale }
            }
            // Never in passthrough beside a handle open for writing (a direct one, which
            // the kernel would allow): the kernel inode's size would be the readers'. Nor
            // beside a file server's direct reader (`addDirectReader`): the kernel fails a
            // direct open of a kernel inode with a backing file, and that open's reply may
            // reach it after this one's.
            if io.cachedHandles > 0 || io.directHandles > 0 || io.writingHandles > 0 || !mayStart || io.reserved() {
                // Cached beside other cached opens, for a file server, or where a writer
                // is on its way: still one version for all the readers of this kernel inode.
                guard let bytes = io.addReader(candidate, key, share: shareOlder) else { return .stale }
                return .cached(bytes)
            }
            return .register
        }
        switch plan {
        case .cached(let bytes):
            return OpenFile(ino: ino, node: node, state: .readOnly(bytes), mode: .cached, writes: false, readsVersion: true)
        case .direct(let bytes):
            return OpenFile(ino: ino, node: node, state: .readOnly(bytes), mode: .direct, writes: false, readsVersion: true)
        case .stale:
            return nil
        case .share(let id):
            return OpenFile(ino: ino, node: node, state: .readOnly(candidate), mode: .passthrough(backingID: id), writes: false)
        case .register:
            // An id kept from an earlier open of the same file, or the ioctl outside the
            // lock; then install it, unless another open of the kernel inode got there
            // first (share theirs) or a cached open came.
            let kept: Int32? = table.withLock { s in
                guard let at = s.idle.lastIndex(where: { $0.file == key }) else { return nil }
                return s.idle.remove(at: at).id
            }
            let id = kept ?? backingFiles.register(candidate)
            let (mode, unused) = table.withLock { s -> ((IOMode, FileDescriptor)?, Int32?) in
                var io = s.nodes[node] ?? NodeIO()
                defer { s.nodes[node] = io.isEmpty ? nil : io }
                if var current = io.passthrough {
                    guard current.file == key || shareOlder else { return (nil, id) }
                    current.handles += 1
                    io.passthrough = current
                    return ((.passthrough(backingID: current.backingID), candidate), id)
                }
                guard let id, io.cachedHandles == 0, io.directHandles == 0, io.writingHandles == 0, !io.reserved() else {
                    guard !io.hasWriter || shareOlder || !mayStart,
                          let bytes = io.addReader(candidate, key, share: shareOlder) else { return (nil, id) }
                    return ((.cached, bytes), id)
                }
                io.passthrough = Passthrough(backingID: id, file: key, handles: 1)
                return ((.passthrough(backingID: id), candidate), nil)
            }
            if let unused { keepOrUnregister(unused, key) }
            return mode.map { mode, bytes in
                OpenFile(ino: ino, node: node, state: .readOnly(bytes), mode: mode, writes: false, readsVersion: mode == .cached)
            }
        }
    }

    /// Adds an open that is not to be in passthrough (a writer, a reader of bytes being
    /// written, a plain file): cached, or `direct` (a file created to be written only).
    /// Nil while the kernel inode is open in passthrough (the kernel would refuse it), and
    /// for a writer's handle where cached readers of a version are: the kernel inode's
    /// pages are of that version, and would be filled with the writer's bytes (a reader
    /// read "abc" a writer wrote, in `OperationTableTests`). Such a handle goes to another
    /// kernel inode (`FileSystem.openElsewhere`), unless it cannot (`shareWithReaders`:
    /// the kernel's retry, an open through `/proc/PID/fd`, a file server's by handle):
    /// it then shares this one in direct I/O, which fills no page (the kernel drops what
    /// the readers cached of each range it writes). The inode's size is still one for
    /// all its handles: while such a writer is there, it is the writer's (`readersSize`),
    /// as a truncation through it cuts the kernel's pages too.
    func addCached(ino: UInt64, node: UInt64, state: OpenFile.State, writes: Bool, opener: Int32 = 0,
                   direct: Bool = false, shareWithReaders: Bool = false) -> OpenFile? {
        var writerBytes = false
        if case .writer = state { writerBytes = true }
        let mode: IOMode? = table.withLock { s in
            var io = s.nodes[node] ?? NodeIO()
            guard io.passthrough == nil else { return nil }
            var mode: IOMode = direct ? .direct : .cached
            if writerBytes, mode == .cached, io.readers != nil {
                guard shareWithReaders else { return nil }
                mode = .direct
            }
            if mode == .direct {
                io.directHandles += 1
            } else {
                io.cachedHandles += 1
                if writerBytes { io.writerHandles += 1 }
            }
            if writes { io.writingHandles += 1 }
            io.reservedUntil = nil
            s.nodes[node] = io
            return mode
        }
        return mode.map { OpenFile(ino: ino, node: node, state: state, mode: $0, writes: writes, opener: opener) }
    }

    /// Whether any open file (or a writer on its way) uses kernel inode `node`. A
    /// reservation the writer never claimed is dropped here once it has passed.
    func inUse(_ node: UInt64) -> Bool {
        table.withLock { s in
            guard let io = s.nodes[node] else { return false }
            if io.isEmpty { s.nodes[node] = nil }
            return !io.isEmpty
        }
    }

    /// Keeps kernel inode `node` out of passthrough for a moment: a writer is on its way.
    /// False, and nothing kept, when readers of a version hold it already (in
    /// passthrough, or cached: the writer may not join them either, `addCached`).
    @discardableResult
    func reserveForWriter(_ node: UInt64) -> Bool {
        let until = monotonicSeconds() + 2
        return table.withLock { s in
            guard s.nodes[node]?.passthrough == nil, s.nodes[node]?.readers == nil else { return false }
            s.nodes[node, default: NodeIO()].reservedUntil = until
            return true
        }
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

    /// Whether any handle is open on inode `ino` (a scan: asked only when a plain file
    /// is removed, and of files removed while open).
    func isOpen(_ ino: UInt64) -> Bool { table.withLock { s in s.files.values.contains { $0.ino == ino } } }

    /// The inode numbers open handles have (one scan).
    func openInodes() -> Set<UInt64> { table.withLock { s in Set(s.files.values.map(\.ino)) } }

    /// The writer of handles of inode `ino` open for writing (a scan): one that left the
    /// writers' table with the photo (`handsKeep`) still has them.
    func writer(ofInode ino: UInt64) -> Writer? {
        table.withLock { s in
            for file in s.files.values where file.ino == ino {
                if case .writer(let writer) = file.state { return writer }
            }
            return nil
        }
    }

    /// The kernel inodes that handles of inode `ino` were opened through (a scan).
    func nodes(ofInode ino: UInt64) -> Set<UInt64> {
        table.withLock { s in Set(s.files.values.filter { $0.ino == ino }.map(\.node)) }
    }

    /// The kernel inodes that `writer`'s handles were opened through (a scan: asked when a
    /// rename hands those handles to another file).
    func nodes(of writer: Writer) -> Set<UInt64> {
        table.withLock { s in
            Set(s.files.values.compactMap { file in
                if case .writer(let w) = file.state, w === writer { return file.node }
                return nil
            })
        }
    }

    /// Whether a handle open for writing has `writer`'s bytes (a scan: asked when a
    /// rename would hand them to another file).
    func writes(_ writer: Writer) -> Bool {
        table.withLock { s in
            s.files.values.contains { file in
                if file.writes, case .writer(let w) = file.state { return w === writer }
                return false
            }
        }
    }

    /// The writer of the handles open for writing through kernel inode `node`, when they
    /// are all it holds: a kernel inode that also serves readers of the photo's own
    /// bytes has the photo's size. A scan, asked only of a kernel inode that its photo
    /// has left, and only while it has cached opens (writers are never in passthrough).
    func writer(on node: UInt64) -> Writer? {
        table.withLock { s in
            guard let io = s.nodes[node], io.cachedHandles + io.directHandles > 0 else { return nil }
            var found: Writer?
            for file in s.files.values where file.node == node {
                switch file.state {
                case .readOnly: return nil
                case .writer(let writer) where file.writes: found = found ?? writer
                case .writer: break
                }
            }
            return found
        }
    }

    /// Whether a handle open for writing is open through kernel inode `node`.
    func writesThrough(_ node: UInt64) -> Bool {
        table.withLock { s in s.files.values.contains { $0.node == node && $0.writes } }
    }

    /// The bytes an open handle of inode `ino` reads: its writer's, or a reader's own.
    func descriptor(of ino: UInt64, preferring node: UInt64? = nil) -> FileDescriptor? {
        let open = table.withLock { s in s.files.values.filter { $0.ino == ino } }
        for file in open.filter({ $0.node == node }) + open.filter({ $0.node != node }) {
            switch file.state {
            case .writer(let writer): if let fd = writer.readable().0 { return fd }
            case .readOnly(let fd): return fd
            }
        }
        return nil
    }

    @discardableResult
    func remove(_ handle: UInt64) -> OpenFile? {
        let (file, unregister) = table.withLock { s -> (OpenFile?, (Int32, FileKey)?) in
            guard let file = s.files.removeValue(forKey: handle) else { return (nil, nil) }
            var io = s.nodes[file.node] ?? NodeIO()
            var unregister: (Int32, FileKey)?
            if file.writes { io.writingHandles -= 1 }
            switch file.mode {
            case .direct:
                io.directHandles -= 1
            case .cached:
                io.cachedHandles -= 1
                if case .writer = file.state { io.writerHandles -= 1 }
            case .passthrough:
                if var current = io.passthrough {
                    current.handles -= 1
                    if current.handles > 0 {
                        io.passthrough = current
                    } else {
                        // The kernel holds its own reference for as long as it needs one;
                        // the id is only for opens still to come.
                        unregister = (current.backingID, current.file)
                        io.passthrough = nil
                    }
                }
            }
            // Cached, or direct beside a writer (`NodeIO.addDirectReader`).
            if file.readsVersion, var readers = io.readers {
                readers.handles -= 1
                io.readers = readers.handles > 0 ? readers : nil
            }
            s.nodes[file.node] = io.isEmpty ? nil : io
            return (file, unregister)
        }
        if let (id, key) = unregister { keepOrUnregister(id, key) }
        return file
    }

    /// A backing id no open uses: kept for the next open of its file, and the oldest kept
    /// one beyond `idleLimit` unregistered (outside the lock).
    private func keepOrUnregister(_ id: Int32, _ key: FileKey) {
        let evicted: Int32? = table.withLock { s in
            s.idle.append((key, id))
            return s.idle.count > Self.idleLimit ? s.idle.removeFirst().id : nil
        }
        if let evicted { backing.withLock { $0 }?.unregister(evicted) }
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
    /// `node`: the kernel inode it is opened through (the current one when not said).
    /// `pid`: the thread that opens (0: unknown), a writer's opener.
    /// `direct`: past the page cache (a file created to be written only, `create`).
    ///
    /// `stays`: the open cannot land on another kernel inode (one through `/proc/PID/fd`,
    /// which the kernel's retry follows to the same one).
    ///
    /// A writer's handle (or a reader of the bytes being written) that the kernel inode
    /// cannot take (readers in passthrough, or cached readers of a version, whose pages
    /// it would share) is sent to a new kernel inode (`openElsewhere`). An open that
    /// cannot be sent (the kernel's one retry after that, `stays`) shares the cached
    /// readers' kernel inode in direct I/O instead, as does a file server's: an NFS
    /// server opens by handle, which the kernel does not look up again, and an NFSv3
    /// client has no name to look up for a WRITE (its `ESTALE` would fail the write).
    /// Beside readers in passthrough none can share: the kernel refuses it.
    func opened(ino: UInt64, node: UInt64? = nil, _ state: OpenFile.State, keepCache: Bool, readOnly: Bool = false,
                name: @autoclosure () -> String, pid: Int32 = 0, direct: Bool = false, stays: Bool = false) throws -> Opened {
        let node = node ?? kernelNodes.node(of: ino)
        // Taken at every open, so that only the open right after an ESTALE is its retry.
        let retry = opensAcrossSaves.isRetry(pid, ino)
        func add(sharing: Bool) -> OpenFile? {
            handles.addCached(ino: ino, node: node, state: state, writes: !readOnly, opener: readOnly ? 0 : pid,
                              direct: direct, shareWithReaders: sharing)
        }
        // Whether the opener is a file server is asked only when it matters (it reads
        // /proc the first time), outside the table's lock.
        var added = add(sharing: retry || stays)
        if added == nil, !(retry || stays), FileServers.isServer(pid) { added = add(sharing: true) }
        guard let file = added else {
            if case .writer(let writer) = state { release(writer) }
            opensAcrossSaves.gotStale(pid, ino)
            throw openElsewhere(ino, from: node, name(), reserve: true)
        }
        return Opened(handle: handles.handle(for: file), keepCache: keepCache, readOnly: readOnly, mode: file.mode)
    }

    /// Adds a read-only open of a photo's or thumbnail's file: in passthrough when it can
    /// be (see `HandleTable.addReader`).
    /// `mark`: `OpensAcrossSaves.mark`, taken before the photo was read.
    func openedForReading(ino: UInt64, node: UInt64? = nil, _ file: FileDescriptor, keepCache: Bool, mayPassthrough: Bool = true,
                          name: @autoclosure () -> String, pid: Int32, since mark: OpensAcrossSaves.Mark) throws -> Opened {
        let node = node ?? kernelNodes.node(of: ino)
        // A file server opens by handle (open_by_handle_at), which the kernel does not look
        // up again after ESTALE: on a kernel inode the photo has left, it reads the
        // version the readers there hold, the one its size says. Nor can the kernel's
        // own retry after ESTALE get it again (`OpensAcrossSaves`).
        let passthrough = mayPassthrough && handles.passthroughEnabled
        let server = passthrough && FileServers.isServer(pid)
        // Taken at every open, so that only the open right after the ESTALE counts as
        // its retry (one that succeeds without asking leaves nothing behind).
        let retry = opensAcrossSaves.isRetry(pid, ino)
        var shareOlder = (server && node != kernelNodes.node(of: ino)) || (passthrough && retry)
        let added: OpenFile?
        if passthrough {
            added = handles.addReader(ino: ino, node: node, candidate: file, mayStart: !server, shareOlder: shareOlder)
            if let added, added.readsVersion, case .readOnly(let bytes) = added.state, bytes !== file { shareOlder = true }
        } else {
            // Cached: every reader of a kernel inode reads one version (`addCachedReader`),
            // as in passthrough; a kernel inode its file left (`movePastReaders`) reports
            // that version's size (`kernelView`). An open of another version through it
            // gets ESTALE and the kernel looks the name up again, unless it cannot (a
            // file server's open by handle, the kernel's own retry): that open reads
            // their version. One through a kernel inode left without readers reads the
            // current version from no pages kept.
            var reader = handles.addCachedReader(ino: ino, node: node, file: file, share: false)
            if case .stale = reader {
                let server = FileServers.isServer(pid)
                if retry || server { reader = handles.addCachedReader(ino: ino, node: node, file: file, share: true, server: server) }
            }
            switch reader {
            case .added(let open, let shared):
                added = open
                shareOlder = shared || node != kernelNodes.node(of: ino)
            case .stale:
                added = nil
            }
        }
        guard let open = added else {
            opensAcrossSaves.gotStale(pid, ino)
            throw openElsewhere(ino, from: node, name())
        }
        // The kernel may hold a size and pages that are not those of the bytes this open
        // reads (a save met it, or it shares another version's): `fstat` asks again, and
        // a cached open starts without pages.
        let metASave = shareOlder || opensAcrossSaves.mayHaveMetASave(of: ino, since: mark)
        // Or a save ended moments ago, whose old size a lookup may have left on this
        // kernel inode (`OpensAcrossSaves.savedRecently`).
        let sizeMayBeOld = metASave || opensAcrossSaves.savedRecently(ino)
        if sizeMayBeOld { sendInvalidations([.node(node)]) }
        if metASave {
            // It may hold the version from before the save on the photo's current kernel
            // inode, where the next opens, after the save, would share it (its backing
            // file in passthrough, its pages when cached): the photo moves past it, as
            // past any reader of an old version.
            // A file server's in direct I/O beside a writer holds no pages, but its
            // kernel inode reports its version's size once the writer has gone.
            if node == kernelNodes.node(of: ino), open.mode != .cached || !passthrough { movePastReaders(ino) }
        }
        return Opened(handle: handles.handle(for: open), keepCache: keepCache && !sizeMayBeOld, readOnly: true, mode: open.mode)
    }

    /// An open that the kernel would refuse on kernel inode `node`, held in passthrough by
    /// readers of another version: the photo moves to a new kernel inode, its names are
    /// dropped, and the open fails with ESTALE, which the kernel answers by looking the
    /// path up again (do_filp_open retries once with LOOKUP_REVAL): the open lands on the
    /// new kernel inode, while the readers keep the version they opened on the old one.
    /// `reserve`: the open is one that cannot be in passthrough (a writer): readers that
    /// reach the new kernel inode before it read cached there, so that it gets in.
    func openElsewhere(_ ino: UInt64, from node: UInt64, _ name: String, reserve: Bool = false) -> FSError {
        if reserve {
            // Reserved before any lookup can hand the node id out; the photo may have
            // moved past `node` already (a save, a reader), to a kernel inode readers
            // hold by now.
            kernelNodes.sendWriter(ino, from: node, inUse: handles.inUse, reserve: handles.reserveForWriter)
        } else {
            kernelNodes.advance(ino, from: node, inUse: handles.inUse)
        }
        if let item = try? existing(ino) {
            switch item {
            case .asset(let asset), .thumbnail(let asset): forgetNames(of: asset)
            case .sharedThumbnail(let entry): forgetNames(of: entry.asset)
            default: break
            }
        }
        return FSError(ESTALE, "\(name) is read on kernel inode \(node) by readers of another version or a writer: to be opened again on a new one", logged: false)
    }

    /// Turns on FUSE passthrough for read-only opens of assets and thumbnails, once the
    /// kernel has agreed to it at INIT.
    public func enablePassthrough(_ files: any BackingFiles) { handles.enablePassthrough(files) }

    /// `lseek` with `SEEK_DATA` or `SEEK_HOLE` (the kernel answers the others itself):
    /// asked of the bytes the handle reads, so that a sparse file's holes show as on the
    /// disk below (`cp` skips them; Samba's allocated-ranges query reports them, which
    /// smbtorture's `smb2.ioctl` found missing). A daemon that does not answer makes the
    /// kernel take every byte for data. Every read and write names its offset, so moving
    /// the descriptor's own position here disturbs nothing.
    public func seek(handle: UInt64, offset: Int64, whence: Int32) throws -> Int64 {
        let source = try read(handle: handle, size: 0, offset: offset)
        let position = Glibc.lseek(source.file.raw, off_t(offset), whence)
        guard position >= 0 else { throw FSError(errno, "lseek of handle \(handle) at \(offset)", logged: false) }
        return Int64(position)
    }

    public func read(handle: UInt64, size: Int, offset: Int64) throws -> ReadSource {
        guard let file = handles.get(handle) else { throw FSError(EBADF, "read of an unknown handle \(handle)") }
        switch file.state {
        case .readOnly(let fd):
            plainPages.read(node: file.node, handle: handle)
            return ReadSource(file: fd, offset: offset, size: size)
        case .writer(let writer):
            let (fd, clone) = writer.readable()
            if let fd { return ReadSource(file: fd, offset: offset, size: size) }
            // A copy that has no bytes of its own yet reads its source; a photo opened for
            // writing and not written yet reads its own blob.
            if let clone { return ReadSource(file: try library.openBlob(of: clone), offset: offset, size: size) }
            guard case .asset(let id) = writer.target, let asset = try library.asset(id: id) else {
                // Its photo left through another host before the handles wrote.
                if let version = shownVersion(writer) { return ReadSource(file: version, offset: offset, size: size) }
                throw FSError(EIO, "inode \(file.ino) has no bytes to read")
            }
            return ReadSource(file: try library.openBlob(of: asset), offset: offset, size: size)
        }
    }
}
