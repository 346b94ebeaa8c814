import AlbumCore
import Foundation

/// A file being written through the mount: the bytes of one inode while handles write
/// them, and what they become at a close. Every handle open on the inode shares it.
///
/// ```
///                 write                      close (flush)
///   clean ───────────────────► dirty ─────────────────────► committing
///     ▲                          ▲  │ truncate to 0, close        │
///     │                          │  ▼ (a photo being replaced)     │ photo bytes:
///     │                  write   emptied ──(a minute)──► clean     │   imported, or a new version
///     │                          │                                 │ not a photo (a plain file's):
///     └──────────────────────────┴─────────────────────────────────┤   stays a plain file
///                                                                  │ not a photo (a photo's):
///   refused ◄──────────────────────────────────────────────────────┘   refused, EINVAL
///   failed  ◄── a write failed (ENOSPC, EIO): never imported, every close says so
///   removed ◄── unlinked while open: its handles keep its bytes (`UnlinkedOpen`), never imported
/// ```
///
/// Who the bytes are for (`Target`): a plain file, written in place in its own bytes
/// file, which becomes a photo at a close when it holds photo content under a visible
/// name (`Writing/Arrival.swift` decides); or an existing photo, whose new version is
/// written to a private copy in staging/ and committed at a close, keeping the photo.
///
/// Locking: two locks. `io` serializes what touches the bytes: writes, truncation,
/// copies into them, and a close's commit (hashing, the blob's fsync, the transaction),
/// so that no write slips in between hashing and import. `state` guards the fields and
/// is held only to read or change them, never across a system call that can block: stat,
/// lookups and listings take only `state`, so they never wait for a write or a commit.
final class Writer: @unchecked Sendable {
    enum Target: Equatable {
        /// A plain file (its id), written in place.
        case plain(Int64)
        /// An existing photo (its id), getting a new version.
        case asset(Int64)
    }

    /// Where the bytes being written are.
    enum Bytes {
        /// A plain file's own bytes file, written in place.
        case own(FileDescriptor)
        /// A new version's private copy in staging/.
        case copy(FileDescriptor, LibraryPath)
        /// Nothing written since the last commit: the photo's current bytes (its blob).
        case current
        /// The version these handles had open when a save by rename replaced it (its
        /// blob, read-only): what they read, and what their first write copies. Never
        /// imported (the writer is `removed`), as an unlinked file's bytes on a disk.
        case replaced(FileDescriptor)
    }

    enum Phase: Equatable {
        case clean
        case dirty
        /// A photo's bytes truncated to nothing and closed so (ImageMagick truncates,
        /// closes, reopens and writes): shown empty, neither an error nor a version; the
        /// next photo content closed is the next version. Lapses after a minute.
        case emptied(since: Int64)
        case committing
        /// A write failed: these bytes are never imported; every close reports it until
        /// the last handle is released.
        case failed(errno: Int32, reason: String)
        /// The last close refused these bytes (not a photo, for a photo's new version):
        /// every close reports it until the bytes change.
        case refused(reason: String)
        /// Unlinked while open: its handles still read and write the bytes; never imported.
        case removed
    }

    let ino: UInt64
    private(set) var target: Target
    private(set) var bytes: Bytes
    private(set) var phase: Phase = .clean
    private(set) var openCount = 0
    /// The digest, computed as the file is written front to back.
    private(set) var stream: StreamingHash?
    /// A plain file's digest as its last close kept its bytes, whole, with the stamp of
    /// its bytes file then, until they change: for a rename while the writer is here
    /// (`keptDigest(of:matching:)`), recorded as it leaves (`restingDigest`, `ClosedDigests`).
    private var keptDigest: (sha256: String, size: Int64, stamp: FileStamp)?
    /// Where writeback was last started: data goes to disk while more arrives, so that the
    /// fsync at the close has little left to wait for. Every 1 MiB: with 4 MiB, a 24 MP
    /// photo's close waited 2.5 ms for its last 2.5 MB to reach the disk, with 1 MiB
    /// 0.8 ms (the close's clock, `-d`; docs/performance.md, "Writes in larger pieces").
    private var writebackFrom: Int64 = 0
    private static let writebackStep: Int64 = 1 << 20
    /// When bytes last changed, and whether an fsync (an NFS COMMIT) came since.
    private(set) var lastWriteNs = nowNanoseconds()
    private(set) var syncedSinceWrite = false
    /// An mtime set through a handle while open (`cp -p`'s futimens before its close).
    var explicitMtimeNs: Int64?
    /// copy_file_range of a whole photo into an empty new plain file: no byte is copied;
    /// the close places that photo where the file was made (as `cp` of its bytes would).
    private(set) var cloneOf: Asset?
    /// The blob of the photo's version that its handles opened, or that a close of theirs
    /// saved since: what their first write copies when the photo left the library through
    /// another host meanwhile (`FileSystem.copyOfCurrent`).
    private(set) var versionShown: String?

    private let state = NSLock()
    private let ioLock = NSLock()
    /// A plain file created through the mount and not closed yet (its row says so until
    /// its first close, so that a crash discards it).
    var unfinished = false

    init(ino: UInt64, target: Target, bytes: Bytes) {
        self.ino = ino
        self.target = target
        self.bytes = bytes
        if case .own(let fd) = bytes, (try? fd.size()) == 0 { stream = StreamingHash() }
    }

    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        state.lock()
        defer { state.unlock() }
        return try body()
    }

    /// Runs what touches the bytes, one at a time.
    func io<R>(_ body: () throws -> R) rethrows -> R {
        ioLock.lock()
        defer { ioLock.unlock() }
        return try body()
    }

    // MARK: handles

    func opened() { withLock { openCount += 1 } }

    /// A handle was released; returns how many remain.
    func released() -> Int { withLock { openCount -= 1; return openCount } }

    // MARK: writing (inside `io`)

    /// The descriptor to write to, the bytes made writable first: a photo's bytes are
    /// copied into staging (`copyCurrent` makes the copy), a clone gets its bytes. Never
    /// a blob's file. Inside `io`.
    func writable(copyCurrent: () throws -> (FileDescriptor, LibraryPath),
                  copyClone: (Asset, FileDescriptor) throws -> Void) throws -> FileDescriptor {
        let (current, clone) = withLock { (bytes, cloneOf) }
        // Removed while open: its handles keep writing (never imported), as on any disk:
        // into its own bytes or its copy, or into a copy of the version it shows (a
        // photo removed while its writer was not clean, emptied by a close a moment
        // before, keeps no version of its own; its writes failed with EBADF here, which
        // the racing clients of LoadTests found).
        if let clone, case .own(let fd) = current {
            try copyClone(clone, fd)
            withLock { cloneOf = nil; stream = nil }
        }
        switch current {
        case .own(let fd), .copy(let fd, _):
            return fd
        case .current, .replaced:
            let (fd, path) = try copyCurrent()
            withLock {
                bytes = .copy(fd, path)
                stream = nil  // the copied bytes were not streamed
                writebackFrom = 0
            }
            return fd
        }
    }

    /// `bytes` were written at `offset` (inside `io`). Returns the stream that was
    /// promised them, if any: the caller must give it the bytes (`StreamingHash.hash`),
    /// which it may do after the write is answered and outside `io`.
    ///
    /// A file whose first bytes cannot begin a photo or a video is not hashed: its close
    /// keeps it plain on those same bytes (`cannotBeMedia`, Arrival.swift), and they can
    /// change only by a write out of order, which ends the stream anyway (a truncation to
    /// nothing starts a new one). Hashing an archive copied into an album cost 0.55 s a
    /// GB.
    func wrote(_ bytes: UnsafeRawBufferPointer, at offset: Int64, to fd: FileDescriptor) -> StreamingHash? {
        let count = bytes.count
        let noMedia: Bool
        if offset == 0, count >= Sniffer.headerLength,
           case .unsupported = Sniffer.sniff(Array(bytes.prefix(Sniffer.headerLength)), name: "") {
            noMedia = true
        } else {
            noMedia = false
        }
        let (promised, writebackRange): (StreamingHash?, (Int64, Int64)?) = withLock {
            if noMedia { stream = nil }
            let promised = stream.flatMap { $0.promise(count, at: offset) ? $0 : nil }
            touched()
            let end = offset + Int64(count)
            guard end - writebackFrom >= Self.writebackStep else { return (promised, nil) }
            defer { writebackFrom = end }
            return (promised, (writebackFrom, end - writebackFrom))
        }
        if let (start, length) = writebackRange { fd.startWriteback(offset: start, length: length) }
        return promised
    }

    /// The bytes changed some other way (truncate, a copy into them). Inside `io`.
    func changed(truncatedTo size: Int64? = nil) {
        withLock {
            if let size {
                if size == 0 { stream = StreamingHash(); writebackFrom = 0 } else if size != stream?.length { stream = nil }
            } else {
                stream = nil
            }
            touched()
        }
    }

    /// Bytes changed: the next close commits them. A refusal is lifted (they may be a
    /// photo now); a failed write is not (those bytes are lost: never imported). Under
    /// `state`.
    private func touched() {
        keptDigest = nil
        switch phase {
        case .failed, .removed: break
        default: phase = .dirty
        }
        lastWriteNs = nowNanoseconds()
        syncedSinceWrite = false
    }

    /// A write failed: these bytes will not be imported.
    func failed(_ error: any Error) {
        withLock {
            keptDigest = nil
            if case .removed = phase { return }
            phase = .failed(errno: FSError.errno(of: error), reason: "\(error)")
        }
    }

    /// A whole photo copied into this empty new file by copy_file_range (inside `io`).
    func clone(_ asset: Asset) -> Bool {
        guard case .own(let fd) = withLock({ bytes }), (try? fd.size()) == 0 else { return false }
        return withLock {
            guard cloneOf == nil, case .plain = target else { return false }
            cloneOf = asset
            touched()
            return true
        }
    }

    func synced() { withLock { syncedSinceWrite = true } }

    /// Its bytes are in `fd` now, a copy of them (at `path`, a private copy in staging/;
    /// nil: a plain file's own bytes file, renamed into place), since the file they were
    /// in got a blob's name too (`FileSystem.keepBytesPrivate`). Inside `io`.
    func movedBytes(to fd: FileDescriptor, at path: LibraryPath?) {
        withLock {
            keptDigest = nil
            if let path { bytes = .copy(fd, path) } else { bytes = .own(fd) }
        }
    }

    /// Its bytes file is also a blob's and could not be copied: the handles read it
    /// (their first write copies it, `writable`), and these bytes are never saved.
    /// Inside `io`.
    func lostBytes(_ error: any Error) {
        withLock {
            keptDigest = nil
            switch bytes {
            case .own(let fd), .copy(let fd, _): bytes = .replaced(fd)
            case .current, .replaced: break
            }
            if case .removed = phase { return }
            phase = .failed(errno: FSError.errno(of: error), reason: "\(error)")
        }
    }

    func removed() { withLock { phase = .removed; keptDigest = nil } }

    /// A close kept these bytes plain, whole as they were streamed: `size` bytes whose
    /// digest is `sha256`, their file as `stamp` says after its sync. Inside `io`.
    func keptWhole(sha256: String, size: Int64, stamp: FileStamp) { withLock { keptDigest = (sha256, size, stamp) } }

    /// The digest its last close kept, while nothing changed the bytes through it since
    /// and their file is as `st` says now (nothing changed it behind this writer's back).
    /// Inside `io`.
    func keptDigest(of id: Int64, matching st: stat) -> (sha256: String, size: Int64)? {
        withLock {
            guard phase == .clean, case .plain(id) = target, let kept = keptDigest, kept.stamp == FileStamp(st) else { return nil }
            return (kept.sha256, kept.size)
        }
    }

    /// This host set the bytes file's mtime, finding it as `before` and leaving it as
    /// `after`: a digest kept for the file as it was before is kept for it as it is after.
    func timesSet(before: stat?, after: stat?) {
        withLock {
            guard let kept = keptDigest else { return }
            guard let before, let after, kept.stamp == FileStamp(before) else {
                keptDigest = nil
                return
            }
            keptDigest = (kept.sha256, kept.size, FileStamp(after))
        }
    }

    /// The plain file, its bytes and their digest and stamp, when its last close kept
    /// them whole, nothing changed them through it since and no handle is left: for
    /// `ClosedDigests`.
    var restingDigest: (id: Int64, sha256: String, size: Int64, stamp: FileStamp)? {
        withLock {
            guard phase == .clean, openCount <= 0, case .plain(let id) = target, case .own = bytes,
                  let kept = keptDigest else { return nil }
            return (id, kept.sha256, kept.size, kept.stamp)
        }
    }

    /// A handle opened the photo when its current version was the blob `sha256`.
    func opened(version sha256: String) { withLock { if case .current = bytes { versionShown = sha256 } } }

    /// Unlinked while open (or replaced by a save while open with nothing to save).
    var isRemoved: Bool { withLock { phase == .removed } }

    /// A save by rename replaced the photo while these handles were open on it with
    /// nothing to save: they keep the version they had open (`version`, its blob opened
    /// read-only), read it and write into a copy of it, never imported, as handles of a
    /// file replaced by a rename do on a disk. Only a writer that is `clean`, its bytes
    /// the photo's current ones; false otherwise, and nothing changes. Inside `io`.
    func keepReplaced(_ version: FileDescriptor) -> Bool {
        withLock {
            guard phase == .clean, case .current = bytes else { return false }
            bytes = .replaced(version)
            phase = .removed
            return true
        }
    }

    /// The private copy that open handles are writing, while it holds bytes the photo
    /// shows and no close has saved (written, emptied, or refused or failed at a
    /// close); nil otherwise. Inside `io`.
    func pendingCopy() -> LibraryPath? {
        withLock {
            guard openCount > 0, case .copy(_, let path) = bytes, case .asset = target else { return nil }
            switch phase {
            case .dirty, .emptied, .refused, .failed: return path
            case .clean, .committing, .removed: return nil
            }
        }
    }

    /// The photo's name it was writing became plain file `id`, whose bytes are now this
    /// copy (a second link to it, made by the caller): from here on it is that file's
    /// writer, written in place, as if the file had been opened so. Bytes lost to a
    /// failed write stay lost. Inside `io`.
    func becamePlain(_ id: Int64) {
        withLock {
            target = .plain(id)
            if case .copy(let fd, _) = bytes { bytes = .own(fd) }
            stream = nil
            keptDigest = nil
            if case .failed = phase {} else { phase = .dirty }
        }
    }

    /// Whether handles are open on this photo's writer with nothing written since its
    /// last version (its bytes are the photo's current ones, none of them closing). A
    /// rename of the photo to a plain name takes them along all the same: the file the
    /// name becomes gets a copy of those bytes (`becamePlain(_:own:)`). Inside `io`.
    var holdsCurrentBytesOpen: Bool {
        withLock {
            guard openCount > 0, case .asset = target, phase == .clean, case .current = bytes else { return false }
            return true
        }
    }

    /// The photo's name these handles had open, with nothing written, became plain file
    /// `id`, whose bytes are `own` (a copy of the photo's current ones, made by the
    /// caller): from here on this is that file's writer, clean, written in place. Inside
    /// `io`.
    func becamePlain(_ id: Int64, own: FileDescriptor) {
        withLock {
            target = .plain(id)
            bytes = .own(own)
            stream = nil
            keptDigest = nil
        }
    }

    /// Whether handles are open on this photo's writer, none of them closing now, and
    /// nothing superseded them: a rename of the photo takes them along. Inside `io`.
    var movesWithRename: Bool {
        withLock {
            guard openCount > 0, case .asset = target else { return false }
            switch phase {
            case .committing, .removed: return false
            case .clean, .dirty, .emptied, .refused, .failed: return true
            }
        }
    }

    /// The photo these bytes were being written into was renamed over photo `asset` (or
    /// onto the name it left moments ago): the handles go with the name, as a file's do on
    /// a disk. From here on this is that photo's writer: its handles write on into the
    /// same private copy (or, when they had written nothing yet, into a copy of that
    /// photo's new version, which is these bytes), and their close makes that photo's
    /// next version. Inside `io`.
    func becameVersion(of asset: Int64) {
        withLock { target = .asset(asset) }
    }

    // MARK: closing

    /// What a close has to do, taken under the lock: nothing, report an earlier failure,
    /// or commit these bytes (the writer is `committing` until `finish`).
    enum CloseWork {
        case nothing
        case report(FSError)
        case commit(Commit)
    }

    /// The bytes a commit imports, as they were when the close began.
    struct Commit {
        let target: Target
        let bytes: Bytes
        let stream: StreamingHash?
        let explicitMtimeNs: Int64?
        let cloneOf: Asset?
    }

    /// Inside `io`.
    func beginClose() -> CloseWork {
        withLock {
            switch phase {
            case .failed(let code, let reason):
                return .report(FSError(code, reason, logged: false))
            case .refused(let reason):
                return .report(FSError(EINVAL, reason, logged: false))
            case .dirty:
                phase = .committing
                return .commit(Commit(target: target, bytes: bytes, stream: stream, explicitMtimeNs: explicitMtimeNs,
                                      cloneOf: cloneOf))
            case .clean, .emptied, .removed, .committing:
                return .nothing
            }
        }
    }

    /// How a commit ended.
    enum Outcome {
        /// The bytes are a photo now (imported, or a new version): `asset`, whose blob
        /// `version` they are. Writing again makes a copy first.
        case committed(asset: Int64, version: String)
        /// A plain file's bytes that are no photo (or may not become one there): it stays.
        case keptPlain
        /// A photo's new bytes that are empty: shown empty for a minute.
        case emptied
        /// A photo's new bytes that are no photo: refused, the photo unchanged.
        case refused(String)
        /// It could not be done now (disk full, I/O): the bytes stay, the next close tries
        /// again.
        case error
    }

    /// Inside `io`.
    func finish(_ outcome: Outcome) {
        withLock {
            guard phase == .committing else { return }  // removed meanwhile
            switch outcome {
            case .committed(let asset, let version):
                target = .asset(asset)
                bytes = .current
                // What the handles show now: if the photo leaves through another host,
                // their next write copies it (`FileSystem.copyOfCurrent`).
                versionShown = version
                stream = nil
                keptDigest = nil
                cloneOf = nil
                explicitMtimeNs = nil
                phase = .clean
            case .keptPlain:
                phase = .clean
            case .emptied:
                phase = .emptied(since: nowNanoseconds())
            case .refused(let reason):
                phase = .refused(reason: reason)
            case .error:
                phase = .dirty
            }
        }
    }

    /// Its plain file became a photo by a rename: writing again makes a new version.
    /// Inside `io`.
    func becamePhoto(_ asset: Asset) {
        withLock { if phase != .removed { phase = .committing } }
        finish(.committed(asset: asset.id, version: asset.sha256))
    }

    /// The last handle is gone: what to do with what is left. A refused or failed
    /// version's copy is dropped (the photo is unchanged); a plain file's bytes stay where
    /// they are. Returns whether the writer is still needed (an emptied version), and the
    /// copy to remove.
    func dropUncommitted() -> (keep: Bool, discard: LibraryPath?) {
        withLock {
            if case .emptied = phase { return (true, nil) }
            // A handle joined after the last release counted (`WriterTable.join`): the
            // bytes are its own now, perhaps written already.
            if openCount > 0 { return (true, nil) }
            var discard: LibraryPath?
            if case .copy(_, let path) = bytes {
                discard = path
                bytes = .current
            }
            if case .asset = target { phase = .clean }
            return (false, discard)
        }
    }

    /// An emptied version that nobody filled within the minute goes back to the photo's
    /// bytes (nothing was lost: they were never replaced). Returns the copy to remove.
    func expireEmptied(now: Int64, after seconds: Int64) -> LibraryPath?? {
        withLock {
            guard case .emptied(let since) = phase, now - since >= seconds * nanosecondsPerSecond, openCount == 0 else { return nil }
            var discard: LibraryPath?
            if case .copy(_, let path) = bytes { discard = path }
            bytes = .current
            phase = .clean
            return .some(discard)
        }
    }

    // MARK: what readers see

    /// The descriptor reads come from, pinned by the caller for as long as it reads: the
    /// bytes being written, or nil for the photo's own (its blob).
    func readable() -> (FileDescriptor?, clone: Asset?) {
        withLock {
            if let cloneOf { return (nil, cloneOf) }
            switch bytes {
            case .own(let fd), .copy(let fd, _): return (fd, nil)
            case .replaced(let fd): return (fd, nil)
            case .current: return (nil, nil)
            }
        }
    }

    /// Whether a photo shows these bytes instead of its current version now.
    var showsPendingBytes: Bool {
        withLock {
            guard case .asset = target, case .copy = bytes else { return false }
            switch phase {
            case .dirty, .emptied, .committing: return true
            default: return false
            }
        }
    }

    /// Size and mtime a photo shows while new bytes for it are pending.
    func pendingAttributes() -> (size: Int64, mtimeNs: Int64)? {
        guard showsPendingBytes else { return nil }
        let fd: FileDescriptor? = withLock { if case .copy(let fd, _) = bytes { return fd }; return nil }
        guard let fd, let st = try? fd.status() else { return nil }
        return (Int64(st.st_size), withLock { explicitMtimeNs } ?? st.modificationNanoseconds)
    }

    /// Whether it is quiet and whole enough to import without a close (an NFS server
    /// holds its descriptors): an fsync came `settle` seconds ago, or nothing for `stale`.
    func isSettled(now: Int64, settle: Double, stale: Double) -> Bool {
        withLock {
            guard phase == .dirty, openCount > 0 else { return false }
            let quiet = Double(now - lastWriteNs) / 1e9
            return (syncedSinceWrite && quiet >= settle) || quiet >= stale
        }
    }

    var isDirty: Bool { withLock { phase == .dirty } }

    /// Whether a handle holds it.
    var isOpen: Bool { withLock { openCount > 0 } }

    /// No handle, and nothing to save or show: a photo's writer that can go.
    var isIdle: Bool {
        withLock {
            guard openCount == 0, phase == .clean, case .current = bytes else { return false }
            return true
        }
    }

    /// The number of the file whose bytes these are now (`ino` is the one it was made
    /// for: a rename may have handed it to another file since).
    var targetIno: UInt64 {
        withLock {
            switch target {
            case .asset(let id), .plain(let id): return UInt64(id)
            }
        }
    }

    var isEmptied: Bool { withLock { if case .emptied = phase { return true } else { return false } } }

    /// The size of the photo a clone stands for, while it does.
    var cloneSize: Int64? { withLock { cloneOf?.size } }
}

/// The writers of the mount, by inode number: a plain file's by its number, a photo's by
/// its asset id (whatever number it was opened through: an album entry's alias number,
/// a kernel inode of an older version), so that every open, stat and save of one photo
/// finds the one writer of its bytes.
final class WriterTable: Sendable {
    /// Digests of plain files whose last writer left (`ClosedDigests`).
    let digests: ClosedDigests

    init(keepsDigests: Bool) { digests = ClosedDigests(enabled: keepsDigests) }

    private struct Table {
        var byIno: [UInt64: Writer] = [:]
        /// Moves on whenever a writer comes or goes.
        var epoch: UInt64 = 0
    }

    private let table = Locked(Table())

    func get(_ ino: UInt64) -> Writer? { table.withLock { $0.byIno[ino] } }

    /// The writer of `ino` when it has one and `wanted` says so, with a handle more
    /// counted (`Writer.opened`) under the table's lock, where a last release looks
    /// before it takes a writer out (`removeUnused`): a handle that joins while the
    /// writer's last one is released keeps it in the table. Counted after the look,
    /// the release could take it out in between, and the handle wrote to a writer no
    /// later open, stat or save of the file found.
    func join(_ ino: UInt64, if wanted: (Writer) -> Bool = { _ in true }) -> Writer? {
        table.withLock { table in
            guard let writer = table.byIno[ino], wanted(writer) else { return nil }
            writer.opened()
            return writer
        }
    }

    /// The writer of `ino`, made by `make` if there is none; with a handle more counted
    /// when `opening` (see `join`).
    func writer(for ino: UInt64, opening: Bool = false, make: () throws -> Writer) rethrows -> Writer {
        try table.withLock { table in
            let writer: Writer
            if let existing = table.byIno[ino] {
                writer = existing
            } else {
                writer = try make()
                digests.forget(Int64(bitPattern: ino))  // its bytes may change from now on
                table.byIno[ino] = writer
                table.epoch &+= 1
            }
            if opening { writer.opened() }
            return writer
        }
    }

    /// The writer of photo `asset`, made if there is none.
    func writer(forAsset asset: Int64, opening: Bool = false) -> Writer {
        writer(for: UInt64(asset), opening: opening) { Writer(ino: UInt64(asset), target: .asset(asset), bytes: .current) }
    }

    /// A writer whose bytes are photo `asset` now (after every commit). Under another
    /// number (a plain file's bytes the library held already: the file is that photo
    /// now), it is that photo's writer from now on, unless the photo has one already;
    /// then it stays where it is, and its handles' next writes are still that photo's
    /// next version at their close. Under the same number, nothing changes.
    func becameAsset(_ writer: Writer, _ asset: Int64) { rekey(writer, to: UInt64(asset)) }

    /// A writer whose photo's name is about to become plain file `id` (`PlainHandover`):
    /// found under that new number as well from now on, so that an open of the file
    /// once its row is committed (by a close, the kernel holds no folder's lock) joins
    /// it, rather than making a writer of its own and leaving this one under the
    /// photo's id, where every later open of the photo would join it and write into
    /// the file.
    func reserve(_ writer: Writer, as id: Int64) {
        table.withLock { table in
            digests.forget(id)
            table.byIno[UInt64(id)] = writer
            table.epoch &+= 1
        }
    }

    /// The handover of `writer` to plain file `id` did not happen: it is the photo's only.
    func unreserve(_ writer: Writer, as id: Int64) {
        table.withLock { table in
            guard table.byIno[UInt64(id)] === writer else { return }
            table.byIno.removeValue(forKey: UInt64(id))
            table.epoch &+= 1
        }
    }

    /// A writer whose photo's name became plain file `id` (`Writer.becamePlain`): that
    /// file's writer from now on, found under that number only. (One that left the
    /// table meanwhile, its last handle released, stays out.)
    func becamePlain(_ writer: Writer, _ id: Int64) {
        table.withLock { table in
            guard Self.detach(writer, from: &table) else { return }
            digests.forget(id)
            table.byIno[UInt64(id)] = writer
        }
    }

    /// A writer whose photo was renamed over photo `asset` (`Writer.becameVersion`):
    /// that photo's writer from now on. Not when the photo has a writer still (handles
    /// open on it that had nothing to save): false, and nothing changes.
    func becameVersion(_ writer: Writer, of asset: Int64) -> Bool { rekey(writer, to: UInt64(asset)) }

    @discardableResult
    private func rekey(_ writer: Writer, to key: UInt64) -> Bool {
        table.withLock { table in
            guard table.byIno[key] == nil, let old = table.byIno.first(where: { $0.value === writer })?.key else { return false }
            digests.forget(Int64(bitPattern: key))
            table.byIno.removeValue(forKey: old)
            table.byIno[key] = writer
            return true
        }
    }

    /// Under every number it is found by (two, while a handover reserves one). A plain
    /// file's writer that leaves its bytes as its last close kept them records their
    /// digest, under the table's lock: a writer made for the file next forgets it
    /// after this, never before.
    func remove(_ writer: Writer) {
        removeUnused(writer, if: { _ in true })
    }

    /// `remove` when `unused` holds under the table's lock (no handle, by default): a
    /// handle that joined since the caller looked keeps the writer in the table (`join`).
    func removeUnused(_ writer: Writer, if unused: (Writer) -> Bool = { w in w.withLock { w.openCount <= 0 } }) {
        table.withLock { table in
            guard unused(writer), Self.detach(writer, from: &table), let resting = writer.restingDigest else { return }
            digests.record(resting.id, sha256: resting.sha256, size: resting.size, stamp: resting.stamp)
        }
    }

    /// Takes `writer` out from under every number it is found by; false when it is under none.
    private static func detach(_ writer: Writer, from table: inout Table) -> Bool {
        let keys = table.byIno.filter { $0.value === writer }.map(\.key)
        guard !keys.isEmpty else { return false }
        keys.forEach { table.byIno.removeValue(forKey: $0) }
        table.epoch &+= 1
        return true
    }

    var all: [Writer] { table.withLock { Array($0.byIno.values) } }

    /// While no file is open for writing, a number that moves on when one is opened or
    /// closed; nil while one is open. Equal values at two moments: no writer was open at
    /// either, nor between them.
    var quietEpoch: UInt64? { table.withLock { $0.byIno.isEmpty ? $0.epoch : nil } }
}
