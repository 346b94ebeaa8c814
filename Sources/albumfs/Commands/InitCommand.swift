import AlbumCore

enum InitCommand {
    static let command = Commands.Command(
        name: "init", synopsis: "create a library",
        help: """
            usage: albumfs init LIBRARY

            Creates a new, empty photo library in the directory LIBRARY (created if
            missing; an existing directory must be empty): library.db, originals/,
            thumbnails/, staging/ and scratch/, private to you (mode 0700).
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: [], flags: ["--help"], command: "init")
        let path = try Commands.positionals(args, ["LIBRARY"], command: "init")[0]
        _ = try Library.create(at: absolutePath(path))
        print("created an empty library in \(path)")
        return Exit.ok
    }
}
