import AlbumCore

enum GCCommand {
    static let command = Commands.Command(
        name: "gc", synopsis: "purge old deletions and unused blobs",
        help: """
            usage: albumfs gc LIBRARY

            Deletes for good what has been in Recently Deleted for more than 30 days,
            then removes originals that no photo or version uses any more, and their
            cached thumbnails. The library must not be mounted.
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: [], flags: ["--help"], command: "gc")
        let path = try Commands.positionals(args, ["LIBRARY"], command: "gc")[0]
        let library = try Library.open(at: absolutePath(path), access: .exclusive)
        let report = try library.gc()
        print("purged \(report.purgedAssets) deleted item(s), removed \(report.removedBlobs) unused blob(s) (\(formatBytes(report.freedBytes))) and \(report.removedThumbnails) thumbnail(s)")
        return Exit.ok
    }
}
