import AlbumCore

enum AlbumsCommand {
    static let command = Commands.Command(
        name: "albums", synopsis: "list albums",
        help: """
            usage: albumfs albums LIBRARY

            Lists every album as its path below Albums/, nested albums under their
            parents, with the number of photos and videos in each.
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: [], flags: ["--help"], command: "albums")
        let path = try Commands.positionals(args, ["LIBRARY"], command: "albums")[0]
        let library = try Library.open(at: absolutePath(path), access: .reader)
        let albums = try library.allAlbums()
        var children: [Int64: [Album]] = [:]
        for album in albums { children[album.parentID, default: []].append(album) }
        func show(_ parent: Int64, prefix: String) throws {
            for album in (children[parent] ?? []).sorted(by: { $0.name < $1.name }) {
                let count = try library.members(ofAlbum: album.id).count
                print("\(prefix)\(album.name)/\t\(count)")
                try show(album.id, prefix: "\(prefix)\(album.name)/")
            }
        }
        try show(0, prefix: "")
        if albums.isEmpty { print("(no albums)") }
        return Exit.ok
    }
}
