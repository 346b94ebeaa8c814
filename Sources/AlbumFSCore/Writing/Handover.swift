import AlbumCore
import Glibc

/// A photo's name that becomes a plain file takes the photo's writing handles with it, as
/// a file's handles stay with the file on a disk whatever happens to its names. Two ways
/// lead here: the photo renamed to a hidden name (`Rename.hidePhotoEntry`), and a save
/// tool's backup (`P.jpg` renamed to `P.jpg~`, the next version written as `P.jpg`: the
/// backup name becomes a plain file, `Arrival.saveVersion`).
///
/// The plain file then holds the bytes the name showed:
/// - the bytes handles are still writing into the photo: the writer's private copy is
///   linked as the plain file's bytes, the writer becomes the plain file's (its handles
///   write on into it, its close is a plain file's), and the photo, with no writer left,
///   shows its last version (or the version the save brought);
/// - a copy of the photo's current version, when handles have it open for writing with
///   nothing written yet: they go with the name all the same, so that what they write
///   next is the plain file's and never reaches the photo (nor is lost, as it would be
///   if they kept a version nobody can name);
/// - nothing, when the photo was emptied and no handle has it open;
/// - else the photo's version as it is: no handover, the plain file shares the blob.
///
/// The caller holds the writer's `io` from `prepareHandover` to `completeHandover` (or
/// `cancelHandover`), around the transaction that makes the plain file with `own` as its
/// inode number: no close commits the handles' bytes meanwhile, and no write lands. A
/// handle that opens the photo meanwhile joins the writer (as on a disk it would open
/// the file the name moves), and so does one that opens the new file as soon as its row
/// is committed (`WriterTable.reserve`).
struct PlainHandover {
    /// The plain file's inode number; its bytes file is made and synced already.
    let own: Int64
    /// The writer's private copy, linked as the plain file's bytes.
    let pending: LibraryPath?
    /// A copy of the photo's current version, for handles that wrote nothing yet.
    let copy: FileDescriptor?
    /// The plain file's mtime: a copy keeps the photo's (a rename changes no mtime);
    /// bytes being written, or emptied, were changed just now, unless the handles set
    /// one (`cp -p`).
    let mtimeNs: Int64

    /// Whether the writer goes with the name (else only the bytes are the plain file's own).
    var takesHandles: Bool { pending != nil || copy != nil }
}

extension FileSystem {
    /// The plain file's own bytes, made before its row, when photo `asset`'s writer
    /// holds bytes that are not the photo's version (see `PlainHandover`); nil when the
    /// name shows that version. Inside the writer's `io`.
    func prepareHandover(of writer: Writer, photo asset: Asset, to newName: String) throws -> PlainHandover? {
        let pending = writer.pendingCopy()
        // A copy of the whole photo only for a handle that writes, never for readers.
        let untouched = pending == nil && writer.holdsCurrentBytesOpen && handles.writes(writer)
        guard pending != nil || untouched || writer.isEmptied else { return nil }
        let own = try newInodeNumber()
        // An mtime set through the handles while they wrote (`cp -p`), held for their
        // close: the plain file's from now on.
        let explicit = pending != nil ? writer.withLock({ writer.explicitMtimeNs }) : nil
        var copy: FileDescriptor?
        do {
            try explained("cannot make \(newName)") {
                if let pending {
                    try library.files.link(pending, to: .plainFile(own))
                    if let explicit {
                        try library.files.open(.plainFile(own), flags: O_RDWR, mode: 0).setModificationTime(nanoseconds: explicit)
                    }
                } else if untouched {
                    // Synced before the row names it: the photo may leave its last folder
                    // in the same transaction.
                    copy = try plainCopy(own, of: try library.openBlob(of: asset), length: asset.size, mtimeNs: asset.mtimeNanoseconds)
                } else {
                    _ = try library.files.open(.plainFile(own), flags: O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
                }
                try library.files.syncFolder(.plainFiles)
            }
        } catch {
            discard(.plainFile(own))
            throw error
        }
        let handover = PlainHandover(own: own, pending: pending, copy: copy,
                                     mtimeNs: explicit ?? (copy != nil ? asset.mtimeNanoseconds : nowNanoseconds()))
        if handover.takesHandles { writers.reserve(writer, as: own) }
        return handover
    }

    /// The plain file `handover.own` was made: the writer becomes its writer, and the
    /// photo moves to a new kernel inode (the handles keep theirs). Returns whether
    /// handles went with the name. Inside the writer's `io`.
    func completeHandover(_ handover: PlainHandover, of writer: Writer, photo asset: Asset) -> Bool {
        if let pending = handover.pending {
            writer.becamePlain(handover.own)
            discard(pending)
        } else if let copy = handover.copy {
            writer.becamePlain(handover.own, own: copy)
        }
        guard handover.takesHandles else { return false }
        writers.becamePlain(writer, handover.own)
        moveAway(asset, from: writer)
        return true
    }

    /// No plain file was made after all (the transaction failed, or made none): its bytes
    /// file goes, and the writer stays the photo's. Inside the writer's `io`.
    func cancelHandover(_ handover: PlainHandover, of writer: Writer) {
        if handover.takesHandles { writers.unreserve(writer, as: handover.own) }
        discard(.plainFile(handover.own))
    }
}
