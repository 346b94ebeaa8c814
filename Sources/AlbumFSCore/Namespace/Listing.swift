import AlbumCore
import Glibc

/// One entry of a folder listing. `cookie` is the readdir offset that resumes after it.
public struct DirectoryEntry: Sendable, Equatable {
    public let name: String
    public let ino: UInt64
    /// Nil when knowing them would mean waiting (a thumbnail not made yet): the entry is
    /// listed by name and number, and a stat of it makes it.
    public let attributes: Attributes?
    public let cookie: Int64

    init(name: String, attributes: Attributes, cookie: Int64) {
        self.name = name
        self.ino = attributes.ino
        self.attributes = attributes
        self.cookie = cookie
    }

    init(name: String, ino: UInt64, cookie: Int64) {
        self.name = name
        self.ino = ino
        self.attributes = nil
        self.cookie = cookie
    }
}

/// Readdir cookies are keys, not positions, so that a listing re-opened at any offset
/// continues where it was, however the folder changed meanwhile (NFS servers re-open
/// folders for every READDIR):
///
/// | cookie | entries |
/// |---|---|
/// | 1, 2 | `.` and `..` |
/// | 3 + i | fixed entries: `.thumbnails`, the folders of the root and of Smart Albums |
/// | 64 + id | sub-albums and scratch files (by id), date folders (by yyyy, yyyymm, yyyymmdd) |
/// | 2^62 + sort key | assets, oldest capture first (see `SortKey`) |
enum Cookie {
    static let dot: Int64 = 1
    static let dotdot: Int64 = 2
    static let firstFixed: Int64 = 3
    static let firstObject: Int64 = 64
    static let assetTag: Int64 = 1 << 62

    static func object(_ id: Int64) -> Int64 { firstObject + id }
    static func asset(_ sortKey: Int64) -> Int64 { assetTag | sortKey }

    /// The object id to list after, for a cookie `after`.
    static func objectAfter(_ after: Int64) -> Int64? {
        if after >= assetTag { return nil }
        return max(after - firstObject, 0)
    }

    /// The sort key to list after.
    static func assetAfter(_ after: Int64) -> Int64 {
        after >= assetTag ? after & ~assetTag : -1
    }
}

extension FileSystem {
    /// Up to `limit` entries of a folder after cookie `after` (0: from the start).
    public func readdir(_ ino: UInt64, after: Int64, limit: Int) throws -> [DirectoryEntry] {
        let page = try pageReadAhead(ino, after: after, limit: limit)
            ?? library.read(snapshot: true) { r in try readdir(ino, after: after, limit: limit, r) }
        // Photos a close brought back from Recently Deleted, or made a name of here,
        // moments ago: listed without attributes, so that the kernel keeps no name of
        // theirs (`Found.keepName`); and photos and thumbnails whose save is landing or just
        // landed, whose size the kernel must not keep (`OpensAcrossSaves.savedRecently`).
        let restored = saves.assetsKeepingNoName(in: ino), saved = opensAcrossSaves.inodesSavedRecently()
        guard !restored.isEmpty || !saved.isEmpty else { return page }
        return page.map { entry in
            guard entry.attributes?.kind == .file,
                  restored.contains(Int64(entry.ino)) || saved.contains(entry.ino) else { return entry }
            return DirectoryEntry(name: entry.name, ino: entry.ino, cookie: entry.cookie)
        }
    }

    func readdir(_ ino: UInt64, after: Int64, limit: Int, _ r: Records) throws -> [DirectoryEntry] {
        let folder = try self.folder(ino, in: r)
        var out: [DirectoryEntry] = []
        var full: Bool { out.count >= limit }
        if after < Cookie.dot {
            out.append(DirectoryEntry(name: ".", attributes: try attributes(of: folder), cookie: Cookie.dot))
        }
        if after < Cookie.dotdot && !full {
            let up = try parent(of: folder, in: r) ?? .root
            out.append(DirectoryEntry(name: "..", attributes: try attributes(of: up), cookie: Cookie.dotdot))
        }

        // Fixed entries.
        var fixed: [(String, Item)] = []
        switch folder {
        case .root: fixed = Self.rootChildren
        case .smartAlbums: fixed = Self.smartChildren
        case .allPhotos, .smart, .day, .album:
            // Reachable by path always; listed only when the mount asks (MountOptions),
            // or, in an album, when files were copied into its .thumbnails/ (a card's own:
            // the tree copies out as it came in; `thumbnailEntries`).
            if options.listThumbnails {
                fixed = [(Self.thumbnailsFolderName, .thumbnails(of: ino)), (Self.sharedFolderName, .sharedThumbnails(of: ino))]
            } else if case .album = folder, after < Cookie.firstFixed,
                      try !r.plainFiles(in: Node.thumbnails(of: ino).ino, limit: 1).isEmpty {
                fixed = [(Self.thumbnailsFolderName, .thumbnails(of: ino))]
            }
        case .sharedThumbnails(let folder):
            fixed = Self.sharedSizes.map { ($0.name, .sharedSize(of: folder, large: $0.large)) }
        default: break
        }
        for (index, (name, item)) in fixed.enumerated() where !full {
            let cookie = Cookie.firstFixed + Int64(index)
            if cookie > after { out.append(DirectoryEntry(name: name, attributes: try attributes(of: item), cookie: cookie)) }
        }
        if full { return out }

        // Sub-albums and plain files (by id), or date folders.
        if let idAfter = Cookie.objectAfter(after) {
            let room = limit - out.count
            switch folder {
            case .byDate:
                for year in try r.years() where Int64(year) > idAfter && out.count < limit {
                    out.append(DirectoryEntry(name: DateNames.year(year), attributes: virtualFolderAttributes(.year(year)),
                                              cookie: Cookie.object(Int64(year))))
                }
            case .year(let y):
                for month in try r.months(ofYear: y) where Int64(month) > idAfter && out.count < limit {
                    out.append(DirectoryEntry(name: DateNames.month(month), attributes: virtualFolderAttributes(.month(month)),
                                              cookie: Cookie.object(Int64(month))))
                }
            case .month(let m):
                for day in try r.days(ofMonth: m) where Int64(day) > idAfter && out.count < limit {
                    out.append(DirectoryEntry(name: DateNames.day(day), attributes: virtualFolderAttributes(.day(day)),
                                              cookie: Cookie.object(Int64(day))))
                }
            case .sharedThumbnails, .sharedSize:
                break
            default:
                var objects: [DirectoryEntry] = []
                var parentAlbum: Int64?
                if case .albumsTop = folder { parentAlbum = 0 }
                if case .root = folder { parentAlbum = Album.rootParent }  // the desktop trash folders
                if case .album(let album) = folder { parentAlbum = album.id }
                if let parentAlbum {
                    for sub in try r.albums(in: parentAlbum, after: idAfter, limit: room) {
                        objects.append(DirectoryEntry(name: sub.name, attributes: try attributes(of: .album(sub)),
                                                      cookie: Cookie.object(sub.id)))
                    }
                }
                for file in try r.plainFiles(in: ino, after: idAfter, limit: room) {
                    do {
                        // By its name's row: two names of one file (hard links) are two entries.
                        objects.append(DirectoryEntry(name: file.name, attributes: try attributes(of: file), cookie: Cookie.object(file.entry)))
                    } catch {
                        // Listed all the same (a stat of it says what is wrong), never hidden.
                        objects.append(DirectoryEntry(name: file.name, ino: UInt64(file.id), cookie: Cookie.object(file.entry)))
                    }
                }
                objects.sort { $0.cookie < $1.cookie }
                out += objects.prefix(room)
            }
        }
        if full { return out }

        // Assets, oldest capture first.
        let assetAfter = Cookie.assetAfter(after)
        let room = limit - out.count
        switch folder {
        case .allPhotos, .smart, .day:
            for asset in try r.listedAssets(in: folder.view!, after: assetAfter, limit: room) {
                out.append(DirectoryEntry(name: asset.name, attributes: attributes(of: asset), cookie: Cookie.asset(asset.sortKey)))
            }
        case .album(let album):
            for (membership, asset) in try r.listedMembers(ofAlbum: album.id, after: assetAfter, limit: room,
                                                           trashed: album.role == .trashFiles) {
                out.append(DirectoryEntry(name: membership.name, attributes: attributes(of: asset),
                                          cookie: Cookie.asset(membership.sortKey)))
            }
        case .byDate, .year, .month:
            // Files a client keeps there (`.DS_Store`, `._*`: `Rules.createFile`), after the
            // date folders, whose numbers take the object cookies; no photo is listed at
            // these levels, so the files take the photos' range, by id.
            for file in try r.plainFiles(in: ino, after: max(assetAfter, 0), limit: room) {
                let attributes = try? attributes(of: file)
                out.append(attributes.map { DirectoryEntry(name: file.name, attributes: $0, cookie: Cookie.asset(file.entry)) }
                           ?? DirectoryEntry(name: file.name, ino: UInt64(file.id), cookie: Cookie.asset(file.entry)))
            }
        case .thumbnails(let parentIno):
            out += try thumbnailEntries(in: parentIno, after: assetAfter, limit: room, r)
        case .sharedSize(let parentIno, let large):
            // By name only: a stat of one makes it (from the folder's JPEG thumbnail).
            for (entry, cookie) in try sharedEntries(in: parentIno, large: large, after: assetAfter, limit: room, r)
            where !thumbnails.failed(sha256: entry.asset.sha256, size: sharedSourceSize(large: large)) {
                out.append(DirectoryEntry(name: Self.sharedName(entry.name), ino: Item.sharedThumbnail(entry).ino, cookie: cookie))
            }
        default:
            break
        }
        return out
    }
}
