import AlbumCore
import Glibc

/// The table of PRODUCT.md section 3, in one place: what each operation means in each
/// kind of folder, or which errno refuses it and why. Every operation of the filesystem
/// core asks here first and carries out the answer; nothing else decides what a folder
/// allows. (docs/namespace.md shows the same table for people.)
enum Rules {
    /// The kinds of folder the table has columns for.
    enum Folder: Equatable {
        case albumsTop
        case album(Int64)
        case allPhotos
        case dateView
        case favorites
        case hidden
        case recentlyDeleted
        /// The read-only smart albums (Videos, Screenshots, ...).
        case view(SmartAlbum)
        /// The root, Smart Albums/ itself.
        case fixed
        /// A `.thumbnails/` folder (or the shared repository's), of an album (`ofAlbum`)
        /// or of a view. An album's keeps files copied into it (a camera card's own
        /// `.thumbnails/`) as plain files.
        case thumbnails(ofAlbum: Int64?)
        /// The desktop trash (docs/desktop-trash.md): `.Trash-UID` at the root, its
        /// `files/` (photos trashed through it) and its `info/` (plain files).
        case desktopTrash(Int64)
        case trashFiles(Int64)
        case trashInfo
        case trashExpunged

        init(_ item: Item) {
            switch item {
            case .albumsTop: self = .albumsTop
            case .album(let a):
                switch a.role {
                case nil: self = .album(a.id)
                case .desktopTrash: self = .desktopTrash(a.id)
                case .trashFiles: self = .trashFiles(a.id)
                case .trashInfo: self = .trashInfo
                case .trashExpunged: self = .trashExpunged
                }
            case .allPhotos: self = .allPhotos
            case .byDate, .year, .month, .day: self = .dateView
            case .smart(.favorites): self = .favorites
            case .smart(.hidden): self = .hidden
            case .smart(.recentlyDeleted): self = .recentlyDeleted
            case .smart(let s): self = .view(s)
            case .thumbnails(let folder): self = .thumbnails(ofAlbum: FixedInode.album(ofFolder: folder))
            case .sharedThumbnails, .sharedSize: self = .thumbnails(ofAlbum: nil)
            default: self = .fixed
            }
        }
    }

    // MARK: files

    /// Whether a file may be created under `name` in a folder (create, mknod, cp in).
    /// It starts as a plain file wherever it is allowed; whether it becomes a photo at
    /// its close is `importDestination`'s answer.
    static func createFile(in folder: Folder, name: String, folderName: String) throws {
        switch folder {
        case .album, .albumsTop, .allPhotos, .favorites, .hidden, .trashFiles, .trashInfo, .trashExpunged:
            return
        case .thumbnails(ofAlbum: _?):
            // A tree copied in with a `.thumbnails/` of its own (Android's DCIM): its
            // files are kept as plain files there, beside the thumbnails AlbumFS makes.
            return
        case .thumbnails(ofAlbum: nil):
            throw FSError.notPermitted("cannot create \(name) in .thumbnails/: thumbnails are made by AlbumFS")
        case .dateView, .recentlyDeleted, .view, .fixed, .desktopTrash:
            // Client junk (.DS_Store, ._*) is kept wherever a client browses; anything
            // else would be a photo in a view of the library.
            if Names.isScratch(name) { return }
            throw FSError.notPermitted("cannot create \(name) in \(folderName): it is a view of the library; copy into an album or All Photos")
        }
    }

    /// Where a photo closed (or renamed) under `name` in a folder goes: nil when it stays a
    /// plain file there, with the reason for the log.
    static func importDestination(in folder: Folder, name: String) -> Result<ImportDestination, Refusal> {
        if Names.isScratch(name) { return .failure(Refusal("\(name) is a hidden or junk name", quiet: true)) }
        if Sidecars.isSidecarName(name) { return .failure(Refusal("\(name) has a sidecar's name", quiet: true)) }
        switch folder {
        case .album(let id): return .success(ImportDestination(album: id, entryName: name, suffixOnConflict: false))
        case .allPhotos: return .success(.library)
        case .favorites: return .success(ImportDestination(favorite: true))
        case .hidden: return .success(ImportDestination(hidden: true))
        case .albumsTop:
            return .failure(Refusal("photos at the top of Albums/ stay plain files: move it into an album to add it to the library"))
        case .trashFiles, .trashInfo, .trashExpunged:
            return .failure(Refusal("the desktop trash keeps files as they are", quiet: true))
        default:
            return .failure(Refusal("this folder is a view of the library", quiet: true))
        }
    }

    /// Why a photo's bytes stay a plain file, and whether that is worth a log line.
    struct Refusal: Error {
        let reason: String
        let quiet: Bool
        init(_ reason: String, quiet: Bool = false) {
            self.reason = reason
            self.quiet = quiet
        }
    }

    /// Writing into an existing photo (a new version, PRODUCT.md section 3, last row).
    static func writeInto(_ asset: Asset) throws {
        if asset.isTrashed {
            throw FSError.notPermitted("\(asset.name) is in Recently Deleted: restore it before changing it")
        }
    }

    /// Whether plain files in a folder take part in saves (the minute of a save, a
    /// temporary file renamed over a photo): in Albums/ and All Photos.
    static func keepsSaves(_ folder: Folder) -> Bool {
        switch folder {
        case .album, .allPhotos, .favorites, .hidden: return true
        default: return false
        }
    }

    // MARK: rm, ln, mv

    /// What `rm` of a photo's entry does.
    enum Removal: Equatable {
        case leaveAlbum(Int64)
        case trash
        case unmarkFavorite
        case unhide
        case deleteForGood
    }

    static func remove(from folder: Folder, name: String, folderName: String) throws -> Removal {
        switch folder {
        case .album(let id): return .leaveAlbum(id)
        case .allPhotos, .dateView: return .trash
        case .favorites: return .unmarkFavorite
        case .hidden: return .unhide
        case .recentlyDeleted, .trashFiles: return .deleteForGood  // emptying the desktop trash, too
        default:
            throw FSError.notPermitted("cannot remove \(name) from \(folderName): it is a view of the library")
        }
    }

    /// What `ln` of a photo into a folder does.
    enum Link: Equatable {
        case joinAlbum(Int64)
        case nothing
        case markFavorite
        case hide
    }

    static func link(into folder: Folder, name: String, folderName: String) throws -> Link {
        switch folder {
        case .album(let id): return .joinAlbum(id)
        case .allPhotos: return .nothing
        case .favorites: return .markFavorite
        case .hidden: return .hide
        default: throw FSError.notPermitted("cannot link \(name) into \(folderName)")
        }
    }

    /// What a photo's entry leaving a folder by `mv` does (the source's half of a move).
    enum Departure: Equatable {
        case leaveAlbum(Int64)
        /// All Photos: the asset stays; only its name may change.
        case stay
        case unmarkFavorite
        case unhide
        case restore
    }

    static func moveOut(of folder: Folder, name: String, folderName: String) throws -> Departure {
        switch folder {
        case .album(let id): return .leaveAlbum(id)
        case .allPhotos: return .stay
        case .favorites: return .unmarkFavorite
        case .hidden: return .unhide
        case .recentlyDeleted, .trashFiles: return .restore
        default: throw FSError.notPermitted("cannot move \(name) out of \(folderName): it is a view of the library")
        }
    }

    /// What a photo's entry landing in a folder by `mv` does (the target's half).
    enum Arrival: Equatable {
        case joinAlbum(Int64)
        /// All Photos (and a rename inside Recently Deleted): the asset takes the name.
        case rename
        case markFavorite
        case hide
        /// Into the desktop trash's `files/`: to Recently Deleted (its albums kept for the
        /// restore, as `rm` in All Photos keeps them), listed there under this name.
        case trash(Int64)
        /// Into the desktop trash's `expunged/` (emptying the trash): deleted for good.
        case deleteForGood
    }

    private static func isTrashFiles(_ folder: Folder) -> Bool {
        if case .trashFiles = folder { return true }
        return false
    }

    static func moveIn(to folder: Folder, from source: Folder, name: String, folderName: String) throws -> Arrival {
        switch folder {
        case .album(let id): return .joinAlbum(id)
        case .allPhotos: return .rename
        case .favorites: return .markFavorite
        case .hidden: return .hide
        case .recentlyDeleted where source == .recentlyDeleted: return .rename
        // Restored to the date folder it was trashed from (a file manager moves it back
        // to the path its trash info names): back in the library, under that name.
        case .dateView where source == .recentlyDeleted || Self.isTrashFiles(source): return .rename
        case .trashFiles(let id): return .trash(id)
        case .trashExpunged: return .deleteForGood
        case .albumsTop:
            throw FSError.notPermitted("cannot move \(name) into Albums/ itself: it holds albums; move it into an album")
        default: throw FSError.notPermitted("cannot move \(name) into \(folderName)")
        }
    }

    // MARK: folders

    /// `mkdir`: the album it makes a sub-album of (0: the top of Albums/).
    static func makeFolder(in folder: Folder, name: String, folderName: String) throws -> Int64 {
        switch folder {
        case .albumsTop: return 0
        case .album(let id): return id
        case .desktopTrash, .trashFiles, .trashInfo, .trashExpunged:
            throw FSError.notPermitted("cannot make folder \(name) in the desktop trash: it holds files/, info/ and expunged/ only")
        default:
            throw FSError.notPermitted("cannot make folder \(name) in \(folderName): folders are albums, made in Albums/")
        }
    }

    /// `mkdir` of the desktop trash (the freedesktop.org trash specification): a file
    /// manager makes `.Trash-UID` at the top of the volume, then its `files/` and
    /// `info/`. The parent and role of the folder it makes, or nil when `name` is none of
    /// these here.
    static func makeTrashFolder(in folder: Folder, isRoot: Bool, name: String) -> (parent: Int64, role: AlbumRole)? {
        if isRoot, trashOwner(name) != nil { return (Album.rootParent, .desktopTrash) }
        if case .desktopTrash(let id) = folder {
            switch name {
            case "files": return (id, .trashFiles)
            case "info": return (id, .trashInfo)
            case "expunged": return (id, .trashExpunged)
            default: return nil
            }
        }
        return nil
    }

    /// The owner a `.Trash-UID` folder is for.
    static func trashOwner(_ name: String) -> UInt32? {
        guard name.hasPrefix(".Trash-"), let uid = UInt32(name.dropFirst(".Trash-".count)),
              String(uid) == name.dropFirst(".Trash-".count) else { return nil }
        return uid
    }

    /// Moving an album: the album it lands in (0: the top of Albums/).
    static func moveAlbum(into folder: Folder, name: String, folderName: String) throws -> Int64 {
        switch folder {
        case .albumsTop: return 0
        case .album(let id): return id
        case .trashFiles:
            throw FSError.notPermitted("albums do not go to the trash: remove their photos (rm in All Photos sends them to Recently Deleted), then rmdir \(name)")
        default: throw FSError.notPermitted("cannot move album \(name) into \(folderName): albums live in Albums/")
        }
    }

    /// Folders whose entries can change (modes matter with `default_permissions`).
    /// Read-only smart albums, date views and `.thumbnails/` are 0555.
    static func isWritable(_ folder: Folder) -> Bool {
        switch folder {
        case .albumsTop, .album, .allPhotos, .favorites, .hidden, .recentlyDeleted: return true
        case .desktopTrash, .trashFiles, .trashInfo, .trashExpunged: return true
        case .dateView: return true  // rm there moves a photo to Recently Deleted
        case .fixed: return true      // the root and Smart Albums/ keep client junk
        case .thumbnails(ofAlbum: let album): return album != nil
        case .view: return false
        }
    }
}
