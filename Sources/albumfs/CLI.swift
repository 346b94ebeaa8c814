import AlbumCore
import Foundation
import Glibc

/// Exit codes (sysexits.h), so that scripts can tell a usage error from a failure.
enum Exit {
    static let ok: Int32 = 0
    static let failure: Int32 = 1       // the command ran, and something it did failed
    static let usage: Int32 = 64        // EX_USAGE
    static let noInput: Int32 = 66      // EX_NOINPUT: no such library or file
    static let software: Int32 = 70     // EX_SOFTWARE
    static let cantCreate: Int32 = 73   // EX_CANTCREAT
    static let ioError: Int32 = 74      // EX_IOERR
    static let tempFail: Int32 = 75     // EX_TEMPFAIL: the library is busy
}

/// An error that ends the command: one line on stderr, then exit with `code`.
struct CommandError: Error {
    let message: String
    let code: Int32

    static func usage(_ message: String, command: String? = nil) -> CommandError {
        let hint = command.map { "; see: albumfs \($0) --help" } ?? "; see: albumfs --help"
        return CommandError(message: message + hint, code: Exit.usage)
    }

    /// The exit code and message for an error of the storage core.
    static func from(_ error: Error) -> CommandError {
        if let error = error as? CommandError { return error }
        if let error = error as? LibraryError {
            switch error {
            case .notALibrary, .notFound: return CommandError(message: error.description, code: Exit.noInput)
            case .alreadyALibrary: return CommandError(message: error.description, code: Exit.cantCreate)
            case .locked: return CommandError(message: error.description, code: Exit.tempFail)
            case .io: return CommandError(message: error.description, code: Exit.ioError)
            default: return CommandError(message: error.description, code: Exit.failure)
            }
        }
        if let error = error as? SQLiteError {
            return CommandError(message: "database error: \(error.description)", code: Exit.ioError)
        }
        if let error = error as? PostgresError {
            return CommandError(message: "database error: \(error.description)", code: Exit.ioError)
        }
        return CommandError(message: "\(error)", code: Exit.software)
    }
}

/// Command-line arguments: flags, options with values, and positionals.
struct Arguments {
    var positionals: [String] = []
    var flags: Set<String> = []
    var options: [String: [String]] = [:]

    /// `valued` lists the options that take a value (`--album PATH`, `-o OPTS`).
    init(_ args: [String], valued: Set<String>, flags known: Set<String>, command: String) throws {
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let arg = args[i]
            i += 1
            if onlyPositionals || !arg.hasPrefix("-") || arg == "-" {
                positionals.append(arg)
                continue
            }
            if arg == "--" { onlyPositionals = true; continue }
            var name = arg
            var inlineValue: String?
            if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                name = String(arg[..<eq])
                inlineValue = String(arg[arg.index(after: eq)...])
            } else if !arg.hasPrefix("--"), arg.count > 2, valued.contains(String(arg.prefix(2))) {
                name = String(arg.prefix(2))          // -oro,allow_other
                inlineValue = String(arg.dropFirst(2))
            }
            if valued.contains(name) {
                guard let value = inlineValue ?? (i < args.count ? args[i] : nil) else {
                    throw CommandError.usage("\(name) needs a value", command: command)
                }
                if inlineValue == nil { i += 1 }
                options[name, default: []].append(value)
            } else if known.contains(name) {
                flags.insert(name)
            } else {
                throw CommandError.usage("unknown option \(arg)", command: command)
            }
        }
    }

    func wantsHelp() -> Bool { flags.contains("--help") || flags.contains("-h") }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data("albumfs: \(message)\n".utf8))
}

/// A human-readable byte count: 1.2 MB.
func formatBytes(_ bytes: Int64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1000 && unit < units.count - 1 {
        value /= 1000
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
}

/// A library path from the command line, made absolute (the daemon changes directory).
func absolutePath(_ path: String) -> String {
    if path.hasPrefix("/") { return path }
    return FileManager.default.currentDirectoryPath + "/" + path
}
