import AlbumCore
import Glibc

/// close(), release, fsync, and the imports of files servers keep open: where the bytes
/// of a `Writer` become what they are.
extension FileSystem {
    /// close(): bytes written through this file since the last close are committed
    /// before it returns, whatever other handles are open: a photo's are its new version
    /// (EINVAL when they are no photo: the photo is unchanged), a plain file's make it a
    /// photo when they are one and its name and folder allow. 0 means durable.
    /// `pid`: the thread that closes (0: unknown). The kernel asks for a flush at every
    /// close of a descriptor, also of the copies a child process inherits when it is
    /// forked, which it closes at its exec or exit: on a disk those closes change
    /// nothing, and here they save nothing either, or an editor that starts a helper
    /// halfway through a save would make its half-written bytes a version. The bytes
    /// are saved at the opener's close (or at the last close of all, `release`).
    public func flush(handle: UInt64, pid: Int32 = 0) throws {
        guard let file = handles.get(handle), file.writes, case .writer(let writer) = file.state else { return }
        guard closesItsOwnOpen(file, thread: pid) else { return }
        try close(writer)
    }

    /// Whether a close by thread `thread` is one of `file`'s opener's process, or stands
    /// for it: a close whose process or opener /proc cannot name does (an opening
    /// thread that has ended: a daemon that forked and left its child the file), and
    /// a file server's does (the kernel's nfsd closes from whichever of its threads).
    private func closesItsOwnOpen(_ file: OpenFile, thread: Int32) -> Bool {
        guard file.opener != 0, thread != 0, thread != file.opener,
              let closing = Processes.process(ofThread: thread),
              let opening = Processes.process(ofThread: file.opener) else { return true }
        return closing == opening || FileServers.isServer(thread)
    }

    func close(_ writer: Writer, unlessReopened: Bool = false) throws {
        try writer.io {
            if unlessReopened, writer.isOpen { return }
            switch writer.beginClose() {
            case .nothing:
                try finishIfUnfinished(writer)
            case .report(let error):
                throw error
            case .commit(let work):
                defer { keepBytesPrivate(writer) }
                let outcome: Writer.Outcome
                do {
                    outcome = try commit(work, of: writer)
                } catch {
                    // Removed by another process while it was being saved (rm, or a rename
                    // over its name): what is left are an unlinked file's bytes, which no
                    // close saves, and a disk's close does not fail for them. The remover's
                    // transaction may have committed just before this one failed, and not
                    // yet marked the writer: its file's row being gone says it too.
                    if writer.isRemoved || isGone(work.target) {
                        writer.finish(.keptPlain)
                        return
                    }
                    writer.finish(.error)
                    throw FSError.wrapping(error, "cannot save inode \(writer.ino)")
                }
                writer.finish(outcome)
                if case .committed(let asset, _) = outcome { writers.becameAsset(writer, asset) }
                if case .refused(let reason) = outcome {
                    // The photo no longer shows the bytes being written (nor an emptied
                    // version) but its current version: the kernel forgets the size it had.
                    if case .asset(let id) = work.target, let photo = try? library.asset(id: id) { afterChange(asset: photo) }
                    throw FSError(EINVAL, reason)
                }
            }
        }
    }

    /// After a commit, what the handles write on into must be a file of theirs alone. A
    /// commit links its bytes file to its blob's name before its transaction (a private
    /// copy in staging/, or a plain file's bytes on a store of one host), and a failed
    /// transaction takes that name back; but on a store several hosts share the name
    /// stays when another host's row named those same bytes meanwhile (`Library.takeBack`:
    /// it found the file in place). The handles' next write then changed that photo's
    /// blob under it: `albumfs check` found a blob 40 bytes longer than its row, and the
    /// photo read EIO, in a TSan run of `LoadTests`' two-host race (an append of the
    /// same bytes to two photos at once through the two hosts, one of which was deleted
    /// meanwhile). A bytes file with a second name is copied, and the handles write on
    /// into the copy; when that fails, they keep only reading it (`Writer.lostBytes`).
    /// Inside `io`.
    private func keepBytesPrivate(_ writer: Writer) {
        let bytes = writer.withLock { writer.bytes }
        let fd: FileDescriptor
        switch bytes {
        case .own(let own): fd = own
        case .copy(let copy, _): fd = copy
        case .current, .replaced: return
        }
        guard let st = try? fd.status(), st.st_nlink > 1 else { return }
        do {
            let (copy, path) = try Staging(files: library.files).makeFile(prefix: "version")
            do {
                try SystemCalls.copyAll(from: fd, to: copy, length: Int64(st.st_size))
                try copy.setModificationTime(nanoseconds: st.modificationNanoseconds)
                switch (bytes, writer.withLock({ writer.target })) {
                case (.own, .plain(let id)):
                    // A plain file's bytes, durable as its close left them: on disk
                    // before its name moves to them.
                    try copy.sync()
                    try library.files.rename(path, to: .plainFile(id))
                    try library.files.syncFolder(LibraryPath.plainFile(id).parent)
                    writer.movedBytes(to: copy, at: nil)
                case (.copy(_, let old), _):
                    writer.movedBytes(to: copy, at: path)
                    discard(old)
                default:
                    discard(path)
                    throw FSError(EIO, "inode \(writer.ino)'s bytes are a plain file's of no plain file")
                }
            } catch {
                discard(path)
                throw error
            }
            Log.info("inode \(writer.ino): its bytes file was also a blob's after a save that did not land; its handles write on into a copy")
        } catch {
            Log.error("inode \(writer.ino): its bytes file is also a blob's, and cannot be copied (\(error)): its handles can only read it")
            writer.lostBytes(error)
            // Read through the descriptor from now on: its name in staging/ can go.
            if case .copy(_, let old) = bytes { discard(old) }
        }
    }

    /// Whether the file a writer saves into has left the library (its row is gone).
    private func isGone(_ target: Writer.Target) -> Bool {
        do {
            switch target {
            case .plain(let id): return try library.plainFile(id: id) == nil
            case .asset(let id): return try library.asset(id: id) == nil
            }
        } catch {
            return false
        }
    }

    /// A plain file created through the mount is whole once closed (or fsynced): its row
    /// says so, so that a restart keeps it, and is on disk, as its bytes file's name in
    /// `plain/` is, before the close returns (its create was committed lazily). The
    /// caller has synced the bytes.
    private func finishIfUnfinished(_ writer: Writer) throws {
        guard writer.withLock({ writer.unfinished }), case .plain(let id) = writer.target else { return }
        try library.files.syncFolder(LibraryPath.plainFile(id).parent)
        try library.write(.durable) { try $0.finishPlainFile(id) }
        writer.withLock { writer.unfinished = false }
    }

    public func release(handle: UInt64) {
        guard let file = handles.remove(handle) else { return }
        forgetLeftKernelInode(file)
        releasedUnlinked(file)
        guard case .writer(let writer) = file.state else { return }
        release(writer, lastHandle: true)
    }

    /// A writer let go by a holder: a handle's release (`lastHandle`), a truncate by
    /// path, an open that failed. The last one gives bytes no close saw (written through
    /// mmap, a close that failed, or left by a release that saw this holder join) one
    /// more try, unless a handle joined since (`WriterTable.join`: the bytes are its own
    /// now, being written, and its close saves them); a handle's marks a plain file it
    /// created whole; then what no handle holds is dropped, and the writer leaves the
    /// table (a dirty one only after a handle's release: another holder's keeps it).
    func release(_ writer: Writer, lastHandle: Bool = false) {
        guard writer.released() <= 0 else { return }
        TestHold.releases.holdIfAsked(writer.ino)
        if writer.isDirty {
            do { try close(writer, unlessReopened: true) } catch { Log.warning("saving inode \(writer.ino) at its last release: \(error)") }
        }
        if lastHandle {
            do { try writer.io { try finishIfUnfinished(writer) } } catch {
                Log.warning("marking inode \(writer.ino) finished at its last close: \(error)")
            }
        }
        let (keep, discarded) = writer.io { writer.dropUncommitted() }
        if let leftover = discarded { discard(leftover) }
        if !keep && (lastHandle || !writer.isDirty) { writers.removeUnused(writer) }
    }

    public func fsync(handle: UInt64) throws {
        guard let file = handles.get(handle) else { return }
        // A mode or times set moments ago (committed to be on disk soon, `setattr`) are
        // on disk when fsync returns, as a file system's inode is.
        defer { library.makeCommittedDurable() }
        switch file.state {
        case .readOnly:
            return
        case .writer(let writer):
            let (fd, _) = writer.readable()
            if let fd { try explained("fsync of inode \(writer.ino)") { try fd.sync() } }
            writer.synced()
            // An NFS server turns a client's COMMIT into fsync and may keep the file open
            // for long after: import now, when the bytes look whole.
            if writer.isDirty, let fd, Completeness.looksComplete(fd) { try close(writer) }
            // A plain file fsynced before its first close survives a crash, row and all
            // (one imported just now is a photo: nothing left to do).
            if fd != nil { try writer.io { try finishIfUnfinished(writer) } }
        }
    }

    /// Files left open after their last write (an NFS server holds its descriptors):
    /// committed once whole and quiet for `settle` seconds after an fsync, or `stale`
    /// seconds without one. A file that does not look whole waits for more bytes or for
    /// its close.
    func importSettledFiles(now: Int64, settle: Double = 2, stale: Double = 60) {
        for writer in writers.all where writer.isSettled(now: now, settle: settle, stale: stale) {
            guard let fd = writer.readable().0, Completeness.looksComplete(fd) else { continue }
            do { try close(writer) } catch { Log.warning("importing a settled file (inode \(writer.ino)): \(error)") }
        }
    }

    /// Photos truncated and closed empty whose minute passed without new bytes show
    /// their current version again.
    func expireEmptiedVersions(now: Int64) {
        for writer in writers.all {
            endEmptied(writer, now: now, after: SaveWindow.seconds, because: "nothing was written to it for a minute")
        }
    }

    /// Whether photo `asset` shows no bytes now: emptied (`Writer.Phase.emptied`), or
    /// cut to nothing by a handle still writing it.
    func showsNoBytes(_ asset: Int64) -> Bool {
        guard let writer = writers.get(UInt64(asset)) else { return false }
        if writer.isEmptied { return true }
        guard writer.pendingCopy() != nil, let fd = writer.readable().0 else { return false }
        return (try? fd.size()) == 0
    }

    /// The emptied photo `asset` shows its current version again now, if no handle is
    /// open on it. A writer that is committing (a close landing this very photo's
    /// version, inside its `io`) is not emptied, and its `io` is never taken here.
    func endEmptied(ofAsset asset: Int64, because reason: String) {
        guard let writer = writers.get(UInt64(asset)), writer.isEmptied else { return }
        endEmptied(writer, now: nowNanoseconds(), after: 0, because: reason)
    }

    /// A version of photo `asset` landed by another way than its writer's close (a file
    /// renamed over it, or closed under the name it left): bytes that handles were still
    /// writing into it are superseded, as a file's are on a disk when another file is
    /// renamed over its name. Those handles keep their copy to read and write, and it is
    /// never imported (`removed`); the photo shows the version that landed. Handles open
    /// for writing that wrote nothing keep `before`, the version they had open
    /// (`Writer.keepReplaced`). An emptied photo with no handle open shows the new
    /// version (`now`) too. A writer that is committing is the one landing, and is left
    /// alone.
    func supersedePendingBytes(ofAsset asset: Int64, replacing before: Asset?, with now: Asset, by name: String) {
        guard let writer = writers.get(UInt64(asset)) else { return }
        let (phase, open) = writer.withLock { (writer.phase, writer.openCount) }
        switch phase {
        case .clean where open > 0:
            // Handles open for writing with nothing to save yet: on a disk they would go on
            // with the replaced file, not write into the new one. They keep the version
            // they had open. Not when it cannot be opened: they then follow the photo.
            guard let before, before.sha256 != now.sha256, let version = try? library.openBlob(of: before) else { return }
            if writer.io({ writer.keepReplaced(version) }) {
                writers.remove(writer)
                // Their kernel inode would share its pages and its size between them and
                // the photo's next opens: the photo moves to a new one.
                moveAway(now, from: writer)
                Log.info("inode \(writer.ino): its open handles keep the version \(name) replaced; what they write is not saved")
            }
        case .clean, .committing, .removed:
            return
        case .emptied where open == 0:
            endEmptied(writer, now: nowNanoseconds(), after: 0, because: "\(name) brought its next version")
        case .emptied, .dirty, .refused, .failed:
            writer.removed()
            writers.remove(writer)
            moveAway(now, from: writer)
            Log.info("inode \(writer.ino): the bytes its open handles were writing are superseded by \(name), which became that photo's next version; they will not be saved")
        }
    }

    /// Runs `change`, which makes photo `asset` leave the library (deleted for good, or
    /// vanished into the photo a save made of its bytes), inside the `io` of its writer,
    /// made for the while if it has none. An open for writing of the photo then comes
    /// either before, and its handles keep the bytes they had open (`handsKeep`), or
    /// after, and finds no photo (`openForWriting`). Before, such a handle's next write
    /// found no photo to copy: EIO.
    /// Handles that read the photo or its thumbnail keep working as a removed file's do
    /// (`keepAttributesIfHeld`).
    func whileLeaving<R>(_ asset: Asset, _ change: () throws -> R) rethrows -> R {
        let writer = writers.writer(forAsset: asset.id)
        defer { forgetIfIdle(writer) }
        return try writer.io {
            let version = versionForHandles(writer, of: asset)
            let kept = keepAttributesIfHeld(asset)
            do {
                let result = try change()
                // Before `afterChange`: no open of its thumbnails by the hash kept.
                thumbnailsFound.forgetAll()
                handsKeep(version, writer)
                forgetOtherKernelInodes(of: kept)
                return result
            } catch {
                kept.forEach { unlinkedOpen.forget($0) }
                throw error
            }
        }
    }

    /// The version photo `asset` shows, when handles have it open for writing with
    /// nothing written yet; taken before the photo leaves the library, for `handsKeep`
    /// after. Inside the writer's `io`.
    func versionForHandles(_ writer: Writer, of asset: Asset) -> FileDescriptor? {
        guard writer.holdsCurrentBytesOpen else { return nil }
        return try? library.openBlob(of: asset)
    }

    /// The photo whose handles had `version` open left the library: as the handles of a
    /// removed file do on a disk, they go on with the bytes they had open, and no close
    /// saves what they write. Inside the writer's `io`.
    func handsKeep(_ version: FileDescriptor?, _ writer: Writer) {
        guard let version, writer.keepReplaced(version) else { return }
        writers.remove(writer)
        Log.info("inode \(writer.ino): its open handles keep the bytes of a photo that left the library; what they write is not saved")
    }

    /// A writer with no handle and nothing to save leaves the table.
    func forgetIfIdle(_ writer: Writer) {
        writers.removeUnused(writer, if: { $0.isIdle })
    }

    /// An emptied photo (see `Writer.Phase.emptied`) shows its current version again, when
    /// it has been so for `seconds` and no handle is open on it. Returns whether it did.
    @discardableResult
    func endEmptied(_ writer: Writer, now: Int64, after seconds: Int64, because reason: String) -> Bool {
        guard let expired = writer.io({ writer.expireEmptied(now: now, after: seconds) }) else { return false }
        if let expired { discard(expired) }
        writers.remove(writer)
        if case .asset(let id) = writer.target, let asset = try? library.asset(id: id) {
            Log.info("\(asset.name) was emptied and \(reason): it shows its last version again")
            afterChange(asset: asset)
        }
        return true
    }

    // MARK: committing

    /// What a close commits: the bytes of `work` become what they are.
    private func commit(_ work: Writer.Commit, of writer: Writer) throws -> Writer.Outcome {
        switch work.target {
        case .plain(let id): return try commitPlainFile(id, work, writer)
        case .asset(let id): return try commitVersion(of: id, work)
        }
    }

    /// What every close (and rename of a plain file) that may import does between hashing the bytes and landing them:
    /// they are marked as being placed (`BlobsInFlight`: no other close places the same
    /// bytes meanwhile), named by their hash at once unless the library has them
    /// (`BlobStore.placeEarly`), and synced with that name's folder on another thread
    /// while the decoder reads what they are (`SyncAhead`). `then` gets the verdict, and
    /// `takePlacement`, which hands the early placement to the landing; a placement not
    /// taken is taken back when `then` returns or throws.
    func classifyWhileSyncing<T>(_ hashed: HashedFile, _ fd: FileDescriptor, name: String, as classifiedName: String,
                                         _ then: (Classification, _ takePlacement: () -> BlobStore.Placement?) throws -> T) throws -> T {
        blobsInFlight.begin(hashed.sha256)
        defer { blobsInFlight.end(hashed.sha256) }
        var early = try explained("cannot store \(name)") { try library.blobs.placeEarly(hashed.path, sha256: hashed.sha256) }
        defer { if let placement = early?.0 { library.takeBack(placement) } }
        let syncing = SyncAhead(fd, folders: early?.folders ?? [], files: library.files)
        let kind: Classification
        do {
            kind = try library.classify(hashed, name: classifiedName, reader: decoder)
        } catch {
            // Its descriptor and folders are not synced after the close; a failed
            // writeback, reported once, comes before the classifier's error.
            try syncing.finish()
            throw error
        }
        try syncing.finish()
        return try then(kind) {
            defer { early = nil }
            return early?.0
        }
    }

    /// A photo's new bytes: its next version; empty, shown empty for the minute; no
    /// photo, refused.
    ///
    /// An mtime set meanwhile through another host (this host's `touch` waits for the
    /// close: `afterCloses`) came after the last write, and stays, as on a disk: the
    /// version lands again with it (`changedMeanwhile`).
    private func commitVersion(of id: Int64, _ work: Writer.Commit) throws -> Writer.Outcome {
        var found: Asset?
        return try againWhileChangedMeanwhile(tries: 3, { "save of \($0): its mtime was set meanwhile through another host; it stays" }) {
            try commitVersion(of: id, work, checked: !$0, found: &found)
        }
    }

    /// `found`: the photo as the first attempt found it.
    private func commitVersion(of id: Int64, _ work: Writer.Commit, checked: Bool, found: inout Asset?) throws -> Writer.Outcome {
        guard let photo = try library.asset(id: id) else { return .keptPlain }
        let first = found ?? photo
        found = first
        let explicitMtimeNs = work.explicitMtimeNs
            ?? (photo.mtimeNanoseconds != first.mtimeNanoseconds ? photo.mtimeNanoseconds : nil)
        guard case .copy(let fd, let path) = work.bytes else { return .keptPlain }
        if let no = try cannotBeMedia(fd, name: photo.originalName, file: photo.name) {
            return no.empty ? .emptied : .refused("refused the new bytes of \(photo.name): \(no.why); the photo is unchanged")
        }
        var clock = PhaseClock()
        defer { clock.log("save of \(photo.name)") }
        let hashed = try explained("cannot read the new bytes of \(photo.name)") {
            try HashedFile.hashing(path, descriptor: fd, knownHash: { size in work.stream?.finish(size: size) })
        }
        clock.mark("hash")
        if hashed.sha256 == photo.sha256 && work.explicitMtimeNs == nil {
            // The same bytes again (cp of the photo over itself): nothing changes, but an
            // original that went missing or was damaged is healed by them.
            _ = try explained("cannot store the bytes of \(photo.name)") { try library.placeBlob(hashed) }
            discard(path)
            return .committed(asset: id, version: hashed.sha256)
        }
        return try classifyWhileSyncing(hashed, fd, name: photo.name, as: photo.originalName) { kind, takePlacement in
            let metadata: MediaMetadata
            switch kind {
            case .notMedia(let why): return .refused("refused the new bytes of \(photo.name): \(why); the photo is unchanged")
            case .media(let m): metadata = m
            }
            clock.mark("metadata")
            let bytes = PhotoBytes(sha256: hashed.sha256, size: hashed.size, metadata: metadata, writtenNs: hashed.mtimeNs, file: hashed)
            let folder = Item.allPhotos
            let landed = try land(bytes, as: photo.name, in: folder, destiny: .version(of: photo, vacated: nil), fileID: id,
                                  explicitMtimeNs: explicitMtimeNs, mode: nil, placed: takePlacement(), inFlight: true) { tx in
                if checked, try tx.asset(id: id)?.mtimeNanoseconds != photo.mtimeNanoseconds {
                    throw LibraryError.changedMeanwhile(photo.name)
                }
            }
            clock.mark("stored")
            discard(path)
            afterLanding(landed, folder: folder, entries: [])
            return .committed(asset: id, version: hashed.sha256)
        }
    }

    /// A plain file's bytes at a close: a photo when they are one under a visible name in
    /// a folder that imports (or under a name a photo left a moment ago); else it stays a
    /// plain file (the log says why, once, for a visible name).
    ///
    /// What it becomes is decided by the file's row as the close finds it, and the row
    /// must still be so when it lands. This host's mv, ln, rm, chmod and touch of the
    /// file wait for the close (`afterCloses`); another host's do not, and what they
    /// changed meanwhile (`changedMeanwhile`) makes the close decide again with the row as
    /// it is now: the photo under the name it was renamed to, a file linked meanwhile kept
    /// plain, the mode and mtime set. After three such changes it lands as it found it.
    private func commitPlainFile(_ id: Int64, _ work: Writer.Commit, _ writer: Writer) throws -> Writer.Outcome {
        try againWhileChangedMeanwhile(tries: 3, { "close of plain file \(id): \($0) changed meanwhile through another host; deciding again" }) {
            try commitPlainFile(id, work, writer, checked: !$0)
        }
    }

    private func commitPlainFile(_ id: Int64, _ work: Writer.Commit, _ writer: Writer, checked: Bool) throws -> Writer.Outcome {
        guard let file = try library.read({ try $0.plainFile(id: id) }), let folder = try item(file.dirIno) else {
            return .keptPlain
        }
        // Written and closed through this host, a file another host created and never
        // closed (it crashed meanwhile) is a file now, as on a disk: its close clears the
        // mark, or that host's next start would discard what was written here.
        if file.unfinished { writer.withLock { writer.unfinished = true } }
        var clock = PhaseClock()
        defer { clock.log("close of \(file.name)") }
        if let clone = work.cloneOf {
            return try commitClone(clone, into: file, folder: folder, writer, checked: checked)
        }
        // Most plain files can never become photos here: no need to read them. Nor can one
        // with several names (hard links): it stays one file under all of them.
        var staysPlain = file.isLinked
        if !staysPlain, case .stayPlain = try destiny(of: "", name: file.name, folder: folder, over: nil),
           saves.vacatedBy(folder: folder.ino, name: file.name) == nil {
            staysPlain = true
        }
        if staysPlain {
            if case .own(let fd) = work.bytes {
                try explained("cannot sync \(file.name)") { try fd.sync() }
                // Whole as written, front to back: the digest is at hand for a rename to
                // a photo's name (rsync's temporary file, `ClosedDigests`).
                if writers.digests.enabled, let stream = work.stream, let st = try? fd.status(),
                   let sha256 = stream.digestSoFar(size: Int64(st.st_size)) {
                    writer.keptWhole(sha256: sha256, size: Int64(st.st_size), stamp: FileStamp(st))
                }
            }
            try finishIfUnfinished(writer)
            readSidecarIfOne(id)
            return .keptPlain
        }
        guard case .own(let fd) = work.bytes else { return .keptPlain }
        if let no = try cannotBeMedia(fd, name: file.name, file: file.name) {
            try explained("cannot sync \(file.name)") { try fd.sync() }
            if !no.empty { logKeptPlain(file, no.why) }
            try finishIfUnfinished(writer)
            return .keptPlain
        }
        let hashed = try explained("cannot read \(file.name)") {
            try HashedFile.hashing(.plainFile(id), descriptor: fd, knownHash: { size in work.stream?.finish(size: size) })
        }
        clock.mark("hash")
        return try classifyWhileSyncing(hashed, fd, name: file.name, as: file.name) { kind, takePlacement in
            let metadata: MediaMetadata
            switch kind {
            case .notMedia(let why):
                logKeptPlain(file, why)
                try finishIfUnfinished(writer)
                return .keptPlain
            case .media(let m):
                metadata = m
            }
            clock.mark("metadata")
            let decide = { try self.destiny(of: hashed.sha256, name: file.name, folder: folder, over: nil) }
            let fate = try decide()
            if case .stayPlain(let refusal) = fate {
                if !refusal.quiet { logKeptPlain(file, refusal.reason) }
                try finishIfUnfinished(writer)
                return .keptPlain
            }
            let bytes = PhotoBytes(sha256: hashed.sha256, size: hashed.size, metadata: metadata, writtenNs: hashed.mtimeNs, file: hashed)
            let mode = file.mode & 0o1777 == Self.defaultFileMode ? nil : file.mode & 0o1777
            let landed = try land(bytes, as: file.name, in: folder, destiny: fate, fileID: id,
                                  explicitMtimeNs: work.explicitMtimeNs ?? file.explicitMtimeNs, mode: mode,
                                  placed: takePlacement(), inFlight: true, decide: decide) { tx in
                if checked { try tx.expectUnchanged(file) }
                try tx.deletePlainFile(id, becomingPhoto: true)
            }
            clock.mark("stored")
            discard(.plainFile(id))
            writer.withLock { writer.unfinished = false }
            // A new asset keeps the file's number: its name's entry stays right.
            afterLanding(landed, folder: folder, entries: landed.isNew ? [] : [(folder.ino, file.name)])
            clock.mark("after")
            return .committed(asset: landed.asset.id, version: landed.asset.sha256)
        }
    }

    /// copy_file_range of a whole photo into a new file, closed: the photo where the file
    /// was made (a membership, or a duplicate if the folder shows it already), as a copy
    /// of its bytes would be, without copying them. Where it cannot be a photo, the bytes
    /// are copied into the plain file after all.
    private func commitClone(_ clone: Asset, into file: PlainFile, folder: Item, _ writer: Writer, checked: Bool) throws -> Writer.Outcome {
        let decide = { try self.destiny(of: clone.sha256, name: file.name, folder: folder, over: nil, preferring: clone.id) }
        let fate = try decide()
        var staysPlain = file.isLinked
        if case .stayPlain = fate { staysPlain = true }
        if staysPlain {
            let source = try library.openBlob(of: clone)
            let target = try library.files.open(.plainFile(file.id), flags: O_WRONLY)
            try SystemCalls.copyAll(from: source, to: target, length: clone.size)
            try target.sync()
            try finishIfUnfinished(writer)
            return .keptPlain
        }
        let bytes = PhotoBytes(sha256: clone.sha256, size: clone.size, metadata: try library.read { try $0.bytesMetadata(of: clone) },
                               writtenNs: nowNanoseconds(), file: nil)
        let landed = try land(bytes, as: file.name, in: folder, destiny: fate, fileID: file.id,
                              explicitMtimeNs: writer.withLock({ writer.explicitMtimeNs }) ?? file.explicitMtimeNs,
                              mode: file.mode & 0o1777 == Self.defaultFileMode ? nil : file.mode & 0o1777, decide: decide) { tx in
            if checked { try tx.expectUnchanged(file) }
            try tx.deletePlainFile(file.id, becomingPhoto: true)
        }
        discard(.plainFile(file.id))
        writer.withLock { writer.unfinished = false }
        // A new asset keeps the file's number: its name's entry stays right.
        afterLanding(landed, folder: folder, entries: landed.isNew ? [] : [(folder.ino, file.name)])
        return .committed(asset: landed.asset.id, version: landed.asset.sha256)
    }

    /// A visible file kept as a plain file: said once, with the reason.
    func logKeptPlain(_ file: PlainFile, _ why: String) {
        guard !Names.staysPlain(file.name) else { return }
        let first = loggedPlain.withLock { $0.insert(file.id).inserted }
        if first { Log.info("kept \(file.name) as a plain file of its folder, not a photo: \(why)") }
    }
}
