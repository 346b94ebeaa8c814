import AlbumCore
import AlbumFSCore
import Foundation
import Glibc
import TestSupport
import Testing

/// Seeded random sequences of what people do to photos and files across albums and the
/// views that keep files too (All Photos, Favorites, Hidden, the desktop trash): copies,
/// files left open while written, saves, rm, mv, ln, marks, the trash and back. After
/// every step no folder may list a name twice, and every name listed must be reachable;
/// at the end `albumfs check` must pass. Each of the fixes in `OperationTableTests` "a
/// photo that comes back" and "starts to show" was a name listed twice that only a
/// particular order of such steps reached (this test found the last of them).
///
/// In-process only (thousands of steps; the mount runs the same core, and the two-host
/// races of `LoadTests` drive mounts). A run is a number of steps, not a time, so that
/// a slower machine runs as many (2,000 on SQLite, 400 on PostgreSQL, 250 through two
/// hosts: 5–10 s each here); `ALBUMFS_NAME_FUZZ_STEPS` multiplies them for longer runs
/// by hand, `ALBUMFS_NAME_FUZZ_SEED` picks the seed.
@Suite(.serialized)
struct NameFuzzTests {
    static let times = Int(ProcessInfo.processInfo.environment["ALBUMFS_NAME_FUZZ_STEPS"] ?? "") ?? 1
    static let seed = UInt64(ProcessInfo.processInfo.environment["ALBUMFS_NAME_FUZZ_SEED"] ?? "") ?? 20261206

    static let folders = ["Albums/Trip", "Albums/Other", "Albums/Trip/sub", "All Photos", "Smart Albums/Favorites",
                          "Smart Albums/Hidden", "Smart Albums/Recently Deleted", ".Trash-0/files"]
    static let names = ["P.jpg", "A.jpg", "B.jpg", "A (2).jpg", "P (2).jpg", "notes.txt", "P.xmp", "sub"]
    static let contents: [[UInt8]] = [Fixture.photoA, Fixture.photoB, Fixture.photoP, Fixture.text]
    static let marks = ["user.albumfs.favorite", "user.albumfs.hidden"]

    /// One thing a person does.
    enum Step: CustomStringConvertible, Sendable {
        case put(String, [UInt8])
        /// A new file (O_EXCL) or a save over one (O_TRUNC), written and left open.
        case openAndWrite(String, Int32, [UInt8])
        /// The close of the open file at this index (modulo how many are open).
        case close(Int)
        case rm(String)
        case mv(String, String)
        case ln(String, String)
        case mark(String, String, String)
        case mkdir(String)
        case rmdir(String)
        /// A minute on: saves' windows close (a mount's clock cannot be moved).
        case later

        var description: String {
            switch self {
            case .put(let path, _): return "put \(path)"
            case .openAndWrite(let path, let flags, _): return "open (\(flags & O_EXCL != 0 ? "O_EXCL" : "O_TRUNC")) and write \(path), left open"
            case .close(let index): return "close open file \(index)"
            case .rm(let path): return "rm \(path)"
            case .mv(let from, let to): return "mv \(from) \(to)"
            case .ln(let from, let to): return "ln \(from) \(to)"
            case .mark(let path, let mark, let value): return "setxattr \(mark)=\(value) \(path)"
            case .mkdir(let path): return "mkdir \(path)"
            case .rmdir(let path): return "rmdir \(path)"
            case .later: return "later: two minutes"
            }
        }

        var verb: String { String(description.split(separator: " ").first ?? "") }

        static func random(_ random: inout SplitMix, withHandles: Bool = true) -> Step {
            func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
            func path() -> String { pick(folders) + "/" + pick(names) }
            while true {
                switch random.next() % 13 {
                case 0, 1: return .put(path(), pick(contents))
                case 2 where withHandles: return .openAndWrite(path(), O_WRONLY | O_CREAT | (random.next() % 2 == 0 ? O_EXCL : O_TRUNC), pick(contents))
                case 3 where withHandles: return .close(Int(random.next() % 64))
                case 4: return .rm(path())
                case 5, 6: return .mv(path(), path())
                case 7: return .ln(path(), path())
                case 8: return .mark(path(), pick(marks), random.next() % 2 == 0 ? "1" : "0")
                case 9:
                    // Back from Recently Deleted, where the desktop and `mv` put it.
                    let name = pick(names)
                    return .mv("Smart Albums/Recently Deleted/" + name,
                               pick(["All Photos", "Albums/Trip", "Albums/Other"]) + "/" + pick([name] + names))
                case 10: return .later
                case 11: return .mkdir(path())
                case 12: return .rmdir(path())
                default: continue
                }
            }
        }

        /// Runs it on `fs`: nil when it succeeded, else its errno. `open` holds the files
        /// left open on this driver.
        func run(on fs: any Driver, _ open: inout [(handle: Int, path: String)]) -> Int32? {
            var opened: (Int, String)?
            let failed = fs.errno {
                switch self {
                case .put(let path, let bytes): try fs.put(path, bytes)
                case .openAndWrite(let path, let flags, let bytes):
                    let h = try fs.open(path, flags, mode: 0o644)
                    opened = (h, path)
                    try fs.write(h, bytes, at: 0)
                case .close: break
                case .rm(let path): try fs.unlink(path)
                case .mv(let from, let to): try fs.rename(from, to)
                case .ln(let from, let to): try fs.link(from, to)
                case .mark(let path, let mark, let value): try fs.setxattr(path, mark, value)
                case .mkdir(let path): try fs.mkdir(path)
                case .rmdir(let path): try fs.rmdir(path)
                case .later: _ = fs.advanceTime(seconds: 120)
                }
            }
            if let opened { open.append(opened) }
            if case .close(let index) = self, !open.isEmpty {
                let (h, _) = open.remove(at: index % open.count)
                return fs.errno { try fs.close(h) }
            }
            return failed
        }
    }

    /// What is wrong with the folders as `fs` shows them now.
    static func problems(through fs: any Driver, host: String = "") -> [String] {
        var problems: [String] = []
        for folder in folders {
            guard let listed = try? fs.list(folder) else { continue }
            var seen = Set<String>()
            for name in listed where !seen.insert(name).inserted { problems.append("\(host)\(folder) lists \(name) twice") }
            for name in Set(listed) where !fs.exists(folder + "/" + name) {
                problems.append("\(host)\(folder) lists \(name), which a stat does not find")
            }
        }
        return problems
    }

    /// Refusals (EPERM in a view, EEXIST, ENOENT, EINVAL, ...) are answers like any; EIO
    /// is a defect.
    static func defect(_ step: Step, _ failed: Int32?, host: String = "") -> String? {
        guard failed == EIO || failed == -1 else { return nil }
        return "\(host)\(step): \(failed == EIO ? "EIO" : "an error without an errno")"
    }

    static func report(_ steps: [String], _ kind: String) {
        var done: [String: Int] = [:]
        for host in steps {
            // The host's name first through two hosts ("a: mv ...").
            let step = host.hasPrefix("a: ") || host.hasPrefix("b: ") ? String(host.dropFirst(3)) : host
            guard !step.contains(": ") || step.hasPrefix("later") else { continue }
            let target = step.contains(".Trash-0") ? " (desktop trash)" : ""
            done[String(step.split(separator: " ").first ?? "") + target, default: 0] += 1
        }
        print("NameFuzzTests, \(kind): \(steps.count) steps; done: \(done.sorted { $0.key < $1.key })")
    }

    @Test(arguments: [Kind.inProcess, .inProcessPostgres])
    func noFolderListsANameTwice(_ kind: Kind) throws {
        let f = try Fixture(kind)
        // The desktop trash of root, as a file manager makes it (docs/desktop-trash.md).
        for folder in [".Trash-0", ".Trash-0/files", ".Trash-0/info"] { try f.fs.mkdir(folder) }
        var random = SplitMix(seed: Self.seed &+ UInt64(kind == .inProcess ? 0 : 1))
        var open: [(handle: Int, path: String)] = []
        var steps: [String] = []
        var problems: [String] = []
        let count = (kind == .inProcess ? 2000 : 400) * Self.times
        while steps.count < count && problems.isEmpty {
            let step = Step.random(&random)
            let failed = step.run(on: f.fs, &open)
            steps.append("\(step)" + (failed.map { ": \(String(cString: strerror($0)))" } ?? ""))
            problems += [Self.defect(step, failed)].compactMap { $0 } + Self.problems(through: f.fs)
        }
        for (h, _) in open { _ = f.fs.errno { try f.fs.close(h) } }
        Self.report(steps, "\(kind)")
        if problems.isEmpty { problems = try f.library().check().problems.map { "albumfs check: \($0)" } }
        let last = steps.suffix(25).joined(separator: "\n")
        #expect(problems == [], "seed \(Self.seed), \(kind), after \(steps.count) steps; the last ones:\n\(last)")
    }

    /// The same through two hosts of one PostgreSQL library (in-process, as
    /// `TwoHostRaceTests`), each step through either; and every fourth, a step of the
    /// other host made between this one's look and its transaction
    /// (`Library.setBeforeWrite`), where two hosts racing meet it once in thousands of
    /// calls. `LoadTests`' two-host race of plain files and photos once ended with a
    /// name listed twice, through both hosts.
    @Test func noFolderListsANameTwiceThroughTwoHosts() throws {
        let temp = TempDirectory("albumfs-name-fuzz")
        defer { temp.remove() }
        let database = try PostgresServer.shared().makeDatabase()
        defer { try? PostgresServer.shared().dropDatabase(database) }
        let lib = temp.sub("lib")
        _ = try Library.create(at: lib, database: database)
        let hosts = [try CoreDriver(library: lib, host: "a"), try CoreDriver(library: lib, host: "b")]
        defer { hosts.forEach { $0.stop() } }
        for folder in ["Albums/Trip", "Albums/Other", ".Trash-0", ".Trash-0/files", ".Trash-0/info"] { try hosts[0].mkdir(folder) }
        try hosts[0].put("Albums/Trip/P.jpg", Fixture.photoP)

        var random = SplitMix(seed: Self.seed &+ 2)
        var open: [[(handle: Int, path: String)]] = [[], []]
        var steps: [String] = []
        var problems: [String] = []
        while steps.count < 250 * Self.times && problems.isEmpty {
            let host = Int(random.next() % 2), other = 1 - host
            let step = Step.random(&random)
            let racing = random.next() % 4 == 0 ? Step.random(&random, withHandles: false) : nil
            let raced = Locked<(String, Int32?)?>(nil)
            if let racing {
                nonisolated(unsafe) let otherHost = hosts[other]
                hosts[host].fs.library.setBeforeWrite {
                    var none: [(handle: Int, path: String)] = []
                    let failed = racing.run(on: otherHost, &none)
                    raced.withLock { $0 = ("\(racing)", failed) }
                    return true
                }
            }
            let failed = step.run(on: hosts[host], &open[host])
            hosts[host].fs.library.setBeforeWrite(nil)
            let name = ["a: ", "b: "]
            if let (racingStep, racingFailed) = raced.withLock({ $0 }) {
                steps.append(name[other] + racingStep + (racingFailed.map { ": \(String(cString: strerror($0)))" } ?? "")
                             + " (inside the next step's look and transaction)")
                if racingFailed == EIO || racingFailed == -1 { problems.append(name[other] + racingStep + ": EIO") }
            }
            steps.append(name[host] + "\(step)" + (failed.map { ": \(String(cString: strerror($0)))" } ?? ""))
            problems += [Self.defect(step, failed, host: name[host])].compactMap { $0 }
            problems += Self.problems(through: hosts[0], host: name[0]) + Self.problems(through: hosts[1], host: name[1])
        }
        for (host, handles) in open.enumerated() { for (h, _) in handles { _ = hosts[host].errno { try hosts[host].close(h) } } }
        Self.report(steps, "two hosts")
        if problems.isEmpty { problems = try hosts[0].library().check().problems.map { "albumfs check: \($0)" } }
        let last = steps.suffix(25).joined(separator: "\n")
        #expect(problems == [], "seed \(Self.seed), two hosts, after \(steps.count) steps; the last ones:\n\(last)")
    }
}
