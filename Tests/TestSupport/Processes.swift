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
        let outPath = temporaryFile(), errPath = temporaryFile()
        defer { unlink(outPath); unlink(errPath) }
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
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

    static func temporaryFile() -> String {
        var template = Array("/tmp/albumfs-out-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        close(fd)
        return String(cString: template)
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
