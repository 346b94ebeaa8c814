import AlbumCore

/// What an inode number stands for. Every number decodes to its node without any
/// table, so a client holding a number from before a restart (an NFS file handle) is
/// answered from the database alone.
///
/// | inode | node |
/// |---|---|
/// | 1 ... 5 | root, Albums, All Photos, By Date, Smart Albums |
/// | 16 + n | smart album n |
/// | 1000 ... 2^48 - 1 | an album, asset or plain file (its id in the library) |
/// | 1<<56 + code | a date folder: yyyy, yyyymm or yyyymmdd |
/// | 2<<56 + id | the thumbnail of asset id |
/// | 3<<56 + folder | the `.thumbnails` folder of a folder (a date folder's code with bit 52) |
public enum Node: Hashable, Sendable {
    case root
    case albumsRoot
    case allPhotos
    case byDate
    case smartAlbums
    case smart(SmartAlbum)
    case year(Int)
    case month(Int)          // yyyymm
    case day(Int)            // yyyymmdd
    case thumbnails(of: UInt64)
    case thumbnail(asset: Int64)
    /// An album, asset, scratch file or file being written: which one is in the library.
    case object(Int64)

    static let dateTag: UInt64 = 1 << 56
    static let thumbnailTag: UInt64 = 2 << 56
    static let thumbnailsDirTag: UInt64 = 3 << 56
    static let tagMask: UInt64 = 0xFF << 56
    static let dateInThumbnailsDir: UInt64 = 1 << 52
    static let objectLimit: UInt64 = 1 << 48

    public var ino: UInt64 {
        switch self {
        case .root: return FixedInode.root
        case .albumsRoot: return FixedInode.albums
        case .allPhotos: return FixedInode.allPhotos
        case .byDate: return FixedInode.byDate
        case .smartAlbums: return FixedInode.smartAlbums
        case .smart(let album): return FixedInode.firstSmartAlbum + UInt64(album.rawValue)
        case .year(let y): return Self.dateTag | UInt64(y)
        case .month(let m): return Self.dateTag | UInt64(m)
        case .day(let d): return Self.dateTag | UInt64(d)
        case .thumbnails(let folder):
            if folder & Self.tagMask == Self.dateTag {
                return Self.thumbnailsDirTag | Self.dateInThumbnailsDir | (folder & ~Self.tagMask)
            }
            return Self.thumbnailsDirTag | folder
        case .thumbnail(let asset): return Self.thumbnailTag | UInt64(asset)
        case .object(let id): return UInt64(id)
        }
    }

    /// The node of an inode number, or nil for a number that was never handed out.
    public init?(ino: UInt64) {
        switch ino & Self.tagMask {
        case 0:
            switch ino {
            case FixedInode.root: self = .root
            case FixedInode.albums: self = .albumsRoot
            case FixedInode.allPhotos: self = .allPhotos
            case FixedInode.byDate: self = .byDate
            case FixedInode.smartAlbums: self = .smartAlbums
            case FixedInode.firstSmartAlbum..<(FixedInode.firstSmartAlbum + UInt64(SmartAlbum.allCases.count)):
                self = .smart(SmartAlbum(rawValue: Int(ino - FixedInode.firstSmartAlbum))!)
            case 1000..<Self.objectLimit: self = .object(Int64(ino))
            default: return nil
            }
        case Self.dateTag:
            let code = Int(ino & ~Self.tagMask)
            switch code {
            case 1000...9999: self = .year(code)
            case 100001...999912 where (1...12).contains(code % 100): self = .month(code)
            case 10000101...99991231 where (1...12).contains(code / 100 % 100) && (1...31).contains(code % 100):
                self = .day(code)
            default: return nil
            }
        case Self.thumbnailTag:
            let id = ino & ~Self.tagMask
            guard id >= 1000 && id < Self.objectLimit else { return nil }
            self = .thumbnail(asset: Int64(id))
        case Self.thumbnailsDirTag:
            var folder = ino & ~Self.tagMask
            if folder & Self.dateInThumbnailsDir != 0 { folder = Self.dateTag | (folder & ~Self.dateInThumbnailsDir) }
            guard let parent = Node(ino: folder), parent.listsAssets else { return nil }
            self = .thumbnails(of: folder)
        default:
            return nil
        }
    }

    /// Folders that list assets, and so have a `.thumbnails/` subfolder. Albums are
    /// objects: whether an object is an album is known only from the library.
    var listsAssets: Bool {
        switch self {
        case .allPhotos, .smart, .day, .object: return true
        default: return false
        }
    }

    /// The view of a virtual folder that lists assets.
    var view: AssetView? {
        switch self {
        case .allPhotos: return .allPhotos
        case .smart(let album): return .smart(album)
        case .day(let d): return .day(d)
        default: return nil
        }
    }
}

/// Directory entry names of the date folders: `2024`, `2024-06`, `2024-06-15`.
enum DateNames {
    static func year(_ y: Int) -> String { String(y) }
    static func month(_ m: Int) -> String { "\(m / 100)-\(two(m % 100))" }
    static func day(_ d: Int) -> String { "\(d / 10000)-\(two(d / 100 % 100))-\(two(d % 100))" }
    static func two(_ v: Int) -> String { v < 10 ? "0\(v)" : String(v) }

    /// Parses the name of a month folder of `year` (`2024-06`) into yyyymm.
    static func parseMonth(_ name: String, year: Int) -> Int? {
        let parts = name.split(separator: "-")
        guard parts.count == 2, Int(parts[0]) == year, parts[1].count == 2, let m = Int(parts[1]), (1...12).contains(m) else { return nil }
        return year * 100 + m
    }

    /// Parses the name of a day folder of `month` (`2024-06-15`) into yyyymmdd.
    static func parseDay(_ name: String, month: Int) -> Int? {
        let parts = name.split(separator: "-")
        guard parts.count == 3, Int(parts[0]) == month / 100, Int(parts[1]) == month % 100, parts[2].count == 2,
              let d = Int(parts[2]), (1...31).contains(d) else { return nil }
        return month * 100 + d
    }
}
