import AlbumCore
import Glibc

extension FileSystem {
    public static let thumbnailsFolderName = ".thumbnails"

    /// Names of the fixed folders, in listing order.
    static let rootChildren: [(String, Node)] = [
        ("Albums", .albumsRoot), ("All Photos", .allPhotos), ("By Date", .byDate), ("Smart Albums", .smartAlbums),
    ]
    static let smartChildren: [(String, Node)] = SmartAlbum.allCases.map { ($0.folderName, .smart($0)) }

    /// Looks a name up in a folder. Names arrive as bytes: not UTF-8 is EILSEQ, over 255
    /// bytes ENAMETOOLONG. Case and Unicode normalization do not matter. `.` and `..`
    /// are answered for any folder (NFS asks them after a restart).
    public func lookup(parent: UInt64, name bytes: [UInt8]) throws -> Attributes {
        guard let folder = Node(ino: parent) else { throw FSError.noEntry("inode \(parent)") }
        if bytes == [0x2E] {
            return try attributes(of: folder)
        }
        if bytes == [0x2E, 0x2E] {
            guard let up = try self.parent(of: folder) else { throw FSError(ENOTDIR, "inode \(parent) is not a folder", logged: false) }
            return try attributes(of: up)
        }
        let name = try validName(bytes)
        return try lookup(in: folder, name: name)
    }

    func validName(_ bytes: [UInt8]) throws -> String {
        do {
            return try Names.validate(bytes: bytes)
        } catch let error as LibraryError {
            throw FSError(error.errno, "refused name \(String(decoding: bytes.prefix(80), as: UTF8.self)): \(error.description)")
        }
    }

    func lookup(in folder: Node, name: String) throws -> Attributes {
        let key = Names.key(name)
        if let pending = pendingFile(in: folder.ino, key: key) { return pending }
        switch folder {
        case .root:
            if let (_, node) = Self.rootChildren.first(where: { Names.key($0.0) == key }) { return try attributes(of: node) }
        case .smartAlbums:
            if let (_, node) = Self.smartChildren.first(where: { Names.key($0.0) == key }) { return try attributes(of: node) }
        case .albumsRoot:
            if let album = try library.album(named: name, in: 0) {
                return try attributes(of: .album(album), ino: UInt64(album.id))
            }
        case .byDate:
            if let year = Int(name), String(year) == name, (1000...9999).contains(year),
               try library.hasAssets(dayPrefix: year, divisor: 10000) {
                return virtualFolderAttributes(.year(year))
            }
        case .year(let year):
            if let month = DateNames.parseMonth(name, year: year), try library.hasAssets(dayPrefix: month, divisor: 100) {
                return virtualFolderAttributes(.month(month))
            }
        case .month(let month):
            if let day = DateNames.parseDay(name, month: month), try library.hasAssets(dayPrefix: day, divisor: 1) {
                return virtualFolderAttributes(.day(day))
            }
        case .thumbnails(let folderIno):
            return try lookupThumbnail(in: folderIno, name: name)
        case .thumbnail:
            throw FSError(ENOTDIR, "not a folder", logged: false)
        case .allPhotos, .smart, .day:
            if key == Names.key(Self.thumbnailsFolderName) { return virtualFolderAttributes(.thumbnails(of: folder.ino)) }
            if let asset = try library.asset(named: name, in: folder.view!) { return attributes(of: asset) }
        case .object(let id):
            guard let album = try library.album(id: id) else {
                if try object(id) != nil { throw FSError(ENOTDIR, "not a folder", logged: false) }
                throw FSError.noEntry("inode \(id)")
            }
            if key == Names.key(Self.thumbnailsFolderName) { return virtualFolderAttributes(.thumbnails(of: folder.ino)) }
            if let sub = try library.album(named: name, in: album.id) {
                return try attributes(of: .album(sub), ino: UInt64(sub.id))
            }
            if let (_, asset) = try library.member(named: name, ofAlbum: album.id) { return attributes(of: asset) }
        }
        if let scratch = try library.scratchFile(named: name, in: folder.ino) { return try attributes(of: scratch) }
        throw FSError.noEntry(name)
    }

    /// `.thumbnails/NAME.jpg` is the thumbnail of the asset NAME in the folder beside it.
    func lookupThumbnail(in folderIno: UInt64, name: String) throws -> Attributes {
        guard name.lowercased().hasSuffix(".jpg"), let asset = try assetEntry(in: folderIno, named: String(name.dropLast(4))),
              let file = thumbnail(of: asset)
        else {
            throw FSError.noEntry(name)
        }
        return thumbnailAttributes(asset.id, file)
    }

    /// The asset shown as `name` in a folder that lists assets.
    func assetEntry(in folderIno: UInt64, named name: String) throws -> Asset? {
        guard let folder = Node(ino: folderIno) else { return nil }
        if let view = folder.view { return try library.asset(named: name, in: view) }
        if case .object(let id) = folder { return try library.member(named: name, ofAlbum: id)?.1 }
        return nil
    }
}
