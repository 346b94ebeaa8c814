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

    /// A write to be on disk soon (a plain file's mode and times) waits for no sync; an
    /// fsync of its file (`makeCommittedDurable`) syncs the log once, and again only
    /// after another write; left alone, it is synced within seconds, as a file system's
    /// journal commits a chmod. A library closed before that sync is due keeps what was
    /// written (SQLite checkpoints its log at the close), and the sync due later does
    /// nothing.
    func testASoonWriteIsOnDiskAtTheNextFsyncOrWithinSeconds() throws {
        let before = try counts()
        try library.write(.soon) { tx in _ = try tx.createAlbum(named: "Chmod", in: Album.rootParent) }
        XCTAssertEqual(try counts().syncs, before.syncs, "a soon write does not wait for the disk")
        library.makeCommittedDurable()
        XCTAssertEqual(try counts().syncs, before.syncs + 1, "an fsync makes it durable")
        library.makeCommittedDurable()
        XCTAssertEqual(try counts().syncs, before.syncs + 1, "nothing left to sync")

        try library.write(.soon) { tx in _ = try tx.createAlbum(named: "Utimensat", in: Album.rootParent) }
        let deadline = Date().addingTimeInterval(15)
        while try counts().syncs == before.syncs + 1, Date() < deadline { usleep(100_000) }
        XCTAssertEqual(try counts().syncs, before.syncs + 2, "synced by itself within seconds")

        try library.write(.soon) { tx in _ = try tx.createAlbum(named: "Closed", in: Album.rootParent) }
        try reopen()
        sleep(6)  // past the sync the closed library's write had scheduled
        XCTAssertEqual(try albumNames(), ["Chmod", "Utimensat", "Closed"])
    }

    /// Writers that commit while the log is being synced share the next sync: the first
    /// writer's sync is held until the 7 others have committed and wait, so that the 8
    /// durable writes take exactly 2 syncs (a sync left to the scheduler may not overlap
    /// any other commit on a loaded machine: a whole-suite run next to a build had 320
    /// syncs for 320 writes).
    func testWritersThatCommitDuringASyncShareTheNextOne() throws {
        let before = try counts()
        let writers = 8
        let held = DispatchSemaphore(value: 0), first = Locked(true)
        let failures = Locked<[String]>([])
        do {
            let library = self.library!  // gone before `reopen`, which needs the library's lock
            library.setBeforeLogSync {
                if first.withLock({ let was = $0; $0 = false; return was }) { held.wait() }
            }
            let group = DispatchGroup()
            func write(_ w: Int) {
                // A thread each: the writers block (in the held sync, or waiting for the
                // next), and Dispatch adds threads for blocked ones only slowly.
                // Weakly: a finished thread's closure may outlive `group.wait`, and must not
                // keep the library (and its lock) from `reopen`.
                group.enter()
                Thread { [weak library] in
                    do {
                        guard let library else { throw CocoaError(.featureUnsupported) }
                        try library.write { tx in _ = try tx.createAlbum(named: "W\(w)", in: Album.rootParent) }
                    } catch {
                        failures.withLock { $0.append("W\(w): \(error)") }
                    }
                    group.leave()
                }.start()
            }
            func waitFor(commits: UInt64) throws {
                let deadline = Date().addingTimeInterval(30)
                while try counts().commits - before.commits < commits, Date() < deadline { usleep(1_000) }
                XCTAssertEqual(try counts().commits - before.commits, commits)
            }
            write(0)
            try waitFor(commits: 1)  // the first writer is in its sync, held
            for w in 1..<writers { write(w) }
            try waitFor(commits: UInt64(writers))  // the others committed and wait for a sync
            held.signal()
            XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
            library.setBeforeLogSync(nil)
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(try counts().syncs - before.syncs, 2,
                       "the held sync, then one for the 7 writers that committed while it ran")
        try reopen()
        XCTAssertEqual(try albumNames(), Set((0..<writers).map { "W\($0)" }))
    }

    /// Many writers at once, none held: every write is there after a reopen.
    func testManyWritersAtOnceLoseNothing() throws {
        let writers = 8, each = 40
        let failures = Locked<[String]>([])
        do {
            let library = self.library!
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
        try reopen()
        XCTAssertEqual(try albumNames().count, writers * each)
    }
}
