import AlbumCore

enum InitCommand {
    static let command = Commands.Command(
        name: "init", synopsis: "create a library",
        help: """
            usage: albumfs init LIBRARY [--database postgresql://...]

            Creates a new, empty photo library in the directory LIBRARY (created if
            missing; an existing directory must be empty): library.db, originals/,
            thumbnails/, staging/ and plain/, private to you (mode 0700).

              --database CONNINFO   keep the metadata in PostgreSQL instead of SQLite, so
                                    that several hosts can serve the library at once
                                    (docs/scale.md). CONNINFO is a libpq URI or connection
                                    string of an existing, empty database; LIBRARY then
                                    holds database.conf and the blobs, and must be a folder
                                    every host reaches (NFS, CephFS).
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: ["--database"], flags: ["--help"], command: "init")
        let path = try Commands.positionals(args, ["LIBRARY"], command: "init")[0]
        let database = args.options["--database"]?.last
        _ = try Library.create(at: absolutePath(path), database: database)
        print("created an empty library in \(path)" + (database == nil ? "" : ", its metadata in PostgreSQL"))
        return Exit.ok
    }
}
