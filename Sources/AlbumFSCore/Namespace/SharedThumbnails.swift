import AlbumCore
import Glibc

/// One entry of a folder as a shared thumbnail repository names it: the asset, its name
/// in that folder, the size, and the album entry it is (nil in All Photos and views).
struct SharedEntry {
    let asset: Asset
    let name: String
    let large: Bool
    let membership: Int64?
}

/// The freedesktop.org shared thumbnail repository (thumbnail specification, "Shared
/// thumbnail repositories"), beside `.thumbnails/` in every folder that lists photos:
/// `.sh_thumbnails/normal/` (128 pixels) and `.sh_thumbnails/large/` (256), each
/// thumbnail a PNG named by the MD5 of the entry's relative URI (`./` and the name,
/// escaped as GLib escapes a file name), carrying `Thumb::URI` (that URI) and
/// `Thumb::MTime` (the photo's st_mtime, so a new version makes a new thumbnail). Made
/// from the folder's `.thumbnails` JPEG; reachable by path, listed only with
/// `-o list_thumbnails` like `.thumbnails/`.
extension FileSystem {
    static let sharedFolderName = ".sh_thumbnails"
    static let sharedSizes: [(name: String, large: Bool, side: Int)] = [("normal", false, 128), ("large", true, 256)]

    /// `./NAME` with NAME escaped as GLib's g_filename_to_uri escapes a path segment:
    /// letters, digits and `-_.!~*'()` `:@&=+$,` stay; every other byte is `%XX`.
    static func relativeURI(_ name: String) -> String {
        let kept = Set("-_.!~*'():@&=+$,".utf8)
        var out = "./"
        for byte in name.utf8 {
            if (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || kept.contains(byte) {
                out.append(Character(Unicode.Scalar(byte)))
            } else {
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// The file name of an entry's thumbnail: the MD5 of its relative URI, and `.png`.
    static func sharedName(_ name: String) -> String { md5Hex(Array(relativeURI(name).utf8)) + ".png" }

    /// The entries of a folder that lists assets, in its order, with their cookies.
    func sharedEntries(in folderIno: UInt64, large: Bool, after: Int64, limit: Int,
                       _ r: any LibraryRecords) throws -> [(SharedEntry, Int64)] {
        guard let folder = try item(folderIno, in: r) else { return [] }
        if let view = folder.view {
            return try r.assets(in: view, after: after, limit: limit).map {
                (SharedEntry(asset: $0, name: $0.name, large: large, membership: nil), Cookie.asset($0.sortKey))
            }
        }
        if case .album(let album) = folder {
            return try r.members(ofAlbum: album.id, after: after, limit: limit, trashed: album.role == .trashFiles).map {
                (SharedEntry(asset: $0.1, name: $0.0.name, large: large, membership: $0.0.id), Cookie.asset($0.0.sortKey))
            }
        }
        return []
    }

    /// The entry whose thumbnail is called `name` in a folder's repository. Names are
    /// hashes: the folder's names are hashed once per change of the library and kept.
    func sharedEntry(in folderIno: UInt64, large: Bool, named name: String, _ r: any LibraryRecords) throws -> SharedEntry? {
        let version = changedNs.withLock { $0 }
        if let cached = sharedNames.withLock({ $0[folderIno] }), cached.version == version {
            guard let found = cached.names[name] else { return nil }
            return try resolve(found, large: large, r)
        }
        var names: [String: (asset: Int64, name: String, membership: Int64?)] = [:]
        for (entry, _) in try sharedEntries(in: folderIno, large: large, after: -1, limit: Int.max, r) {
            names[Self.sharedName(entry.name)] = (entry.asset.id, entry.name, entry.membership)
        }
        sharedNames.withLock { cache in
            if cache.count > 64 { cache.removeAll() }
            cache[folderIno] = (version, names)
        }
        guard let found = names[name] else { return nil }
        return try resolve(found, large: large, r)
    }

    private func resolve(_ found: (asset: Int64, name: String, membership: Int64?), large: Bool,
                         _ r: any LibraryRecords) throws -> SharedEntry? {
        try r.asset(id: found.asset).map { SharedEntry(asset: $0, name: found.name, large: large, membership: found.membership) }
    }

    /// The PNG of an entry, made now if missing (waiting for its JPEG as a `.thumbnails`
    /// lookup does); nil when the photo has no thumbnail.
    func sharedThumbnailFile(_ entry: SharedEntry) throws -> Thumbnail? {
        let side = entry.large ? 256 : 128
        return try withThumbnail(of: entry.asset, size: sharedSourceSize(large: entry.large)) { jpeg in
            try thumbnails.sharedPNG(of: jpeg, sha256: entry.asset.sha256, side: side, uri: Self.relativeURI(entry.name),
                                     mtimeSeconds: Dates.floorSeconds(entry.asset.mtimeNanoseconds))
        }
    }

    /// The side of the JPEG a shared PNG is made from: the mount's `.thumbnails` one,
    /// unless that is smaller than the PNG (`-o thumbnail_size=128` and `large/`, 256):
    /// then one of the PNG's own side, so that every PNG has the side the
    /// specification gives its folder.
    func sharedSourceSize(large: Bool) -> Int { max(options.thumbnailSize, large ? 256 : 128) }

    /// The inode numbers of asset `id`'s shared thumbnails, at both sizes: the one the
    /// views name by the asset, and one for each of its album entries (`entries`).
    static func sharedThumbnailInodes(of id: Int64, entries: [Membership]) -> [UInt64] {
        [false, true].flatMap { large in
            [Node.sharedThumbnail(id: id, large: large, entry: false).ino]
                + entries.map { Node.sharedThumbnail(id: $0.id, large: large, entry: true).ino }
        }
    }

    func sharedAttributes(_ entry: SharedEntry, _ file: Thumbnail) -> Attributes {
        fileAttributes(ino: Item.sharedThumbnail(entry).ino, permissions: thumbnailPermissions(of: entry.asset), size: file.size,
                       mtimeNs: file.mtimeNs, ctimeNs: file.mtimeNs)
    }
}
