import AlbumCore
import Foundation
import Glibc

/// Writing: create, mknod, open for writing, write, copy_file_range, flush (where a new
/// file is imported and close() learns the outcome), release, fsync, setattr.
extension FileSystem {
    // MARK: inode numbers for new files

    /// An inode number for a file being created, from a block the library reserved (one
    /// transaction per 256 files; unused numbers of a block are never handed out again).
    func newInodeNumber() throws -> Int64 {
        try idBlock.withLock { block in
            if block.isEmpty { block = try library.reserveIDs(256) }
            return block.popFirst()!
        }
    }

    func checkWritable() throws {
        if options.readOnly { throw FSError(EROFS, "read-only mount") }
    }

    // MARK: create and mknod

    /// Creates a file: a scratch file for dot files and client junk, else a new file in
    /// staging that is imported at its last close. Opens it when `open` (create(2)).
    public func create(parent: UInt64, name bytes: [UInt8], mode: UInt32, flags: Int32,
                       open: Bool = true) throws -> (Attributes, Opened?) {
        try checkWritable()
        let name = try validName(bytes)
        let role = try role(of: parent)
        if (try? lookup(parent: parent, name: bytes)) != nil {
            throw FSError(EEXIST, "\(name) exists", logged: false)
        }
        if Names.isScratch(name) {
            try checkScratchAllowed(role, name: name)
            let file = try library.createScratchFile(named: name, in: parent, mode: mode & 0o7777)
            afterChange(folders: [parent], entries: [(parent, name)])
            let attributes = try self.attributes(of: file)
            guard open else { return (attributes, nil) }
            return (attributes, try self.open(attributes.ino, flags: flags & ~O_CREAT & ~O_EXCL))
        }
        _ = try importDestination(role, name: name)
        let id = try newInodeNumber()
        let (fd, path) = try library.staging.createFile()
        let writer = Writer(ino: UInt64(id), target: .newFile(folder: parent, name: name), path: path, fd: fd, dirty: true)
        writer.mode = mode & 0o7777
        writers.add(writer)
        writers.setName(writer, folder: parent, name: name)
        if open { writer.withLock { writer.openCount += 1 } }
        afterChange(folders: [parent], entries: [(parent, name)])
        let attributes = writerAttributes(writer)
        guard open else { return (attributes, nil) }
        return (attributes, try opened(OpenFile(ino: UInt64(id), state: .writer(writer)), keepCache: false))
    }

    /// mknod: regular files only (NFS servers create files this way), as create without
    /// an open; anything else (devices, fifos, sockets) is EPERM.
    public func mknod(parent: UInt64, name: [UInt8], mode: UInt32) throws -> Attributes {
        guard mode & UInt32(S_IFMT) == UInt32(S_IFREG) || mode & UInt32(S_IFMT) == 0 else {
            throw FSError.notPermitted("mknod of \(String(decoding: name, as: UTF8.self)): only regular files can be made here")
        }
        return try create(parent: parent, name: name, mode: mode, flags: O_WRONLY, open: false).0
    }

    func writerAttributes(_ writer: Writer) -> Attributes {
        let (size, mtime) = writer.stat()
        return fileAttributes(ino: writer.ino, permissions: writer.mode, size: size, mtimeNs: mtime, ctimeNs: nowNanoseconds())
    }

    /// Attributes of a file being written, if `ino` is one that is not yet an asset (or
    /// an asset with unsaved changes).
    func pendingAttributes(_ ino: UInt64) -> Attributes? {
        guard let writer = writers.get(ino) else { return nil }
        return writer.withLock {
            guard writer.isNewFile || writer.dirty, !writer.unlinked || writer.openCount > 0 else { return nil }
            return writerAttributes(writer)
        }
    }

    // MARK: open for writing

    /// Opens an existing asset, or a file being created, for writing. The asset's bytes
    /// are copied into staging (unless O_TRUNC), and become a new version at the last
    /// close; every album shows it, and the earlier version is kept.
    func openForWriting(_ asset: Asset?, ino: UInt64, flags: Int32) throws -> Opened {
        try checkWritable()
        if let asset, asset.isTrashed {
            throw FSError.notPermitted("\(asset.name) is in Recently Deleted: restore it before changing it")
        }
        try refuseChangeWhileReadInPassthrough(ino, asset?.name ?? "inode \(ino)")
        let writer: Writer
        if let existing = writers.get(ino) {
            writer = existing
        } else {
            guard let asset else { throw FSError.noEntry("inode \(ino)") }
            let (fd, path) = try library.staging.createFile(prefix: "version")
            writer = Writer(ino: ino, target: .asset(asset.id), path: path, fd: fd, dirty: false)
            if flags & O_TRUNC == 0 {
                try copyBlob(asset, into: fd, path: path)
                writer.stream = nil  // the copied bytes were not streamed
            }
            writers.add(writer)
        }
        try writer.withLock {
            writer.openCount += 1
            if flags & O_TRUNC != 0 {
                try makeWritable(writer)
                if ftruncate(writer.fd, 0) != 0 { throw FSError(errno, "cannot truncate \(writer.path)") }
                writer.stream = StreamingHash()  // empty again: a fresh stream
                writer.writebackFrom = 0
                writer.touched()
            }
        }
        return try opened(OpenFile(ino: ino, state: .writer(writer)), keepCache: false)
    }

    /// Copies an asset's blob into a staging file (reflink or in-kernel copy when the
    /// filesystem can).
    func copyBlob(_ asset: Asset, into fd: Int32, path: String) throws {
        let source = try library.openBlob(of: asset)
        defer { close(source) }
        do {
            try SystemCalls.copyAll(from: source, to: fd, length: asset.size)
        } catch {
            throw FSError(FSError.from(error).errno, "cannot copy \(asset.name) into \(path)")
        }
    }

    /// Before bytes change: a clone gets its bytes, and a sealed writer (its staging file
    /// became a blob) a fresh copy, so that a blob is never written. Called under the
    /// writer's lock.
    func makeWritable(_ writer: Writer) throws {
        if writer.cloneOf != nil || writer.sealed { writer.stream = nil }
        if let clone = writer.cloneOf {
            try copyBlob(clone, into: writer.fd, path: writer.path)
            writer.cloneOf = nil
        }
        guard writer.sealed else { return }
        let (fd, path) = try library.staging.createFile(prefix: "version")
        var st = stat()
        fstat(writer.fd, &st)
        do {
            try SystemCalls.copyAll(from: writer.fd, to: fd, length: Int64(st.st_size))
        } catch {
            close(fd)
            Glibc.unlink(path)
            throw FSError(FSError.from(error).errno, "cannot copy \(writer.path) into \(path)")
        }
        close(writer.fd)
        writer.fd = fd
        writer.path = path
        writer.sealed = false
    }

    // MARK: write

    public func write(handle: UInt64, bytes: UnsafeRawBufferPointer, offset: Int64) throws -> Int {
        guard let file = handles.get(handle) else { throw FSError(EBADF, "write to an unknown handle \(handle)") }
        switch file.state {
        case .readOnly: throw FSError(EBADF, "write to a file opened read-only")
        case .scratch(let fd, _):
            let n = pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset))
            if n < 0 { throw FSError(errno, "cannot write scratch file") }
            return n
        case .writer(let writer):
            return try writer.withLock {
                try makeWritable(writer)
                let n = pwrite(writer.fd, bytes.baseAddress, bytes.count, off_t(offset))
                if n < 0 {
                    // Out of space (or an I/O error): this file will not be imported, and
                    // its close says why.
                    let failure = FSError(errno, "cannot write \(writer.path): \(String(cString: strerror(errno)))")
                    writer.refused = failure
                    throw failure
                }
                writer.wrote(UnsafeRawBufferPointer(rebasing: bytes[0..<n]), at: offset)
                return n
            }
        }
    }

    /// copy_file_range inside the mount: a whole asset into an empty new file adds the
    /// asset where the file is made, without copying a byte. Anything else copies.
    public func copyFileRange(from inHandle: UInt64, offset inOffset: Int64, to outHandle: UInt64,
                              offset outOffset: Int64, length: Int) throws -> Int {
        guard let source = handles.get(inHandle), let target = handles.get(outHandle) else {
            throw FSError(EBADF, "copy_file_range with an unknown handle")
        }
        if case .writer(let writer) = target.state, inOffset == 0, outOffset == 0,
           case .object(let id) = Node(ino: source.ino) ?? .root,
           let asset = try library.asset(id: id), Int64(length) >= asset.size {
            let cloned = try writer.withLock { () -> Bool in
                var st = stat()
                guard writer.isNewFile, writer.cloneOf == nil, fstat(writer.fd, &st) == 0, st.st_size == 0 else { return false }
                writer.cloneOf = asset
                writer.dirty = true
                return true
            }
            if cloned { return Int(asset.size) }
        }
        // A plain copy between the two descriptors. A source that is a copy never written
        // has no bytes of its own (its staging file is empty): it reads its blob, as
        // `read` does.
        var blob: Int32?
        if case .writer(let writer) = source.state, let clone = writer.withLock({ writer.cloneOf }) {
            blob = try library.openBlob(of: clone)
        }
        defer { if let blob { close(blob) } }
        let inFD = blob ?? source.readFD
        var i = inOffset, o = outOffset
        func copy(to outFD: Int32) throws -> Int {
            let n = SystemCalls.copyFileRange(inFD, &i, outFD, &o, length)
            if n < 0 { throw FSError(errno, "copy_file_range failed") }
            return n
        }
        switch target.state {
        case .readOnly: throw FSError(EBADF, "copy into a read-only file")
        case .scratch(let fd, _): return try copy(to: fd)
        case .writer(let writer):
            // The source's descriptor was taken first: it may be this same writer's.
            return try writer.withLock {
                try makeWritable(writer)
                let n = try copy(to: writer.fd)
                writer.stream = nil  // the copied bytes were not streamed
                writer.touched()
                return n
            }
        }
    }

    // MARK: flush, release, fsync

    /// close(): the last close of a file written through the mount imports it (or makes
    /// the new version) and returns only when that is on disk; EINVAL when the bytes are
    /// not a supported photo or video.
    public func flush(handle: UInt64) throws {
        guard let file = handles.get(handle), case .writer(let writer) = file.state else { return }
        try writer.withLock {
            if let refused = writer.refused { throw FSError(refused.errno, refused.reason, logged: false) }
            guard writer.dirty, !writer.unlinked, writer.openCount <= 1 else { return }
            try commit(writer)
        }
    }

    public func release(handle: UInt64) {
        guard let file = handles.remove(handle), case .writer(let writer) = file.state else { return }
        let last = writer.withLock { () -> Bool in
            writer.openCount -= 1
            guard writer.openCount <= 0 else { return false }
            if writer.refused != nil {
                discard(writer)
            } else if writer.dirty && !writer.unlinked {
                // No flush saw the last bytes (writes through mmap, or a failed close).
                do { try commit(writer) } catch { Log.warning("import at release of inode \(writer.ino): \(FSError.from(error))") }
                if writer.refused != nil { discard(writer) }
            }
            // A file made by mknod and never written stays until it is opened and closed.
            return !(writer.isNewFile && !writer.unlinked && writer.dirty)
        }
        if last { writers.remove(writer) }
    }

    public func fsync(handle: UInt64) throws {
        guard let file = handles.get(handle) else { return }
        switch file.state {
        case .readOnly: return
        case .scratch(let fd, _):
            if Glibc.fsync(fd) != 0 { throw FSError(errno, "fsync of a scratch file failed") }
        case .writer(let writer):
            try writer.withLock {
                if !writer.sealed && Glibc.fsync(writer.fd) != 0 { throw FSError(errno, "fsync of \(writer.path) failed") }
                writer.syncedSinceWrite = true
                // An NFS server turns a client's COMMIT into fsync and may keep the file
                // open for long after: import now, when the bytes look whole.
                if writer.dirty && !writer.unlinked && writer.refused == nil && writer.cloneOf == nil
                    && Completeness.looksComplete(fd: writer.fd) {
                    try commit(writer)
                }
            }
        }
    }

    /// Files left open after their last write (an NFS server holds its descriptors):
    /// imported once quiet for `settleSeconds` after an fsync, or `staleSeconds` without.
    public func importSettledFiles(settleSeconds: Double = 2, staleSeconds: Double = 60) {
        let now = nowNanoseconds()
        for writer in writers.all {
            writer.withLock {
                guard writer.dirty, !writer.unlinked, writer.refused == nil, writer.openCount > 0 else { return }
                let quiet = Double(now - writer.lastWriteNs) / 1e9
                guard (writer.syncedSinceWrite && quiet >= settleSeconds) || quiet >= staleSeconds else { return }
                do { try commit(writer) } catch { Log.warning("import of a settled file (inode \(writer.ino)): \(FSError.from(error))") }
            }
        }
    }

    /// Imports a new file or commits a new version. Called under the writer's lock.
    func commit(_ writer: Writer) throws {
        switch writer.target {
        case .newFile(let folder, let name):
            var clock = PhaseClock()
            defer { clock.log("commit of \(name)") }
            let destination: ImportDestination
            do {
                destination = try importDestination(try role(of: folder), name: name)
            } catch {
                writer.refused = FSError.from(error)
                throw error
            }
            let outcome: ImportOutcome
            if let clone = writer.cloneOf {
                outcome = try library.addExisting(clone.id, destination: destination)
                Glibc.unlink(writer.path)  // never written: nothing to import from it
            } else {
                let staged = try seal(writer)
                clock.mark("seal")
                do {
                    outcome = try library.commit(staged, originalName: name, destination: destination, assetID: Int64(writer.ino))
                } catch {
                    // Out of space, an I/O error: nothing was added, and every close says so.
                    writer.sealed = true
                    writer.refused = FSError.from(error)
                    throw error
                }
            }
            guard var asset = outcome.asset else {
                // The staging file is gone (commit consumed it); the name stays until the
                // last release, so that every close of the file reports the refusal.
                writer.sealed = true
                let reason: String
                if case .refused(let why) = outcome { reason = why } else { reason = "not imported" }
                let refusal = FSError(EINVAL, "refused \(name): \(reason); nothing was added")
                writer.refused = refusal
                throw refusal
            }
            clock.mark("import")
            if asset.id != Int64(writer.ino) {
                // The bytes were already in the library: the number the kernel has for this
                // name now stands for that asset.
                try library.addAlias(ino: Int64(writer.ino), asset: asset.id)
            }
            if let mtime = writer.mtimeNs {
                try library.setMtime(asset.id, nanoseconds: mtime)
            }
            // The mode of create(2) for a new asset; a chmod while open in any case.
            let isNew = asset.id == Int64(writer.ino)
            if (writer.modeSet || isNew) && writer.mode != (asset.mode ?? 0o644) {
                try library.setMode(asset.id, writer.mode == 0o644 ? nil : writer.mode)
            }
            asset = try library.asset(id: asset.id) ?? asset
            writer.target = .asset(asset.id)
            writers.clearName(writer)
            writer.sealed = true
            writer.dirty = false
            writer.cloneOf = nil
            clock.mark("attributes")
            afterChange(asset: asset, folders: [folder], entries: [(folder, name)])
            clock.mark("invalidations")
            prefetchThumbnail(asset)
        case .asset(let id):
            let staged = try seal(writer)
            let before = try library.asset(id: id)
            var asset: Asset
            do {
                asset = try library.commitVersion(staged, of: id)
            } catch {
                writer.sealed = true  // the staging file was consumed
                writer.dirty = false
                throw error
            }
            var changed = asset.version != before?.version
            if let mtime = writer.mtimeNs, mtime != asset.mtimeNanoseconds {
                try library.setMtime(id, nanoseconds: mtime)
                asset = try library.asset(id: id) ?? asset
                changed = true
            }
            writer.sealed = true
            writer.dirty = false
            // Bytes equal to the current version (cp of the same photo again) change nothing.
            if changed {
                afterChange(asset: asset)
                prefetchThumbnail(asset)
            }
        }
    }

    /// The writer's bytes, hashed, as a staged file for import.
    func seal(_ writer: Writer) throws -> StagedFile {
        let (_, mtime) = writer.stat()
        let stream = writer.stream
        return try library.staging.seal(path: writer.path, fd: writer.fd, mtimeNs: mtime,
                                        knownHash: { size in stream?.finish(size: size) })
    }

    /// A new file that will not be imported: gone from its folder.
    func discard(_ writer: Writer) {
        writer.sealed = true
        writer.dirty = false
        writer.unlinked = true
        Glibc.unlink(writer.path)
        writers.clearName(writer)
        if writer.openCount <= 0 { writers.remove(writer) }
        if case .newFile(let folder, let name) = writer.target {
            afterChange(folders: [folder], entries: [(folder, name)])
        }
    }

    // MARK: setattr

    public struct AttributeChanges: Sendable {
        public var size: Int64?
        public var mode: UInt32?
        public var mtimeNs: Int64?
        public var handle: UInt64?
        public init(size: Int64? = nil, mode: UInt32? = nil, mtimeNs: Int64? = nil, handle: UInt64? = nil) {
            self.size = size
            self.mode = mode
            self.mtimeNs = mtimeNs
            self.handle = handle
        }
    }

    /// chmod, chown, truncate, utimensat. The owner is the mount's (uid=, gid=): a chown
    /// succeeds and changes nothing, so that `cp -p` and `rsync -a` work as root. A mode
    /// is kept (under the mount's umask), a size change of an asset is a new version,
    /// an mtime is kept.
    public func setattr(_ ino: UInt64, _ changes: AttributeChanges) throws -> Attributes {
        if changes.size != nil || changes.mtimeNs != nil { try checkWritable() }
        guard let node = Node(ino: ino) else { throw FSError.noEntry("inode \(ino)") }
        if let writer = writers.get(ino), writer.withLock({ writer.isNewFile || writer.dirty || changes.handle != nil }) {
            try writer.withLock {
                if let size = changes.size {
                    try makeWritable(writer)
                    if ftruncate(writer.fd, off_t(size)) != 0 { throw FSError(errno, "cannot truncate \(writer.path)") }
                    if size != 0 || writer.stream?.length != 0 { writer.stream = nil }
                    writer.touched()
                }
                if let mtime = changes.mtimeNs {
                    writer.mtimeNs = mtime
                    SystemCalls.setMtime(fd: writer.fd, nanoseconds: mtime)
                }
                if let mode = changes.mode, writer.isNewFile {
                    writer.mode = mode & 0o7777
                    writer.modeSet = true
                }
            }
            if writer.withLock({ writer.isNewFile }) || changes.size != nil {
                // A new file; or truncate(2) of a file open elsewhere, whose version is made
                // at its last close.
                return writer.withLock { writerAttributes(writer) }
            }
        }
        switch node {
        case .object(let id):
            guard let object = try object(id) else { throw FSError.noEntry("inode \(ino)") }
            switch object {
            case .asset(let asset):
                if let size = changes.size {
                    // truncate(2) by path: a new version right away.
                    let opened = try openForWriting(asset, ino: ino, flags: O_WRONLY)
                    guard let file = handles.get(opened.handle), case .writer(let writer) = file.state else {
                        throw FSError(EIO, "truncate of \(asset.name) failed")
                    }
                    defer { release(handle: opened.handle) }
                    try writer.withLock {
                        if ftruncate(writer.fd, off_t(size)) != 0 { throw FSError(errno, "cannot truncate \(writer.path)") }
                        writer.dirty = true
                        if writer.openCount <= 1 { try commit(writer) }
                    }
                }
                if let mtime = changes.mtimeNs {
                    if asset.isTrashed { throw FSError.notPermitted("\(asset.name) is in Recently Deleted") }
                    try library.setMtime(asset.id, nanoseconds: mtime)
                    let updated = try library.asset(id: asset.id) ?? asset
                    afterChange(asset: updated, views: updated.takenAt != asset.takenAt ? asset : nil)
                }
                if let mode = changes.mode, mode & 0o7777 != (asset.mode ?? 0o644) {
                    try library.setMode(asset.id, mode & 0o7777)
                    afterChange(asset: asset)
                }
                return try getattr(ino)
            case .scratch(let file):
                let path = library.scratchPath(file.id)
                if let size = changes.size {
                    let fd = try library.openScratch(file.id, flags: O_WRONLY)
                    defer { close(fd) }
                    if ftruncate(fd, off_t(size)) != 0 { throw FSError(errno, "cannot truncate scratch file \(file.name)") }
                }
                if let mtime = changes.mtimeNs {
                    SystemCalls.setMtime(path: path, nanoseconds: mtime)
                    try library.markScratchMtime(file.id, nanoseconds: mtime)
                }
                if let mode = changes.mode { try library.setScratchMode(file.id, mode: mode & 0o7777) }
                return try getattr(ino)
            case .album(let album):
                if let mtime = changes.mtimeNs { try library.setAlbumTimes(id: album.id, mtimeNs: mtime) }
                if let mode = changes.mode { try library.setAlbumMode(id: album.id, mode: mode) }
                if changes.size != nil { throw FSError(EISDIR, "is a folder", logged: false) }
                return try getattr(ino)
            }
        case .thumbnail:
            throw FSError.notPermitted("thumbnails are made by AlbumFS and cannot be changed")
        default:
            if changes.size != nil { throw FSError(EISDIR, "is a folder", logged: false) }
            return try getattr(ino)
        }
    }
}
