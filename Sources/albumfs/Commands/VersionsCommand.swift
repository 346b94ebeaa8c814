import AlbumCore
import Foundation

enum VersionsCommand {
    static let command = Commands.Command(
        name: "versions", synopsis: "the versions of a photo",
        help: """
            usage: albumfs versions LIBRARY PATH

            Lists every version of one photo or video, oldest first: its number, when it
            was made, its size and SHA-256; the current one is marked. A version is made
            each time new bytes are saved into the photo through the mount (an editor's
            save, exiftool, a copy over it), and by `albumfs revert`. PATH is as for
            `albumfs info`.
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: [], flags: ["--help"], command: "versions")
        let positionals = try Commands.positionals(args, ["LIBRARY", "PATH"], command: "versions")
        let library = try Library.open(at: absolutePath(positionals[0]), access: .reader)
        guard let asset = try InfoCommand.resolve(positionals[1], in: library) else {
            throw CommandError(message: "\(positionals[1]): no such photo or video in the library", code: Exit.noInput)
        }
        print("\(asset.name): \(try library.versions(of: asset.id).count) version(s)")
        for version in try library.versions(of: asset.id) {
            let mark = version.version == asset.version ? "  (current)" : ""
            print("  \(version.version)\t\(Dates.iso8601(instant: version.createdAt))\t\(formatBytes(version.size))\t\(version.sha256)\(mark)")
        }
        return Exit.ok
    }
}

enum RevertCommand {
    static let command = Commands.Command(
        name: "revert", synopsis: "make an earlier version of a photo current again",
        help: """
            usage: albumfs revert LIBRARY PATH [VERSION]

            Makes VERSION of the photo or video at PATH current again (default: the one
            before the current one). It becomes a new version, so nothing is lost: the
            version it replaces can be brought back the same way. The photo keeps its
            name, albums, favorite and hidden flags and captions; what its bytes say
            (pixel size, camera, capture date) is read again from them. See
            `albumfs versions` for the numbers. The library must not be mounted.
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: [], flags: ["--help"], command: "revert")
        guard args.positionals.count == 2 || args.positionals.count == 3 else {
            throw CommandError.usage(args.positionals.count < 2 ? "missing LIBRARY or PATH" : "unexpected argument '\(args.positionals[3])'",
                                     command: "revert")
        }
        var version: Int?
        if args.positionals.count == 3 {
            guard let n = Int(args.positionals[2]), n > 0 else {
                throw CommandError.usage("VERSION must be a version number (see albumfs versions), not '\(args.positionals[2])'", command: "revert")
            }
            version = n
        }
        let library = try Library.open(at: absolutePath(args.positionals[0]), access: .exclusive)
        guard let asset = try InfoCommand.resolve(args.positionals[1], in: library) else {
            throw CommandError(message: "\(args.positionals[1]): no such photo or video in the library", code: Exit.noInput)
        }
        let reverted = try library.revert(asset.id, to: version, reader: DecoderPool.ofThisProgram(count: 1, timeout: 30))
        print("\(reverted.name): version \(reverted.version) is now current, with the bytes of version \(version ?? asset.version - 1)")
        return Exit.ok
    }
}
