import AlbumCore
import Glibc

/// Plain files removed through this mount (`rm`, or another file renamed over them),
/// kept for a moment for an open that the kernel's path walk began before the removal:
/// it found the inode, and its OPEN reaches the daemon after the row is gone. On a disk that open gets the removed file. Without this it got `ESTALE`
/// (`FSError.removedBeforeItsOpen`) and the kernel walked the path again, which opens
/// what the name holds now; but when the name was replaced once more during that walk
/// (one open in 20,000 of a thread opening a name that another renames files over,
/// under load), the second `ESTALE` reached the program.
///
/// Kept: the file's bytes (a descriptor of them; their name in `plain/` goes at once)
/// and its attributes (`UnlinkedOpenFiles`, `st_nlink` 0), `seconds` after the removal
/// (the schedule's tick, once a second, lets them go: 2 to 3 s), `limit` files at most
/// (the oldest go first: each holds a descriptor). The kernel says when it lets an
/// inode go (FORGET), but not for a file renamed over, whose inode it may keep cached
/// without a name until memory is short (measured: until the page cache was dropped),
/// so a time bound is needed anyway, and it is the only one. What an open through an
/// `O_PATH` descriptor or a server's file handle gets after that time is `ESTALE`. Not kept: a file that shares a blob (a save's backup),
/// one with other names, a symbolic link, bytes that cannot be opened, and a file that
/// lives on (it became a photo); another host's removals are not seen here.
final class RemovedFilesTheKernelHolds: Sendable {
    static let limit = 64
    static let seconds: Int64 = 2

    private struct Kept {
        /// Its bytes: the writer of its handles, or one made over its bytes file.
        let writer: Writer
        let untilNs: Int64
    }

    private struct Table {
        var byIno: [UInt64: Kept] = [:]
        var order: [UInt64] = []
    }

    private let table = Locked(Table())

    /// Keeps `writer` for inode `ino` until `seconds` from `now`; returns the numbers let
    /// go to stay within `limit`.
    func keep(_ ino: UInt64, _ writer: Writer, now: Int64 = nowNanoseconds()) -> [UInt64] {
        table.withLock { t in
            if t.byIno.updateValue(Kept(writer: writer, untilNs: now + Self.seconds * 1_000_000_000), forKey: ino) != nil {
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

    func drop(_ ino: UInt64) {
        table.withLock { t in
            if t.byIno.removeValue(forKey: ino) != nil { t.order.removeAll { $0 == ino } }
        }
    }

    func writer(_ ino: UInt64) -> Writer? { table.withLock { $0.byIno[ino]?.writer } }

    func holds(_ ino: UInt64) -> Bool { table.withLock { $0.byIno[ino] != nil } }

    var isEmpty: Bool { table.withLock { $0.byIno.isEmpty } }
}

extension FileSystem {
    /// Runs `remove`, the kernel's unlink or rename that may take plain file `file`'s
    /// last name, with the file kept (above) from before the removal commits: an open of
    /// its inode that the kernel sends meanwhile finds it either in the library or kept,
    /// never in between (kept only after, half of such opens fell in between: the
    /// rename's reply waits for its invalidations). Its time starts again once it is
    /// removed. When the file is still there afterwards (the removal failed before it
    /// committed, another name of it is left), nothing is kept.
    func removingPlainFile<R>(_ file: PlainFile?, _ remove: () throws -> R) throws -> R {
        guard let file, let writer = keepForTheKernel(file) else { return try remove() }
        let ino = UInt64(file.id)
        // Whether it went, failed or not: a removal may throw after its commit. When the
        // library cannot say, it is kept its time, which costs nothing: a row found
        // answers before what is kept.
        defer {
            let livesOn = (try? library.read { try $0.plainFile(id: file.id) != nil || $0.asset(id: file.id) != nil }) ?? false
            if livesOn {
                heldByKernel.drop(ino)
                forgetUnlessHeld(ino)
            } else {
                heldByKernel.keep(ino, writer).forEach(forgetUnlessHeld)
            }
        }
        return try remove()
    }

    /// Keeps plain file `file`'s bytes and attributes for the kernel's inode; returns the
    /// writer kept, nil when they cannot be: a file that shares a blob, one with other
    /// names (what the kernel does with those is its link count's business), a symbolic
    /// link (the kernel never opens one), bytes that cannot be opened.
    private func keepForTheKernel(_ file: PlainFile) -> Writer? {
        guard file.blobSHA256 == nil, !file.isLinked, !file.isSymlink, let attributes = try? attributes(of: file) else { return nil }
        let ino = UInt64(file.id)
        // The writer of its open handles, which the removal marks removed; or one made
        // over its bytes, removed from the start: nothing it holds ever commits.
        let writer: Writer
        if let existing = writers.get(ino) {
            writer = existing
        } else {
            guard let bytes = try? library.files.open(.plainFile(file.id), flags: O_RDWR) else { return nil }
            writer = Writer(ino: ino, target: .plain(file.id), bytes: .own(bytes))
            writer.removed()
        }
        // Read only once the row is gone (`getattr`, `setattr`, `open`): the file's own
        // row answers until then. Handles open on it record theirs at the removal
        // (`keepAttributesIfOpen`), the same.
        if unlinkedOpen.attributes(ino) == nil { unlinkedOpen.record(attributes) }
        heldByKernel.keep(ino, writer).forEach(forgetUnlessHeld)
        return writer
    }

    /// The schedule's tick: kept files past their time go.
    func expireKeptForTheKernel(now: Int64) {
        guard !heldByKernel.isEmpty else { return }
        heldByKernel.expire(now: now).forEach(forgetUnlessHeld)
    }
}
