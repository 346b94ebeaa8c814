import Glibc
import Synchronization

/// The content-addressed store of originals (`LibraryPath.blob`). A blob is named by the
/// SHA-256 of its bytes and never changes once stored: it is fsynced, linked into place
/// and its folder fsynced before any row names it, and it is read-only (0400) from then
/// on.
///
/// A store that several hosts share (a library on PostgreSQL) is written more carefully:
/// a blob is linked into place only once its bytes are synced (no early link), a plain
/// file's bytes are copied into place, never linked (`placeCopy`), and a blob file of
/// the same name found without a row is another host's placement about to be committed
/// as often as a leftover, so it is kept when its bytes are right (`Library.placeBlob`).
public struct BlobStore: Sendable {
    let files: LibraryFiles
    /// Whether other hosts place blobs here too.
    public let shared: Bool

    init(files: LibraryFiles, shared: Bool = false) {
        self.files = files
        self.shared = shared
    }

    public func exists(_ sha256: String) -> Bool { files.exists(.blob(sha256)) }

    /// Opens a blob to read it.
    public func open(_ sha256: String) throws -> FileDescriptor {
        try files.open(.blob(sha256), flags: O_RDONLY)
    }

    /// What placing a file as a blob did, so that a transaction that then fails can take
    /// it back.
    public struct Placement: Sendable {
        public let sha256: String
        /// Whether this placement made the blob (false: the bytes were there already).
        public let created: Bool

        public init(sha256: String, created: Bool) {
            self.sha256 = sha256
            self.created = created
        }
    }

    /// Places `source`, a file of the library holding exactly the bytes named by
    /// `sha256` (its descriptor open), as the blob of those bytes: fsynced, then linked
    /// into `originals/` (the source keeps its own name until the caller's transaction
    /// commits and it removes it), then the folder fsynced. `replaceDamaged` replaces a
    /// blob file of that name that is no longer what was stored (healing it).
    public func place(_ source: LibraryPath, descriptor: FileDescriptor, sha256: String,
                      replaceDamaged: Bool = false) throws -> Placement {
        let target = LibraryPath.blob(sha256)
        if !replaceDamaged && exists(sha256) { return Placement(sha256: sha256, created: false) }
        if shared && source.parent == .plainFiles {
            return try placeCopy(of: source, descriptor: descriptor, sha256: sha256, replaceDamaged: replaceDamaged)
        }
        try descriptor.sync()
        let createdFolder = try files.makeFolder(target.parent)
        var synced = source
        if replaceDamaged {
            // A second name first, then over the damaged file in one rename.
            synced = target.parent.appending(".\(sha256).heal")
            _ = try files.remove(synced)
            try files.link(source, to: synced)
        }
        return try putInPlace(synced, as: sha256, replaceDamaged: replaceDamaged, createdFolder: createdFolder)
    }

    /// The last steps of a placement: `synced`, a name of the synced bytes, linked to the
    /// blob's name (renamed over it, when `replaceDamaged`), and the folders synced.
    private func putInPlace(_ synced: LibraryPath, as sha256: String, replaceDamaged: Bool, createdFolder: Bool) throws -> Placement {
        let target = LibraryPath.blob(sha256)
        if replaceDamaged {
            try files.rename(synced, to: target)
        } else {
            do {
                try files.link(synced, to: target)
            } catch let error as LibraryError where error.errno == EEXIST {
                return Placement(sha256: sha256, created: false)  // another import or host placed it first
            }
        }
        try files.syncFolder(target.parent)
        if createdFolder { try files.syncFolder(.originals) }
        return Placement(sha256: sha256, created: true)
    }

    /// `place` of a plain file's bytes in a store several hosts share: a copy of them, so
    /// that the blob is a file of its own. A link would share the file with the plain
    /// file, and another host may go on writing into it: through handles it has open
    /// (that host does not know this one is making a photo of the file), or because the
    /// file stays plain after all when this host's transaction fails once another host's
    /// row named the blob (`Library.takeBack` then leaves the blob's name). Both were
    /// seen as blobs whose bytes changed under their photos (`plain-stress.py photos=
    /// elsewhere=`). The copy is hashed before it is placed: bytes changed meanwhile are
    /// `changedMeanwhile`, and the caller reads them again.
    private func placeCopy(of source: LibraryPath, descriptor: FileDescriptor, sha256: String,
                           replaceDamaged: Bool) throws -> Placement {
        let target = LibraryPath.blob(sha256)
        let createdFolder = try files.makeFolder(target.parent)
        // A second name first (`healLeftovers` finds it after a crash), then into place.
        let copy = target.parent.appending(".\(sha256).\(getpid())-\(Self.copies.add(1, ordering: .relaxed).newValue).heal")
        let made = try files.open(copy, flags: O_RDWR | O_CREAT | O_EXCL)
        defer { _ = try? files.remove(copy) }
        try SystemCalls.copyAll(from: descriptor, to: made, length: try descriptor.size())
        guard try made.sha256() == sha256 else { throw LibraryError.changedMeanwhile("the bytes of \(source)") }
        try made.setMode(0o400)  // sealed at once: nothing writes this file
        try made.sync()
        return try putInPlace(copy, as: sha256, replaceDamaged: replaceDamaged, createdFolder: createdFolder)
    }

    /// Numbers the copies this process makes (`placeCopy`), for their second names.
    private static let copies = Atomic<UInt64>(0)

    /// Links `source` into `originals/` under its hash before its bytes are synced, so
    /// that the file and the folder that now names it can be synced side by side
    /// (`SyncAhead`) rather than one after the other: one journal commit instead of two
    /// on the way to a durable close. The caller syncs both before any row names the
    /// blob, and takes the placement back (`undo`) if none will. Nil when a blob of that
    /// hash exists already. A crash before the sync may leave a blob file that no row
    /// names and whose bytes are short: such a file is never trusted
    /// (`Library.placeBlob`).
    public func placeEarly(_ source: LibraryPath, sha256: String) throws -> (Placement, folders: [LibraryPath])? {
        let target = LibraryPath.blob(sha256)
        if shared || exists(sha256) { return nil }
        let createdFolder = try files.makeFolder(target.parent)
        do {
            try files.link(source, to: target)
        } catch let error as LibraryError where error.errno == EEXIST {
            return nil
        }
        return (Placement(sha256: sha256, created: true), createdFolder ? [target.parent, .originals] : [target.parent])
    }

    /// Makes a blob file placed by someone else durable before a row of ours names it
    /// (fsync of the file and of its folder).
    public func syncPlaced(_ sha256: String) throws {
        try open(sha256).sync()
        try files.syncFolder(LibraryPath.blob(sha256).parent)
    }

    /// Takes back a placement whose transaction failed (the blob is named by nothing).
    public func undo(_ placement: Placement) {
        if placement.created { _ = try? files.remove(.blob(placement.sha256)) }
    }

    /// Makes a placed blob read-only, once its rows are committed and nothing else
    /// writes its file.
    public func seal(_ sha256: String, descriptor: FileDescriptor) {
        try? descriptor.setMode(0o400)
    }

    /// Removes a blob file (gc). Missing files are not an error.
    public func remove(_ sha256: String) throws {
        try files.remove(.blob(sha256))
    }

    /// Second names of bytes on their way into place (`.<sha256>.heal` of healing bytes,
    /// `.<sha256>.<pid>-<n>.heal` of a copy, see `place`) that a crash left: for gc to
    /// remove.
    public func healLeftovers() throws -> [LibraryPath] {
        var result: [LibraryPath] = []
        for folder in try files.names(in: .originals) where folder.utf8.count == 2 {
            let path = LibraryPath.originals.appending(folder)
            for name in try files.names(in: path) where name.hasPrefix(".") && name.hasSuffix(".heal") {
                result.append(path.appending(name))
            }
        }
        return result
    }

    /// Every blob file in the store, by name, with the folder it is in (for check and gc).
    public func allFiles() throws -> [(folder: String, name: String)] {
        var result: [(String, String)] = []
        for folder in try files.names(in: .originals) where folder.utf8.count == 2 {
            for name in try files.names(in: LibraryPath.originals.appending(folder)) where !name.hasPrefix(".") {
                result.append((folder, name))
            }
        }
        return result
    }
}
