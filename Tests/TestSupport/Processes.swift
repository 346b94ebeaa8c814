import AlbumCore
import Foundation
import Glibc
import XCTest

/// Running the albumfs binary and the system's tools from tests.
public enum Processes {
    /// The directory holding the built products (albumfs next to the test bundle).
    public static let productsDirectory: String = {
        if let env = ProcessInfo.processInfo.environment["ALBUMFS_BUILD_DIR"] { return env }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("albumfs").path) { return url.path }
        }
        return Samples.packageRoot + "/.build/debug"
    }()

    public static var albumfs: String { productsDirectory + "/albumfs" }

    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
        public var ok: Bool { status == 0 }
    }

    /// Runs a program to completion; `timeout` kills it (SIGKILL) if it runs longer.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           stdin: Data? = nil, timeout: TimeInterval = 300, currentDirectory: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : try which(executable))
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        // Output goes to files, not pipes: a daemon the command leaves behind could hold
        // a pipe open and keep a reader waiting forever.
        // Opened with O_CLOEXEC: tests run side by side, and a daemon another test starts
        // meanwhile must not inherit them.
        let (outPath, out) = try temporaryFile(), (errPath, err) = try temporaryFile()
        defer { unlink(outPath); unlink(errPath) }
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        try process.run()
        if let stdin {
            input.fileHandleForWriting.write(stdin)
            try? input.fileHandleForWriting.close()
        }
        let pid = process.processIdentifier
        let timer = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: timer)
        process.waitUntilExit()
        timer.cancel()
        let outData = FileManager.default.contents(atPath: outPath) ?? Data()
        let errData = FileManager.default.contents(atPath: errPath) ?? Data()
        return Result(status: process.terminationStatus,
                      stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Runs the albumfs binary.
    @discardableResult
    public static func albumfs(_ arguments: String..., timeout: TimeInterval = 300) throws -> Result {
        try run(albumfs, arguments, timeout: timeout)
    }

    /// A shell command line (`sh -c`), for pipelines of real tools.
    @discardableResult
    public static func shell(_ command: String, timeout: TimeInterval = 300) throws -> Result {
        try run("/bin/sh", ["-c", command], timeout: timeout)
    }

    /// A new, empty file for a child's output, with its handle.
    static func temporaryFile() throws -> (path: String, handle: FileHandle) {
        while true {
            let path = "/tmp/albumfs-out-" + UUID().uuidString
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { return (path, FileHandle(fileDescriptor: fd, closeOnDealloc: true)) }
            if errno != EEXIST { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
    }

    /// An existing file opened for a child's output, with O_CLOEXEC (see `run`).
    static func writingHandle(_ path: String) throws -> FileHandle {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    public static func which(_ name: String) throws -> String {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        for dir in path + ["/usr/sbin", "/sbin", "/usr/local/bin"] {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw ProcessError.notFound(name)
    }

    public enum ProcessError: Error, CustomStringConvertible {
        case notFound(String)
        public var description: String {
            switch self {
            case .notFound(let name):
                return "\(name) is not installed; run mount-scripts/test, which installs what the tests use"
            }
        }
    }
}

extension String {
    /// The string as one word for `sh`, in single quotes.
    public var shellQuoted: String { "'" + replacingOccurrences(of: "'", with: "'\\''") + "'" }
}

extension XCTestCase {
    /// A path (or any string) as one word for `sh`: `"cat \(q(path))"`.
    public func q(_ s: String) -> String { s.shellQuoted }
}
