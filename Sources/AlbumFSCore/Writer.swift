import AlbumCore
import Foundation
import Glibc

/// A file being written: its bytes go to a file in `staging/` until the last close, when
/// they are imported (a new file) or become a new version (an existing asset).
///
/// Every handle open on the same inode shares one writer. All fields are guarded by
/// `lock`; the commit runs under it, so a write cannot slip in between hashing and
/// import.
final class Writer: @unchecked Sendable {
    enum Target: Equatable {
        /// A name being created in a folder; imported at the last close.
        case newFile(folder: UInt64, name: String)
        /// An existing asset being rewritten; a new version at the last close.
        case asset(Int64)
    }

    let ino: UInt64
    var target: Target
    var path: String
    var fd: Int32
    /// Bytes changed since the last commit.
    var dirty: Bool
    /// The staging file became a blob (or was dropped): writing again needs a fresh copy.
    var sealed = false
    var openCount = 0
    /// Removed by name while still open: never imported.
    var unlinked = false
    /// Why the last import was refused (not media). Every later close reports it again
    /// until the bytes change, and the last release drops the file: a descriptor may
    /// have been dup'ed, and FUSE cannot tell which close is the last.
    var refused: FSError?
    /// The digest, computed as the file is written front to back.
    var stream: StreamingHash? = StreamingHash()
    /// Where writeback was last started: the data goes to disk while more arrives, so
    /// that the fsync at the close has little left to wait for.
    var writebackFrom: Int64 = 0
    static let writebackStep: Int64 = 4 << 20
    /// When bytes last changed, and whether an fsync (an NFS COMMIT) came since.
    var lastWriteNs = nowNanoseconds()
    var syncedSinceWrite = false
    /// An mtime set through the file (futimens before close: `cp -p`).
    var mtimeNs: Int64?
    /// Permission bits from create(2), or a chmod while open; `modeSet` when a chmod.
    var mode: UInt32 = 0o644
    var modeSet = false
    /// copy_file_range of a whole asset into an empty new file: no bytes are copied;
    /// the commit adds the asset where the file was made.
    var cloneOf: Asset?
    let lock = NSLock()

    init(ino: UInt64, target: Target, path: String, fd: Int32, dirty: Bool) {
        self.ino = ino
        self.target = target
        self.path = path
        self.fd = fd
        self.dirty = dirty
    }

    deinit {
        close(fd)
        if !sealed { unlink(path) }
    }

    /// A write went to the staging file (under the lock).
    func wrote(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        stream?.wrote(bytes, at: offset)
        let end = offset + Int64(bytes.count)
        if end - writebackFrom >= Self.writebackStep {
            SystemCalls.startWriteback(fd: fd, offset: writebackFrom, length: end - writebackFrom)
            writebackFrom = end
        }
        touched()
    }

    /// Bytes changed (under the lock). A refusal of the bytes is lifted (they may be a
    /// photo now); a failed write is not (those bytes are lost: the file is not imported).
    func touched() {
        dirty = true
        if refused?.errno == EINVAL { refused = nil }
        lastWriteNs = nowNanoseconds()
        syncedSinceWrite = false
    }

    var isNewFile: Bool {
        if case .newFile = target { return true }
        return false
    }

    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Size and mtime of what is being written.
    func stat() -> (size: Int64, mtimeNs: Int64) {
        // A clone has no bytes of its own until something writes to it.
        if let cloneOf { return (cloneOf.size, mtimeNs ?? cloneOf.mtimeNanoseconds) }
        var st = Glibc.stat()
        guard fstat(fd, &st) == 0 else { return (0, nowNanoseconds()) }
        let mtime = st.st_mtim.nanoseconds
        return (Int64(st.st_size), mtimeNs ?? mtime)
    }
}

/// The writers of the mount, by inode, and the names of files being created.
///
/// Lock order: a writer's lock may be held while this table's is taken, never the other
/// way round; so the name index lives here, not in the writers, and lookups by name never
/// touch a writer's lock.
final class WriterTable: Sendable {
    private struct State {
        var byIno: [UInt64: Writer] = [:]
        var names: [String: UInt64] = [:]       // "folder/key" of files being created
        var nameOf: [UInt64: String] = [:]
    }
    private let state = Locked(State())

    private static func slot(_ folder: UInt64, _ key: String) -> String { "\(folder)/\(key)" }

    func get(_ ino: UInt64) -> Writer? { state.withLock { $0.byIno[ino] } }

    func add(_ writer: Writer) { state.withLock { $0.byIno[writer.ino] = writer } }

    /// Drops a writer and its name.
    func remove(_ writer: Writer) {
        state.withLock { s in
            guard s.byIno[writer.ino] === writer else { return }
            s.byIno.removeValue(forKey: writer.ino)
            if let slot = s.nameOf.removeValue(forKey: writer.ino) { s.names.removeValue(forKey: slot) }
        }
    }

    /// Records that `writer` is being created as `name` in `folder`.
    func setName(_ writer: Writer, folder: UInt64, name: String) {
        state.withLock { s in
            if let old = s.nameOf[writer.ino] { s.names.removeValue(forKey: old) }
            let slot = Self.slot(folder, Names.key(name))
            s.names[slot] = writer.ino
            s.nameOf[writer.ino] = slot
        }
    }

    /// The writer no longer answers to a name (imported, removed, discarded).
    func clearName(_ writer: Writer) {
        state.withLock { s in
            if let slot = s.nameOf.removeValue(forKey: writer.ino) { s.names.removeValue(forKey: slot) }
        }
    }

    /// The file being created as `key` in a folder, if any.
    func newFile(in folder: UInt64, key: String) -> Writer? {
        state.withLock { s in s.names[Self.slot(folder, key)].flatMap { s.byIno[$0] } }
    }

    /// Inode numbers of the files being created in a folder (to list them).
    func newFiles(in folder: UInt64) -> [UInt64] {
        let prefix = "\(folder)/"
        return state.withLock { s in s.names.filter { $0.key.hasPrefix(prefix) }.map(\.value).sorted() }
    }

    var all: [Writer] { state.withLock { Array($0.byIno.values) } }
}
