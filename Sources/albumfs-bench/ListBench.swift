import AlbumCore
import Foundation
import Glibc

/// ls -l, find and du over albums of 1,000 and 10,000 assets and over All Photos of a
/// 100,000-asset library, against the same names as plain files on the backing disk
/// and through passthrough_ll; warm and with a cold dentry cache.
enum ListBench {
    static func run(dir: String, sizes: [Int], libraryAssets: Int) throws {
        let path = dir + "/list.library"
        let (library, folders) = try DataSets.listLibrary(at: path, seed: try DataSets.seedPhoto(in: dir), sizes: sizes,
                                                          libraryAssets: libraryAssets)
        let names: [String: [String]] = try Dictionary(uniqueKeysWithValues: folders.map { folder, _ in
            if folder == "All Photos" { return (folder, try library.assets(in: .allPhotos).map(\.name)) }
            let album = try library.album(path: [String(folder.dropFirst("Albums/".count))])!
            return (folder, try library.members(ofAlbum: album.id).map(\.0.name))
        })
        _ = consume library

        // The same trees as plain empty files.
        let plain = dir + "/list.plain"
        _ = try? Harness.sh("rm -rf \(Harness.q(plain))", check: false)
        for (folder, _) in folders {
            let target = plain + "/" + folder
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
            for name in names[folder]! {
                let fd = open(target + "/" + name, O_CREAT | O_WRONLY, 0o644)
                close(fd)
            }
        }
        let passthrough = try Passthrough(dir: dir, source: plain, mountpoint: dir + "/list.passthrough")
        defer { passthrough.unmount() }
        let mount = try BenchMount(library: path, mountpoint: dir + "/list.mnt")
        defer { mount.unmount() }

        // `ls -f` and `find` ask for names only; `ls -l` and `du` for every file's attributes.
        let commands = [("ls -f", "ls -f %@ > /dev/null"), ("ls -l", "ls -l %@ > /dev/null"), ("find -type f | wc -l", "find %@ -type f -not -path '*/.thumbnails/*' | wc -l > /dev/null"),
                        ("du -s", "du -s --exclude=.thumbnails %@ > /dev/null")]
        for (folder, count) in folders {
            for (label, command) in commands {
                let run = { (root: String) -> () throws -> Void in
                    { _ = try Harness.sh(String(format: command, Harness.q(root + "/" + folder))) }
                }
                let name = "\(label), \(folder == "All Photos" ? "All Photos" : "album") of \(count)"
                // passthrough_ll keeps a descriptor per inode: past the descriptor limit
                // (20,000 on these machines) it cannot list at all.
                let ptNote = "passthrough_ll (fails: one descriptor per inode)"
                if Harness.canDropCaches {
                    let drop = { Harness.dropCaches() }
                    let cold = try Harness.mediansInTurns(Harness.runs, [(drop, run(plain)), (drop, run(mount.mountpoint))],
                                                             what: "\(name), cold", names: ["plain", "albumfs"])
                    let (coldPlain, coldOurs) = (cold[0], cold[1])
                    let coldPT = try? Harness.median(prepare: drop, run(passthrough.mountpoint))
                    Harness.record("\(name), cold", ours: coldOurs, baseline: coldPlain, baselineName: "plain files", goal: .ratioAtMost(2.0))
                    Harness.record("\(name), cold", ours: coldOurs, baseline: coldPT, baselineName: coldPT == nil ? ptNote : "passthrough_ll")
                } else {
                    Harness.skipCold(name)
                }
                try run(plain)(); _ = try? run(passthrough.mountpoint)(); try run(mount.mountpoint)()
                let warm = try Harness.mediansInTurns(Harness.runs, [({}, run(plain)), ({}, run(mount.mountpoint))],
                                                     what: "\(name), warm", names: ["plain", "albumfs"])
                let (warmPlain, warmOurs) = (warm[0], warm[1])
                let warmPT = try? Harness.median(Harness.runs, run(passthrough.mountpoint))
                Harness.record("\(name), warm", ours: warmOurs, baseline: warmPlain, baselineName: "plain files", goal: .ratioAtMost(2.0))
                Harness.record("\(name), warm", ours: warmOurs, baseline: warmPT, baselineName: warmPT == nil ? ptNote : "passthrough_ll")
            }
        }
    }
}
