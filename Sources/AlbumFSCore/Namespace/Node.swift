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
/// | 4<<56 + folder | the `.sh_thumbnails` folder of a folder (the same folder code) |
/// | 5<<56 + folder (+ bit 51 for large) | its `normal/` or `large/` |
/// | 6<<56 + id (+ bit 51 large, + bit 50 for an album entry) | a shared thumbnail: of asset id as All Photos and the views name it, or of album entry (membership) id |
///
/// The kernel's node ids are these numbers, but for photos and thumbnails whose kernel
/// inode was left to readers of an older version: those carry a generation in bits 48
/// to 55, and shared thumbnails in bits 52 to 55 (`KernelNodes`).
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
    /// The freedesktop.org shared thumbnail repository of a folder (`.sh_thumbnails/`),
    /// its `normal/` and `large/`, and one thumbnail there: of an asset as the views
    /// name it, or of an album entry (`entry`: the id is a membership's).
    case sharedThumbnails(of: UInt64)
    case sharedSize(of: UInt64, large: Bool)
    case sharedThumbnail(id: Int64, large: Bool, entry: Bool)
    /// An album, asset, plain file or file being written: which one is in the library.
    case object(Int64)

    static let dateTag: UInt64 = 1 << 56
    static let thumbnailTag: UInt64 = 2 << 56
    static let thumbnailsDirTag: UInt64 = 3 << 56
    static let tagMask: UInt64 = 0xFF << 56
    static let dateInThumbnailsDir: UInt64 = 1 << 52
    static let sharedDirTag: UInt64 = 4 << 56
    static let sharedSizeTag: UInt64 = 5 << 56
    static let sharedThumbnailTag: UInt64 = 6 << 56
    static let largeBit: UInt64 = 1 << 51
    static let entryBit: UInt64 = 1 << 50
    static let objectLimit: UInt64 = 1 << 48

    public var ino: UInt64 {
        switch self {
        case .root: return FixedInode.root
        case .albumsRoot: return FixedInode.albums
        case .allPhotos: return FixedInode.allPhotos
        case .byDate: return FixedInode.byDate
        case .smartAlbums: return FixedInode.smartAlbums
        case .smart(let album): return FixedInode.folder(of: album)
        case .year(let y): return Self.dateTag | UInt64(y)
        case .month(let m): return Self.dateTag | UInt64(m)
        case .day(let d): return Self.dateTag | UInt64(d)
        case .thumbnails(let folder): return Self.thumbnailsDirTag | Self.folderCode(folder)
        case .sharedThumbnails(let folder): return Self.sharedDirTag | Self.folderCode(folder)
        case .sharedSize(let folder, let large): return Self.sharedSizeTag | Self.folderCode(folder) | (large ? Self.largeBit : 0)
        case .sharedThumbnail(let id, let large, let entry):
            return Self.sharedThumbnailTag | UInt64(id) | (large ? Self.largeBit : 0) | (entry ? Self.entryBit : 0)
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
            guard let folder = Self.folder(ofCode: ino & ~Self.tagMask) else { return nil }
            self = .thumbnails(of: folder)
        case Self.sharedDirTag:
            guard let folder = Self.folder(ofCode: ino & ~Self.tagMask) else { return nil }
            self = .sharedThumbnails(of: folder)
        case Self.sharedSizeTag:
            guard let folder = Self.folder(ofCode: ino & ~Self.tagMask & ~Self.largeBit) else { return nil }
            self = .sharedSize(of: folder, large: ino & Self.largeBit != 0)
        case Self.sharedThumbnailTag:
            let id = ino & ~Self.tagMask & ~Self.largeBit & ~Self.entryBit
            guard id >= 1 && id < Self.objectLimit else { return nil }
            let entry = ino & Self.entryBit != 0
            // Assets are objects (ids from 1000); album entries are numbered from 1.
            if !entry && id < 1000 { return nil }
            self = .sharedThumbnail(id: Int64(id), large: ino & Self.largeBit != 0, entry: entry)
        default:
            return nil
        }
    }

    /// A folder's code in the number of its thumbnail folders: its own number, a date
    /// folder's code with bit 52 instead of its tag.
    static func folderCode(_ folder: UInt64) -> UInt64 {
        folder & tagMask == dateTag ? dateInThumbnailsDir | (folder & ~tagMask) : folder
    }

    /// The folder a code stands for, if it is one that lists assets.
    static func folder(ofCode code: UInt64) -> UInt64? {
        let folder = code & dateInThumbnailsDir != 0 ? dateTag | (code & ~dateInThumbnailsDir) : code
        guard let parent = Node(ino: folder), parent.listsAssets else { return nil }
        return folder
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
