import AlbumCore
import Glibc

/// Plain files removed (`rm`, or a file renamed over them) while the kernel still holds
/// their inode without a handle open: a path walk that found the file a moment before
/// and is about to open it, an `O_PATH` descriptor, `/proc/PID/fd/N` of one. On a disk
/// the file lives on until its inode's last reference goes, and such an open gets it
/// (its bytes, `st_nlink` 0; what is written there is lost with it). Here the daemon
/// let the bytes go with the last handle, and the kernel's OPEN of the inode that
/// followed answered ENOENT: `mogrify` (which closes the file it made and opens it
/// again) failed with "unable to open image" in 1 of about 40 rounds beside `rsync`
/// saving the same photo, its reopen racing rsync's rename over it.
///
/// The kernel tells when it lets an inode go (FORGET): until then, the bytes (a
/// descriptor of them; their name goes at once) and the attributes stay, as for a file
/// removed while open (`UnlinkedOpen`). Only removals the kernel asked for are kept (its
/// unlink or rename, whose target it had looked up and holds; a caller that is no
/// kernel, the core in-process, sends no FORGET), and none that shares a blob (a save's
/// backup) or has other names left. A file renamed over is kept `renamedOverSeconds` at
/// most: the kernel does not count its link off (an unlinked one it does), keeps its
/// inode cached without a name, and forgets it only when it reclaims memory. An
/// unlinked one is kept `unlinkedSeconds` at most, and at most `limit` files in all (the
/// oldest go first). What is past its time goes at the schedule's next tick.
final class RemovedFilesTheKernelHolds: Sendable {
    static let limit = 256
    static let renamedOverSeconds: Int64 = 2
    static let unlinkedSeconds: Int64 = 60

    private struct Kept {
        /// The kernel inode the file's name led to when it was removed.
        let node: UInt64
        /// Its bytes: the writer of its handles, or one made over its bytes file.
        let writer: Writer
        let untilNs: Int64
    }

    private struct Table {
        var byIno: [UInt64: Kept] = [:]
        var order: [UInt64] = []
    }

    private let table = Locked(Table())

    /// Keeps `writer` for inode `ino` until the kernel forgets `node`, `seconds` at
    /// most; returns the numbers let go to stay within `limit`.
    func keep(_ ino: UInt64, node: UInt64, _ writer: Writer, seconds: Int64, now: Int64 = nowNanoseconds()) -> [UInt64] {
        table.withLock { t in
            if t.byIno.updateValue(Kept(node: node, writer: writer, untilNs: now + seconds * 1_000_000_000), forKey: ino) != nil {
                t.order.removeAll { $0 == ino }
            }
            t.order.append(ino)
            let dropped = Array(t.order.prefix(max(0, t.order.count - Self.limit)))
            t.order.removeFirst(dropped.count)
            dropped.forEach { t.byIno.removeValue(forKey: $0) }
            return dropped
        }
    }

    /// Lets go the files kept past their time; returns their numbers.
    func expire(now: Int64) -> [UInt64] {
        table.withLock { t in
            let past = t.order.filter { t.byIno[$0].map { $0.untilNs <= now } ?? true }
            guard !past.isEmpty else { return [] }
            past.forEach { t.byIno.removeValue(forKey: $0) }
            t.order.removeAll { t.byIno[$0] == nil }
            return past
        }
    }

    func writer(_ ino: UInt64) -> Writer? { table.withLock { $0.byIno[ino]?.writer } }

    /// Lets the file kept for `ino` go; false when none was.
    func drop(_ ino: UInt64) -> Bool {
        table.withLock { t in
            guard t.byIno.removeValue(forKey: ino) != nil else { return false }
            t.order.removeAll { $0 == ino }
            return true
        }
    }

    func holds(_ ino: UInt64) -> Bool { table.withLock { $0.byIno[ino] != nil } }

    /// The kernel let kernel inode `node` go (of inode `ino`): returns whether a kept
    /// file went with it.
    func forgot(_ ino: UInt64, node: UInt64) -> Bool {
        table.withLock { t in
            guard t.byIno[ino]?.node == node else { return false }
            t.byIno.removeValue(forKey: ino)
            t.order.removeAll { $0 == ino }
            return true
        }
    }

    var isEmpty: Bool { table.withLock { $0.byIno.isEmpty } }
}

extension FileSystem {
    /// Runs `remove`, the kernel's unlink or rename that may take plain file `file`'s
    /// last name, with the file kept for the kernel's inode from before the change
    /// commits: an open of the inode that the kernel sends meanwhile (its path walk
    /// found the file before the change) finds it either there or kept, never in
    /// between. When the file is still there afterwards (another name of it is left,
    /// the rename was refused or failed), nothing is kept.
    func removingPlainFile<R>(_ file: PlainFile?, renamedOver: Bool, _ remove: () throws -> R) throws -> R {
        guard let file, keepForTheKernel(file, renamedOver: renamedOver) else { return try remove() }
        let ino = UInt64(file.id)
        func stillThere() -> Bool { (try? library.plainFile(id: file.id)) != nil }
        do {
            let result = try remove()
            if stillThere(), heldByKernel.drop(ino) { letGoIfUnheld(ino) }
            return result
        } catch {
            if stillThere(), heldByKernel.drop(ino) { letGoIfUnheld(ino) }
            throw error
        }
    }

    /// Keeps plain file `file`'s bytes and attributes for the kernel's inode; false when
    /// they cannot be (a file that shares a blob, or whose bytes cannot be opened). Its
    /// writer, when it has one, is marked removed by the removal itself
    /// (`removePlainBytes`); one made here over its bytes is so at once.
    private func keepForTheKernel(_ file: PlainFile, renamedOver: Bool) -> Bool {
        // A file with several names: the kernel was told that link count, takes one off
        // for the name removed, and keeps an inode it thinks has names left (no FORGET).
        guard file.blobSHA256 == nil, !file.isLinked, let attributes = try? attributes(of: file) else { return false }
        let ino = UInt64(file.id)
        let writer: Writer
        if let existing = writers.get(ino) {
            writer = existing
        } else {
            guard let bytes = try? library.files.open(.plainFile(file.id), flags: O_RDWR) else { return false }
            writer = Writer(ino: ino, target: .plain(file.id), bytes: .own(bytes))
            writer.removed()
        }
        unlinkedOpen.record(attributes)
        let seconds = renamedOver ? RemovedFilesTheKernelHolds.renamedOverSeconds : RemovedFilesTheKernelHolds.unlinkedSeconds
        let dropped = heldByKernel.keep(ino, node: kernelNodes.node(of: ino), writer, seconds: seconds)
        dropped.forEach(letGoIfUnheld)
        return true
    }

    /// FORGET: the kernel let kernel inode `node` go. Counts are not kept: an inode the
    /// kernel forgets is one it holds no more (its last lookup count goes at once when it
    /// evicts it), and only files it removed itself are looked for.
    public func forget(node: UInt64) {
        guard !heldByKernel.isEmpty else { return }
        let ino = Self.inode(ofNodeID: node)
        if heldByKernel.forgot(ino, node: node) { letGoIfUnheld(ino) }
    }

    /// The schedule's tick: kept files past their time go.
    func expireKeptForTheKernel(now: Int64) {
        guard !heldByKernel.isEmpty else { return }
        heldByKernel.expire(now: now).forEach(letGoIfUnheld)
    }

    /// A removed file that neither a handle nor the kernel holds any more: what was kept
    /// of it goes.
    private func letGoIfUnheld(_ ino: UInt64) {
        if unlinkedOpen.attributes(ino) != nil, !isHeldOpen(ino) { unlinkedOpen.forget(ino) }
    }
}
