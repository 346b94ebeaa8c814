import AlbumCore

enum CheckCommand {
    static let command = Commands.Command(
        name: "check", synopsis: "verify the library",
        help: """
            usage: albumfs check LIBRARY [--repair]

            Verifies the library: SQLite's integrity and foreign-key checks, every blob
            in originals/ that a row uses re-hashed against its name, every row pointing
            at a blob that exists, originals whose time on disk is not the one stored
            (reads refuse them: a copy of the library that did not keep times), plain
            files whose bytes are missing, counters that agree with the rows. Problems
            name the asset; orphans (blobs no asset uses, left by a crash) are reported
            as notes, and gc removes them. Exit status 1 when a problem was found.

            --repair  also fixes what can be fixed without losing anything (missing or
                      stale rows, counters, the stored time of intact originals, names
                      of plain files whose bytes are gone); it needs the library
                      unmounted.
            """,
        run: run)

    static func run(_ raw: [String]) throws -> Int32 {
        let args = try Arguments(raw, valued: [], flags: ["--help", "--repair"], command: "check")
        let path = try Commands.positionals(args, ["LIBRARY"], command: "check")[0]
        let repair = args.flags.contains("--repair")
        let library = try Library.open(at: absolutePath(path), access: repair ? .exclusive : .reader)
        var bar: ProgressBar?
        let report = try library.check(repair: repair) { done, total, bytes in
            if bar == nil { bar = ProgressBar(total: total, totalBytes: 0, label: "checking") }
            bar?.advance(bytes: bytes)
        }
        bar?.finish()
        for note in report.notes { print("note: \(note)") }
        for repairDone in report.repairs { print("repaired: \(repairDone)") }
        for problem in report.problems { print("problem: \(problem)") }
        print("checked \(report.blobsChecked) blobs (\(formatBytes(report.bytesChecked))): "
              + (report.isHealthy ? "ok" : "\(report.problems.count) problem(s)"))
        return report.isHealthy ? Exit.ok : Exit.failure
    }
}
