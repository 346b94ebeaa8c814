import Foundation
import Glibc

/// An NFS client (NFSv3; NFSv4 with `-4`) that holds open file handles while the test changes the server side
/// (Tests/Clients/nfs-hold.c, built with gcc and libnfs, run in ganesha's namespace).
/// It prints "PATH INODE SIZE SUM" for each file when it opens them, then again, through
/// the same handles, when `readAgain()` tells it to.
public final class NFSHolder: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output: String
    private let outputHandle: FileHandle
    private let errorHandle: FileHandle?

    /// The lines printed when the files were opened.
    public private(set) var before: [String] = []

    /// Mounts the export of `server`, opens `paths` (inside the export) and waits until
    /// they are held.
    /// `options`: nfs-hold's (`-4`, `-n`); `export`: the path mounted (the pseudo path under NFSv4).
    public init(_ server: GaneshaServer, paths: [String], options: [String] = [], export: String? = nil, in temp: TempDirectory) throws {
        let client = temp.sub("nfs-hold")
        if access(client, X_OK) != 0 {
            let built = try Processes.run("gcc", ["-O1", "-o", client, Samples.packageRoot + "/Tests/Clients/nfs-hold.c", "-lnfs"])
            guard built.ok else { throw Processes.ProcessError.notFound("the nfs-hold client (gcc: \(built.stderr))") }
        }
        output = temp.sub("nfs-hold-\(UUID().uuidString).out")
        FileManager.default.createFile(atPath: output, contents: nil)
        guard let handle = FileHandle(forWritingAtPath: output) else { throw Processes.ProcessError.notFound(output) }
        outputHandle = handle
        process.executableURL = URL(fileURLWithPath: try Processes.which("nsenter"))
        process.arguments = ["--net=/proc/\(server.namespacePID)/ns/net", client] + options + ["127.0.0.1", export ?? server.mountpoint] + paths
        process.standardInput = input
        process.standardOutput = handle
        // Apart: a line libnfs prints after a round's marker must not be taken for the round.
        FileManager.default.createFile(atPath: output + ".err", contents: nil)
        errorHandle = FileHandle(forWritingAtPath: output + ".err")
        process.standardError = errorHandle
        // A client that ended has closed its input: writing to it must fail, not kill
        // the test process.
        signal(SIGPIPE, SIG_IGN)
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while !lines().contains("HELD") && process.isRunning && Date() < deadline { usleep(100_000) }
        before = Array(lines().prefix { $0 != "HELD" })
        guard lines().contains("HELD") else {
            stop()
            throw Processes.ProcessError.notFound("an NFS client holding its files (it printed: \(lines().joined(separator: " / ")) \(errors))")
        }
    }

    /// What the client wrote to stderr (libnfs's complaints, a failed mount).
    public var errors: String { (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? "" }

    private func lines() -> [String] {
        ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Reads every file again through the handles opened at first (it may be asked
    /// again); the round's status (0: every read succeeded, 1: one failed; -1: the client
    /// had ended, or took over `timeout` seconds and was stopped, since libnfs retries a
    /// server that never answers forever) and the lines it printed in that round.
    public func readAgain(timeout: Double = 60) -> (status: Int32, lines: [String]) {
        let rounds = lines().filter { $0 == "ROUND" }.count
        guard process.isRunning, (try? input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))) != nil else {
            return (-1, lines())
        }
        let deadline = Date().addingTimeInterval(timeout)
        while lines().filter({ $0 == "ROUND" }).count == rounds && process.isRunning && Date() < deadline { usleep(20_000) }
        let printed = lines()
        guard printed.filter({ $0 == "ROUND" }).count > rounds else {
            stop()
            return (-1, printed + ["(no answer within \(Int(timeout)) s)", errors])
        }
        // The lines after the last marker before this round's, up to its own.
        let round = Array(printed.dropLast().reversed().prefix { $0 != "ROUND" && $0 != "HELD" }.reversed())
        return (round.contains { $0.contains(" ERROR ") } ? 1 : 0, round)
    }

    /// The inode number in a printed line ("PATH INODE SIZE SUM": the path may hold
    /// spaces, so it is counted from the end).
    public static func inode(_ line: String) -> String {
        String(line.split(separator: " ").reversed()[2])
    }

    public func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate(); process.waitUntilExit() }
        try? outputHandle.close()
        try? errorHandle?.close()
    }

    deinit { stop() }
}
