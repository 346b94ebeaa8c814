import AlbumCore
import Glibc

/// create, mknod, open, write, copy_file_range and setattr: how bytes get into a
/// `Writer`. What they become is decided at the close (`Close.swift`).
extension FileSystem {
    // MARK: create and mknod

    /// The folder `parent` where a new file `name` is to be made (create, ln, ln -s), when
    /// `Rules.createFile` allows one there. Whether the name is free is asked once, in
    /// the transaction that takes it (`expectFree`).
    func folderForNewFile(_ parent: UInt64, name: String) throws -> Item {
        let folder = try library.read { try self.folder(parent, in: $0) }
        try Rules.createFile(in: Rules.Folder(folder), name: name, folderName: folder.displayName)
        return folder
    }

    /// Creates a file: a plain file of its folder from the first moment (so that a
    /// tool that creates, closes empty and reopens finds it), which becomes a photo at a
    /// close if it holds one (`Writing/Arrival.swift`). Opens it when `open` (create(2)).
    /// `pid`: the thread that creates (0: unknown), as for `open`.
    public func create(parent: UInt64, name bytes: [UInt8], mode: UInt32, flags: Int32,
                       open: Bool = true, pid: Int32 = 0) throws -> (Attributes, Opened?) {
        try checkWritable()
        try roomForAnotherFile()
        let name = try validName(bytes)
        let folder = try folderForNewFile(parent, name: name)
        let id = try newInodeNumber()
        let bytesFile = try explained("cannot create \(name)") {
            try library.files.open(.plainFile(id), flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
        }
        let file: PlainFile
        do {
            // A file opened by its create is not durable until its first close or fsync
            // (`finishIfUnfinished`): a crash before discards it anyway. One made without
            // an open (mknod, as file servers create) is whole now.
            if !open { try library.files.syncFolder(LibraryPath.plainFile(id).parent) }
            file = try library.write(open ? .lazy : .durable) { tx in
                try expectFree(name, in: folder, tx)
                try tx.createPlainFile(named: name, in: parent, mode: mode & 0o1777, id: id, unfinished: open)
                guard let made = try tx.plainFile(id: id) else { throw FSError(EIO, "the new plain file \(name) has no row") }
                return made
            }
        } catch {
            discard(.plainFile(id))
            throw FSError.wrapping(error, "cannot create \(name)")
        }
        // The listing only: the kernel makes the new name's entry from this reply.
        afterChange(folders: [parent])
        // What the transaction made and the descriptor held, never looked up again:
        // another host may replace the new file at once (a rename over its name; the
        // name races of LoadTests found a create failing with ENOENT so), and a create
        // on a disk returns its descriptor all the same.
        let attributes = attributes(of: file, try explained("cannot create \(name)") { try bytesFile.status() })
        guard open else { return (attributes, nil) }
        let writer = writers.writer(for: UInt64(id), opening: true) { Writer(ino: UInt64(id), target: .plain(id), bytes: .own(bytesFile)) }
        writer.withLock { writer.unfinished = true }
        // Created to be written only (`cp`, a save into a temporary name): written past
        // the kernel's page cache, where its pages would be a second copy of every byte,
        // in memory no reader asked for (docs/performance.md, "Copies in without the page
        // cache"). Such an open takes no I/O mode, but a reader of the photo it becomes
        // goes to another kernel inode while it is open (`HandleTable.addReader`: the
        // inode's one size is a writer's), as when its release is still on its way.
        let direct = flags & O_ACCMODE == O_WRONLY
        return (attributes, try opened(ino: UInt64(id), .writer(writer), keepCache: false, name: name, pid: pid, direct: direct))
    }

    /// mknod: regular files only (NFS servers create files this way), as create without
    /// an open; anything else (devices, fifos, sockets) is EPERM.
    public func mknod(parent: UInt64, name: [UInt8], mode: UInt32) throws -> Attributes {
        guard mode & UInt32(S_IFMT) == UInt32(S_IFREG) || mode & UInt32(S_IFMT) == 0 else {
            throw FSError.notPermitted("mknod of \(String(decoding: name, as: UTF8.self)): only regular files can be made here")
        }
        return try create(parent: parent, name: name, mode: mode, flags: O_WRONLY, open: false).0
    }

    // MARK: open

    /// Opens inode `ino` through the kernel inode `node` (its node id; the current one
    /// when not said, see `KernelNodes`).
    /// `pid`: the thread that opens (0: unknown), since file servers never start
    /// passthrough (`FileServers`) and only its process's close saves what it writes
    /// (`flush`).
    public func open(_ ino: UInt64, node: UInt64? = nil, flags: Int32, pid: Int32 = 0) throws -> Opened {
        try roomForAnotherFile()
        return try open(ino, node: node, flags: flags, pid: pid, lookedAgain: false)
    }

    /// `ENFILE` when the daemon is near its limit of open files, so that the files open
    /// can still be closed (their closes need descriptors to store what was written;
    /// `DescriptorLimit.reserve`).
    private func roomForAnotherFile() throws {
        guard DescriptorLimit.roomForAnotherFile() else {
            throw FSError(ENFILE, "no room for another open file: albumfs holds nearly \(DescriptorLimit.current), its limit", logged: false)
        }
    }

    private func open(_ ino: UInt64, node: UInt64?, flags: Int32, pid: Int32, lookedAgain: Bool) throws -> Opened {
        let writing = flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0
        let node = node ?? kernelNodes.node(of: ino)
        let mark = opensAcrossSaves.mark(ino)  // before the photo is read: `OpensAcrossSaves`
        if !writing, let made = try openMadeThumbnail(ino, node: node, pid: pid, since: mark) { return made }
        guard let item = try item(ino) else { return try openRemoved(ino, node: node, writing: writing, flags: flags) }
        switch item {
        case .asset(let asset):
            if writing { return try openForWriting(asset, ino: ino, node: node, truncate: flags & O_TRUNC != 0, pid: pid) }
            // Reads see the bytes being written while a photo has new ones pending.
            if let writer = writers.join(UInt64(asset.id), if: { $0.showsPendingBytes }) {
                return try opened(ino: ino, node: node, .writer(writer), keepCache: false, readOnly: true, name: asset.name, pid: pid)
            }
            let blob = try library.openBlob(of: asset)
            return try openedForReading(ino: ino, node: node, blob, keepCache: mayKeepCache(ino), name: asset.name, pid: pid, since: mark)
        case .plain(let file):
            do {
                return try openPlain(file, ino: ino, node: node, writing: writing, flags: flags, pid: pid)
            } catch let error as FSError where error.errno == ENOENT && !lookedAgain {
                // Its bytes went between the look above and their open: it was removed
                // (its row read before the removal committed), or it became a photo (a
                // rename to a photo's name, a close), which keeps its number. Looked at
                // again, it is one or the other.
                return try open(ino, node: node, flags: flags, pid: pid, lookedAgain: true)
            }
        case .thumbnail(let asset):
            if writing { throw FSError.notPermitted("thumbnails are made by AlbumFS and cannot be changed") }
            let opened = try explained("thumbnail of \(asset.name) cannot be opened") {
                try withThumbnail(of: asset, size: options.thumbnailSize) { try library.files.open($0.path, flags: O_RDONLY) }
            }
            guard let fd = opened else { throw thumbnailMissing(of: asset, "the thumbnail of \(asset.name)") }
            return try openedForReading(ino: ino, node: node, fd, keepCache: mayKeepCache(ino), mayPassthrough: false,
                                        name: "thumbnail of \(asset.name)",
                                        pid: pid, since: mark)
        case .sharedThumbnail(let entry):
            if writing { throw FSError.notPermitted("thumbnails are made by AlbumFS and cannot be changed") }
            guard let file = try sharedThumbnailFile(entry) else { throw thumbnailMissing(of: entry.asset, "the shared thumbnail of \(entry.name)", size: sharedSourceSize(large: entry.large)) }
            let fd = try explained("shared thumbnail of \(entry.name) cannot be opened") { try library.files.open(file.path, flags: O_RDONLY) }
            // One number, new bytes after a new version (its mtime is in them): one version
            // for the readers of a kernel inode, as for `.thumbnails`, and no pages kept
            // from an open to the next (a save does not say when its PNG is made).
            return try openedForReading(ino: ino, node: node, fd, keepCache: false, mayPassthrough: false,
                                        name: "the shared thumbnail of \(entry.name)", pid: pid, since: mark)
        default:
            throw FSError(EISDIR, "is a folder", logged: false)
        }
    }

    /// An open of plain file `file`: its writer's bytes, or its own bytes for reading.
    private func openPlain(_ file: PlainFile, ino: UInt64, node: UInt64, writing: Bool, flags: Int32, pid: Int32) throws -> Opened {
        // The kernel follows links itself; a server that opens one by its handle gets
        // what open(2) with O_NOFOLLOW gets.
        if file.isSymlink { throw FSError(ELOOP, "\(file.name) is a symbolic link", logged: false) }
        if writing {
            try checkWritable()
            let writer = try plainWriter(file, ino: ino)
            let result = try opened(ino: ino, node: node, .writer(writer), keepCache: false, name: file.name, pid: pid)
            return try emptied(result, writer, if: flags & O_TRUNC != 0)
        }
        if let writer = writers.join(ino) {
            return try opened(ino: ino, node: node, .writer(writer), keepCache: false, readOnly: true, name: file.name, pid: pid)
        }
        let bytes = try explained("plain file \(file.name) cannot be opened") {
            try library.files.open(file.bytes, flags: O_RDONLY)
        }
        let keep = plainPages.mayKeep(node: node, bytes)
        let result = try opened(ino: ino, node: node, .readOnly(bytes), keepCache: keep, readOnly: true, name: file.name)
        if !keep { plainPages.opened(node: node, handle: result.handle) }
        return result
    }

    /// An open of inode `ino` whose row is gone: `/proc/PID/fd/N` of a plain file removed
    /// while open, or a file removed just after the kernel's lookup found it (kept a
    /// moment for that, `HeldByKernel`); else ESTALE, and the kernel looks again.
    private func openRemoved(_ ino: UInt64, node: UInt64, writing: Bool, flags: Int32) throws -> Opened {
        if let reopened = try reopenUnlinked(ino, node: node, writing: writing, truncate: flags & O_TRUNC != 0) { return reopened }
        throw FSError.removedBeforeItsOpen(ino)
    }

    /// A thumbnail found made since the library last changed (`ThumbnailsFound`), opened
    /// without reading its photo's row; nil when it is not one, or its file is gone (the
    /// open then goes the whole way, and makes it again).
    private func openMadeThumbnail(_ ino: UInt64, node: UInt64, pid: Int32, since mark: OpensAcrossSaves.Mark) throws -> Opened? {
        guard ino & Node.tagMask == Node.thumbnailTag, let found = thumbnailsFound.get(ino),
              let thumbnail = thumbnails.cached(sha256: found.sha256, size: found.size) else { return nil }
        guard let fd = try? library.files.open(thumbnail.path, flags: O_RDONLY) else {
            thumbnails.missing(sha256: found.sha256, size: found.size)
            return nil
        }
        return try openedForReading(ino: ino, node: node, fd, keepCache: mayKeepCache(ino), mayPassthrough: false,
                                    name: "thumbnail \(ino)", pid: pid, since: mark)
    }

    /// Opens a photo for writing: its next version, written to a private copy made at the
    /// first write (or at once with O_TRUNC), committed at a close.
    func openForWriting(_ asset: Asset, ino: UInt64, node: UInt64, truncate: Bool, pid: Int32) throws -> Opened {
        try checkWritable()
        try Rules.writeInto(asset)
        let writer = writers.writer(forAsset: asset.id, opening: true)
        // Found just before it left the library (a save's temporary photo vanishing into the
        // photo it saved, or deleted for good), before it had handles that could keep its
        // bytes (`whileLeaving`, which holds `io` meanwhile): gone, and the kernel looks
        // the path up again.
        guard let now = try writer.io({ try library.asset(id: asset.id) }) else {
            release(writer)
            throw FSError.removedBeforeItsOpen(ino)
        }
        writer.opened(version: now.sha256)
        // In the handle table first: a writer may wait there for readers to close, and
        // truncates nothing if they do not.
        let result = try opened(ino: ino, node: node, .writer(writer), keepCache: false, name: asset.name, pid: pid)
        return try emptied(result, writer, if: truncate)
    }

    /// An open with `O_TRUNC` (`truncate`): `writer`'s bytes emptied once the handle
    /// `opened` holds them; the handle let go when that fails.
    func emptied(_ opened: Opened, _ writer: Writer, if truncate: Bool) throws -> Opened {
        guard truncate else { return opened }
        do { try self.truncate(writer, to: 0) } catch { release(handle: opened.handle); throw error }
        return opened
    }

    /// The writer of a plain file, with a handle more counted: its own bytes, written in
    /// place (a file that shares a blob gets its own copy first).
    func plainWriter(_ file: PlainFile, ino: UInt64) throws -> Writer {
        try writers.writer(for: ino, opening: true) {
            let bytes = try ownBytes(of: file)
            return Writer(ino: ino, target: .plain(file.id), bytes: .own(bytes))
        }
    }

    /// A plain file's own bytes file, open for reading and writing. A file that shares a
    /// blob (a save's backup of a previous version) gets a copy of its own first.
    func ownBytes(of file: PlainFile) throws -> FileDescriptor {
        guard let sha256 = file.blobSHA256 else {
            return try explained("plain file \(file.name) cannot be opened") {
                try library.files.open(.plainFile(file.id), flags: O_RDWR)
            }
        }
        let source = try library.openBlob(sha256, owner: "plain file \(file.id) (\(file.name))")
        let copy = try explained("cannot copy \(file.name)") {
            try library.files.open(.plainFile(file.id), flags: O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
        }
        do {
            try SystemCalls.copyAll(from: source, to: copy, length: try source.size())
            try copy.setModificationTime(nanoseconds: file.explicitMtimeNs ?? file.changedNs)
            // The row stops naming the blob only once the copy is on disk.
            try copy.sync()
            try library.files.syncFolder(LibraryPath.plainFile(file.id).parent)
            try library.write { try $0.plainFileOwnsItsBytes(file.id) }
        } catch {
            discard(.plainFile(file.id))
            throw FSError.wrapping(error, "cannot copy \(file.name)")
        }
        return copy
    }

    /// The private copy a photo's next version is written into: its first `keeping`
    /// bytes (all of them when nil; none for an open with O_TRUNC, which an editor that
    /// rewrites a photo in place makes: copying 24 MP only to cut it off cost more than
    /// the rest of such an open).
    func copyOfCurrent(_ writer: Writer, keeping: Int64? = nil) throws -> (FileDescriptor, LibraryPath) {
        let source: () throws -> FileDescriptor, size: Int64, name: String
        var left = false
        if case .replaced(let version) = writer.withLock({ writer.bytes }) {
            // A version a save replaced while this writer's handles had it open.
            (source, size, name) = ({ version }, try version.size(), "inode \(writer.ino)")
        } else if case .asset(let id) = writer.target, let asset = try library.asset(id: id) {
            // Opened only when some of it is kept: `cp` over a photo whose original is
            // damaged or missing (O_TRUNC) needs none of it, and heals it (`commitVersion`).
            (source, size, name) = ({ try self.library.openBlob(of: asset) }, asset.size, asset.name)
        } else {
            let version = try versionShown(by: writer)
            (source, size, name) = ({ version }, try version.size(), "inode \(writer.ino)")
            left = true
        }
        let length = min(keeping ?? size, size)
        let (copy, path) = try Staging(files: library.files).makeFile(prefix: "version")
        do {
            if length > 0 { try SystemCalls.copyAll(from: try source(), to: copy, length: length) }
        } catch {
            discard(path)
            throw FSError.wrapping(error, "cannot copy \(name) to write it")
        }
        if left {
            // Its row is gone: `fstat` through the handles, and the kernel's questions
            // about the size of what they write, are answered from their copy, as for a
            // plain file removed while open (its mode is not known here any more: a new
            // file's). Recorded once the copy is theirs: before, a failed copy left a
            // record of own bytes that were the library's version, whose mtime an
            // `futimens` would have changed.
            let now = nowNanoseconds()
            unlinkedOpen.record(fileAttributes(ino: writer.ino, permissions: Self.defaultFileMode, size: length,
                                               mtimeNs: now, ctimeNs: now))
        }
        return (copy, path)
    }

    /// The photo left the library through another host (deleted for good, or a save's
    /// temporary photo vanishing into the photo it saved) while these handles had it
    /// open, with nothing written since they opened it or since a close of theirs saved a
    /// version: as handles of a removed file do on a disk, they go on with that version
    /// (returned), and no close saves what they write.
    /// (Through this host they are handed that version as the photo leaves,
    /// `whileLeaving`, when their writer is clean; one that was not comes here too.)
    /// Before, their first write failed with EIO (and until 2026-12-05 EBADF after a
    /// close of theirs had saved a version). A version that is gone too (`albumfs gc`)
    /// is EBADF, as for a removed file's handles here.
    private func versionShown(by writer: Writer) throws -> FileDescriptor {
        guard case .asset = writer.target else { throw FSError(EIO, "inode \(writer.ino) has no bytes to copy") }
        guard let sha256 = writer.withLock({ writer.versionShown }), let version = try? library.blobs.open(sha256) else {
            throw FSError(EBADF, "inode \(writer.ino) left the library while open, and the version its handles show is gone: they cannot write")
        }
        writer.removed()
        Log.info("inode \(writer.ino) left the library while open: its handles keep the version they opened; what they write is not saved")
        return version
    }

    /// The bytes of a whole photo copied into a plain file (a clone being written to).
    func copyClone(_ clone: Asset, into target: FileDescriptor) throws {
        let source = try library.openBlob(of: clone)
        try explained("cannot copy \(clone.name)") { try SystemCalls.copyAll(from: source, to: target, length: clone.size) }
    }

    /// The descriptor a writer's bytes are written through, made writable first (a copy
    /// of the current bytes, or of their first `keeping` when they are cut there next).
    func writableBytes(_ writer: Writer, keeping: Int64? = nil) throws -> FileDescriptor {
        try writer.writable(copyCurrent: { try copyOfCurrent(writer, keeping: keeping) }, copyClone: { try copyClone($0, into: $1) })
    }

    func truncate(_ writer: Writer, to size: Int64) throws {
        try writer.io {
            let fd = try writableBytes(writer, keeping: size)
            try explained("cannot truncate inode \(writer.ino)") { try fd.truncate(to: size) }
            writer.changed(truncatedTo: size)
        }
    }

    // MARK: write

    public func write(handle: UInt64, bytes: UnsafeRawBufferPointer, offset: Int64) throws -> Int {
        var written = 0
        try write(handle: handle, bytes: bytes, offset: offset) { written = $0 }
        return written
    }

    /// A write: `reply` gets the count as soon as the bytes are in the file, and only
    /// then are they hashed (`StreamingHash`), so that the writer copies its next piece
    /// into the kernel while this one is hashed. `bytes` must stay valid until this
    /// returns (the request's own buffer does).
    public func write(handle: UInt64, bytes: UnsafeRawBufferPointer, offset: Int64, replying reply: (Int) -> Void) throws {
        guard let file = handles.get(handle) else { throw FSError(EBADF, "write to an unknown handle \(handle)") }
        guard file.writes, case .writer(let writer) = file.state else { throw FSError(EBADF, "write to a file opened read-only") }
        let (n, stream): (Int, StreamingHash?) = try writer.io {
            let n: Int
            let fd: FileDescriptor
            do {
                try checkSpace(for: bytes.count)
                fd = try writableBytes(writer)
                n = try fd.write(bytes, at: offset)
            } catch {
                // Out of space (or an I/O error): these bytes are never imported, and every
                // close of the file says why.
                writer.failed(error)
                throw FSError.wrapping(error, "cannot write inode \(writer.ino)")
            }
            let stream = writer.wrote(UnsafeRawBufferPointer(rebasing: bytes[0..<n]), at: offset, to: fd)
            bytesChanged(through: file.ino, writer, node: file.node)
            wroteSuperseded(writer)
            return (n, stream)
        }
        reply(n)
        // Promised in `wrote`: hashed whatever happens, or the close would wait for it.
        stream?.hash(UnsafeRawBufferPointer(rebasing: bytes[0..<n]), at: offset)
    }

    /// Bytes written through a handle whose writer a save by rename superseded
    /// (`supersedePendingBytes`): never saved, but the kernel keeps them in the pages of
    /// the handle's kernel inode, which the photo's next open may share (while the handle
    /// is still open, or before its release reached the daemon). That open starts
    /// without cached pages, and the photo's size is asked again.
    func wroteSuperseded(_ writer: Writer) {
        let (phase, target) = writer.withLock { (writer.phase, writer.target) }
        guard phase == .removed, case .asset(let id) = target else { return }
        contentChanged(asset: id)
        invalidate([.attributes(UInt64(id))])
    }

    /// A writer's bytes changed through a handle of inode number `ino`, opened through
    /// kernel inode `node`: what the other kernel inodes that show those bytes must forget.
    ///
    /// The number the file is known by now may be another (a file that became a photo
    /// the library held, rule 4 of `Destiny`): the kernel updated the size of the
    /// handle's kernel inode itself, not of the photo's, whose attributes are dropped so
    /// that a `stat` by path sees the change.
    /// Readers that opened the photo since hold its kernel inode in passthrough, which
    /// reports the size of the version they read: the photo moves past them, as when a
    /// save lands (seed 3178 of the plain-directory oracle found `stat` showing the old
    /// size after an `ftruncate` through such a handle).
    ///
    /// Other handles of the same bytes may be open through other kernel inodes (the
    /// file's own number, and the photo's, once it became a photo the library held):
    /// those forget their attributes too, so that their next read asks the size again
    /// and drops pages that changed (seed 7060 of the oracle found a handle of the file
    /// reading the bytes an `ftruncate` through a handle of the photo had cut). Only
    /// attributes: dropping pages here, inside the writer's `io`, could wait for a read
    /// of those pages that waits for this writer.
    func bytesChanged(through ino: UInt64, _ writer: Writer, node: UInt64? = nil) {
        let (target, open) = writer.withLock { (writer.target, writer.openCount) }
        let known: UInt64
        switch target {
        case .asset(let id), .plain(let id): known = UInt64(id)
        }
        let through = node ?? kernelNodes.node(of: ino)
        if open > 1 {
            let others = handles.nodes(of: writer).subtracting([through, kernelNodes.node(of: known)])
            if !others.isEmpty { invalidate(others.sorted().map { .node($0) }) }
        }
        if known != ino {
            invalidate([.attributes(known)])
        } else {
            // Through a kernel inode the photo left (readers that opened beside the
            // writer went to a new one, `HandleTable.addReader`): the new one shows these
            // bytes' size and time, and a reader of them may have filled its pages there,
            // which go once its attributes, asked again, show the new time. Readers of
            // the version hold it: the photo moves past them, as below (seed 293 of the
            // oracle found `stat` by path showing their size after an `ftruncate` to 0).
            let current = kernelNodes.node(of: ino)
            guard current != through else { return }
            invalidate([.node(current)])
        }
        if case .asset(let id) = target, handles.heldByReaders(kernelNodes.node(of: known)),
           let asset = try? library.asset(id: id) {
            movePastReaders(known)
            forgetNames(of: asset)
        }
    }

    /// copy_file_range inside the mount: a whole photo into an empty new file is not
    /// copied: the close places the photo where the file was made. Anything else copies.
    public func copyFileRange(from inHandle: UInt64, offset inOffset: Int64, to outHandle: UInt64,
                              offset outOffset: Int64, length: Int) throws -> Int {
        guard let source = handles.get(inHandle), let target = handles.get(outHandle) else {
            throw FSError(EBADF, "copy_file_range with an unknown handle")
        }
        guard target.writes, case .writer(let writer) = target.state else { throw FSError(EBADF, "copy into a file opened read-only") }
        if inOffset == 0, outOffset == 0, case .asset(let asset)? = try item(source.ino),
           case .readOnly = source.state, Int64(length) >= asset.size,
           writer.io({ writer.clone(asset) }) {
            return Int(asset.size)
        }
        // A plain copy between the two descriptors; the source's descriptor is pinned
        // first (it may be this same writer's).
        let input = try read(handle: inHandle, size: length, offset: inOffset).file
        return try writer.io {
            let fd = try writableBytes(writer)
            var i = inOffset, o = outOffset
            let n = try explained("copy_file_range failed") {
                try SystemCalls.copyRange(from: input, at: &i, to: fd, at: &o, length: length)
            }
            writer.changed()
            bytesChanged(through: target.ino, writer, node: target.node)
            return n
        }
    }

    // MARK: fallocate

    /// fallocate(2) modes (linux/falloc.h) that FUSE passes on.
    public static let allocateKeepSize: Int32 = 0x01
    public static let allocatePunchHole: Int32 = 0x02
    public static let allocateZeroRange: Int32 = 0x10

    /// fallocate of a handle open for writing, done on the bytes being written as on any
    /// disk (`rsync --preallocate`, download managers, `posix_fallocate`). Space only
    /// reserved changes no byte: a photo's own bytes are not copied into staging for it.
    /// A size grown or a range made zeros is a change of the bytes, as a write is, and the
    /// close decides what they are.
    public func fallocate(handle: UInt64, mode: Int32, offset: Int64, length: Int64) throws {
        guard offset >= 0, length > 0 else { throw FSError(EINVAL, "fallocate of \(length) bytes at \(offset)", logged: false) }
        guard let file = handles.get(handle) else { throw FSError(EBADF, "fallocate of an unknown handle \(handle)") }
        guard file.writes, case .writer(let writer) = file.state else { throw FSError(EBADF, "fallocate of a file opened read-only", logged: false) }
        let zeroes = Self.allocatePunchHole | Self.allocateZeroRange
        guard mode & ~(Self.allocateKeepSize | zeroes) == 0 else {
            throw FSError(EOPNOTSUPP, "fallocate mode \(mode) is not supported", logged: false)
        }
        try writer.io {
            let grows = try mode & Self.allocateKeepSize == 0 && offset + length > getattr(writer.targetIno).size
            let changesBytes = mode & zeroes != 0 || grows
            // Only a reservation, and no bytes of its own yet (a photo's blob, a clone's):
            // there is nothing to reserve space in until a write copies them.
            if !changesBytes, writer.readable().0 == nil { return }
            do {
                if mode & Self.allocatePunchHole == 0 { try checkSpace(for: Int(clamping: length)) }
                let fd = try writableBytes(writer)
                try fd.allocate(mode: mode, offset: offset, length: length)
            } catch {
                throw FSError.wrapping(error, "cannot allocate \(length) bytes at \(offset) of inode \(writer.ino)")
            }
            if changesBytes {
                writer.changed()
                bytesChanged(through: file.ino, writer, node: file.node)
            }
        }
    }

    // MARK: setattr

    public struct AttributeChanges: Sendable {
        public var size: Int64?
        public var mode: UInt32?
        public var mtimeNs: Int64?
        /// An access time: kept in a plain file's row (`touch -a`, `cp -a`); a photo's is
        /// its mtime, and this changes nothing there.
        public var atimeNs: Int64?
        public var handle: UInt64?
        /// A chown was asked for: accepted and not kept (one owner per mount, below).
        public var owner = false
        /// The process that asked (0: unknown).
        public var pid: Int32 = 0
        public init(size: Int64? = nil, mode: UInt32? = nil, mtimeNs: Int64? = nil, handle: UInt64? = nil) {
            self.size = size
            self.mode = mode
            self.mtimeNs = mtimeNs
            self.handle = handle
        }
    }

    /// The number of the file whose bytes `writer` has, when that is not the file `ino`
    /// names (a rename handed them on); nil when it is (a photo's writer asked by an
    /// album entry's own number included).
    private func file(of writer: Writer, elsewhereThan ino: UInt64) throws -> UInt64? {
        switch writer.withLock({ writer.target }) {
        case .plain(let id):
            return UInt64(id) == ino ? nil : UInt64(id)
        case .asset(let id):
            // Its own number, also once the photo has left (deleted for good while open:
            // `setUnlinkedAttributes`). Answered as elsewhere, setattr asked itself again
            // without end: an ftruncate through such a handle took the daemon down.
            if UInt64(id) == ino { return nil }
            if case .asset(let asset)? = try item(ino), asset.id == id { return nil }
            return UInt64(id)
        }
    }

    /// The writer whose bytes an ftruncate through `handle` cuts: the handle's own, which
    /// need not be the writer its inode number has now (a photo renamed while handles
    /// write into it hands them to the file the name became; a save by rename over a
    /// photo leaves them the version they had open).
    private func writer(ofHandle handle: UInt64?) -> Writer? {
        guard let handle, let file = handles.get(handle), file.writes, case .writer(let writer) = file.state else { return nil }
        return writer
    }

    /// chmod, chown, truncate, utimensat. The owner is the mount's (uid=, gid=): a chown
    /// succeeds and changes nothing, so that `cp -p` and `rsync -a` work. A mode is kept
    /// (under the mount's umask, set-id bits never); a size change of a photo is a new
    /// version (to nothing: emptied, see `Writer`); an mtime is kept.
    /// `node`: the kernel inode it is asked through (the current one when not said).
    public func setattr(_ ino: UInt64, node: UInt64? = nil, _ changes: AttributeChanges) throws -> Attributes {
        if let size = changes.size, size < 0 { throw FSError(EINVAL, "a negative length", logged: false) }
        if changes.size != nil || changes.mtimeNs != nil || changes.atimeNs != nil || changes.mode != nil { try checkWritable() }
        if changes.owner {
            // `cp -a`, `rsync -a` and `tar x` run by root set every file's owner: refused,
            // each would fail; accepted, they copy. Said once a mount, where refusals are.
            sayOnce("chown", "chown is accepted and not kept: every file and folder of this mount shows its owner (uid=, gid=; docs/reliability.md, \"Permissions\")")
        }
        // Not every change here is a row, or a row a listing reads (a plain file cut short
        // in place): no page read ahead from before it may answer after it.
        listingAhead.changed()
        defer { listingAhead.changed() }
        // A handle that a rename handed to another file (a photo renamed to a plain name,
        // or over another photo, while open for writing): what it changes is that file,
        // whatever number the kernel asks by; the reply is about the kernel inode it holds.
        // The kernel names the handle for ftruncate only; futimens comes through the
        // kernel inode, which the photo has left (`moveAway`).
        if let handed = writer(ofHandle: changes.handle) ?? node.flatMap(writerLeftOn),
           let elsewhere = try file(of: handed, elsewhereThan: ino) {
            _ = try setattr(elsewhere, changes)
            invalidate([.attributes(elsewhere)])  // asked by another number: the kernel's are stale
            return try getattr(ino, node: node)
        }
        // A file's mode and times (a size is the writer's business, under its `io`) wait
        // for a close of it in progress (`afterCloses`): one that makes a plain file a
        // photo gives it the mode and times the file had when it began, and a save's
        // version is stamped with its write time. Set meanwhile, they were lost.
        let changesRowOnly = changes.size == nil
        return try afterCloses(of: { try item(ino) }, files: { changesRowOnly ? [$0] : [] }, photosToo: true) { item in
            try setattr(item, ino, node: node, changes)
        }
    }

    /// setattr of `item`, what inode `ino` is (nil: nothing now).
    private func setattr(_ item: Item?, _ ino: UInt64, node: UInt64?, _ changes: AttributeChanges) throws -> Attributes {
        // The kernel inode the change comes through: the handle's, for ftruncate.
        let handleNode = changes.handle.flatMap { handles.get($0)?.node } ?? node
        guard let item else {
            // ftruncate and futimens of a plain file removed while open.
            if let a = try setUnlinkedAttributes(ino, changes) { return a }
            throw FSError.noEntry("inode \(ino)")
        }
        switch item {
        case .asset(let asset):
            if let size = changes.size {
                try Rules.writeInto(asset)
                // truncate(2) by path of a photo that readers hold (in passthrough, or
                // cached): those keep the version they opened (and their kernel inode its size), so the
                // change is made on a new kernel inode, which the kernel looks up when
                // truncate fails with ESTALE (do_sys_truncate retries once with
                // LOOKUP_REVAL, as open does): `stat` then shows the new size.
                let node = node ?? kernelNodes.node(of: ino)
                if changes.handle == nil, handles.heldByReaders(node) {
                    throw openElsewhere(ino, from: node, asset.name, reserve: true)
                }
                let writer: Writer
                if let handlesWriter = self.writer(ofHandle: changes.handle) {
                    handlesWriter.opened()
                    writer = handlesWriter
                } else {
                    writer = writers.writer(forAsset: asset.id, opening: true)
                }
                defer { release(writer) }
                try truncate(writer, to: size)
                bytesChanged(through: ino, writer, node: handleNode)
                if changes.handle == nil { try close(writer) }  // truncate(2) by path: a version now
            }
            if let mtime = changes.mtimeNs {
                try Rules.writeInto(asset)
                if let writer = writers.get(UInt64(asset.id)), writer.showsPendingBytes || writer.isDirty {
                    // New bytes pending: the mtime goes with them, at their close.
                    writer.withLock { writer.explicitMtimeNs = mtime }
                } else {
                    try library.write { try $0.setMtime(asset.id, nanoseconds: mtime) }
                    if let updated = try library.asset(id: asset.id) {
                        afterChange(asset: updated, views: updated.takenAt != asset.takenAt ? asset : nil)
                    }
                }
            }
            if let mode = changes.mode, mode & 0o1777 != (asset.mode ?? Self.defaultFileMode) {
                try library.write { try $0.setMode(asset.id, mode & 0o1777) }
                afterChange(asset: try library.asset(id: asset.id))
            }
        case .plain(var file):
            // A link has no bytes of its own to cut and no mode of its own (Linux has no
            // lchmod); its times are its own (rsync -a, cp -a set them with lutimes).
            if file.isSymlink, changes.size != nil { throw FSError(EINVAL, "\(file.name) is a symbolic link", logged: false) }
            if file.isSymlink, changes.mode != nil { throw FSError(EOPNOTSUPP, "the mode of a symbolic link (\(file.name)) cannot be changed", logged: false) }
            if let size = changes.size {
                // In place: open handles' next close sees it, as any change of their bytes.
                if let writer = writer(ofHandle: changes.handle) ?? writers.get(ino) {
                    try truncate(writer, to: size)
                    bytesChanged(through: ino, writer, node: handleNode)
                } else if file.blobSHA256 == nil {
                    // Cut inside a transaction that finds the row as it was: see below.
                    try library.write(.lazy) { tx in
                        try tx.expectUnchanged(file)
                        writers.digests.forget(file.id)
                        try explained("cannot truncate \(file.name)") { try bytesFile(of: file).truncate(to: size) }
                        try tx.plainFileBytesChanged(file.id)
                    }
                } else {
                    writers.digests.forget(file.id)
                    let bytes = try ownBytes(of: file)
                    try explained("cannot truncate \(file.name)") { try bytes.truncate(to: size) }
                }
                // The cut changed the row (its ctime; a copy of a blob's bytes of its own):
                // what the times and mode below expect is the row as it is now.
                if let now = try library.read({ try $0.plainFile(named: file.name, in: file.dirIno) }) { file = now }
            }
            // Its row's times and mode in one transaction (`touch` and `cp -p` set both
            // times), with its bytes file's mtime (which `stat` shows) once the row is
            // found as it was. Another host's close, which links these bytes as a blob and
            // records the blob's mtime in its own transaction, is then wholly before this
            // one (this one finds the row changed, and looks again: a photo now) or after
            // it (and finds the row changed, and decides again). Set before, the time
            // could change a blob's after its time was recorded: `albumfs check` then
            // found it "changed its modification time since it was stored", and reads of
            // the photo failed.
            if changes.atimeNs != nil || changes.mtimeNs != nil || changes.mode != nil {
                // As durable as on a disk: on disk within seconds, or at the file's fsync
                // (`fsync(handle:)`). rsync sets a temporary file's mode at its creation,
                // then its times and mode again before renaming it into place, and each of
                // the three waited for the disk when it was durable at once (docs/namespace.md,
                // "Plain files"). A file not closed yet goes with its row if the daemon
                // stops. An NFS server promises its client a SETATTR on stable storage.
                try library.write(file.unfinished ? .lazy : FileServers.isNFSServer(changes.pid) ? .durable : .soon) { tx in
                    try tx.expectUnchanged(file)
                    if let mtime = changes.mtimeNs, file.blobSHA256 == nil {
                        try explained("cannot set the mtime of \(file.name)") {
                            let bytes = try bytesFile(of: file)
                            let before = try? bytes.status()
                            try bytes.setModificationTime(nanoseconds: mtime)
                            let after = try? bytes.status()
                            // The writer first: a release between the two records its
                            // stamp, which the table's then finds right already.
                            writers.get(UInt64(file.id))?.timesSet(before: before, after: after)
                            writers.digests.timesSet(file.id, before: before, after: after)
                        }
                    }
                    if let atime = changes.atimeNs { try tx.setPlainFileAtime(file.id, nanoseconds: atime) }
                    if let mtime = changes.mtimeNs { try tx.setPlainFileMtime(file.id, nanoseconds: mtime) }
                    if let mode = changes.mode { try tx.setPlainFileMode(file.id, mode: mode) }
                }
            }
            if let mtime = changes.mtimeNs, let writer = writers.get(ino) { writer.withLock { writer.explicitMtimeNs = mtime } }
        case .album(let album):
            if changes.size != nil { throw FSError(EISDIR, "is a folder", logged: false) }
            try library.write { tx in
                if let mtime = changes.mtimeNs { try tx.setAlbumTimes(id: album.id, mtimeNs: mtime) }
                if let mode = changes.mode { try tx.setAlbumMode(id: album.id, mode: mode) }
            }
        case .thumbnail, .sharedThumbnail:
            if changes.size != nil || changes.mtimeNs != nil || changes.mode != nil {
                throw FSError.notPermitted("thumbnails are made by AlbumFS and cannot be changed")
            }
        default:
            if changes.size != nil { throw FSError(EISDIR, "is a folder", logged: false) }
            // A folder that is not an album keeps its mode too (`cp -a dir/. "All Photos/"`
            // sets it; a group given write access here); its times are the library's.
            if let mode = changes.mode {
                try library.write { try $0.setFolderMode(ino, mode) }
                afterChange(folders: [ino])
            }
        }
        return try getattr(ino)
    }

    /// The bytes file of plain file `file`, which has its own, for a change of it.
    private func bytesFile(of file: PlainFile) throws -> FileDescriptor {
        try library.files.open(.plainFile(file.id), flags: O_RDWR)
    }

    /// The bytes of plain file `file`, as it was looked up, for reading. Gone since, with
    /// its row changed: only another host's close (which made it a photo) or `rm` does
    /// that between the look and this, since this host's wait for the file's close
    /// (`afterCloses`), so the caller looks again (`changedMeanwhile`).
    func openBytes(of file: PlainFile) throws -> FileDescriptor {
        do {
            return try library.files.open(file.bytes, flags: O_RDONLY)
        } catch let error as LibraryError {
            guard case .io(_, ENOENT) = error, try library.read({ try $0.plainFile(named: file.name, in: file.dirIno) }) != file else {
                throw error
            }
            throw LibraryError.changedMeanwhile(file.name)
        }
    }
}
