import AlbumCore
import Dispatch
import Foundation
import Glibc

enum ImportCommand {
    static let command = Commands.Command(
        name: "import", synopsis: "import photos and videos",
        help: """
            usage: albumfs import LIBRARY [--album PATH] FILE_OR_DIR...

            Imports photos and videos into LIBRARY. A folder becomes an album of the same
            name, and its subfolders nested albums; with --album PATH (for example
            "Trips/Rome 2024", created if missing) folders nest under that album and
            single files are added to it. Bytes the library already holds are not
            imported twice: the existing photo is added where it was imported, and back
            from Recently Deleted if it was there. Hidden files and client junk
            (.DS_Store, Thumbs.db, ...) are skipped; anything that is not a supported
            photo or video is refused with its reason.

            A progress bar shows on a terminal; the last line sums up what was imported,
            what were duplicates and what was refused. Exit status 1 if any file was
            refused or failed.

            Thumbnails of what was imported are made afterwards (at 256 pixels, the mount's
            default); --no-thumbnails leaves them to be made on first look.

            The library must not be mounted: copy into the mount instead.
            """,
        run: run)

    /// One file to import and the album it goes to.
    struct Job: Sendable {
        let path: String
        let name: String
        let album: [String]?
        let size: Int64
    }

    struct Tally: Sendable {
        var imported = 0, duplicates = 0, restored = 0, refused = 0, failed = 0, skipped = 0
        var bytes: Int64 = 0
        var problems: [String] = []
        var assets: [Asset] = []
    }

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: ["--album"], flags: ["--help", "--no-thumbnails"], command: "import")
        guard let libraryPath = args.positionals.first else {
            throw CommandError.usage("missing LIBRARY", command: "import")
        }
        let sources = Array(args.positionals.dropFirst())
        if sources.isEmpty { throw CommandError.usage("missing FILE_OR_DIR to import", command: "import") }
        var base: [String]? = nil
        if let album = args.options["--album"]?.last {
            let parts = album.split(separator: "/").map(String.init).filter { !$0.isEmpty }
            if parts.isEmpty { throw CommandError.usage("--album needs an album name", command: "import") }
            for part in parts {
                do { try Names.validate(part) } catch {
                    throw CommandError.usage("--album: \(error)", command: "import")
                }
            }
            base = parts
        }

        var tally = Tally()
        var jobs: [Job] = []
        for source in sources {
            try collect(source, album: base, into: &jobs, tally: &tally)
        }
        let library = try Library.open(at: absolutePath(libraryPath), access: .exclusive)

        // Albums first, one at a time; then the files, on every core.
        var albumIDs: [[String]: Int64] = [:]
        for path in Set(jobs.compactMap(\.album)).sorted(by: { $0.count < $1.count }) {
            albumIDs[path] = try library.write { try $0.ensureAlbum(path: path)?.id }
        }
        let progress = ProgressBar(total: jobs.count, totalBytes: jobs.reduce(0) { $0 + $1.size }, label: "importing")
        let shared = Locked(tally)
        let ids = albumIDs
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4))
        let next = Locked(0)
        let jobList = jobs
        // Metadata is parsed in decoder processes: a file crafted to crash a parser costs
        // that one file.
        let decoders = DecoderPool.ofThisProgram(count: workers, timeout: 30)
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let index = next.withLock { value -> Int in defer { value += 1 }; return value }
                guard index < jobList.count else { return }
                let job = jobList[index]
                // Inside an album a file keeps the name it was given (a ` (2)` only if that
                // name is taken there by another file).
                let destination = ImportDestination(album: job.album.flatMap { ids[$0] }, entryName: job.name)
                do {
                    let outcome = try library.importFile(at: job.path, originalName: job.name, destination: destination,
                                                         reader: decoders)
                    shared.withLock { t in
                        switch outcome {
                        case .imported(let asset, _): t.imported += 1; t.bytes += job.size; t.assets.append(asset)
                        case .duplicate(_, _, let restored): t.duplicates += 1; if restored { t.restored += 1 }
                        case .refused(let why): t.refused += 1; t.problems.append("refused \(job.path): \(why)")
                        }
                    }
                } catch {
                    shared.withLock { t in
                        t.failed += 1
                        t.problems.append("failed \(job.path): \(error)")
                    }
                }
                progress.advance(bytes: job.size)
            }
        }
        progress.finish()
        tally = shared.withLock { $0 }
        for problem in tally.problems.sorted() { printError(problem) }
        var summary = "imported \(tally.imported) (\(formatBytes(tally.bytes))), duplicates \(tally.duplicates)"
        if tally.restored > 0 { summary += " (\(tally.restored) restored from Recently Deleted)" }
        summary += ", refused \(tally.refused)"
        if tally.failed > 0 { summary += ", failed \(tally.failed)" }
        if tally.skipped > 0 { summary += ", skipped \(tally.skipped) hidden or junk" }
        summary += String(format: " in %.1f s", progress.elapsed)
        print(summary)
        if !args.flags.contains("--no-thumbnails") && !tally.assets.isEmpty {
            let made = ThumbnailsCommand.make(for: tally.assets, library: library, size: 256)
            print("made \(made.made) thumbnail(s)" + (made.failed.isEmpty ? "" : "; \(made.failed.count) file(s) cannot be decoded"))
        }
        return tally.refused + tally.failed > 0 ? Exit.failure : Exit.ok
    }

    /// Adds the files under `path` to `jobs`; a folder becomes an album below `album`.
    static func collect(_ path: String, album: [String]?, into jobs: inout [Job], tally: inout Tally) throws {
        var st = stat()
        guard stat(path, &st) == 0 else {
            // Checked before anything is imported: a mistyped path imports nothing.
            throw CommandError(message: "cannot import \(path): \(String(cString: strerror(errno))); nothing was imported, check the path",
                               code: Exit.noInput)
        }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            let real = URL(fileURLWithPath: absolutePath(path)).standardizedFileURL.resolvingSymlinksInPath()
            let name = real.lastPathComponent.isEmpty || real.path == "/" ? "Imported" : real.lastPathComponent
            try walk(real.path, album: (album ?? []) + [name], into: &jobs, tally: &tally)
        } else {
            let name = (path as NSString).lastPathComponent
            jobs.append(Job(path: path, name: name, album: album, size: Int64(st.st_size)))
        }
    }

    private static func walk(_ directory: String, album: [String], into jobs: inout [Job], tally: inout Tally) throws {
        guard let dir = opendir(directory) else {
            tally.failed += 1
            tally.problems.append("failed \(directory): \(String(cString: strerror(errno)))")
            return
        }
        var entries: [(name: String, bytes: [UInt8])] = []
        while let entry = readdir(dir) {
            let bytes = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: UInt8.self, capacity: 256) { Array(UnsafeBufferPointer(start: $0, count: strlen(UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)))) }
            }
            guard let name = String(validating: bytes, as: UTF8.self) else {
                tally.failed += 1
                tally.problems.append("failed \(directory)/\(String(decoding: bytes, as: UTF8.self)): the name is not valid UTF-8")
                continue
            }
            if name == "." || name == ".." { continue }
            entries.append((name, bytes))
        }
        closedir(dir)
        for (name, _) in entries.sorted(by: { $0.name < $1.name }) {
            let path = directory + "/" + name
            if Names.isScratch(name) {
                tally.skipped += 1
                continue
            }
            var st = stat()
            guard stat(path, &st) == 0 else {
                tally.failed += 1
                tally.problems.append("failed \(path): \(String(cString: strerror(errno)))")
                continue
            }
            var lst = stat()
            let isLink = lstat(path, &lst) == 0 && (lst.st_mode & S_IFMT) == S_IFLNK
            switch st.st_mode & S_IFMT {
            case S_IFDIR:
                if isLink {
                    tally.skipped += 1  // never follow a linked folder: it may loop
                    continue
                }
                try walk(path, album: album + [name], into: &jobs, tally: &tally)
            case S_IFREG:
                jobs.append(Job(path: path, name: name, album: album, size: Int64(st.st_size)))
            default:
                tally.skipped += 1
            }
        }
    }
}
