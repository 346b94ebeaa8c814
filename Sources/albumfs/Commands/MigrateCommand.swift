import AlbumCore

enum MigrateCommand {
    static let command = Commands.Command(
        name: "migrate", synopsis: "move a library's metadata between SQLite and PostgreSQL",
        help: """
            usage: albumfs migrate LIBRARY --to postgresql://...
                   albumfs migrate LIBRARY --to sqlite

            Copies every row of the library's metadata (photos, versions, albums and
            their entries, plain files, extended attributes, inode numbers) to the other
            kind of database, in one transaction, and switches the library to it. The
            blobs and thumbnails stay where they are. A PostgreSQL database must exist and
            be empty. Nothing may use the library meanwhile: it must not be mounted (on
            any host). The old metadata is kept aside (library.db.migrated or
            database.conf.migrated); run albumfs check afterwards.
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: ["--to"], flags: ["--help"], command: "migrate")
        let path = try Commands.positionals(args, ["LIBRARY"], command: "migrate")[0]
        guard let to = args.options["--to"]?.last, !to.isEmpty else {
            throw CommandError.usage("--to is needed: a PostgreSQL connection string, or sqlite", command: "migrate")
        }
        let copied = try Library.migrate(at: absolutePath(path), to: to == "sqlite" ? .sqlite : .postgres(to))
        let total = copied.values.reduce(0, +)
        print("moved \(total) rows (\(copied["assets"] ?? 0) photos and videos, \(copied["memberships"] ?? 0) album entries) to \(to == "sqlite" ? "SQLite" : "PostgreSQL")")
        return Exit.ok
    }
}
