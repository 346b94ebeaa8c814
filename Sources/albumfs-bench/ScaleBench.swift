import AlbumCore
import Foundation
import Glibc

/// How cost grows with the library: mount time, the daemon's peak memory, and `ls` of a
/// small album, for libraries of 10,000 to 1,000,000 assets.
enum ScaleBench {
    static func run(dir: String, sizes: [Int]) throws {
        let seed = try DataSets.seedPhoto(in: dir)
        for size in sizes {
            let path = dir + "/scale-\(size).library"
            let (library, sha) = try DataSets.library(at: path, seed: seed)
            let small = try library.write { try $0.createAlbum(named: "Small", in: 0) }
            try library.addSyntheticAssets(DataSets.assets(20, prefix: "S_"), sha256: sha, album: small.id)
            try library.addSyntheticAssets(DataSets.assets(size - 21), sha256: sha)
            _ = consume library  // the mount takes the library's lock
            let cold = Harness.canDropCaches
            if cold { Harness.dropCaches() }
            let mountpoint = dir + "/scale.mnt"
            let started = Harness.now()
            let mount = try BenchMount(library: path, mountpoint: mountpoint)
            try Harness.sh("ls \(Harness.q(mountpoint)) > /dev/null")
            let mountTime = Harness.now() - started
            let ls = try Harness.median(Harness.runs, prepare: { if cold { Harness.dropCaches() } }) {
                _ = try Harness.sh("ls -l \(Harness.q(mountpoint))/Albums/Small > /dev/null")
            }
            // A file manager's visit: the small album, its thumbnails' names, All Photos' first
            // page; then all of All Photos listed (as `find` or a backup would), every row read.
            try Harness.sh("ls -l \(Harness.q(mountpoint))/Albums/Small/.thumbnails > /dev/null; ls -U \(Harness.q(mountpoint))/'All Photos' | head -100 > /dev/null")
            try Harness.sh("ls -f \(Harness.q(mountpoint))/'All Photos' > /dev/null")
            // The daemon and its decoder workers (its children), each at its peak: an
            // upper bound of what the mount holds at once.
            let pid = try Harness.sh("pgrep -f \(Harness.q("[a]lbumfs mount .* \(mountpoint)"))").split(separator: "\n").first.map(String.init) ?? ""
            let workers = (try? Harness.sh("pgrep -P \(pid)", check: false))?.split(separator: "\n").map(String.init) ?? []
            func peakKB(_ pid: String) -> Double {
                let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
                return status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
                    .flatMap { Double($0.split(separator: " ").dropFirst().first { !$0.isEmpty } ?? "") } ?? 0
            }
            let hwm = ([pid] + workers).map(peakKB).reduce(0, +)
            mount.unmount()
            let label = size >= 1_000_000 ? "\(size / 1_000_000)M" : "\(size / 1000)k"
            Harness.record("mount time, \(label) assets\(cold ? ", cold" : "")", ours: mountTime, baseline: nil, baselineName: "", goal: .below(1.0))
            Harness.record("peak RSS, daemon + \(workers.count) workers, \(label) assets", ours: hwm / 1024, baseline: nil, baselineName: "", unit: "MB", goal: .below(200))
            Harness.record("ls -l of a 20-photo album, \(label) assets\(cold ? ", cold" : ", warm")", ours: ls, baseline: nil, baselineName: "")
            _ = try? Harness.sh("chmod -R u+w \(Harness.q(path)); rm -rf \(Harness.q(path))", check: false)
        }
    }
}
