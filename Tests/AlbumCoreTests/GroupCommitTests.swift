import AlbumCore
import Dispatch
import Foundation
import TestSupport
import XCTest

/// Durable commits of a SQLite library (`GroupCommit`): every durable write is on disk
/// when it returns, each waits for one sync of the database's log, and writers that
/// commit at once share syncs instead of waiting one after the other.
final class GroupCommitTests: NewLibraryTestCase {
    func counts() throws -> (commits: UInt64, syncs: UInt64) {
        try XCTUnwrap(library.durableCommits, "a SQLite library counts its durable commits")
    }

    func albumNames() throws -> Set<String> {
        Set(try library.albums(in: Album.rootParent).map(\.name))
    }

    /// Reopens the library, as the next mount would.
    func reopen() throws {
        let path = library.root
        library = nil
        library = try Library.open(at: path, access: .exclusive)
    }

    func testALoneWriterWaitsForASyncOfItsOwnAtEveryDurableWrite() throws {
        let before = try counts()
        for i in 0..<20 {
            try library.write { tx in _ = try tx.createAlbum(named: "A\(i)", in: Album.rootParent) }
        }
        let after = try counts()
        XCTAssertEqual(after.commits - before.commits, 20)
        XCTAssertEqual(after.syncs - before.syncs, 20, "nobody else synced for these writes")
        try reopen()
        XCTAssertEqual(try albumNames(), Set((0..<20).map { "A\($0)" }))
    }

    func testALazyWriteWaitsForNoSyncAndTheNextDurableOneCarriesIt() throws {
        let before = try counts()
        try library.write(.lazy) { tx in _ = try tx.createAlbum(named: "Lazy", in: Album.rootParent) }
        XCTAssertEqual(try counts().syncs, before.syncs, "a lazy write does not wait for the disk")
        XCTAssertEqual(try albumNames(), ["Lazy"], "but every reader sees it at once")
        try library.write { tx in _ = try tx.createAlbum(named: "Durable", in: Album.rootParent) }
        XCTAssertEqual(try counts().syncs, before.syncs + 1)
        try reopen()
        XCTAssertEqual(try albumNames(), ["Lazy", "Durable"])
    }

    func testWritersAtOnceShareTheSyncsOfTheLog() throws {
        let before = try counts()
        let writers = 8, each = 40
        let failures = Locked<[String]>([])
        do {
            let library = self.library!  // gone before `reopen`, which needs the library's lock
            DispatchQueue.concurrentPerform(iterations: writers) { w in
                for i in 0..<each {
                    do {
                        try library.write { tx in _ = try tx.createAlbum(named: "W\(w)-\(i)", in: Album.rootParent) }
                    } catch {
                        failures.withLock { $0.append("W\(w)-\(i): \(error)") }
                    }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let after = try counts()
        XCTAssertEqual(after.commits - before.commits, UInt64(writers * each))
        XCTAssertLessThan(after.syncs - before.syncs, UInt64(writers * each),
                          "writers that committed while the log was being synced waited for one sync together")
        try reopen()
        XCTAssertEqual(try albumNames().count, writers * each)
    }
}
