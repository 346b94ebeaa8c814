import AlbumCore
import AlbumFSCore
import CFuse
import Dispatch
import Glibc
import Synchronization

/// The state behind the C callbacks: the filesystem core and the session. Reached from
/// a request through `fuse_req_userdata`.
final class Bridge: @unchecked Sendable {
    let fs: FileSystem
    let entryTimeout: Double
    let attrTimeout: Double
    /// Set once the session exists and INIT is answered; used to send invalidations.
    var session: OpaquePointer?
    /// Invalidations are sent from here, never from inside a request handler: the kernel
    /// may hold locks of the very inodes a handler would invalidate (a rename holds both
    /// folders'), and the notification would wait for them forever. The handler queues
    /// them before it replies; this queue sends them after, in order.
    private let notifier = DispatchQueue(label: "albumfs.invalidate")
    /// Where requests that may wait for a thumbnail are answered (`ThumbnailWaits`).
    private let thumbnailWaits = ThumbnailWaits(threads: 8)
    /// Whether the log said that this kernel cannot expire cached names.
    private let epochMissingLogged = Atomic<Bool>(false)

    init(fs: FileSystem) {
        self.fs = fs
        entryTimeout = fs.options.cacheSeconds
        attrTimeout = fs.options.cacheSeconds
        fs.setInvalidator { [unowned self] items in self.enqueue(items) }
    }

    /// Runs `body` at once, or, when the request about `ino` (a lookup: of `name` in
    /// folder `ino`) may wait for a thumbnail to be made, on a thread of `thumbnailWaits`.
    func answer(about ino: UInt64, name: [UInt8]? = nil, _ body: @escaping @Sendable () -> Void) {
        if fs.mayWaitForThumbnail(ino, name: name) { thumbnailWaits.run(body) } else { body() }
    }

    /// After the session's loop ended, before it is destroyed: the requests still
    /// waiting for thumbnails are answered (to a closed channel), and their threads end.
    func stopWaits() { thumbnailWaits.stop() }

    static func from(_ req: fuse_req_t?) -> Bridge {
        Unmanaged<FileSystemBox>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue().bridge!
    }

    /// Waits until the names queued so far are dropped, holding no lock of the daemon's.
    /// Only for a flush, during which the kernel holds no folder's lock: close() then
    /// returns after the kernel forgot the names the close changed, so that a program
    /// that looks at the file right after sees what the close made of it (bytes the
    /// library had become that photo, with its inode number).
    func waitForQueuedNames() { notifier.sync {} }

    /// Every name the kernel has cached is looked up again at its next use
    /// (`FUSE_NOTIFY_INC_EPOCH`; `FileSystem.Invalidation.allNames` says when). It takes
    /// no lock, so the handler sends it itself, before its reply: the entries it makes
    /// stale are so before the program that made the change can use them. A kernel
    /// before Linux 6.16 has no such notification: there, the names' invalidations after
    /// the reply are all (the moment docs/namespace.md describes), said once in the log.
    private func expireCachedNames() {
        guard let session else { return }
        let result = shim_notify_inc_epoch(session)
        if result != 0 && !epochMissingLogged.exchange(true, ordering: .relaxed) {
            Log.info("this kernel cannot expire cached names at once (\(String(cString: strerror(-result)))): a change through a name a photo was renamed to may reach the photo in the moment after the rename")
        }
    }

    /// Listings and attributes are dropped at once, from the request's own thread
    /// (`fuse_reverse_inval_inode` takes no lock a request holds); names are queued and
    /// sent after the reply.
    private func enqueue(_ items: [FileSystem.Invalidation]) {
        guard let session else { return }
        var names: [(UInt64, String)] = []
        for item in items {
            switch item {
            case .listing(let ino):
                _ = fuse_lowlevel_notify_inval_inode(session, ino, 0, 0)
            case .attributes(let ino):
                _ = fuse_lowlevel_notify_inval_inode(session, fs.nodeID(of: ino), -1, 0)
            case .node(let node):
                TestHold.saves.holdIfAsked(FileSystem.inode(ofNodeID: node))
                _ = fuse_lowlevel_notify_inval_inode(session, node, -1, 0)
            case .entry(let parent, let name):
                names.append((parent, name))
            case .allNames:
                expireCachedNames()
            }
        }
        guard !names.isEmpty else { return }
        let queued = names
        notifier.async { [self] in
            guard let session = self.session else { return }
            for (parent, name) in queued {
                _ = name.withCString { fuse_lowlevel_notify_inval_entry(session, parent, $0, strlen($0)) }
            }
        }
    }

    /// Runs an operation; any error becomes one errno reply, and a log line with its
    /// whole chain of causes when it is a refusal worth one. `body` replies itself on
    /// success.
    func handle(_ req: fuse_req_t?, _ what: @autoclosure () -> String, _ body: () throws -> Void) {
        do {
            try body()
        } catch {
            let failure = FSError.from(error)
            // The limit of open files: one line a minute says which and what to do. An
            // open refused for it says no more (`roomForAnotherFile`); any other request
            // failed by it (a close that could not store a photo) is named as well.
            if DescriptorLimit.isReached(failure.errno) { DescriptorLimit.reached() }
            if failure.logged {
                Log.warning("\(what()): \(failure.description)")
                Log.debug("  raised at \(failure.location)")
            } else {
                // A lookup miss or a lost race: only in the debug log (`-d`), where a
                // test that failed on one finds it.
                Log.debug("\(what()): \(failure.description) (raised at \(failure.location))")
            }
            fuse_reply_err(req, failure.errno)
        }
    }

    // MARK: conversions

    /// The inode number a node id from the kernel stands for (`KernelNodes`).
    func ino(_ node: fuse_ino_t) -> UInt64 { FileSystem.inode(ofNodeID: node) }

    /// `created`: the answer to a CREATE, whose block size the creating program sizes
    /// its writes by.
    func stat(_ a: Attributes, created: Bool = false) -> stat {
        var st = Glibc.stat()
        st.st_ino = UInt(a.ino)
        st.st_mode = a.mode
        st.st_nlink = UInt(a.nlink)
        st.st_uid = a.uid
        st.st_gid = a.gid
        st.st_size = Int(a.size)
        st.st_blocks = Int(a.blocks)
        // A folder's block size is the buffer glibc's opendir gives getdents (at least
        // 32 KiB, at most 1 MiB), and the kernel asks the daemon for that much of the
        // listing at once: 256 KiB is about 1,500 entries a READDIRPLUS instead of 190,
        // which took a cold `ls -f` of 100,000 from 0.6 s to 0.38 s here. 1 MiB gained
        // little more and made every small folder's listing slower (the kernel allocates
        // the whole buffer for each request). docs/performance.md, "Listing buffers".
        //
        // A file just created says 1 MiB: `cp` (and any program that sizes its buffer by
        // st_blksize) then writes a photo in 1 MiB pieces, 7 WRITE requests for 6.5 MB
        // instead of 50 (`cp -r` of 24 MP photos about 14% faster a file here). Every
        // other answer says 4 KiB: `cat` with `-o nopassthrough` reads 1 MiB pieces more
        // slowly from the page cache (0.36 s against 0.55 s for 500 photos). The kernel
        // asks again after the writes, so the file says 4 KiB from then on.
        // docs/performance.md, "Writes in larger pieces".
        st.st_blksize = (a.mode & S_IFMT) == S_IFDIR ? 1 << 18 : created ? 1 << 20 : 4096
        st.st_atim = SystemCalls.timespec(nanoseconds: a.atimeNs)
        st.st_mtim = SystemCalls.timespec(nanoseconds: a.mtimeNs)
        st.st_ctim = SystemCalls.timespec(nanoseconds: a.ctimeNs)
        return st
    }

    /// An entry: the node id that stands for the inode now (`node`: that one instead).
    func entry(_ a: Attributes, cacheName: Bool = true, cacheAttributes: Bool = true, node: UInt64? = nil,
               created: Bool = false) -> fuse_entry_param {
        let (node, a) = fs.kernelView(a, node: node)
        var e = fuse_entry_param()
        e.ino = node
        // A node id always stands for the same object: inode numbers are never reused,
        // and its generation bits come back only when no open file holds the old one.
        e.generation = 0
        e.attr = stat(a, created: created)
        e.attr_timeout = cacheAttributes ? attrTimeout : 0
        e.entry_timeout = cacheName ? entryTimeout : 0
        return e
    }

    func replyEntry(_ req: fuse_req_t?, _ a: Attributes, cacheName: Bool = true, cacheAttributes: Bool = true, node: UInt64? = nil) {
        var e = entry(a, cacheName: cacheName, cacheAttributes: cacheAttributes, node: node)
        fuse_reply_entry(req, &e)
    }

    /// A lookup's reply. A name found in another case or Unicode normalization than the
    /// file has is not kept by the kernel: removing or renaming the file invalidates
    /// only its own name, and the other spelling would stay cached for an hour.
    func replyFound(_ req: fuse_req_t?, _ found: FileSystem.Found, asked: [UInt8], node: UInt64? = nil) {
        replyEntry(req, found.attributes, cacheName: found.keepName && Array(found.name.utf8) == asked,
                   cacheAttributes: found.keepAttributes, node: node)
    }

    func replyAttr(_ req: fuse_req_t?, _ a: Attributes) {
        var st = stat(a)
        fuse_reply_attr(req, &st, attrTimeout)
    }
}

/// The process (thread id) a request came from, 0 when unknown.
func caller(_ req: fuse_req_t?) -> Int32 {
    fuse_req_ctx(req)?.pointee.pid ?? 0
}

/// A C string argument as the bytes it is (names are bytes on the wire).
func bytes(_ name: UnsafePointer<CChar>?) -> [UInt8] {
    guard let name else { return [] }
    return Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
}

/// For log lines: a name as text, invalid UTF-8 shown repaired.
func display(_ name: UnsafePointer<CChar>?) -> String {
    String(decoding: bytes(name), as: UTF8.self)
}
