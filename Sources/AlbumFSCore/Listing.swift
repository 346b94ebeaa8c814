import AlbumCore
import Glibc

/// One entry of a folder listing. `cookie` is the readdir offset that resumes after it.
public struct DirectoryEntry: Sendable, Equatable {
    public let name: String
    public let attributes: Attributes
    public let cookie: Int64
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
        guard let folder = Node(ino: ino) else { throw FSError.noEntry("inode \(ino)") }
        var album: Album?
        if case .object(let id) = folder {
            guard let found = try library.album(id: id) else {
                if try object(id) != nil { throw FSError(ENOTDIR, "not a folder", logged: false) }
                throw FSError.noEntry("inode \(id)")
            }
            album = found
        } else if case .thumbnail = folder {
            throw FSError(ENOTDIR, "not a folder", logged: false)
        } else if !(try exists(folder)) {
            throw FSError.noEntry("inode \(ino)")
        }

        var out: [DirectoryEntry] = []
        var full: Bool { out.count >= limit }
        if after < Cookie.dot {
            out.append(DirectoryEntry(name: ".", attributes: try attributes(of: folder), cookie: Cookie.dot))
        }
        if after < Cookie.dotdot && !full {
            let up = try parent(of: folder) ?? .root
            out.append(DirectoryEntry(name: "..", attributes: try attributes(of: up), cookie: Cookie.dotdot))
        }

        // Fixed entries.
        var fixed: [(String, Node)] = []
        switch folder {
        case .root: fixed = Self.rootChildren
        case .smartAlbums: fixed = Self.smartChildren
        case .allPhotos, .smart, .day, .object: fixed = [(Self.thumbnailsFolderName, .thumbnails(of: ino))]
        default: break
        }
        for (index, (name, node)) in fixed.enumerated() where !full {
            let cookie = Cookie.firstFixed + Int64(index)
            if cookie > after { out.append(DirectoryEntry(name: name, attributes: try attributes(of: node), cookie: cookie)) }
        }
        if full { return out }

        // Sub-albums and scratch files (by id), or date folders.
        if let idAfter = Cookie.objectAfter(after) {
            let room = limit - out.count
            switch folder {
            case .byDate:
                for year in try library.years() where Int64(year) > idAfter && out.count < limit {
                    out.append(DirectoryEntry(name: DateNames.year(year), attributes: virtualFolderAttributes(.year(year)),
                                              cookie: Cookie.object(Int64(year))))
                }
            case .year(let y):
                for month in try library.months(ofYear: y) where Int64(month) > idAfter && out.count < limit {
                    out.append(DirectoryEntry(name: DateNames.month(month), attributes: virtualFolderAttributes(.month(month)),
                                              cookie: Cookie.object(Int64(month))))
                }
            case .month(let m):
                for day in try library.days(ofMonth: m) where Int64(day) > idAfter && out.count < limit {
                    out.append(DirectoryEntry(name: DateNames.day(day), attributes: virtualFolderAttributes(.day(day)),
                                              cookie: Cookie.object(Int64(day))))
                }
            case .thumbnails:
                break
            default:
                var objects: [DirectoryEntry] = []
                let parentAlbum: Int64? = folder == .albumsRoot ? 0 : album?.id
                if let parentAlbum {
                    for sub in try library.albums(in: parentAlbum, after: idAfter, limit: room) {
                        objects.append(DirectoryEntry(name: sub.name, attributes: try attributes(of: .album(sub), ino: UInt64(sub.id)),
                                                      cookie: Cookie.object(sub.id)))
                    }
                }
                for file in try library.scratchFiles(in: ino, after: idAfter, limit: room) {
                    guard let attributes = try? attributes(of: file) else { continue }
                    objects.append(DirectoryEntry(name: file.name, attributes: attributes, cookie: Cookie.object(file.id)))
                }
                // Files being written show under their names until they are imported.
                for pending in writers.newFiles(in: ino) where Int64(pending) > idAfter {
                    guard let writer = writers.get(pending) else { continue }
                    let entry = writer.withLock { () -> DirectoryEntry? in
                        guard case .newFile(_, let name) = writer.target else { return nil }
                        return DirectoryEntry(name: name, attributes: writerAttributes(writer), cookie: Cookie.object(Int64(pending)))
                    }
                    if let entry { objects.append(entry) }
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
            for asset in try library.assets(in: folder.view!, after: assetAfter, limit: room) {
                out.append(DirectoryEntry(name: asset.name, attributes: attributes(of: asset), cookie: Cookie.asset(asset.sortKey)))
            }
        case .object:
            if let album {
                for (membership, asset) in try library.members(ofAlbum: album.id, after: assetAfter, limit: room) {
                    out.append(DirectoryEntry(name: membership.name, attributes: attributes(of: asset),
                                              cookie: Cookie.asset(membership.sortKey)))
                }
            }
        case .thumbnails(let parentIno):
            out += try thumbnailEntries(in: parentIno, after: assetAfter, limit: room)
        default:
            break
        }
        return out
    }
}
