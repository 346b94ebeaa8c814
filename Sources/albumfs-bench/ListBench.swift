import AlbumCore
import Foundation
import Glibc

/// ls -l and find over an album of many assets against the same names as plain files.
enum ListBench {
    static func run(dir: String, assets: Int) throws {
        let path = dir + "/list.library"
        let (library, sha) = try DataSets.library(at: path, seed: try DataSets.seedPhoto(in: dir))
        let benchAlbum = try library.createAlbum(named: "Bench", in: 0)
        let items = DataSets.assets(assets, prefix: "LIST_").map { item -> SyntheticAsset in
            var plain = item
            plain.kinds = []; plain.hidden = false; plain.trashed = false
            return plain
        }
        try library.addSyntheticAssets(items, sha256: sha, album: benchAlbum.id)
        _ = consume library

        let plain = dir + "/list.plain"
        _ = try? Harness.sh("rm -rf \(Harness.q(plain))", check: false)
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        for item in items {
            let fd = open(plain + "/" + item.name, O_CREAT | O_WRONLY, 0o644)
            close(fd)
        }
        let mount = try BenchMount(library: path, mountpoint: dir + "/list.mnt")
        defer { mount.unmount() }
        let album = mount.mountpoint + "/Albums/Bench"
        let n = "\(assets)"
        for (label, command) in [("ls -l", "ls -l %@ > /dev/null"), ("find -type f | wc -l", "find %@ -type f | wc -l > /dev/null")] {
            let run = { (folder: String) -> () throws -> Void in { _ = try Harness.sh(String(format: command, Harness.q(folder))) } }
            let coldPlain = try Harness.median(prepare: { Harness.dropCaches([]) }, run(plain))
            let coldOurs = try Harness.median(prepare: { Harness.dropCaches([]) }, run(album))
            Harness.record("\(label), album of \(n), cold dentry cache", ours: coldOurs, baseline: coldPlain, baselineName: "plain files on the backing disk")
            try run(plain)()
            try run(album)()
            let warmPlain = try Harness.median(Harness.runs, run(plain))
            let warmOurs = try Harness.median(Harness.runs, run(album))
            Harness.record("\(label), album of \(n), warm", ours: warmOurs, baseline: warmPlain, baselineName: "plain files on the backing disk")
        }
    }
}
