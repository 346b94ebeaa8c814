import AlbumCore
import Foundation

/// The commands and the dispatch between them.
enum Commands {
    struct Command: Sendable {
        let name: String
        let synopsis: String
        let help: String
        let run: @Sendable ([String]) throws -> Int32
    }

    static let all: [Command] = [
        InitCommand.command, MountCommand.command, ImportCommand.command, AlbumsCommand.command,
        InfoCommand.command, StatsCommand.command, ThumbnailsCommand.command, CheckCommand.command,
        GCCommand.command, MigrateCommand.command, VersionsCommand.command, RevertCommand.command, DecoderWorkerCommand.command,
    ]

    static let overview = """
        albumfs: a photo library as a filesystem

        usage:
          albumfs init LIBRARY [--database postgresql://...]
          albumfs mount LIBRARY MOUNTPOINT [-f] [-d] [-o OPTIONS]
          albumfs LIBRARY MOUNTPOINT [-o OPTIONS]          (the mount.fuse3 / fstab form)
          albumfs import LIBRARY [--album PATH] FILE_OR_DIR...
          albumfs albums LIBRARY
          albumfs info LIBRARY PATH
          albumfs stats LIBRARY
          albumfs thumbnails LIBRARY [--size N]
          albumfs check LIBRARY [--repair]
          albumfs gc LIBRARY
          albumfs migrate LIBRARY --to postgresql://...
          albumfs versions LIBRARY PATH
          albumfs revert LIBRARY PATH [VERSION]

        Run `albumfs COMMAND --help` for what each command does.
        """

    static func run(_ args: [String]) throws -> Int32 {
        guard let first = args.first else { throw CommandError.usage("missing a command") }
        if first == "--help" || first == "-h" || first == "help" {
            if args.count > 1, let command = all.first(where: { $0.name == args[1] }) {
                print(command.help)
            } else {
                print(overview)
            }
            return Exit.ok
        }
        if first == "--version" || first == "-V" {
            print("albumfs \(AlbumFSVersion.string)")
            return Exit.ok
        }
        if let command = all.first(where: { $0.name == first }) {
            let rest = Array(args.dropFirst())
            if rest.contains("--help") || rest.contains("-h") {
                print(command.help)
                return Exit.ok
            }
            return try command.run(rest)
        }
        // `albumfs LIBRARY MOUNTPOINT -o OPTIONS`: how mount.fuse3 and fstab call us.
        if !first.hasPrefix("-"), args.count >= 2, !args[1].hasPrefix("-") {
            if args.contains("--help") || args.contains("-h") {
                print(MountCommand.command.help)
                return Exit.ok
            }
            return try MountCommand.command.run(args)
        }
        throw CommandError.usage("unknown command '\(first)'")
    }

    /// Exactly `count` positionals, or a usage error naming what is missing.
    static func positionals(_ args: Arguments, _ names: [String], command: String) throws -> [String] {
        if args.positionals.count < names.count {
            throw CommandError.usage("missing \(names[args.positionals.count])", command: command)
        }
        if args.positionals.count > names.count {
            throw CommandError.usage("unexpected argument '\(args.positionals[names.count])'", command: command)
        }
        return args.positionals
    }
}

enum AlbumFSVersion {
    static let string = "0.1.0"
}
