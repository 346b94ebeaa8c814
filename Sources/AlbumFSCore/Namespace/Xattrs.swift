import AlbumCore
import Foundation
import Glibc

/// Extended attributes (PRODUCT.md section 4): `user.albumfs.*` computed from an asset's
/// metadata, and any other `user.*` attribute stored as written.
extension FileSystem {
    static let prefix = "user.albumfs."

    /// The computed attributes of an asset, name to value; absent metadata has no
    /// attribute.
    func computedXattrs(_ asset: Asset) -> [(String, String)] {
        var out: [(String, String)] = [("capture_date", asset.captureDateISO)]
        if let w = asset.width { out.append(("width", String(w))) }
        if let h = asset.height { out.append(("height", String(h))) }
        if let lat = asset.latitude { out.append(("latitude", String(format: "%.7f", lat))) }
        if let lon = asset.longitude { out.append(("longitude", String(format: "%.7f", lon))) }
        let camera = [asset.make, asset.model].compactMap { $0 }.joined(separator: " ")
        if !camera.isEmpty { out.append(("camera", camera)) }
        if let d = asset.duration { out.append(("duration", String(format: "%.3f", d))) }
        if let rating = descriptive(of: asset).rating { out.append(("rating", String(rating))) }
        out.append(("sha256", asset.sha256))
        out.append(("favorite", asset.favorite ? "1" : "0"))
        out.append(("hidden", asset.hidden ? "1" : "0"))
        return out.map { (Self.prefix + $0.0, $0.1) }
    }

    /// Rating, keywords and caption as photo tools wrote them: a value set through the
    /// mount first (stored as an attribute), then the photo's own XMP or IPTC, then its
    /// sidecars' (PRODUCT.md section 4).
    func descriptive(of asset: Asset) -> Descriptive {
        let found = try? library.read { r -> Descriptive in
            var d = try r.embeddedDescriptive(ofAsset: asset.id)
            if d.rating == nil || d.keywords.isEmpty || d.caption == nil {
                for reading in try r.sidecarReadings(of: asset) {
                    if d.rating == nil { d.rating = reading.rating }
                    if d.keywords.isEmpty { d.keywords = reading.keywords }
                    if d.caption == nil { d.caption = reading.caption }
                }
            }
            if let set = try r.xattr(ino: asset.id, name: Self.prefix + "rating") {
                d.rating = Int(String(decoding: set, as: UTF8.self))
            }
            return d
        }
        return found ?? Descriptive()
    }

    /// What `user.xdg.comment` and `user.xdg.tags` read when nobody set them through the
    /// mount: the caption and the keywords (comma-separated) photo tools wrote.
    func readAttribute(_ name: String, of asset: Asset) -> [UInt8]? {
        let d = descriptive(of: asset)
        switch name {
        case "user.xdg.comment": return d.caption.map { Array($0.utf8) }
        case "user.xdg.tags": return d.keywords.isEmpty ? nil : Array(d.keywords.joined(separator: ",").utf8)
        default: return nil
        }
    }

    static let readAttributes = ["user.xdg.comment", "user.xdg.tags"]

    /// The `user.albumfs.*` attributes a user sets (the others are the bytes' metadata).
    static let userMarks = Transaction.userMarks

    /// The object an inode's stored attributes belong to (an alias stores on its asset).
    func xattrOwner(_ ino: UInt64) throws -> (Int64, Asset?) { Self.xattrOwner(of: try existing(ino)) }

    static func xattrOwner(of item: Item) -> (Int64, Asset?) {
        switch item {
        case .asset(let asset): return (asset.id, asset)
        case .plain(let file): return (file.id, nil)
        case .album(let album): return (album.id, nil)
        case let other: return (Int64(bitPattern: other.ino), nil)
        }
    }

    /// How soon a change of `item`'s attributes is on disk: a plain file's as its mode
    /// and times (`setattr`: within seconds, or at an fsync), as a file system journals
    /// an xattr; a photo's or a folder's at once. Samba sets `user.DOSATTRIB` on every
    /// file it creates: a wait for the disk each when it was durable at once. An NFS
    /// server promises its client every change on stable storage.
    static func durability(ofChangesTo item: Item, by pid: Int32) -> Library.Durability {
        guard case .plain = item else { return .durable }
        return FileServers.isNFSServer(pid) ? .durable : .soon
    }

    /// Only the `user.` namespace is kept. Other namespaces (security.selinux,
    /// system.posix_acl_*, trusted.*) are EOPNOTSUPP: tools such as ls then stop asking
    /// for them on this filesystem, instead of one round trip per file. (ENOSYS would
    /// make the kernel stop asking for every attribute, user.* included.)
    static func checkNamespace(_ name: String) throws {
        guard name.hasPrefix("user.") else {
            throw FSError(EOPNOTSUPP, "attribute namespace of \(name) is not supported", logged: false)
        }
    }

    public func getxattr(_ ino: UInt64, name: String) throws -> [UInt8] {
        try Self.checkNamespace(name)
        let (owner, asset) = try xattrOwner(ino)
        if let asset, name.hasPrefix(Self.prefix) {
            if let (_, value) = computedXattrs(asset).first(where: { $0.0 == name }) { return Array(value.utf8) }
            throw FSError(ENODATA, "no attribute \(name)", logged: false)
        }
        if let value = try library.read({ try $0.xattr(ino: owner, name: name) }) { return value }
        if let asset, let value = readAttribute(name, of: asset) { return value }
        throw FSError(ENODATA, "no attribute \(name)", logged: false)
    }

    public func listxattr(_ ino: UInt64) throws -> [String] {
        let (owner, asset) = try xattrOwner(ino)
        var names = asset.map { computedXattrs($0).map(\.0) } ?? []
        let stored = try library.read { try $0.xattrNames(ino: owner) }
        names += stored.filter { !names.contains($0) }
        if let asset {
            names += Self.readAttributes.filter { !stored.contains($0) && readAttribute($0, of: asset) != nil }
        }
        return names
    }

    static let xattrCreate: Int32 = 1
    static let xattrReplace: Int32 = 2
    static let xattrSizeMax = 65536

    /// setxattr: `user.albumfs.favorite` and `.hidden` take `0` or `1` (as rm and mv in
    /// Favorites and Hidden do); the other `user.albumfs.*` are read-only (EPERM); any
    /// other `user.*` attribute is stored as written.
    public func setxattr(_ ino: UInt64, name: String, value: [UInt8], flags: Int32, pid: Int32 = 0) throws {
        try checkWritable()
        try Self.checkNamespace(name)
        let item = try existing(ino)
        let (owner, asset) = Self.xattrOwner(of: item)
        let durability = Self.durability(ofChangesTo: item, by: pid)
        if name.hasPrefix(Self.prefix) {
            guard let asset else {
                // A copy that keeps attributes (`rsync -X`, `cp --preserve=xattr`, `tar
                // --xattrs`) sets them on a file that is not a photo yet (rsync's
                // temporary file): the marks a user sets are kept for the photo it may
                // become (`Transaction.applyMarks`); the photo's own metadata is its
                // bytes' to say, and is not kept.
                guard case .plain = item else { throw FSError.notPermitted("\(name): only photos and videos have it") }
                if Self.userMarks.contains(name) { try library.write(durability) { try $0.setXattr(ino: owner, name: name, value: value) } }
                return
            }
            // The same value again (a copy that keeps attributes, of a photo the library
            // has): nothing to change.
            if let (_, current) = computedXattrs(asset).first(where: { $0.0 == name }), Array(current.utf8) == value { return }
            let text = String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if name == Self.prefix + "rating" {
                guard let rating = Int(text), (0...5).contains(rating) else { throw FSError(EINVAL, "\(name) takes 0 to 5, not '\(text)'") }
                if asset.isTrashed { throw FSError.notPermitted("\(asset.name) is in Recently Deleted") }
                try library.write { try $0.setXattr(ino: asset.id, name: name, value: Array(String(rating).utf8)) }
                return
            }
            guard name == Self.prefix + "favorite" || name == Self.prefix + "hidden" else {
                throw FSError.notPermitted("\(name) is read-only: it is the photo's own metadata")
            }
            guard text == "0" || text == "1" else { throw FSError(EINVAL, "\(name) takes 0 or 1, not '\(text)'") }
            if asset.isTrashed { throw FSError.notPermitted("\(asset.name) is in Recently Deleted") }
            try library.write { tx in
                if name.hasSuffix("favorite") { try tx.setFavorite(asset.id, text == "1") } else { try tx.setHidden(asset.id, text == "1") }
            }
            afterChange(asset: try library.asset(id: asset.id), views: asset)
            return
        }
        if value.count > Self.xattrSizeMax { throw FSError(E2BIG, "\(name): value over 64 KiB") }
        try library.write(durability) { tx in
            let exists = try tx.xattr(ino: owner, name: name) != nil
            if flags & Self.xattrCreate != 0 && exists { throw FSError(EEXIST, "\(name) exists", logged: false) }
            if flags & Self.xattrReplace != 0 && !exists { throw FSError(ENODATA, "no attribute \(name)", logged: false) }
            try tx.setXattr(ino: owner, name: name, value: value)
        }
    }

    public func removexattr(_ ino: UInt64, name: String, pid: Int32 = 0) throws {
        try checkWritable()
        try Self.checkNamespace(name)
        let item = try existing(ino)
        let (owner, asset) = Self.xattrOwner(of: item)
        if let asset, name == Self.prefix + "rating" {
            // The rating set through the mount goes; the one photo tools wrote shows again.
            // One the bytes carry and none set: as for the other attributes below.
            guard try library.write(.durable, { try $0.removeXattr(ino: owner, name: name) }) else {
                if computedXattrs(asset).contains(where: { $0.0 == name }) { return }
                throw FSError(ENODATA, "no rating was set through the mount", logged: false)
            }
            return
        }
        if asset != nil && name.hasPrefix(Self.prefix) {
            // The library's, not the file's: a copy that keeps attributes from a folder
            // whose files have none (`rsync -aX` run again) removes them from every photo.
            // Refused, each run would end in error; accepted, nothing changes (a favorite
            // is unmarked by setting it to 0), and the log says so once a mount.
            sayOnce("removexattr", "removals of user.albumfs.* attributes are accepted and change nothing (\(name)); set favorite or hidden to 0 to unmark a photo")
            return
        }
        guard try library.write(Self.durability(ofChangesTo: item, by: pid), { try $0.removeXattr(ino: owner, name: name) }) else {
            throw FSError(ENODATA, "no attribute \(name)", logged: false)
        }
    }
}
