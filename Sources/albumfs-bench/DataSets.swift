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

    /// A fresh library at `path` (its metadata in the PostgreSQL `database`, if given)
    /// with the seed photo imported; returns it and the seed's hash.
    static func library(at path: String, database: String? = nil, seed: String) throws -> (Library, String) {
        _ = try? Harness.sh("chmod -R u+w \(Harness.q(path)) 2>/dev/null; rm -rf \(Harness.q(path))", check: false)
        let library = try Library.create(at: path, database: database)
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

    /// The library the listing figures walk: an album of each of `sizes` and the rest of
    /// `libraryAssets` outside albums. Returns it and its folders with their sizes
    /// ("Albums/Album 1000", ..., "All Photos").
    static func listLibrary(at path: String, database: String? = nil, seed: String, sizes: [Int],
                            libraryAssets: Int) throws -> (Library, [(String, Int)]) {
        let (library, sha) = try DataSets.library(at: path, database: database, seed: seed)
        var folders: [(String, Int)] = []
        var made = 0
        for size in sizes {
            let album = try library.write { try $0.createAlbum(named: "Album \(size)", in: 0) }
            let items = DataSets.assets(size, prefix: "A\(size)_").map { item -> SyntheticAsset in
                var plain = item
                plain.kinds = []; plain.hidden = false; plain.trashed = false
                return plain
            }
            try library.addSyntheticAssets(items, sha256: sha, album: album.id)
            folders.append(("Albums/Album \(size)", size))
            made += size
        }
        if libraryAssets > made {
            let rest = DataSets.assets(libraryAssets - made, prefix: "L_").map { item -> SyntheticAsset in
                var plain = item
                plain.hidden = false; plain.trashed = false
                return plain
            }
            try library.addSyntheticAssets(rest, sha256: sha)
        }
        folders.append(("All Photos", try library.count(in: .allPhotos)))
        return (library, folders)
    }
}
