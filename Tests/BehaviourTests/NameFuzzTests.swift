import AlbumCore
import Foundation
import Glibc
import TestSupport
import Testing

/// Seeded random sequences of what people do to photos and files across albums and the
/// views that keep files too (All Photos, Favorites, Hidden): copies, files left open while
/// written, rm, mv, ln, marks, the trash and back. After every step no folder may list a
/// name twice, and every name listed must be reachable; at the end `albumfs check` must
/// pass. Each of the fixes in `OperationTableTests` "a photo that comes back" and "starts
/// to show" was a name listed twice that only a particular order of such steps reached.
///
/// In-process only (thousands of steps; the mount runs the same core, and the two-host
/// races of `LoadTests` drive a mount). `ALBUMFS_NAME_FUZZ_SECONDS` bounds each run
/// (default 8); `ALBUMFS_NAME_FUZZ_SEED` picks the seed.
@Suite(.serialized)
struct NameFuzzTests {
    static let seconds = Double(ProcessInfo.processInfo.environment["ALBUMFS_NAME_FUZZ_SECONDS"] ?? "") ?? 8
    static let seed = UInt64(ProcessInfo.processInfo.environment["ALBUMFS_NAME_FUZZ_SEED"] ?? "") ?? 20261206

    static let folders = ["Albums/Trip", "Albums/Other", "Albums/Trip/sub", "All Photos", "Smart Albums/Favorites",
                          "Smart Albums/Hidden", "Smart Albums/Recently Deleted", ".Trash-0/files"]
    static let names = ["P.jpg", "A.jpg", "B.jpg", "A (2).jpg", "P (2).jpg", "notes.txt", "P.xmp", "sub"]
    static let contents: [[UInt8]] = [Fixture.photoA, Fixture.photoB, Fixture.photoP, Fixture.text]
    static let marks = ["user.albumfs.favorite", "user.albumfs.hidden"]

    @Test(arguments: [Kind.inProcess, .inProcessPostgres])
    func noFolderListsANameTwice(_ kind: Kind) throws {
        let f = try Fixture(kind)
        var random = SplitMix(seed: Self.seed &+ UInt64(kind == .inProcess ? 0 : 1))
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        func path() -> String { pick(Self.folders) + "/" + pick(Self.names) }

        // The desktop trash of root, as a file manager makes it (docs/desktop-trash.md).
        for folder in [".Trash-0", ".Trash-0/files", ".Trash-0/info"] { try f.fs.mkdir(folder) }
        var open: [(handle: Int, path: String)] = []
        var steps: [String] = []
        var problems: [String] = []
        let deadline = Date().addingTimeInterval(Self.seconds)
        while Date() < deadline && problems.isEmpty {
            let a = path(), b = path()
            var step = ""
            // Refusals (EPERM in a view, EEXIST, ENOENT, EINVAL, ...) are answers like any;
            // EIO is a defect.
            let failed = f.fs.errno {
                switch random.next() % 13 {
                case 0, 1:
                    step = "put \(a)"
                    try f.fs.put(a, pick(Self.contents))
                case 2:
                    // A new file, or a save over one (O_TRUNC), written and left open.
                    let flags = O_WRONLY | O_CREAT | (random.next() % 2 == 0 ? O_EXCL : O_TRUNC)
                    step = "open (\(flags & O_EXCL != 0 ? "O_EXCL" : "O_TRUNC")) and write \(a), left open"
                    let h = try f.fs.open(a, flags, mode: 0o644)
                    open.append((h, a))
                    try f.fs.write(h, pick(Self.contents), at: 0)
                case 3:
                    guard !open.isEmpty else { return }
                    let (h, p) = open.remove(at: Int(random.next() % UInt64(open.count)))
                    step = "close \(p)"
                    try f.fs.close(h)
                case 4:
                    step = "rm \(a)"
                    try f.fs.unlink(a)
                case 5, 6:
                    step = "mv \(a) \(b)"
                    try f.fs.rename(a, b)
                case 7:
                    step = "ln \(a) \(b)"
                    try f.fs.link(a, b)
                case 8:
                    let mark = pick(Self.marks), value = random.next() % 2 == 0 ? "1" : "0"
                    step = "setxattr \(mark)=\(value) \(a)"
                    try f.fs.setxattr(a, mark, value)
                case 9:
                    // Back from Recently Deleted, where the desktop and `mv` put it.
                    let name = pick(Self.names)
                    let to = pick(["All Photos", "Albums/Trip", "Albums/Other"]) + "/" + pick([name] + Self.names)
                    step = "mv Smart Albums/Recently Deleted/\(name) \(to)"
                    try f.fs.rename("Smart Albums/Recently Deleted/" + name, to)
                case 10:
                    // A minute on: saves' windows close (a mount's clock cannot be moved).
                    step = "later: two minutes"
                    _ = f.fs.advanceTime(seconds: 120)
                case 11:
                    step = "mkdir \(a)"
                    try f.fs.mkdir(a)
                default:
                    step = "rmdir \(a)"
                    try f.fs.rmdir(a)
                }
            }
            if step.isEmpty { continue }
            steps.append(step + (failed.map { ": \(String(cString: strerror($0)))" } ?? ""))
            if failed == EIO || failed == -1 { problems.append("\(step): \(failed == EIO ? "EIO" : "an error without an errno")") }
            for folder in Self.folders {
                guard let listed = try? f.fs.list(folder) else { continue }
                var seen = Set<String>()
                for name in listed where !seen.insert(name).inserted { problems.append("\(folder) lists \(name) twice") }
                for name in Set(listed) where !f.fs.exists(folder + "/" + name) {
                    problems.append("\(folder) lists \(name), which a stat does not find")
                }
            }
        }
        for (h, _) in open { _ = f.fs.errno { try f.fs.close(h) } }
        // What was done, by verb and folder, for whoever runs it by hand with other seeds.
        var done: [String: Int] = [:]
        for step in steps where !step.contains(": ") {
            let words = step.split(separator: " ")
            let verb = String(words.first ?? ""), target = step.contains(".Trash-0") ? " (desktop trash)" : ""
            done[verb + target, default: 0] += 1
        }
        print("NameFuzzTests, \(kind): \(steps.count) steps; done: \(done.sorted { $0.key < $1.key })")
        if problems.isEmpty { problems = try f.library().check().problems.map { "albumfs check: \($0)" } }
        let last = steps.suffix(25).joined(separator: "\n")
        #expect(problems == [], "seed \(Self.seed), \(kind), after \(steps.count) steps; the last ones:\n\(last)")
        if problems.isEmpty { #expect(steps.count > 200, "too few steps in \(Self.seconds) s to say anything") }
    }
}
