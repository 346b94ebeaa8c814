import AlbumCore
import Foundation

/// Thumbnails per second, cold, through the mount, against `vipsthumbnail` and
/// ImageMagick's `convert -thumbnail` on the same large photos; and reading cached ones.
enum ThumbnailBench {
    static func run(dir: String, count: Int) throws {
        let card = try ImportBench.card(in: dir, count: count)
        let files = "\(Harness.q(card))/IMG_*"
        let library = dir + "/thumbs.library", mountpoint = dir + "/thumbs.mnt", out = dir + "/thumbs.out"
        try Harness.sh("cat \(files) > /dev/null")
        let runs = max(1, min(Harness.runs, 3))

        let folder = "\(Harness.q(mountpoint))/Albums/\((card as NSString).lastPathComponent)/.thumbnails"
        var mount: BenchMount?
        defer { mount?.unmount() }
        // The baselines at their best: one process per core, as AlbumFS decodes a folder
        // on every core; ImageMagick with its JPEG size hint (shrink-on-load, as libvips).
        let cores = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let list = "ls \(files) | xargs -d '\\n' -P \(cores)"
        let fresh = { _ = try Harness.sh("rm -rf \(Harness.q(out)) && mkdir \(Harness.q(out))") }
        // In turns, run by run (`Harness.mediansInTurns`). The mount goes before the next
        // contender runs: its workers would make the next run's thumbnails meanwhile.
        let times = try Harness.mediansInTurns(runs, [
            (prepare: {
                mount?.unmount()
                try Harness.freshLibrary(library)
                try Harness.sh("\(Harness.q(Harness.albumfs)) import --no-thumbnails \(Harness.q(library)) \(Harness.q(card))")
                mount = try BenchMount(library: library, mountpoint: mountpoint)
            }, body: {
                // A file manager opening the folder: list the thumbnails, read each one.
                try Harness.sh("cat \(folder)/* > /dev/null")
            }),
            (prepare: { mount?.unmount(); try fresh() }, body: {
                try Harness.sh("\(list) -n 4 vipsthumbnail -s 256 -o \(Harness.q(out))/%s.jpg")
            }),
            (prepare: fresh, body: {
                try Harness.sh("\(list) -I{} sh -c 'convert -define jpeg:size=512x512 \"$1\" -thumbnail 256x256 \"\(out)\"/$(basename \"$1\").jpg' - {}")
            }),
        ], what: "thumbnails of \(count) photos", names: ["albumfs", "vipsthumbnail", "convert"])
        let (ours, vips, magick) = (times[0], times[1], times[2])
        // Cached: the last run's library, its thumbnails made, mounted again; against the
        // same thumbnail files read straight from the page cache (PRODUCT.md section 7:
        // "cached ones at page-cache speed"; the goal is the one of warm reads of photos).
        mount = try BenchMount(library: library, mountpoint: mountpoint)
        let made = "\(Harness.q(library))/thumbnails/256/*/*.jpg"
        try Harness.sh("cat \(folder)/* \(made) > /dev/null")
        let warm = try Harness.mediansInTurns(Harness.runs, [
            (prepare: {}, body: { try Harness.sh("cat \(folder)/* > /dev/null") }),
            (prepare: {}, body: { try Harness.sh("cat \(made) > /dev/null") }),
        ], what: "reads of \(count) cached thumbnails", names: ["albumfs", "the files"])
        mount?.unmount()

        let n = Double(count)
        Harness.record("thumbnails/s, \(count) 24 MP photos, cold", ours: n / ours, baseline: n / vips,
                       baselineName: "vipsthumbnail -s 256, \(cores) in parallel", unit: "/s", goal: .ratioAtLeast(1.0))
        Harness.record("thumbnails/s, \(count) 24 MP photos, cold", ours: n / ours, baseline: n / magick,
                       baselineName: "convert -define jpeg:size -thumbnail, \(cores) in parallel", unit: "/s")
        Harness.record("read \(count) cached thumbnails", ours: warm[0], baseline: warm[1],
                       baselineName: "the thumbnail files, read directly", goal: .ratioAtMost(1.05))
    }
}
