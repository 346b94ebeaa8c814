import AlbumCore
import Foundation
import Glibc

/// Timing, commands and the result table of the benchmark.
enum Harness {
    nonisolated(unsafe) static var runs = 5
    nonisolated(unsafe) static var albumfs = ""
    nonisolated(unsafe) static var rows: [Row] = []

    struct Row {
        let name: String
        let ours: Double
        let baseline: Double?
        let baselineName: String
        let unit: String
        let goal: Goal?
    }

    /// A goal of PRODUCT.md section 7: on the ratio to a baseline, or on the figure itself
    /// (mount time, memory), never disguised as a baseline.
    enum Goal {
        case ratioAtMost(Double)
        case ratioAtLeast(Double)
        case below(Double)

        func met(_ row: Row) -> Bool? {
            switch self {
            case .ratioAtMost(let g): return row.ratio.map { $0 <= g }
            case .ratioAtLeast(let g): return row.ratio.map { $0 >= g }
            case .below(let g): return row.ours < g
            }
        }

        func text(_ unit: String) -> String {
            switch self {
            case .ratioAtMost(let g): return String(format: "ratio <= %.2f", g)
            case .ratioAtLeast(let g): return String(format: "ratio >= %.2f", g)
            case .below(let g): return "under " + Harness.format(g, unit)
            }
        }
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Median wall time of `body` over `runs` runs; `prepare` runs before each, untimed.
    static func median(_ runs: Int = Harness.runs, prepare: () throws -> Void = {}, _ body: () throws -> Void) rethrows -> Double {
        var times: [Double] = []
        for _ in 0..<runs {
            try prepare()
            let start = now()
            try body()
            times.append(now() - start)
        }
        times.sort()
        return times[times.count / 2]
    }

    /// The median time of each contender's `body`, run in turns: run 1 of each, then run
    /// 2 of each, and so on (`prepare` before each, untimed), so that whatever drifts on
    /// the machine while the benchmark runs weighs on every contender alike. Every run is
    /// printed on a line headed `what`, each contender under its name in `names`: the
    /// spread says how far one median can be trusted on machines like these.
    static func mediansInTurns(_ runs: Int, _ contenders: [(prepare: () throws -> Void, body: () throws -> Void)],
                               what: String, names: [String]) throws -> [Double] {
        var times = Array(repeating: [Double](), count: contenders.count)
        for _ in 0..<runs {
            for (i, contender) in contenders.enumerated() {
                try contender.prepare()
                let start = now()
                try contender.body()
                times[i].append(now() - start)
            }
        }
        let each = zip(names, times).map { name, t in name + " " + t.map { String(format: "%.3f", $0) }.joined(separator: " ") }
        say("  (\(what), runs in turns, s: \(each.joined(separator: "; ")))")
        return times.map { $0.sorted()[$0.count / 2] }
    }

    /// Fails with a clear reason when `dir`'s disk has less than `bytes` free.
    static func requireRoom(_ bytes: Int64, in dir: String, for what: String) throws {
        var s = statvfs()
        guard statvfs(dir, &s) == 0 else { return }
        let free = Int64(s.f_bavail) * Int64(s.f_frsize)
        if free < bytes {
            throw BenchError("\(what) need \(bytes >> 30) GiB free in \(dir); \(free >> 30) GiB are")
        }
    }

    /// Runs a shell command, waiting for it with waitpid (Foundation's Process polls,
    /// which would round every figure up to its polling period). Returns stdout.
    @discardableResult
    static func sh(_ command: String, check: Bool = true, shell: String = "/bin/sh") throws -> String {
        let out = "/tmp/albumfs-bench-out-\(getpid())", err = "/tmp/albumfs-bench-err-\(getpid())"
        defer { unlink(out); unlink(err) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(shell), strdup("-c"), strdup(command), nil]
        defer { for p in argv { free(p) } }
        // The core ignores SIGPIPE in this process (its decoder pipes), and children
        // would inherit that: `ls | head` would then list a whole folder, not a page.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, shell, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw BenchError("cannot run \(shell): \(rc)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        if check && code != 0 {
            let stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
            throw BenchError("command failed (\(code)): \(command): \(stderr)")
        }
        return (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
    }

    static func q(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Deletes the library at `path`, if any (its originals are read-only, hence the
    /// chmod), and makes an empty one there with `albumfs init` (its metadata in the
    /// empty PostgreSQL `database`, if given).
    static func freshLibrary(_ path: String) throws { try freshLibrary(path, database: nil) }

    static func freshLibrary(_ path: String, database: String?) throws {
        _ = try? sh("chmod -R u+w \(q(path)) 2>/dev/null; rm -rf \(q(path))", check: false)
        try sh("\(q(albumfs)) init \(q(path))" + (database.map { " --database \(q($0))" } ?? ""))
    }

    /// Whether this run may drop the kernel's caches (root writes drop_caches). Without
    /// it no cold figure is printed: dropping some files' pages (fadvise) leaves FUSE's
    /// own caches and the baselines' warm, which made "cold" rows warm in disguise.
    static let canDropCaches: Bool = access("/proc/sys/vm/drop_caches", W_OK) == 0

    /// Drops the page cache, dentries and inodes, for every contender alike.
    static func dropCaches() {
        sync()
        guard let handle = FileHandle(forWritingAtPath: "/proc/sys/vm/drop_caches") else { return }
        handle.write(Data("3\n".utf8))
        try? handle.close()
    }

    /// Says once per benchmark that its cold rows are left out, and why.
    static func skipCold(_ what: String) {
        say("  (\(what), cold: not measured; dropping the caches needs root)")
    }

    static func record(_ name: String, ours: Double, baseline: Double?, baselineName: String, unit: String = "s", goal: Goal? = nil) {
        rows.append(Row(name: name, ours: ours, baseline: baseline, baselineName: baselineName, unit: unit, goal: goal))
        say(line(rows.last!))
    }

    /// The rows that have a goal and miss it (printed again at the end).
    static var short: [Row] { rows.filter { $0.goal?.met($0) == false } }

    /// Prints a line at once (stdout may be a pipe).
    static func say(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static let width = 140

    static func header() {
        Harness.say(String(repeating: "-", count: width))
        Harness.say(pad("benchmark", 52) + pad("albumfs", 14) + pad("baseline", 14) + pad("ratio", 8) + pad("goal", 22) + "baseline is")
        Harness.say(String(repeating: "-", count: width))
    }

    static func line(_ r: Row) -> String {
        let ours = format(r.ours, r.unit)
        let base = r.baseline.map { format($0, r.unit) } ?? "-"
        let ratio = r.ratio.map { String(format: "%.2f", $0) } ?? "-"
        let goal = r.goal.map { g in g.text(r.unit) + (g.met(r) == false ? " SHORT" : g.met(r) == true ? " met" : "") } ?? ""
        return pad(r.name, 52) + pad(ours, 14) + pad(base, 14) + pad(ratio, 8) + pad(goal, 22) + r.baselineName
    }

    static func format(_ v: Double, _ unit: String) -> String {
        switch unit {
        case "s": return v < 0.01 ? String(format: "%.2f ms", v * 1000) : String(format: "%.3f s", v)
        case "ms": return String(format: "%.2f ms", v * 1000)
        case "MB": return String(format: "%.1f MB", v)
        default: return String(format: "%.2f %@", v, unit)
        }
    }

    static func pad(_ s: String, _ n: Int) -> String {
        s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count)
    }
}

extension Harness.Row {
    /// albumfs / baseline; for rates (MB/s, per second) too, so "at least" reads as more.
    var ratio: Double? { baseline.flatMap { $0 > 0 ? ours / $0 : nil } }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A mount of a library for the length of a benchmark.
final class BenchMount {
    let mountpoint: String
    private var mounted = true

    init(library: String, mountpoint: String, options: String = "") throws {
        self.mountpoint = mountpoint
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let opts = options.isEmpty ? "" : " -o \(options)"
        try Harness.sh("\(Harness.q(Harness.albumfs)) mount \(Harness.q(library)) \(Harness.q(mountpoint))\(opts)")
    }

    /// Unmounts once: a later mount on the same folder belongs to another object.
    func unmount() {
        guard mounted else { return }
        mounted = false
        _ = try? Harness.sh("fusermount3 -u \(Harness.q(mountpoint)) || fusermount3 -u -z \(Harness.q(mountpoint))", check: false)
        // Wait for the daemon and its decoder workers to go: the library is free again,
        // and nothing of ours runs while the next figure is measured. The workers run
        // as `/proc/self/exe decoder-worker` (until 2026-12-05 this waited for
        // `albumfs thumbnail-worker`, a name no process has had since, and so never
        // for them). `[a]`, `[d]`: a pattern must not match the command line of the sh
        // that runs pgrep.
        for _ in 0..<400 {
            let out = (try? Harness.sh("pgrep -f \(Harness.q("[a]lbumfs mount .* \(mountpoint)")); pgrep -f '[d]ecoder-worker'", check: false)) ?? ""
            if out.isEmpty { return }
            usleep(25_000)
        }
    }

    deinit { unmount() }
}
