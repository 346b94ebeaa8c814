import AlbumCore

enum StatsCommand {
    static let command = Commands.Command(
        name: "stats", synopsis: "library figures",
        help: """
            usage: albumfs stats LIBRARY

            Prints how many photos, videos, albums, favorites, hidden and deleted
            items the library holds, and how much space its originals take.
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: [], flags: ["--help"], command: "stats")
        let path = try Commands.positionals(args, ["LIBRARY"], command: "stats")[0]
        let library = try Library.open(at: absolutePath(path), access: .reader)
        let s = try library.stats()
        print("assets:           \(s.assets) (\(s.photos) photos, \(s.videos) videos)")
        print("albums:           \(s.albums) (\(s.memberships) memberships)")
        print("favorites:        \(s.favorites)")
        print("hidden:           \(s.hidden)")
        print("recently deleted: \(s.trashed)")
        print("versions:         \(s.versions)")
        print("originals:        \(s.blobs) blobs, \(formatBytes(s.blobBytes))")
        if let oldest = s.oldestCapture, let newest = s.newestCapture {
            print("captured:         \(Dates.iso8601(instant: oldest, offsetMinutes: 0)) to \(Dates.iso8601(instant: newest, offsetMinutes: 0))")
        }
        print("schema version:   \(s.schemaVersion)")
        return Exit.ok
    }
}
