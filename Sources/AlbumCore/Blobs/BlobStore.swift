import Glibc

/// The content-addressed store of originals (`LibraryPath.blob`). A blob is named by the
/// SHA-256 of its bytes and never changes once stored: it is fsynced, linked into place
/// and its folder fsynced before any row names it, and it is read-only (0400) from then
/// on.
///
/// A store that several hosts share (a library on PostgreSQL) is written more carefully:
/// a blob is linked into place only once its bytes are synced (no early link), and a
/// blob file of the same name found without a row is another host's placement about to
/// be committed as often as a leftover, so it is kept when its bytes are right
/// (`Library.placeBlob`).
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
        try descriptor.sync()
        let createdFolder = try files.makeFolder(target.parent)
        if replaceDamaged {
            // A second name first, then over the damaged file in one rename.
            let fresh = target.parent.appending(".\(sha256).heal")
            _ = try files.remove(fresh)
            try files.link(source, to: fresh)
            try files.rename(fresh, to: target)
        } else {
            do {
                try files.link(source, to: target)
            } catch let error as LibraryError where error.errno == EEXIST {
                return Placement(sha256: sha256, created: false)  // another import placed it first
            }
        }
        try files.syncFolder(target.parent)
        if createdFolder { try files.syncFolder(.originals) }
        return Placement(sha256: sha256, created: true)
    }

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

    /// Second names of healing bytes (`.<sha256>.heal`, see `place`) that a crash left
    /// between their link and their rename over the damaged blob: for gc to remove.
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
