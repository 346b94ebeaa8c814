import AlbumCore
import Dispatch
import Foundation

enum ThumbnailsCommand {
    static let command = Commands.Command(
        name: "thumbnails", synopsis: "make missing thumbnails",
        help: """
            usage: albumfs thumbnails LIBRARY [--size N]

            Makes every missing thumbnail of the library at N pixels on the longest side
            (default 256, the mount's default), in parallel, with a progress bar. Files
            that cannot be decoded are listed at the end; they get no thumbnail.
            Decoders run in worker processes, so a broken file costs only its thumbnail.
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: ["--size"], flags: ["--help"], command: "thumbnails")
        let path = try Commands.positionals(args, ["LIBRARY"], command: "thumbnails")[0]
        var size = 256
        if let text = args.options["--size"]?.last {
            guard let n = Int(text), (16...4096).contains(n) else {
                throw CommandError.usage("--size must be a number of pixels between 16 and 4096", command: "thumbnails")
            }
            size = n
        }
        let library = try Library.open(at: absolutePath(path), access: .reader)
        let assets = try library.assets(in: .allPhotos) + library.assets(in: .smart(.hidden)) + library.assets(in: .smart(.recentlyDeleted))
        let made = make(for: assets, library: library, size: size)
        print("made \(made.made) thumbnail(s); \(made.present) were there; \(made.failed.count) file(s) cannot be decoded")
        for name in made.failed.sorted() { printError("no thumbnail: \(name)") }
        return Exit.ok
    }

    struct Result: Sendable {
        var made = 0, present = 0
        /// Names of the files that cannot be decoded.
        var failed: [String] = []
    }

    /// Makes the missing thumbnails of `assets` on worker processes, one per core.
    static func make(for assets: [Asset], library: Library, size: Int) -> Result {
        let cache = ThumbnailCache(library: library, decoder: DecoderPool.ofThisProgram())
        let result = Locked(Result())
        let unique = Dictionary(assets.map { ($0.sha256, $0) }, uniquingKeysWith: { a, _ in a }).values.map { $0 }
        let progress = ProgressBar(total: unique.count, totalBytes: 0, label: "thumbnails")
        let next = Locked(0)
        DispatchQueue.concurrentPerform(iterations: ProcessInfo.processInfo.activeProcessorCount) { _ in
            while true {
                let index = next.withLock { v -> Int in defer { v += 1 }; return v }
                guard index < unique.count else { return }
                let asset = unique[index]
                if cache.cached(sha256: asset.sha256, size: size) != nil {
                    result.withLock { $0.present += 1 }
                } else if cache.thumbnail(for: asset, size: size) != nil {
                    result.withLock { $0.made += 1 }
                } else {
                    result.withLock { $0.failed.append(asset.name) }
                }
                progress.advance(bytes: 0)
            }
        }
        progress.finish()
        return result.withLock { $0 }
    }
}

/// `albumfs decoder-worker`: not for people; the mount and the commands start it, to
/// decode photos and videos (thumbnails, metadata) in a process of its own.
enum DecoderWorkerCommand {
    static let command = Commands.Command(
        name: "decoder-worker", synopsis: "",
        help: "usage: albumfs decoder-worker [--nice N] (started by albumfs itself: requests on stdin, replies on stdout)",
        run: { raw in
            let args = try Arguments(raw, valued: ["--nice"], flags: ["--help"], command: "decoder-worker")
            return DecoderWorker.serve(nice: args.options["--nice"]?.last.flatMap { Int($0) } ?? 0)
        })
}
