import Foundation
import Glibc

/// The last resort for a photo whose EXIF and XMP hold no capture date: exiftool, kept
/// running (`-stay_open`) in the decoder worker that needs it, reads the date and camera
/// that some cameras keep only in their own maker data (Reconyx maker notes, Olympus
/// "PictureInfo", Canon CIFF), which exiv2 does not decode. Asked only for such photos,
/// so a library of camera photos with EXIF dates never starts it. Without exiftool
/// installed, those photos fall back to their file time, as before.
///
/// exiftool in `-stay_open` mode never ends by itself: at the end of its input it polls
/// for more, a hundred times a second, forever (seen: 128 of them left by dead workers
/// after a few test runs, a third of a core between them). So it is started through
/// `setpriv --pdeathsig KILL` and dies with the thread that started it: a worker's main
/// thread, which lives as long as the worker. Elsewhere (the command line, tests) that
/// thread may end first; the next question then starts a new one.
final class MakerDates: @unchecked Sendable {
    static let executable = "/usr/bin/exiftool"
    static let setpriv = "/usr/bin/setpriv"
    nonisolated(unsafe) private static var running: MakerDates?
    nonisolated(unsafe) private static var unavailable = false
    private static let lock = NSLock()

    private let process: Process
    private let input: FileHandle
    private let output: FileHandle

    private init() throws {
        process = Process()
        let arguments = ["-stay_open", "True", "-@", "-"]
        if access(Self.setpriv, X_OK) == 0 {
            process.executableURL = URL(fileURLWithPath: Self.setpriv)
            process.arguments = ["--pdeathsig", "KILL", "--", Self.executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: Self.executable)
            process.arguments = arguments
        }
        // A question to an exiftool that has just died must fail, not end this process
        // (the worker ignores SIGPIPE already; the command line and tests may not).
        signal(SIGPIPE, SIG_IGN)
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        input = stdin.fileHandleForWriting
        output = stdout.fileHandleForReading
    }

    /// Date and camera from `path` (a file this process has open), if exiftool finds them.
    static func read(path: String) -> (capture: CaptureDate?, make: String?, model: String?)? {
        lock.lock()
        defer { lock.unlock() }
        guard !unavailable else { return nil }
        // Twice: the one running may have died with the thread that started it.
        var answer: [String: Any]?
        for _ in 0..<2 where answer == nil {
            if running == nil {
                guard access(executable, X_OK) == 0, let started = try? MakerDates() else {
                    unavailable = true
                    return nil
                }
                running = started
            }
            answer = running?.ask(path: path)
            if answer == nil { running?.stop(); running = nil }
        }
        guard let row = answer else { return nil }
        func text(_ key: String) -> String? {
            (row[key] as? String).map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        var capture: CaptureDate?
        if let original = text("DateTimeOriginal"), let (wall, inline) = Dates.parse(original) {
            let offset = inline ?? text("OffsetTimeOriginal").flatMap(Dates.parseOffset)
            let resolved = offset ?? Dates.localOffsetMinutes(at: wall)
            capture = CaptureDate(instant: Dates.unixSeconds(utc: wall) - Int64(resolved) * 60, offsetMinutes: offset, source: .exif)
        }
        return (capture, text("Make"), text("Model"))
    }

    /// Ends it (one that no longer answers).
    private func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// One request: the tags as JSON, up to exiftool's `{ready}` line (which `-q` would
    /// suppress; warnings go to stderr, which is discarded).
    private func ask(path: String) -> [String: Any]? {
        // Another process reads the file: name it by this process's descriptor table.
        guard process.isRunning else { return nil }
        let visible = path.hasPrefix("/proc/self/") ? "/proc/\(getpid())/" + path.dropFirst("/proc/self/".count) : path
        let request = ["-j", "-DateTimeOriginal", "-OffsetTimeOriginal", "-Make", "-Model", visible, "-execute", ""]
        do {
            try input.write(contentsOf: Data(request.joined(separator: "\n").utf8))
        } catch {
            return nil
        }
        var reply = Data()
        let marker = Data("{ready}\n".utf8)
        while !reply.suffix(marker.count).elementsEqual(marker) {
            // availableData returns what the pipe holds now (read(upToCount:) would wait
            // for the whole count).
            let chunk = output.availableData
            guard !chunk.isEmpty else { return nil }
            reply.append(chunk)
        }
        reply.removeLast(marker.count)
        guard !reply.isEmpty else { return [:] }
        return (try? JSONSerialization.jsonObject(with: reply) as? [[String: Any]])?.first ?? [:]
    }
}
