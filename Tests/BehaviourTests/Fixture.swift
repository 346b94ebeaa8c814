import AlbumCore
import Foundation
import Glibc
import TestSupport
import Testing

/// Which driver a behaviour test runs on, and which database holds the library.
enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case inProcess = "in-process"
    case mount
    /// The same two drivers on a library whose metadata is in PostgreSQL (a server of
    /// the test process's own, a new database per test).
    case inProcessPostgres = "in-process, PostgreSQL"
    case mountPostgres = "mount, PostgreSQL"

    var isMount: Bool { self == .mount || self == .mountPostgres }
    var usesPostgres: Bool { self == .inProcessPostgres || self == .mountPostgres }

    var testDescription: String { rawValue }
}

/// A fresh library with a photo P (`DSCN0010.jpg`, a favorite with a caption, in the
/// albums Trip and Other), and the driver that runs a test on it.
final class Fixture {
    let temp: TempDirectory
    let lib: String
    let fs: any Driver
    /// P's inode number, as `stat` showed it at the start.
    let p: UInt64
    /// The PostgreSQL database of the library, if it has one.
    private let database: String?

    static let gps = Samples.directory + "/photos/jpg/gps"
    static func sample(_ name: String) -> [UInt8] {
        Array((try? Data(contentsOf: URL(fileURLWithPath: gps + "/" + name))) ?? Data())
    }

    /// Photos of the samples with known capture dates: DSCN0010 2008-10-22 16:28:39.
    static let photoP = sample("DSCN0010.jpg")
    static let photoA = sample("DSCN0012.jpg")
    static let photoB = sample("DSCN0021.jpg")
    static let photoC = sample("DSCN0025.jpg")
    static let text = Array("notes, not a photo\n".utf8)

    /// `bytes` as exiftool leaves them after `arguments` (`-XMP-dc:Subject=x`, `-all=`).
    static func edited(_ bytes: [UInt8], _ arguments: [String]) throws -> [UInt8] {
        let temp = TempDirectory("albumfs-exiftool")
        defer { temp.remove() }
        let path = temp.path + "/in.jpg"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let run = try Processes.run("/usr/bin/exiftool", ["-q", "-overwrite_original"] + arguments + [path])
        guard run.status == 0 else { throw POSIXError(.EIO) }
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    init(_ kind: Kind) throws {
        temp = TempDirectory("albumfs-behaviour")
        lib = temp.sub("lib")
        database = kind.usesPostgres ? try PostgresServer.shared().makeDatabase() : nil
        let created = try Processes.run(Processes.albumfs, ["init", lib] + (database.map { ["--database", $0] } ?? []), timeout: 60)
        guard created.ok else { throw DriverError(errno: EIO, call: "albumfs init: \(created.stderr)") }
        switch kind {
        case .inProcess, .inProcessPostgres:
            fs = try CoreDriver(library: lib)
        case .mount, .mountPostgres:
            guard FileManager.default.fileExists(atPath: "/dev/fuse"), (try? Processes.which("fusermount3")) != nil else {
                throw DriverError(errno: ENODEV, call: "FUSE is not available here (/dev/fuse, fusermount3): the mount half of this suite cannot run")
            }
            let driver = try MountDriver(library: lib, temp: temp)
            driver.mount.reportLeak = { Issue.record(Comment(rawValue: $0)) }
            fs = driver
        }
        try fs.mkdir("Albums/Trip")
        try fs.mkdir("Albums/Other")
        try fs.put("Albums/Trip/P.jpg", Self.photoP)
        try fs.link("Albums/Trip/P.jpg", "Albums/Other/P.jpg")
        try fs.setxattr("Albums/Trip/P.jpg", "user.albumfs.favorite", "1")
        try fs.setxattr("Albums/Trip/P.jpg", "user.xdg.comment", "A caption")
        p = try fs.stat("Albums/Trip/P.jpg").ino
    }

    deinit {
        fs.stop()
        temp.remove()
        if let database { try? PostgresServer.shared().dropDatabase(database) }
    }

    // MARK: what a user checks

    func names(_ path: String) throws -> [String] { try fs.list(path).sorted() }

    /// The library's assets and their album entries, as `albumfs info` would say.
    func library() throws -> Library { try fs.library() }

    func assetCount() throws -> Int { try library().stats().assets }

    /// P as it is now: favorite, caption, albums, versions.
    func expectPKept(file: String = #fileID, line: Int = #line) throws {
        let location = SourceLocation(fileID: file, filePath: file, line: line, column: 1)
        #expect(try fs.stat("Albums/Trip/P.jpg").ino == p, "P keeps its inode", sourceLocation: location)
        #expect(try fs.stat("Albums/Other/P.jpg").ino == p, "P is still in Other", sourceLocation: location)
        #expect(try fs.getxattr("Albums/Trip/P.jpg", "user.albumfs.favorite") == "1", sourceLocation: location)
        #expect(try fs.getxattr("Albums/Other/P.jpg", "user.xdg.comment") == "A caption", sourceLocation: location)
        #expect(try names("All Photos") == ["P.jpg"], "no other asset in All Photos", sourceLocation: location)
    }

    /// Whether `path` is gone, within 2 s: on a mount the kernel drops a vanished name a
    /// moment after the answer (docs/namespace.md, "Caching").
    func gone(_ path: String) -> Bool {
        // A `while`: a `for ... where` would go on asking all 200 times.
        var tries = 0
        while fs.exists(path) && tries < 200 {
            usleep(10_000)
            tries += 1
        }
        return !fs.exists(path)
    }

    func versions() throws -> Int { try library().versions(of: Int64(p)).count }

    /// A handle of a new file at `path` (in a folder without P), kept open while another
    /// open fills the file with P's bytes: the file becomes P there (a photo the library
    /// holds), and the handle stays on the file's own number.
    func handleOfAFileThatBecomesP(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let h = try fs.open(path, O_RDWR | O_CREAT, mode: 0o644)
        try fs.put(path, Self.photoP)
        #expect(try fs.stat(path).ino == p, "P's bytes in a folder without P: P itself", sourceLocation: sourceLocation)
        return h
    }
}

extension Array where Element == UInt8 {
    /// These bytes with a JPEG comment: other bytes, the same picture and metadata.
    func tagged(_ tag: String) -> [UInt8] {
        let payload = Array(tag.utf8)
        let length = payload.count + 2
        var out = self
        out.insert(contentsOf: [0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)] + payload, at: 2)
        return out
    }
}
