import AlbumCore
import Foundation

enum InfoCommand {
    static let command = Commands.Command(
        name: "info", synopsis: "all metadata of one photo or video",
        help: """
            usage: albumfs info LIBRARY PATH

            Prints everything the library knows about one photo or video. PATH is where
            it shows in the mount ("Albums/Trips/Rome 2024/IMG_0001.HEIC",
            "All Photos/IMG_0001.HEIC", "Smart Albums/Favorites/IMG_0001.HEIC"), also
            through the mountpoint ("/mnt/photos/Albums/Trips/IMG_0001.HEIC"), or just
            its name in All Photos, or #ID with its inode number.
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: [], flags: ["--help"], command: "info")
        let positionals = try Commands.positionals(args, ["LIBRARY", "PATH"], command: "info")
        let library = try Library.open(at: absolutePath(positionals[0]), access: .reader)
        guard let asset = try resolve(positionals[1], in: library) else {
            throw CommandError(message: "\(positionals[1]): no such photo or video in the library", code: Exit.noInput)
        }
        for (key, value) in try describe(asset, library: library) {
            print("\(key):".padding(toLength: max(16, key.count + 2), withPad: " ", startingAt: 0) + value)
        }
        return Exit.ok
    }

    /// The folders at the top of the mount, where a path in it starts.
    static let topFolders: Set<String> = ["Albums", "All Photos", "By Date", "Smart Albums"]

    /// Finds the asset a namespace path names: relative to the mount
    /// ("Albums/Trip/P.jpg") or through it ("/mnt/photos/Albums/Trip/P.jpg"), or a bare
    /// name in All Photos. A path that names no folder of the mount names no photo: the
    /// photo of the same name elsewhere is not it.
    static func resolve(_ path: String, in library: Library) throws -> Asset? {
        if path.hasPrefix("#"), let id = Int64(path.dropFirst()) { return try library.asset(id: id) }
        var parts = path.split(separator: "/").map(String.init).filter { !$0.isEmpty && $0 != "." }
        guard let name = parts.popLast() else { return nil }
        if parts.isEmpty && !path.hasPrefix("/") { return try library.asset(named: name) }
        // Where the mount's folders start: the first top folder that leads to the photo
        // (a mountpoint's own path may hold such a name too).
        for start in parts.indices where topFolders.contains(parts[start]) {
            if let found = try resolve(name, in: Array(parts[start...]), library) { return found }
        }
        return nil
    }

    private static func resolve(_ name: String, in parts: [String], _ library: Library) throws -> Asset? {
        switch parts[0] {
        case "Albums":
            guard let album = try library.album(path: Array(parts.dropFirst())) else { return nil }
            return try library.member(named: name, ofAlbum: album.id)?.1
        case "Smart Albums":
            guard parts.count == 2, let smart = SmartAlbum.allCases.first(where: { $0.folderName == parts[1] }) else { return nil }
            return try library.asset(named: name, in: .smart(smart))
        default:
            // All Photos (no folder in it), By Date/...: names there are the library-wide
            // display names.
            if parts[0] == "All Photos", parts.count > 1 { return nil }
            return try library.asset(named: name)
        }
    }

    static func describe(_ a: Asset, library: Library) throws -> [(String, String)] {
        var rows: [(String, String)] = [
            ("name", a.name),
            ("inode", String(a.id)),
            ("original name", a.originalName),
            ("type", "\(a.mediaType == .video ? "video" : "photo") (\(a.format))"),
            ("size", "\(a.size) bytes"),
            ("sha256", a.sha256),
            ("captured", a.captureDateISO + " (from \(source(a.takenSource)))"),
        ]
        if let w = a.width, let h = a.height { rows.append(("pixels", "\(w) x \(h)")) }
        if let o = a.orientation { rows.append(("orientation", String(o))) }
        if let r = a.rotation, r != 0 { rows.append(("rotation", "\(r) degrees")) }
        if let lat = a.latitude, let lon = a.longitude { rows.append(("location", String(format: "%.6f, %.6f", lat, lon))) }
        let camera = [a.make, a.model].compactMap { $0 }.joined(separator: " ")
        if !camera.isEmpty { rows.append(("camera", camera)) }
        if let lens = a.lens { rows.append(("lens", lens)) }
        if let d = a.duration { rows.append(("duration", String(format: "%.2f s", d))) }
        var kinds: [String] = []
        if a.kinds.contains(.screenshot) { kinds.append("screenshot") }
        if a.kinds.contains(.panorama) { kinds.append("panorama") }
        if a.kinds.contains(.animated) { kinds.append("animated") }
        if a.kinds.contains(.raw) { kinds.append("RAW") }
        if a.kinds.contains(.selfie) { kinds.append("selfie") }
        if a.kinds.contains(.live) { kinds.append("live photo") }
        if !kinds.isEmpty { rows.append(("kinds", kinds.joined(separator: ", "))) }
        rows.append(("favorite", a.favorite ? "yes" : "no"))
        rows.append(("hidden", a.hidden ? "yes" : "no"))
        if let t = a.trashedAt { rows.append(("deleted", Dates.iso8601(instant: t) + " (in Recently Deleted)")) }
        rows.append(("added", Dates.iso8601(instant: a.addedAt)))
        let versions = try library.versions(of: a.id)
        rows.append(("versions", "\(versions.count) (current: \(a.version))"))
        for membership in try library.memberships(ofAsset: a.id) {
            let path = try library.albumPath(id: membership.albumID).joined(separator: "/")
            rows.append(("in album", "Albums/\(path)/\(membership.name)"))
        }
        for name in try library.xattrNames(ino: a.id) {
            let value = try library.xattr(ino: a.id, name: name) ?? []
            rows.append((name, Self.printable(value)))
        }
        return rows
    }

    /// An attribute's value as text when it is printable text, else as `0x` and its bytes
    /// in hex (as `getfattr -e hex` shows it): Samba's `user.DOSATTRIB`, for one, is
    /// binary, and raw bytes would garble the terminal.
    static func printable(_ value: [UInt8]) -> String {
        // Text is shown as text (a caption of several lines on one line, its line breaks
        // and tabs as \n and \t); anything else with a control character, as hex.
        if let text = String(validating: value, as: UTF8.self),
           !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" && $0 != "\t" }) {
            return text.replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\t", with: "\\t")
        }
        return "0x" + value.map { String(format: "%02x", $0) }.joined()
    }

    static func source(_ s: CaptureSource) -> String {
        switch s {
        case .exif: return "EXIF"
        case .video: return "the video's creation time"
        case .fileTime: return "the file's mtime"
        case .user: return "an mtime set by the user"
        case .xmp: return "XMP in the file"
        case .sidecar: return "an XMP sidecar"
        }
    }
}
