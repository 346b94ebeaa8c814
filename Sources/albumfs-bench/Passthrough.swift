import Foundation
import Glibc

/// libfuse's own low-level passthrough example (`passthrough_ll`), built from the source
/// Debian ships in libfuse3-dev, mounted over a folder of the same disk: the baseline
/// for reads and copies through FUSE. Run at its best: `cache=always` (keep_cache,
/// cached readdir) and one-hour timeouts, as long as AlbumFS's own, for reads and
/// listings; its default (1 s timeouts, no keep_cache) would compare our caches with its
/// none. Copies into it run with `cache=never` (direct I/O), its fastest there: its
/// writes then skip the kernel's page cache, as AlbumFS's writes into a new file do
/// (2026-12-05, caches dropped before each run: `cp -r` + `sync` of 100 24 MP photos
/// 0.75-0.84 s against 0.98-1.05 s with `cache=always`, of 2,000 small photos 0.92-1.09
/// s against 1.10-1.21 s).
final class Passthrough {
    static let options = "cache=always,timeout=3600"
    static let copyOptions = "cache=never,timeout=3600"
    static let described = "passthrough_ll -o source=DIR,\(options) (libfuse 3.14's example, multi-threaded); "
        + "for copies into it, -o \(copyOptions), its fastest there"

    let mountpoint: String
    private var mounted = true

    static func binary(in dir: String) throws -> String {
        let binary = dir + "/passthrough_ll"
        if FileManager.default.isExecutableFile(atPath: binary) { return binary }
        let source = "/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c"
        guard FileManager.default.fileExists(atPath: source) else {
            throw BenchError("\(source) is missing; install libfuse3-dev (mount-scripts/deps bench)")
        }
        try Harness.sh("cp \(source) /usr/share/doc/libfuse3-dev/examples/passthrough_helpers.h \(Harness.q(dir))/ && gcc -O2 -Wall -o \(Harness.q(binary)) \(Harness.q(dir))/passthrough_ll.c $(pkg-config --cflags --libs fuse3)")
        return binary
    }

    /// Mounts `source` on `mountpoint` through passthrough_ll (in the background).
    init(dir: String, source: String, mountpoint: String, options: String = Passthrough.options) throws {
        self.mountpoint = mountpoint
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let binary = try Passthrough.binary(in: dir)
        // The daemon outlives this command: close everything above stderr before exec, so
        // that it holds none of the benchmark's descriptors (any opened or inherited without
        // O_CLOEXEC). Harness.sh itself waits with waitpid and sends output to files, so
        // the daemon's descriptors cannot hold up the wait.
        // It keeps a descriptor per inode it has seen: a big tree needs a big limit.
        try Harness.sh("ulimit -n 1048576 2>/dev/null || ulimit -n $(ulimit -Hn); for fd in $(ls /proc/$$/fd); do [ $fd -gt 2 ] && eval \"exec $fd>&-\"; done; exec \(Harness.q(binary)) -o source=\(Harness.q(source)),\(options) \(Harness.q(mountpoint))", shell: "/bin/bash")
    }

    func unmount() {
        guard mounted else { return }
        mounted = false
        _ = try? Harness.sh("fusermount3 -u \(Harness.q(mountpoint)) || fusermount3 -u -z \(Harness.q(mountpoint))", check: false)
    }

    deinit { unmount() }
}
