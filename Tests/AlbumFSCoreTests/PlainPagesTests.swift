import AlbumCore
import AlbumFSCore
import Foundation
import Glibc
import TestSupport
import XCTest

/// When a read-only open of a plain file may keep the kernel's pages of it (`PlainPages`),
/// in-process, as the bridge would ask: what each open answers. The mount's side (the
/// daemon's READs counted, bytes changed through the mount and behind its back) is
/// `PassthroughTests.testAPlainFileReadAgainComesFromThePageCacheUntilItsBytesChange`.
final class PlainPagesTests: XCTestCase {
    var temp: TempDirectory!
    var library: Library!
    var fs: FileSystem!

    override func setUpWithError() throws {
        temp = TempDirectory()
        library = try Library.create(at: temp.sub("lib"))
        _ = try library.write { try $0.createAlbum(named: "A", in: 0) }
        fs = FileSystem(library: library, options: MountOptions())
    }

    override func tearDown() {
        fs?.stop()
        fs = nil
        library = nil
        temp.remove()
    }

    func openForReading(_ ino: UInt64) throws -> FileSystem.Opened { try fs.open(ino, flags: O_RDONLY) }

    /// Pages are kept only once an open's own drop of them is known done (its first READ),
    /// for bytes that had not changed in the two seconds before it and have not changed
    /// since, and no older handle has read since.
    func testPagesAreKeptOnlyForBytesAnOpenSinceTheirChangeHasRead() throws {
        let album = try fs.lookup(parent: 1, name: Array("Albums".utf8)).attributes.ino
        let a = try fs.lookup(parent: album, name: Array("A".utf8)).attributes.ino
        let (attributes, created) = try fs.create(parent: a, name: Array("notes.txt".utf8), mode: 0o644, flags: O_WRONLY)
        let ino = attributes.ino
        let handle = try XCTUnwrap(created).handle
        let text = Array("notes, not a photo\n".utf8)
        XCTAssertEqual(try text.withUnsafeBytes { try fs.write(handle: handle, bytes: $0, offset: 0) }, text.count)
        try fs.flush(handle: handle)
        fs.release(handle: handle)

        // Written moments ago: never kept, even once an open has read it.
        let fresh = try openForReading(ino)
        XCTAssertFalse(fresh.keepCache)
        _ = try fs.read(handle: fresh.handle, size: 4096, offset: 0)
        XCTAssertFalse(try openForReading(ino).keepCache, "bytes written moments ago kept")
        Thread.sleep(forTimeInterval: 2.5)

        // Two opens before either has read: neither keeps (the first one's drop may not
        // have happened yet); the second one's READ witnesses the bytes, not the first's.
        let first = try openForReading(ino)
        let second = try openForReading(ino)
        XCTAssertFalse(first.keepCache)
        XCTAssertFalse(second.keepCache, "kept before any open's drop was known done")
        _ = try fs.read(handle: first.handle, size: 4096, offset: 0)
        XCTAssertFalse(try openForReading(ino).keepCache, "witnessed by an open that another one took over")
        let third = try openForReading(ino)
        _ = try fs.read(handle: third.handle, size: 4096, offset: 0)
        XCTAssertTrue(try openForReading(ino).keepCache, "not kept after an open read the bytes")
        XCTAssertTrue(try openForReading(ino).keepCache)

        // A READ through a handle opened before the record (it may read other bytes into
        // the pages: a backup's blob, before a writer gave it bytes of its own) ends it.
        _ = try fs.read(handle: first.handle, size: 4096, offset: 0)
        XCTAssertFalse(try openForReading(ino).keepCache, "kept after a READ through an older handle")
        let fourth = try openForReading(ino)
        _ = try fs.read(handle: fourth.handle, size: 4096, offset: 0)
        XCTAssertTrue(try openForReading(ino).keepCache)

        // Bytes changed (behind the core's back, as another program would): dropped again.
        let path = temp.sub("lib") + "/plain/\(ino)"
        XCTAssertTrue(FileManager.default.fileExists(atPath: path), path)
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try file.seekToEnd()
        try file.write(contentsOf: Data("more\n".utf8))
        try file.close()
        XCTAssertFalse(try openForReading(ino).keepCache, "kept after the bytes changed")
    }
}
