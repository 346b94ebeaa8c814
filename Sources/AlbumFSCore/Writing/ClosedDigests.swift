import AlbumCore
import Glibc

/// The digests of plain files' bytes as their last writer left them, for the rename
/// that makes such a file a photo moments later.
///
/// rsync writes each file as `.NAME.XXXXXX` (a hidden name: a plain file), closes it,
/// sets its times and mode, and renames it to NAME, which imports it. Its bytes were
/// hashed as they were written (`StreamingHash`), but the rename read and hashed them
/// all again: 2 ms of the 7 ms of the rename of a 2.4 MB photo (docs/performance.md,
/// "rsync into an album, and Samba's uploads"). So a close that keeps a file plain
/// takes the stream's digest of its whole bytes with a stamp of its bytes file
/// (`Writer.keptWhole`), and the writer, as its last handle leaves, records both here
/// (`WriterTable.remove`). The rename uses the digest when the bytes file is as stamped.
///
/// What may change the bytes after that: a new writer of the file (making one forgets
/// the entry, `WriterTable.writer(for:make:)`), a truncate by path (`forget`), this
/// host's own utimensat (the entry follows it, `timesSet`), and a program writing the
/// library's `plain/` behind the daemon's back (the stamp, taken by the close that kept
/// the digest: every change after it moves the ctime, where times are fine-grained,
/// `timesAreFineGrained`). A wrong digest would name a blob by bytes it does not hold,
/// so anything else forgets. One host only: another host's writers never pass through
/// this table. While the writer is still here (its release on its way), the rename
/// takes the digest from it (`Writer.keptDigest(of:matching:)`).
final class ClosedDigests: Sendable {
    private struct Entry {
        let sha256: String
        let size: Int64
        var stamp: FileStamp
    }

    let enabled: Bool
    /// Bounded: an entry not found here costs a read of the file, as before.
    private let entries = Locked([Int64: Entry]())
    static let limit = 256

    init(enabled: Bool) { self.enabled = enabled }

    /// Whether a file's ctime moves at every change after an `fstat` looked at it, even
    /// within one tick of the kernel's coarse clock: multigrain timestamps (Linux 6.13,
    /// on ext4, XFS, Btrfs and tmpfs; Documentation/filesystems/multigrain-ts.rst). An
    /// fstat marks the ctime as seen, and the next change takes a fine-grained time.
    /// Elsewhere a write in the same tick as the stamp could leave it as it was: no
    /// digest is kept there. Found by trying it on the library's own disk (kernel, file
    /// system and its driver alike: ext2 has ext4's magic number and not its times):
    /// three times an `fstat`, then a write of one byte microseconds later, which takes
    /// the look's coarse time at least once in three where times are coarse.
    static func timesAreFineGrained(_ files: LibraryFiles) -> Bool {
        guard let (probe, path) = try? files.makeStagingFile(prefix: "times") else { return false }
        defer { _ = try? files.remove(path) }
        var seen = try? probe.status()
        for offset in 0..<3 {
            let byte: [UInt8] = [1]
            guard let before = seen, (try? byte.withUnsafeBytes({ try probe.write($0, at: Int64(offset)) })) == 1,
                  let after = try? probe.status(), after.changeNanoseconds != before.changeNanoseconds else { return false }
            seen = after
        }
        return true
    }

    /// The last writer of plain file `id` leaves its bytes, whose `size` bytes hash to
    /// `sha256` and whose file was as `stamp` says at the close that kept them (or after
    /// this host's utimensat since, `timesSet`). The release comes later, and anything
    /// may have happened meanwhile: `digest(of:bytes:)` compares the stamp with the file
    /// as it is then.
    func record(_ id: Int64, sha256: String, size: Int64, stamp: FileStamp) {
        guard enabled else { return }
        guard stamp.size == size else { return forget(id) }
        entries.withLock { entries in
            if entries.count >= Self.limit { entries.removeAll() }
            entries[id] = Entry(sha256: sha256, size: size, stamp: stamp)
        }
    }

    func forget(_ id: Int64) {
        guard enabled else { return }
        _ = entries.withLock { $0.removeValue(forKey: id) }
    }

    /// The digest of plain file `id`'s bytes, open as `bytes`, if they are as recorded.
    func digest(of id: Int64, bytes: FileDescriptor) -> (sha256: String, size: Int64)? {
        guard enabled, let st = try? bytes.status() else { return nil }
        let stamp = FileStamp(st)
        return entries.withLock { entries in
            guard let entry = entries[id] else { return nil }
            guard entry.stamp == stamp else {
                entries.removeValue(forKey: id)
                return nil
            }
            return (entry.sha256, entry.size)
        }
    }

    /// This host set the mtime of plain file `id`'s bytes file, found as `before` just
    /// before and as `after` just after: an entry that was right before is right after.
    /// (One recorded meanwhile, by a release that came between, from a writer told of
    /// the change first, is right already.)
    func timesSet(_ id: Int64, before: stat?, after: stat?) {
        guard enabled else { return }
        entries.withLock { entries in
            guard let entry = entries[id] else { return }
            if let after, entry.stamp == FileStamp(after) { return }
            guard let before, let after, entry.stamp == FileStamp(before) else {
                entries.removeValue(forKey: id)
                return
            }
            entries[id]?.stamp = FileStamp(after)
        }
    }
}
