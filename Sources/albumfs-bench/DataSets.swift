import AlbumCore
import Foundation
import Glibc

/// Building the data sets the benchmarks measure.
enum DataSets {
    /// A small real JPEG (made by ffmpeg) to be the shared blob of synthetic assets.
    static func seedPhoto(in dir: String) throws -> String {
        let path = dir + "/seed.jpg"
        if !FileManager.default.fileExists(atPath: path) {
            try Harness.sh("ffmpeg -loglevel error -y -f lavfi -i testsrc=size=320x240 -frames:v 1 \(Harness.q(path))")
        }
        return path
    }

    /// A fresh library at `path` with the seed photo imported; returns it and the seed's hash.
    static func library(at path: String, seed: String) throws -> (Library, String) {
        _ = try? Harness.sh("chmod -R u+w \(Harness.q(path)) 2>/dev/null; rm -rf \(Harness.q(path))", check: false)
        let library = try Library.create(at: path)
        guard let asset = try library.importFile(at: seed, originalName: "seed.jpg", destination: .library).asset else {
            throw BenchError("the seed photo was refused")
        }
        return (library, asset.sha256)
    }

    /// `count` synthetic assets over ten years, with a mix of kinds and flags.
    static func assets(_ count: Int, prefix: String = "IMG_") -> [SyntheticAsset] {
        let start: Int64 = 1_420_070_400  // 2015-01-01
        let span: Int64 = 10 * 365 * 86400
        var generator = SplitMix(seed: 42)
        return (0..<count).map { i in
            var a = SyntheticAsset(name: String(format: "%@%07d.JPG", prefix, i), takenAt: start + span * Int64(i) / Int64(max(count, 1)))
            let r = generator.next() % 1000
            switch r {
            case 0..<10: a.kinds = .screenshot
            case 10..<20: a.kinds = .panorama
            case 20..<25: a.kinds = .animated
            case 25..<30: a.kinds = .raw
            case 30..<40: a.kinds = .selfie
            case 40..<50: a.kinds = .live
            case 50..<100: a.mediaType = .video
            default: break
            }
            let f = generator.next() % 100
            a.favorite = f < 3
            a.hidden = f == 3
            a.trashed = f == 4
            return a
        }
    }
}
