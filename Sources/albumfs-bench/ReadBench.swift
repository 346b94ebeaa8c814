import AlbumCore
import Foundation

/// Reading a large video through the mount against reading its blob directly.
enum ReadBench {
    static func run(dir: String, megabytes: Int) throws {
        let video = dir + "/big-video.mp4"
        if (try? FileManager.default.attributesOfItem(atPath: video)[.size] as? Int) != megabytes << 20 {
            // A short real MP4 with its index first, padded to size: libavformat reads it
            // as a video, and every byte must still come through the mount.
            try Harness.sh("""
                ffmpeg -loglevel error -y -f lavfi -i testsrc=duration=2:size=320x240:rate=10 -movflags +faststart \(Harness.q(dir + "/small.mp4")) && \
                cp \(Harness.q(dir + "/small.mp4")) \(Harness.q(video)) && \
                head -c $(( \(megabytes) * 1048576 - $(stat -c %s \(Harness.q(dir + "/small.mp4"))) )) /dev/urandom >> \(Harness.q(video))
                """)
        }
        let path = dir + "/read.library"
        let (library, _) = try DataSets.library(at: path, seed: try DataSets.seedPhoto(in: dir))
        guard let asset = try library.importFile(at: video, originalName: "big-video.mp4", destination: .library).asset else {
            throw BenchError("the video was refused")
        }
        let blob = library.blobs.path(for: asset.sha256)
        _ = consume library
        let mount = try BenchMount(library: path, mountpoint: dir + "/read.mnt")
        defer { mount.unmount() }
        let file = mount.mountpoint + "/All Photos/big-video.mp4"
        let mb = "\(megabytes) MB"
        let cat = { (path: String) -> () throws -> Void in { _ = try Harness.sh("cat \(Harness.q(path)) > /dev/null") } }
        let coldBlob = try Harness.median(prepare: { Harness.dropCaches([blob, file]) }, cat(blob))
        let coldMount = try Harness.median(prepare: { Harness.dropCaches([blob, file]) }, cat(file))
        Harness.record("read \(mb) video, cold cache", ours: coldMount, baseline: coldBlob, baselineName: "the blob, read directly")
        try cat(blob)()
        try cat(file)()
        let warmBlob = try Harness.median(Harness.runs, cat(blob))
        let warmMount = try Harness.median(Harness.runs, cat(file))
        Harness.record("read \(mb) video, warm cache", ours: warmMount, baseline: warmBlob, baselineName: "the blob, read directly")
    }
}
