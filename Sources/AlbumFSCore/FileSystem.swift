import AlbumCore
import Dispatch
import Foundation

/// The filesystem core: what every inode is, what each operation means there and which
/// errno it fails with. It knows nothing of FUSE: the bridge turns requests into calls
/// here and results into replies, and the tests call it directly.
///
/// Where to look:
/// - `Namespace/`: what an inode is (`Node`, `Item`), lookups, listings, attributes,
///   thumbnails, extended attributes: everything that reads.
/// - `Rules/`: PRODUCT.md section 3's table: what each operation means in each folder.
/// - `Writing/`: everything that changes the library, around `Writer`, the state
///   machine of a file being written; `Writing/README.md` says what happens when a file
///   is saved.
public final class FileSystem: Sendable {
    public let library: Library
    public let options: MountOptions
    /// Decoders for metadata and for thumbnails someone waits for.
    let decoder: any Decoding
    public let thumbnails: ThumbnailCache
    /// Thumbnails made ahead, after imports: decoders of low priority, so that they never
    /// slow the imports down.
    let backgroundThumbnails: ThumbnailCache
    let prefetch = Locked(PrefetchQueue())
    let handles = HandleTable()
    /// The kernel inode each inode number stands for now (`KernelNodes`).
    let kernelNodes = KernelNodes()
    /// Opens for reading that meet a save of the same photo (`OpensAcrossSaves`).
    let opensAcrossSaves = OpensAcrossSaves()
    /// The table each object id was found in last (`ObjectKinds`).
    let objectKinds = Locked(ObjectKinds())
    /// Hashes whose bytes a close is placing now (`BlobsInFlight`): the library's.
    var blobsInFlight: BlobsInFlight { library.blobsInFlight }
    let writers: WriterTable
    /// Listing pages read ahead of their requests (`ListingAhead`).
    let listingAhead = ListingAhead()
    /// What was said once a mount (`sayOnce`).
    private let saidOnce = Locked(Set<String>())
    /// The minute of a save: names a photo left, files that became photos moments ago.
    let saves = SaveWindow()
    /// Albums a process made moments ago (NewAlbums: cp of a tree with its own .thumbnails/).
    let newAlbums = NewAlbums()
    let removedThumbnails = RemovedThumbnails()
    /// Thumbnails found made, by their inode (`mayWaitForThumbnail`).
    let thumbnailsFound = ThumbnailsFound()
    /// What each kernel inode of a plain file was last opened on (`PlainPages`).
    let plainPages: PlainPages
    /// Plain files removed while open (`UnlinkedOpen`).
    let unlinkedOpen = UnlinkedOpenFiles()
    /// Plain files removed while the kernel still holds their inode (`HeldByKernel`).
    let heldByKernel = RemovedFilesTheKernelHolds()
    /// Inode numbers reserved for files being created.
    let idBlock = Locked<Range<Int64>>(0..<0)
    /// When the library last changed through this mount: the time of virtual folders.
    let changedNs: Locked<Int64>
    /// Kernel cache entries to drop after a change (sent by the bridge, after replying).
    /// Boxed: a closure kept directly in `Locked` is reabstracted at every `inout` access
    /// and stored back wrapped in two more thunks, so each call went through a chain that
    /// grew by two with every invalidation (15% of the daemon's time in a `cp -r` of 500
    /// photos, and growing).
    let invalidator = Locked<Invalidator?>(nil)
    /// The listings programs have open, and whether each read a page before a change.
    let openListings = OpenListings()
    /// Files whose bytes changed since the kernel last opened them.
    let contentChanges = Locked(Set<UInt64>())
    /// The shared thumbnail names of folders (MD5 hashes), as of a version of the library.
    let sharedNames = Locked([UInt64: (version: Int64, names: [String: (asset: Int64, name: String, membership: Int64?)])]())
    /// Names already logged as kept plain (a visible file that is not a photo): once each.
    let loggedPlain = Locked(Set<Int64>())
    /// Free space that writes never take (1% of the library's disk, between 1 and 64
    /// MiB): when the disk fills, removing files still works, since the database has the
    /// room its own writes need.
    let spaceReserve: Int64
    private let schedule = Locked<DispatchSourceTimer?>(nil)
    /// Other hosts' changes, in a library several hosts serve (nil with SQLite).
    private let changeListener = Locked<ChangeListener?>(nil)
    /// Set when the core stops: background work started before ends at its next step.
    let stopped = Locked(false)
    /// Background work under way (thumbnails made ahead), which `stop()` waits for.
    let backgroundWork = DispatchGroup()

    /// `decoder`: where metadata and thumbnails are decoded (the mount gives worker
    /// processes; tests and tools may decode in process).
    public init(library: Library, options: MountOptions, decoder: any Decoding = InProcessDecoder(),
                backgroundDecoder: (any Decoding)? = nil) {
        self.library = library
        self.options = options
        self.decoder = decoder
        self.thumbnails = ThumbnailCache(library: library, decoder: decoder)
        self.backgroundThumbnails = ThumbnailCache(library: library, decoder: backgroundDecoder ?? decoder)
        // One host, or several (PostgreSQL), whose writes this one does not see.
        plainPages = PlainPages(enabled: library.backend == .sqlite)
        writers = WriterTable(keepsDigests: library.backend == .sqlite && ClosedDigests.timesAreFineGrained(library.files))
        let start = (try? library.files.status(.database))?.modificationNanoseconds ?? nowNanoseconds()
        changedNs = Locked(start)
        let total = (try? SystemCalls.fileSystemStatus(library.root)).map { Int64($0.f_blocks) * Int64($0.f_frsize) } ?? 0
        spaceReserve = max(1 << 20, min(64 << 20, total / 100))
    }

    /// Logs `message` (at info) the first time `key` is said on this mount: a choice
    /// that answers success without doing what was asked (chown, removing a photo's own
    /// attributes) is told where refusals are, once, not at every file of a copy.
    func sayOnce(_ key: String, _ message: @autoclosure () -> String) {
        if saidOnce.withLock({ $0.insert(key).inserted }) { Log.info(message()) }
    }

    /// ENOSPC when writing `count` more bytes would eat into the reserve.
    func checkSpace(for count: Int) throws {
        guard let s = try? SystemCalls.fileSystemStatus(library.root) else { return }
        let available = Int64(s.f_bavail) * Int64(s.f_frsize)
        if available - Int64(count) < spaceReserve {
            throw FSError(ENOSPC, "the library's disk is full (\(available / 1024) KiB left, \(spaceReserve / 1024) KiB kept for the library itself)")
        }
    }

    /// A filesystem core ready for a mount: the library opened (with the lock the
    /// caller holds), decoders in worker processes of this program (one per core for
    /// what someone waits for, one at low priority for thumbnails made ahead), and its
    /// own schedule running. The bridge is handed this and only translates.
    public static func forMount(library path: String, lock: LibraryLock, options: MountOptions,
                                workerExecutable: String? = nil) throws -> FileSystem {
        let library = try Library.open(at: path, access: .exclusive, lock: lock, host: options.host)
        MetadataReader.initialize()
        // A decoder's time limit; the tests shorten it (ALBUMFS_TEST_DECODER_SECONDS).
        let timeout = ProcessInfo.processInfo.environment["ALBUMFS_TEST_DECODER_SECONDS"].flatMap(Double.init) ?? 60
        let decoders = DecoderPool.ofThisProgram(executable: workerExecutable, timeout: timeout)
        let background = DecoderPool.ofThisProgram(executable: workerExecutable, count: 1, nice: 19, timeout: timeout)
        let fs = FileSystem(library: library, options: options, decoder: decoders, backgroundDecoder: background)
        fs.startSchedule()
        fs.listenToOtherHosts()
        return fs
    }

    deinit { stopSchedule() }

    // MARK: the core's own schedule

    /// Runs the core's timed work once a second: files that servers keep open after
    /// their last write are imported once settled, thumbnails are made ahead once imports
    /// go quiet, the minute of a save ends.
    public func startSchedule() {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "albumfs.schedule"))
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in self?.tick() }
        schedule.withLock { $0?.cancel(); $0 = timer }
        timer.resume()
    }

    /// Stops the schedule and waits for the background work it or a listing started to
    /// end (each ends at its next step): whoever removes the library's folder next (the
    /// in-process tests) finds nothing written into it afterwards. A thumbnail made in
    /// the background held the core alive past the tests' teardown and wrote into the
    /// folder being removed, which stayed behind half removed.
    public func stop() {
        stopSchedule()
        backgroundWork.wait()
        listingAhead.settle()
    }

    public func stopSchedule() {
        stopped.withLock { $0 = true }
        schedule.withLock { $0?.cancel(); $0 = nil }
        changeListener.withLock { listener in
            defer { listener = nil }
            return listener
        }?.stop()
    }

    /// With PostgreSQL, what other hosts (and commands) commit reaches this mount's
    /// kernel caches as it reaches them for this host's own changes.
    public func listenToOtherHosts() {
        guard let listener = ChangeListener(library: library, deliver: { [weak self] in self?.afterRemoteChanges($0) }) else { return }
        listener.start()
        changeListener.withLock { $0 = listener }
    }

    /// One round of the timed work (the schedule's; tests call it to move time on).
    public func tick(now: Int64 = nowNanoseconds()) {
        importSettledFiles(now: now)
        expireEmptiedVersions(now: now)
        saves.expire(now: now)
        expireKeptForTheKernel(now: now)
        makeQueuedThumbnails(now: now)
    }

    // MARK: changes and invalidation

    /// What the kernel should forget after a change.
    public enum Invalidation: Sendable, Equatable, Hashable {
        /// The name in a folder (its dentry, negative or not). Sent after the reply: the
        /// kernel holds the folder's lock while the request runs.
        case entry(parent: UInt64, name: String)
        /// A folder's listing and attributes. Sent before the reply.
        case listing(UInt64)
        /// A file's attributes (its cached bytes go at its next open). Sent before the reply.
        case attributes(UInt64)
        /// The attributes of one kernel inode, by node id: an earlier one of a photo that
        /// moved to a new kernel inode (`KernelNodes`).
        case node(UInt64)
        /// Every name the kernel has cached, stale at once: looked up again at its next
        /// use. Sent before the reply (it takes no lock). For a kernel entry that names
        /// another object from now on and that no single name's invalidation can reach in
        /// time: the entry a rename moved onto a name that shows something else now
        /// (`rename`), the names of a photo that moved to a new kernel inode
        /// (`forgetNames`). A kernel without it gets the names' own invalidations only.
        case allNames
    }

    /// Where invalidations go (the bridge queues them and sends them after its reply).
    public func setInvalidator(_ body: @escaping @Sendable ([Invalidation]) -> Void) {
        invalidator.withLock { $0 = Invalidator(send: body) }
    }

    /// Sends invalidations after a change; open listings that read a page before it
    /// will drop the folder's listing again (`OpenListings`).
    func invalidate(_ items: [Invalidation]) {
        openListings.changed(items.compactMap { if case .listing(let ino) = $0 { ino } else { nil } })
        sendInvalidations(items)
    }

    /// Sends invalidations, inode numbers turned into the kernel's node ids.
    func sendInvalidations(_ items: [Invalidation]) {
        guard !items.isEmpty, let send = invalidator.withLock({ $0 })?.send else { return }
        send(items.map { item in
            switch item {
            case .attributes(let ino): return .node(kernelNodes.node(of: ino))
            case .listing, .entry, .node, .allNames: return item
            }
        })
    }

    /// Marks the library changed now (virtual folders take this as their mtime).
    func touch() {
        let now = nowNanoseconds()
        changedNs.withLock { $0 = max($0, now) }
        listingAhead.changed()
        thumbnailsFound.forgetAll()
    }

    func checkWritable() throws {
        if options.readOnly { throw FSError(EROFS, "read-only mount", logged: false) }
    }

    /// An inode number for a file being created, from a block the library reserved (one
    /// durable transaction per 256 files; unused numbers of a block are never handed out
    /// again).
    func newInodeNumber() throws -> Int64 {
        try idBlock.withLock { block in
            if block.isEmpty { block = try library.reserveIDs(256) }
            return block.popFirst()!
        }
    }

    // MARK: statfs

    public struct FilesystemStats: Sendable {
        public var blockSize: UInt64
        public var fragmentSize: UInt64
        public var blocks: UInt64
        public var blocksFree: UInt64
        public var blocksAvailable: UInt64
        public var files: UInt64
        public var filesFree: UInt64
        public var nameMax: UInt64
    }

    /// The figures of the disk the library is on, so that free space is right on every
    /// client: what a user may write is what the disk has left above the reserve
    /// `checkSpace` keeps for the library itself (df shows no room that writes then
    /// refuse with ENOSPC).
    public func statfs() throws -> FilesystemStats {
        let s = try explained("statfs of the library") { try SystemCalls.fileSystemStatus(library.root) }
        let reserved = UInt64(spaceReserve) / max(1, UInt64(s.f_frsize))
        let available = UInt64(s.f_bavail) > reserved ? UInt64(s.f_bavail) - reserved : 0
        return FilesystemStats(blockSize: UInt64(s.f_bsize), fragmentSize: UInt64(s.f_frsize), blocks: UInt64(s.f_blocks),
                               blocksFree: UInt64(s.f_bfree), blocksAvailable: available,
                               files: UInt64(s.f_files), filesFree: UInt64(s.f_ffree), nameMax: UInt64(Names.maxBytes))
    }
}

/// Where invalidations go: a class, so that the closure is stored once as it is.
final class Invalidator: Sendable {
    let send: @Sendable ([FileSystem.Invalidation]) -> Void
    init(send: @escaping @Sendable ([FileSystem.Invalidation]) -> Void) { self.send = send }
}
