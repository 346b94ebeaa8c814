import AlbumCore
import Foundation
import Glibc

// albumfs-bench: side-by-side measurements with ratios against the baselines the issues
// name. Not a test: run it on demand (mount-scripts/bench).

let usage = """
    usage: albumfs-bench [--dir DIR] [--runs N] [BENCHMARK...]

    Benchmarks (default: all):
      queries   smart-album and date-view queries over a 100,000-asset library
      read      a 1 GB video and large photos through the mount, cold and warm, against
                their blobs and passthrough_ll
      list      ls -l, find, du over albums of 1,000 and 10,000 and All Photos of 100,000,
                against plain files and passthrough_ll
      import    cp -r of 24 MP photos and of small photos into an album, against cp -r + sync
                through passthrough_ll and albumfs import; the small photos by 8 cp at once too
      thumbnails  thumbnails per second through the mount, against vipsthumbnail and ImageMagick
      scale     mount time, peak RSS and ls of a small album at 10,000 to 1,000,000 assets
      postgres  listing, lookup and cp -r import on a PostgreSQL library against the same on
                SQLite, and how soon a second host lists a photo copied in through the first

    Options:
      --dir DIR      where data sets are built (default /var/tmp/albumfs-bench)
      --runs N       runs per figure; the median is reported (default 5)
      --assets N     assets for `queries` (default 100000)
      --list-assets N  assets in All Photos for `list` (default 100000)
      --scale N,N,...  library sizes for `scale` (default 10000,100000,1000000)
      --video-mb N   size of the video for `read` (default 1024)
      --photos N     large photos for `import` and `read` (default 500; `thumbnails` uses up to 100)
      --small-photos N  small (160 KB) photos for `import` (default 2000)
      --io-uring     turn the kernel's FUSE-over-io_uring switch on for the run (root;
                     /sys/module/fuse/parameters/enable_uring, put back at the end): every
                     AlbumFS mount then serves its requests through io_uring
    """

var dir = "/var/tmp/albumfs-bench"
var selected: [String] = []
var queryAssets = 100_000
var listAssets = 100_000
var scaleSizes = [10_000, 100_000, 1_000_000]
var videoMB = 1024
var photos = 500
var smallPhotos = 2000
var ioUring = false
var args = Array(CommandLine.arguments.dropFirst())
while !args.isEmpty {
    let arg = args.removeFirst()
    func value() -> String {
        guard !args.isEmpty else { print(usage); exit(64) }
        return args.removeFirst()
    }
    switch arg {
    case "--dir": dir = value()
    case "--runs": Harness.runs = Int(value()) ?? 5
    case "--assets": queryAssets = Int(value()) ?? queryAssets
    case "--list-assets": listAssets = Int(value()) ?? listAssets
    case "--scale": scaleSizes = value().split(separator: ",").compactMap { Int($0) }
    case "--video-mb": videoMB = Int(value()) ?? videoMB
    case "--photos": photos = Int(value()) ?? photos
    case "--small-photos": smallPhotos = Int(value()) ?? smallPhotos
    case "--io-uring": ioUring = true
    case "-h", "--help": print(usage); exit(0)
    default: selected.append(arg)
    }
}
if selected.isEmpty { selected = ["queries", "read", "list", "import", "thumbnails", "scale", "postgres"] }
// Absolute: mounts, libraries and the PostgreSQL socket folder are named from it.
if !dir.hasPrefix("/") { dir = FileManager.default.currentDirectoryPath + "/" + dir }

let binDir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
Harness.albumfs = binDir + "/albumfs"
guard FileManager.default.isExecutableFile(atPath: Harness.albumfs) else {
    print("albumfs-bench: \(Harness.albumfs) is missing; build it first (mount-scripts/bench does)")
    exit(69)
}

// FUSE over io_uring is a system-wide switch of the kernel's: AlbumFS uses it whenever
// it is on. The header says which way the mounts of this run talked to the kernel.
let uringSwitch = "/sys/module/fuse/parameters/enable_uring"
let uringBefore = try? String(contentsOfFile: uringSwitch, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
if ioUring {
    guard uringBefore != nil, (try? "Y".write(toFile: uringSwitch, atomically: false, encoding: .utf8)) != nil else {
        print("albumfs-bench: --io-uring needs root and a kernel with FUSE over io_uring (\(uringSwitch))")
        exit(69)
    }
}
@MainActor func restoreUring() { if ioUring, let uringBefore { try? uringBefore.write(toFile: uringSwitch, atomically: false, encoding: .utf8) } }
let uringOn = (try? String(contentsOfFile: uringSwitch, encoding: .utf8))?.hasPrefix("Y") == true

do {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    Harness.say("albumfs-bench: data in \(dir), median of \(Harness.runs) runs; ratio = albumfs / baseline (for times, below 1: albumfs is faster; for rates, above 1)")
    Harness.say("baselines, each at its best:")
    Harness.say("  passthrough_ll  \(Passthrough.described)")
    Harness.say("  plain files     the same names as empty files on the library's own disk")
    Harness.say("  the blobs       cat of the library's originals, directly")
    Harness.say("  vipsthumbnail   vipsthumbnail -s 256, one process per core (xargs -P)")
    Harness.say("  ImageMagick     convert -define jpeg:size=512x512 -thumbnail 256x256, one process per core")
    Harness.say("goals: PRODUCT.md section 7; \(Harness.canDropCaches ? "cold rows drop every cache (drop_caches) before each run of every contender" : "no cold rows: dropping the caches needs root")")
    Harness.say("AlbumFS's requests: " + (uringOn ? "through io_uring (the kernel's enable_uring is on\(ioUring ? ", set by --io-uring for this run" : ""))"
                                         : "through /dev/fuse (the kernel does not offer io_uring; --io-uring turns its switch on)"))
    Harness.header()
    for name in selected {
        switch name {
        case "queries": try QueryBench.run(dir: dir, assets: queryAssets)
        case "read": try ReadBench.run(dir: dir, megabytes: videoMB, photos: photos)
        case "list": try ListBench.run(dir: dir, sizes: [1_000, 10_000].filter { $0 < listAssets }, libraryAssets: listAssets)
        case "scale": try ScaleBench.run(dir: dir, sizes: scaleSizes)
        case "import":
            // Both cards' runs first, every deletion after them (`ImportBench.scratch`).
            try ImportBench.clearScratch(dir: dir)
            defer { try? ImportBench.clearScratch(dir: dir) }
            try ImportBench.run(dir: dir, count: photos)
            try ImportBench.run(dir: dir, count: smallPhotos, small: true)
        case "thumbnails": try ThumbnailBench.run(dir: dir, count: min(photos, 100))
        case "postgres" where ProcessInfo.processInfo.environment["ALBUMFS_SCRATCH_POSTGRES"] == nil:
            Harness.say("  (postgres: not measured; it starts its server with mount-scripts/scratch-postgres: run mount-scripts/bench)")
        case "postgres": try PostgresBench.run(dir: dir, albumSize: 10_000, libraryAssets: listAssets, smallPhotos: smallPhotos)
        default: print("albumfs-bench: unknown benchmark \(name)"); print(usage); restoreUring(); exit(64)
        }
    }
    Harness.say(String(repeating: "-", count: Harness.width))
    let short = Harness.short
    Harness.say(short.isEmpty ? "every goal measured here is met" : "short of their goal: \(short.count) row(s)")
    for row in short { Harness.say("  " + Harness.line(row)) }
    restoreUring()
} catch {
    restoreUring()
    print("albumfs-bench: \(error)")
    exit(1)
}
