import AlbumCore
import Glibc

/// What a folder is, for deciding what a change there means (PRODUCT.md section 3).
enum FolderRole: Equatable {
    case root
    case albumsRoot
    case album(Int64)
    case allPhotos
    case byDate            // By Date and its year and month folders
    case day(Int)
    case smartAlbums
    case smart(SmartAlbum)
    case thumbnails(UInt64)

    var displayName: String {
        switch self {
        case .root: return "the root"
        case .albumsRoot: return "Albums/"
        case .album: return "an album"
        case .allPhotos: return "All Photos/"
        case .byDate, .day: return "a date view"
        case .smartAlbums: return "Smart Albums/"
        case .smart(let s): return "Smart Albums/\(s.folderName)/"
        case .thumbnails: return ".thumbnails/"
        }
    }
}

extension FileSystem {
    func role(of ino: UInt64) throws -> FolderRole {
        guard let node = Node(ino: ino) else { throw FSError.noEntry("inode \(ino)") }
        switch node {
        case .root: return .root
        case .albumsRoot: return .albumsRoot
        case .allPhotos: return .allPhotos
        case .byDate, .year, .month:
            guard try exists(node) else { throw FSError.noEntry("inode \(ino)") }
            return .byDate
        case .day(let d):
            guard try exists(node) else { throw FSError.noEntry("inode \(ino)") }
            return .day(d)
        case .smartAlbums: return .smartAlbums
        case .smart(let s): return .smart(s)
        case .thumbnails(let folder):
            guard try exists(node) else { throw FSError.noEntry("inode \(ino)") }
            return .thumbnails(folder)
        case .thumbnail: throw FSError(ENOTDIR, "not a folder", logged: false)
        case .object(let id):
            if try library.album(id: id) != nil { return .album(id) }
            if try object(id) != nil || writers.get(ino) != nil { throw FSError(ENOTDIR, "not a folder", logged: false) }
            throw FSError.noEntry("inode \(ino)")
        }
    }

    /// Where a file made in a folder is imported to (create, `cp` in, a rename of a
    /// scratch file onto a media name). EPERM where the table says so.
    func importDestination(_ role: FolderRole, name: String) throws -> ImportDestination {
        switch role {
        case .album(let id): return ImportDestination(album: id, entryName: name, suffixOnConflict: false)
        case .allPhotos: return .library
        case .smart(.favorites): return ImportDestination(favorite: true)
        case .smart(.hidden): return ImportDestination(hidden: true)
        case .albumsRoot:
            throw FSError.notPermitted("cannot import \(name) into Albums/ itself: it holds albums; copy into an album (mkdir one first)")
        default:
            throw FSError.notPermitted("cannot import \(name) into \(role.displayName): it is a view of the library")
        }
    }

    /// Scratch files (dot files, client junk) may live in any folder but `.thumbnails/`.
    func checkScratchAllowed(_ role: FolderRole, name: String) throws {
        if case .thumbnails = role {
            throw FSError.notPermitted("cannot create \(name) in .thumbnails/: thumbnails are made by AlbumFS")
        }
    }
}
