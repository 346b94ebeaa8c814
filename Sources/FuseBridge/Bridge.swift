import AlbumCore
import AlbumFSCore
import CFuse
import Dispatch
import Glibc

/// The state behind the C callbacks: the filesystem core and the session. Reached from
/// a request through `fuse_req_userdata`.
final class Bridge: @unchecked Sendable {
    let fs: FileSystem
    let entryTimeout: Double
    let attrTimeout: Double
    /// Set once the session exists; used to send invalidations.
    var session: OpaquePointer?
    /// Invalidations are sent from here, never from inside a request handler: the kernel
    /// may hold locks of the very inodes a handler would invalidate.
    private let notifier = DispatchQueue(label: "albumfs.invalidate")

    /// Imports files that servers keep open after their last write (see
    /// `FileSystem.importSettledFiles`).
    private let settler = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "albumfs.settle"))

    init(fs: FileSystem) {
        self.fs = fs
        entryTimeout = fs.options.cacheSeconds
        attrTimeout = fs.options.cacheSeconds
        fs.setInvalidator { [unowned self] item in self.enqueue(item) }
        settler.schedule(deadline: .now() + 1, repeating: 1)
        settler.setEventHandler { [fs] in
            fs.importSettledFiles()
            fs.makeQueuedThumbnails()
        }
        settler.resume()
    }

    static func from(_ req: fuse_req_t?) -> Bridge {
        Unmanaged<FileSystemBox>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue().bridge!
    }

    private func enqueue(_ item: FileSystem.Invalidation) {
        notifier.async { [self] in
            guard let session else { return }
            switch item {
            case .entry(let parent, let name):
                _ = name.withCString { fuse_lowlevel_notify_inval_entry(session, parent, $0, strlen($0)) }
            case .inode(let ino):
                _ = fuse_lowlevel_notify_inval_inode(session, ino, 0, 0)
            }
        }
    }

    /// Runs an operation; any error becomes one errno reply (and a log line when it is
    /// a refusal worth one). `body` replies itself on success.
    func handle(_ req: fuse_req_t?, _ what: @autoclosure () -> String, _ body: () throws -> Void) {
        do {
            try body()
        } catch {
            let failure = FSError.from(error)
            if failure.logged { Log.warning("\(what()): \(failure.description)") }
            fuse_reply_err(req, failure.errno)
        }
    }

    // MARK: conversions

    func stat(_ a: Attributes) -> stat {
        var st = Glibc.stat()
        st.st_ino = UInt(a.ino)
        st.st_mode = a.mode
        st.st_nlink = UInt(a.nlink)
        st.st_uid = a.uid
        st.st_gid = a.gid
        st.st_size = Int(a.size)
        st.st_blocks = Int(a.blocks)
        st.st_blksize = 4096
        st.st_atim = SystemCalls.timespec(nanoseconds: a.atimeNs)
        st.st_mtim = SystemCalls.timespec(nanoseconds: a.mtimeNs)
        st.st_ctim = SystemCalls.timespec(nanoseconds: a.ctimeNs)
        return st
    }

    func entry(_ a: Attributes) -> fuse_entry_param {
        var e = fuse_entry_param()
        e.ino = a.ino
        e.generation = 0  // numbers are never reused
        e.attr = stat(a)
        e.attr_timeout = attrTimeout
        e.entry_timeout = entryTimeout
        return e
    }

    func replyEntry(_ req: fuse_req_t?, _ a: Attributes) {
        var e = entry(a)
        fuse_reply_entry(req, &e)
    }

    func replyAttr(_ req: fuse_req_t?, _ a: Attributes) {
        var st = stat(a)
        fuse_reply_attr(req, &st, attrTimeout)
    }
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
