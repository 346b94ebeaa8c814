import Foundation
import Glibc
import Synchronization

/// How many files this process may hold open (`RLIMIT_NOFILE`), and what it does at that
/// limit.
///
/// The daemon holds a descriptor for every file open through the mount (its blob or its
/// bytes, for passthrough and for reads), besides its own. Started with the usual soft
/// limit of 1,024, the 1,001st file held open at once failed (measured: a program holding
/// 3,000 photos open got `EIO` for 1,950 of them, and two log lines each saying to run
/// `albumfs check`, although nothing was wrong with the library). File servers raise
/// their soft limit to the hard one at start, as systemd advises programs that do not
/// use `select` to do; so does every `albumfs` command (`raiseToHard`). A decoder worker lowers it again for what it
/// starts (`lowered`): exiftool, through Foundation's `Process`, may close every
/// descriptor below the limit.
///
/// Near the limit anyway (a hard limit set low), a new open through the mount fails
/// with `ENFILE` ("too many open files in system": the caller's own limit is not the one
/// reached), and the log says once a minute which limit it is and how to raise it
/// (`reached`), not once a request. A few descriptors are kept for the files already
/// open (`roomForAnotherFile`): their closes store what was written, and need some.
public enum DescriptorLimit {
    /// Below this, the mount says at start that it may not hold many files open at once.
    public static let enough = 4096

    /// Raises the soft limit to the hard one (or to the kernel's `nr_open`, when the
    /// hard limit is unlimited).
    public static func raiseToHard() {
        _ = probeSource  // opened now, far from any limit
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        var wanted = limit.rlim_max
        if wanted == rlim_t.max { wanted = kernelMaximum() }  // RLIM_INFINITY
        if wanted > limit.rlim_cur {
            var raised = rlimit(rlim_cur: wanted, rlim_max: limit.rlim_max)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
        }
        readAgain()
    }

    /// Lowers the soft limit to `most` if it is above it (a process that needs few files
    /// and starts programs that may close every descriptor below the limit).
    public static func lowered(to most: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur > rlim_t(most) else { return }
        limit.rlim_cur = rlim_t(most)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        readAgain()
    }

    /// The soft limit: as `raiseToHard` left it, or as last read (`readAgain`).
    public static var current: Int {
        let value = known.load(ordering: .relaxed)
        return value > 0 ? value : readAgain()
    }

    private static let known = Atomic<Int>(0)

    /// Reads the soft limit (someone may have changed it with `prlimit --pid`).
    @discardableResult
    private static func readAgain() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        known.store(Int(clamping: limit.rlim_cur), ordering: .relaxed)
        return Int(clamping: limit.rlim_cur)
    }

    /// Descriptors kept free for the files already open: a close that stores a new
    /// photo opens its blob's folder, a save its blob, a reader of the database its
    /// files. A quarter of a small limit, 64 of a large one.
    public static var reserve: Int { min(64, current / 4) }

    /// Whether a new file may be opened through the mount: not when fewer than `reserve`
    /// descriptors are left. The kernel hands out the lowest free number, so every number
    /// below the one a duplicate gets is in use: at least that many are held. Numbers
    /// freed above lower ones in use make this count low, never high; and what the files
    /// already open take later (a save's first write opens its blob and a copy, the
    /// database a connection for a new thread) comes out of the reserve. So the reserve
    /// makes a failed close unlikely, not impossible. A duplicate and its close, about
    /// half a microsecond here, beside an open's tens.
    public static func roomForAnotherFile() -> Bool {
        let probe = fcntl(probeSource >= 0 ? probeSource : 2, F_DUPFD_CLOEXEC, 0)
        guard probe >= 0 else { return !isReached(errno) }
        close(probe)
        if Int(probe) < current - reserve { return true }
        return Int(probe) < readAgain() - reserve
    }

    /// What `roomForAnotherFile` duplicates: `/dev/null`, whose close does nothing (the
    /// close of a duplicate of a file on a network or FUSE file system, stderr on one,
    /// would be a round trip to its server); opened by `raiseToHard` at the start, or
    /// stderr if it could not be.
    private static let probeSource: Int32 = open("/dev/null", O_RDONLY | O_CLOEXEC)

    /// Whether `code` says this process's table of open files is full.
    public static func isReached(_ code: Int32) -> Bool { code == EMFILE || code == ENFILE }

    /// When `reached` last wrote its line (seconds of the monotonic clock; 0: never).
    private static let lastReport = Atomic<Int>(0)

    /// Says, at most once a minute, that an open failed at the limit.
    public static func reached() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let seconds = Int(now.tv_sec)
        let last = lastReport.load(ordering: .relaxed)
        guard last == 0 || seconds - last >= 60,
              lastReport.compareExchange(expected: last, desired: seconds, ordering: .relaxed).exchanged else { return }
        Log.error("albumfs holds nearly as many files open as its limit allows (\(current), RLIMIT_NOFILE; \(reserve) are kept for the closes of files open): new opens through the mount fail with ENFILE until programs close some; start albumfs with a higher hard limit (ulimit -Hn, LimitNOFILE= in a systemd unit)")
    }

    /// The kernel's ceiling on any process's limit (`/proc/sys/fs/nr_open`).
    private static func kernelMaximum() -> rlim_t {
        let text = try? String(contentsOfFile: "/proc/sys/fs/nr_open", encoding: .utf8)
        let value = text.flatMap { rlim_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
        return value > 0 ? value : 1 << 20
    }
}
