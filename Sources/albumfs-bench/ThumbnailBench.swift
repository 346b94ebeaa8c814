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
        let ours = try Harness.median(runs, prepare: {
            mount?.unmount()
            try Harness.freshLibrary(library)
            try Harness.sh("\(Harness.q(Harness.albumfs)) import --no-thumbnails \(Harness.q(library)) \(Harness.q(card))")
            mount = try BenchMount(library: library, mountpoint: mountpoint)
        }) {
            // A file manager opening the folder: list the thumbnails, read each one.
            try Harness.sh("cat \(folder)/* > /dev/null")
        }
        try Harness.sh("cat \(folder)/* > /dev/null")
        let cached = try Harness.median(Harness.runs) { try Harness.sh("cat \(folder)/* > /dev/null") }
        mount?.unmount()

        let vips = try Harness.median(runs, prepare: { try Harness.sh("rm -rf \(Harness.q(out)) && mkdir \(Harness.q(out))") }) {
            try Harness.sh("vipsthumbnail -s 256 -o \(Harness.q(out))/%s.jpg \(files)")
        }
        let magick = try Harness.median(runs, prepare: { try Harness.sh("rm -rf \(Harness.q(out)) && mkdir \(Harness.q(out))") }) {
            try Harness.sh("for f in \(files); do convert \"$f\" -thumbnail 256x256 \(Harness.q(out))/$(basename \"$f\").jpg; done")
        }
        let n = Double(count)
        Harness.record("thumbnails/s, \(count) 24 MP photos, cold", ours: n / ours, baseline: n / vips, baselineName: "vipsthumbnail (goal: at least 1.00)", unit: "/s")
        Harness.record("thumbnails/s, \(count) 24 MP photos, cold", ours: n / ours, baseline: n / magick, baselineName: "ImageMagick convert -thumbnail", unit: "/s")
        Harness.record("read \(count) cached thumbnails", ours: cached, baseline: nil, baselineName: "")
    }
}
