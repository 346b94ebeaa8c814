import AlbumCore
import Glibc

/// Files removed while open, as on any disk: plain files (`rm`, or renamed over), and
/// photos deleted for good with their thumbnails (`keepAttributesIfHeld`). Their open
/// handles keep reading and writing the bytes they had, `fstat` works and says
/// `st_nlink` 0, and the bytes go with the last close. Python's
/// `tempfile.TemporaryFile` (mkstemp, then unlink, where `O_TMPFILE` is not offered),
/// C's `tmpfile()` and any program that unlinks the scratch file it holds depend on it.
///
/// The name and the row are gone at once (a lookup finds nothing, a new file may take
/// the name); what stays is the descriptor the handles hold (a writer's, or a reader's)
/// and the attributes the file had, kept here by inode number until its last release.
/// Such bytes never become a photo (`Writer.Phase.removed`).
final class UnlinkedOpenFiles: Sendable {
    fileprivate struct Kept {
        var attributes: Attributes
        /// The handles hold the file's own bytes (a plain file's, a writer's copy), whose
        /// length and times are the file's. False for a photo's version and thumbnails,
        /// files the library shares and never changes through a handle: their mtime is
        /// kept here.
        let ownBytes: Bool
    }

    private let table = Locked<[UInt64: Kept]>([:])

    func record(_ attributes: Attributes, ownBytes: Bool = true) {
        var a = attributes
        a.nlink = 0
        table.withLock { $0[a.ino] = Kept(attributes: a, ownBytes: ownBytes) }
    }

    func attributes(_ ino: UInt64) -> Attributes? { table.withLock { $0[ino]?.attributes } }

    func ownsBytes(_ ino: UInt64) -> Bool { table.withLock { $0[ino]?.ownBytes ?? false } }

    func update(_ ino: UInt64, _ change: (inout Attributes) -> Void) {
        table.withLock { t in if var kept = t[ino] { change(&kept.attributes); t[ino] = kept } }
    }

    func forget(_ ino: UInt64) { table.withLock { _ = $0.removeValue(forKey: ino) } }

    /// What is kept for `ino`, taken out (`forgetUnlessHeld` puts it back when a handle
    /// came meanwhile).
    fileprivate func take(_ ino: UInt64) -> Kept? { table.withLock { $0.removeValue(forKey: ino) } }

    fileprivate func putBack(_ ino: UInt64, _ kept: Kept) { table.withLock { $0[ino] = $0[ino] ?? kept } }

    var isEmpty: Bool { table.withLock { $0.isEmpty } }
}

extension FileSystem {
    /// A plain file's row is gone: remember its attributes if a handle still holds it.
    /// Before its bytes file's name is removed (the attributes read it).
    func keepAttributesIfOpen(_ file: PlainFile) {
        let ino = UInt64(file.id)
        // Kept for the kernel already (`removingPlainFile`), with these attributes.
        guard unlinkedOpen.attributes(ino) == nil, isHeldOpen(ino), let a = try? attributes(of: file) else { return }
        unlinkedOpen.record(a)
    }

    /// Photo `asset` is about to leave the library (deleted for good): the photo, its
    /// thumbnail and its shared thumbnails, where handles read them, keep their
    /// attributes for those handles, as a plain file removed while open does (`fstat`
    /// says `st_nlink` 0, and a read past what the kernel has cached, which makes the
    /// kernel ask the size first, still reads). Before, both were ENOENT: a video player
    /// without passthrough lost its video at the next read. Handles open for writing
    /// keep theirs too (what they write is never saved: `handsKeep`). Taken while the
    /// row is there; returns the numbers kept, for the caller to forget if the photo
    /// stays.
    func keepAttributesIfHeld(_ asset: Asset) -> [UInt64] {
        // Deleting for good is often many photos in a row (the trash emptied): no query
        // for album entries unless a shared thumbnail is open at all.
        let open = handles.openInodes()
        guard !open.isEmpty else { return [] }
        let entries = open.contains(where: { $0 & Node.tagMask == Node.sharedThumbnailTag })
            ? (try? library.read { try $0.memberships(ofAsset: asset.id) }) ?? [] : []
        let thumbnails = [Node.thumbnail(asset: asset.id).ino] + Self.sharedThumbnailInodes(of: asset.id, entries: entries)
        var kept = thumbnails.map {
            fileAttributes(ino: $0, permissions: thumbnailPermissions(of: asset), size: 0, mtimeNs: asset.mtimeNanoseconds,
                           ctimeNs: asset.changedNs)
        }
        // The photo itself, for readers and writers alike: the writer's handles go on
        // with the bytes they had (`handsKeep`, or their copy), the readers' with the
        // version they opened; each is told the size of the bytes it holds
        // (`heldBytes`). The writer's handles were ENOENT on `fstat` before, and so were
        // the readers' beside them.
        kept.append(attributes(of: asset))
        return keepForHandles(kept.filter { open.contains($0.ino) })
    }

    /// Photo `id` left the library through another host (deleted for good; its row is
    /// gone): the same for its readers here, when the notification comes (a new file's
    /// mode and the time it came; their size is that of the bytes they hold). Its
    /// shared thumbnails in views only: its album entries are gone too. Handles open for
    /// writing are handed the version they showed at their next write (`versionShown`).
    func keepAttributesIfHeld(gone id: Int64) {
        let now = nowNanoseconds()
        let thumbnails = [Node.thumbnail(asset: id).ino] + Self.sharedThumbnailInodes(of: id, entries: [])
        let kept = thumbnails.map { fileAttributes(ino: $0, permissions: 0o444 & Self.defaultFileMode, size: 0, mtimeNs: now, ctimeNs: now) }
        forgetOtherKernelInodes(of: keepForHandles(kept + [fileAttributes(ino: UInt64(id), permissions: Self.defaultFileMode, size: 0,
                                                                          mtimeNs: now, ctimeNs: now)]))
    }

    /// Records those of `attributes` whose file a handle holds and that have no record
    /// yet; returns their numbers. A last handle released meanwhile finds the record, or
    /// leaves it to the second look here.
    private func keepForHandles(_ attributes: [Attributes]) -> [UInt64] {
        var kept: [UInt64] = []
        for a in attributes where unlinkedOpen.attributes(a.ino) == nil && handles.isOpen(a.ino) {
            unlinkedOpen.record(a, ownBytes: false)
            if handles.isOpen(a.ino) { kept.append(a.ino) } else { unlinkedOpen.forget(a.ino) }
        }
        return kept
    }

    /// Files in `kept` left the library: the kernel inodes their handles hold besides
    /// the current one (a writer's beside passthrough readers, readers of an older
    /// version) forget their attributes, as the current one does after every change:
    /// they said `st_nlink` 1 until they expired. After the change (asked before it, a
    /// `stat` would read the row again).
    func forgetOtherKernelInodes(of kept: [UInt64]) {
        let others = kept.flatMap { handles.nodes(ofInode: $0).subtracting([kernelNodes.node(of: $0)]) }
        if !others.isEmpty { invalidate(others.sorted().map { .node($0) }) }
    }

    /// Whether a handle holds plain file `ino`'s bytes: one opened through its number,
    /// or one a rename handed them to (a photo renamed to a name that stays plain while
    /// open for writing: its handles are on the photo's number, their writer this
    /// file's, `Writer.becamePlain`); or the kernel, which may open it again
    /// (`HeldByKernel`).
    func isHeldOpen(_ ino: UInt64) -> Bool {
        handles.isOpen(ino) || writers.get(ino).map { !handles.nodes(of: $0).isEmpty } == true || heldByKernel.holds(ino)
    }

    /// The writer of handles of removed file `ino` open for writing: the table's, or the
    /// one a photo that left handed its handles' bytes to (`handsKeep`), or the one kept
    /// over its bytes for the kernel's inode (`HeldByKernel`).
    private func removedFileWriter(_ ino: UInt64) -> Writer? {
        writers.get(ino) ?? handles.writer(ofInode: ino) ?? heldByKernel.writer(ino)
    }

    /// The bytes that open handles of `ino` hold: its writer's, or a reader's own (one
    /// opened through kernel inode `node` first: readers of two versions of a photo are
    /// on two kernel inodes, each told the size of its own). A writer with nothing
    /// written whose photo left through another host holds the version it showed: for
    /// its own kernel inode, before readers of another version on other ones.
    private func heldBytes(_ ino: UInt64, node: UInt64? = nil) -> FileDescriptor? {
        let writer = removedFileWriter(ino)
        let onWritersNode = node.map { node in writer.map { handles.nodes(of: $0).contains(node) } ?? false } ?? false
        // A kernel inode that only readers hold says their version's size, also when a
        // writer on another one holds other bytes: as it did before the photo left.
        if let node, !onWritersNode, handles.nodes(ofInode: ino).contains(node),
           let fd = handles.descriptor(of: ino, preferring: node) {
            return fd
        }
        if let fd = writer?.readable().0 { return fd }
        if let writer, onWritersNode, let fd = shownVersion(writer) { return fd }
        return handles.descriptor(of: ino, preferring: node) ?? writer.flatMap(shownVersion)
    }

    /// The version a writer's handles showed when their photo left through another host
    /// before they wrote anything (their next write copies it, `versionShown`); what
    /// they read and what `fstat` through them says until then. Nil for a writer of
    /// anything else, or when that version is gone too.
    func shownVersion(_ writer: Writer) -> FileDescriptor? {
        let sha256 = writer.withLock { () -> String? in
            guard case .asset = writer.target, case .current = writer.bytes else { return nil }
            return writer.versionShown
        }
        return sha256.flatMap { try? library.blobs.open($0) }
    }

    /// The attributes of a file removed while open, as kernel inode `node` is to have
    /// them: its size (and, for its own bytes, its times) as its bytes are now; nil when
    /// `ino` is no such file.
    func unlinkedAttributes(_ ino: UInt64, node: UInt64? = nil) -> Attributes? {
        guard var a = unlinkedOpen.attributes(ino) else { return nil }
        if let fd = heldBytes(ino, node: node), let st = try? fd.status() {
            a.size = Int64(st.st_size)
            a.blocks = Int64(st.st_blocks)
            if unlinkedOpen.ownsBytes(ino) {
                a.mtimeNs = st.modificationNanoseconds
                a.atimeNs = a.mtimeNs
                a.ctimeNs = max(a.ctimeNs, st.changeNanoseconds)
            }
        }
        return a
    }

    /// setattr through a handle of a file removed while open: its length and mtime
    /// change in its bytes, its mode in what is kept.
    func setUnlinkedAttributes(_ ino: UInt64, _ changes: AttributeChanges) throws -> Attributes? {
        guard unlinkedOpen.attributes(ino) != nil else { return nil }
        if let size = changes.size {
            guard let writer = removedFileWriter(ino) else { throw FSError(EBADF, "inode \(ino) was removed and is open for reading only", logged: false) }
            try truncate(writer, to: size)
        }
        if let mtime = changes.mtimeNs {
            if !unlinkedOpen.ownsBytes(ino) {
                // A photo's version or a thumbnail: a file the library shares, never touched.
                unlinkedOpen.update(ino) { $0.mtimeNs = mtime }
            } else if let fd = heldBytes(ino) {
                try explained("cannot set the mtime of inode \(ino)") { try fd.setModificationTime(nanoseconds: mtime) }
            }
        }
        if let mode = changes.mode { unlinkedOpen.update(ino) { $0.permissions = mode & 0o1777 & ~options.umask } }
        return unlinkedAttributes(ino)
    }

    /// An open of a file removed while open (through `/proc/PID/fd/N`), or removed just
    /// after the kernel found it (`HeldByKernel`): one more handle on the same bytes, its
    /// writer's when it has one; `truncate` (O_TRUNC) empties them.
    func reopenUnlinked(_ ino: UInt64, node: UInt64, writing: Bool, truncate: Bool = false) throws -> Opened? {
        // Nothing holds it any more (its last handle is being released, its time for the
        // kernel is over): it is gone.
        guard let attributes = unlinkedOpen.attributes(ino), isHeldOpen(ino) else { return nil }
        let ownBytes = unlinkedOpen.ownsBytes(ino)
        if let writer = removedFileWriter(ino) {
            writer.opened()
            let result = try opened(ino: ino, node: node, .writer(writer), keepCache: false, readOnly: !writing, name: "inode \(ino)",
                                    stays: true)
            // Its time for the kernel may have ended, or its last other handle closed,
            // since the look above, before this handle held it: its attributes went then;
            // this handle keeps them, until its release (`releasedUnlinked`).
            if unlinkedOpen.attributes(ino) == nil { unlinkedOpen.record(attributes, ownBytes: ownBytes) }
            return try emptied(result, writer, if: truncate && writing)
        }
        // Its writer left with its last handle between the look above and this one (a
        // release racing with this open): nothing holds it now. (The release lets the
        // handle go before the writer.) An open for writing then answered EACCES, once in
        // a CI-like run of `LoadTests.testProcessesRacingOnPlainFilesEndAsOnADisk`.
        guard isHeldOpen(ino) else { return nil }
        if writing { throw FSError(EACCES, "inode \(ino) was removed while open for reading only", logged: false) }
        guard let fd = handles.descriptor(of: ino, preferring: node) else { return nil }
        if !unlinkedOpen.ownsBytes(ino) {
            // A photo's version (in passthrough where its readers are) or a thumbnail:
            // the readers' rule of one version per kernel inode.
            return try openedForReading(ino: ino, node: node, fd, keepCache: false, mayPassthrough: ino & Node.tagMask == 0,
                                        name: "inode \(ino)", pid: 0, since: opensAcrossSaves.mark(ino))
        }
        return try opened(ino: ino, node: node, .readOnly(fd), keepCache: false, readOnly: true, name: "inode \(ino)")
    }

    /// A handle was released: the last one of a file removed while open lets it go
    /// (`file`'s number, or the plain file a rename handed its writer to).
    func releasedUnlinked(_ file: OpenFile) {
        guard !unlinkedOpen.isEmpty else { return }
        var inos = [file.ino]
        if case .writer(let writer) = file.state, case .plain(let id) = writer.withLock({ writer.target }) { inos.append(UInt64(id)) }
        inos.forEach(forgetUnlessHeld)
    }

    /// What is kept for removed file `ino` goes when nothing holds it. Taken out before
    /// the last look, and put back when that look finds a handle: a reopen
    /// (`reopenUnlinked`) adds its handle first, then looks for what is kept, so that
    /// one of the two always sees the other.
    func forgetUnlessHeld(_ ino: UInt64) {
        guard unlinkedOpen.attributes(ino) != nil, !isHeldOpen(ino) else { return }
        while let kept = unlinkedOpen.take(ino) {
            guard isHeldOpen(ino) else { return }
            unlinkedOpen.putBack(ino, kept)
            // Its holder may have let go since: look once more.
            if isHeldOpen(ino) { return }
        }
    }
}
