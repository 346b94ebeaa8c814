import AlbumCore
import Dispatch
import Foundation
import XCTest

/// The digest a close takes from a file's writes (`StreamingHash`): each write promises
/// its chunk in the order the writes reach the file, and hashes it after its reply, on
/// its own thread. Whatever order the threads hash in, the digest is the file's.
final class StreamingHashTests: XCTestCase {
    /// 64 chunks of different sizes and bytes: a file as `cp` writes it.
    static let chunks: [[UInt8]] = (0..<64).map { i in
        (0..<(1_000 + 37 * i)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
    }

    var chunks: [[UInt8]] { Self.chunks }
    var whole: [UInt8] { chunks.flatMap { $0 } }

    func testChunksHashedOnManyThreadsInAnyOrderGiveTheDigestOfTheWholeFile() throws {
        for round in 0..<20 {
            let stream = StreamingHash()
            let chunks = self.chunks
            var offset: Int64 = 0
            let offsets = chunks.map { chunk in
                defer { offset += Int64(chunk.count) }
                XCTAssertTrue(stream.promise(chunk.count, at: offset))
                return offset
            }
            // Every chunk on a thread of its own (as each write has a worker thread of its
            // own until it has hashed), the later ones started first: each waits for those
            // before it.
            let group = DispatchGroup()
            for k in 0..<chunks.count {
                let i = (chunks.count - 1 - k + round) % chunks.count
                group.enter()
                Thread.detachNewThread {
                    if i % 3 == 0 { usleep(UInt32(i % 5) * 100) }
                    chunks[i].withUnsafeBytes { stream.hash($0, at: offsets[i]) }
                    group.leave()
                }
            }
            XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
            XCTAssertEqual(stream.finish(size: offset), SHA256Digest.hex(of: Data(whole)), "round \(round)")
        }
    }

    func testTheDigestWaitsForAChunkPromisedAndNotYetHashed() throws {
        let stream = StreamingHash()
        let first = chunks[0], second = chunks[1]
        XCTAssertTrue(stream.promise(first.count, at: 0))
        first.withUnsafeBytes { stream.hash($0, at: 0) }
        XCTAssertTrue(stream.promise(second.count, at: Int64(first.count)))
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var digest: String?
        Thread.detachNewThread {
            digest = stream.finish(size: Int64(first.count + second.count))
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 0.3), .timedOut, "the digest was taken before the promised chunk was hashed")
        second.withUnsafeBytes { stream.hash($0, at: Int64(first.count)) }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(digest, SHA256Digest.hex(of: Data(first + second)))
    }

    func testAWriteOutOfOrderGivesNoDigestAndFreesTheChunksWaitingForTheirTurn() throws {
        let stream = StreamingHash()
        XCTAssertTrue(stream.promise(chunks[0].count, at: 0))
        XCTAssertTrue(stream.promise(chunks[1].count, at: Int64(chunks[0].count)))
        let waiting = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            // Waits for chunk 0, which is never hashed before the hash gives up.
            Self.chunks[1].withUnsafeBytes { stream.hash($0, at: Int64(Self.chunks[0].count)) }
            waiting.signal()
        }
        XCTAssertEqual(waiting.wait(timeout: .now() + 0.2), .timedOut)
        // A write back at the start (an editor rewriting the header): no digest any more.
        XCTAssertFalse(stream.promise(10, at: 0))
        XCTAssertEqual(waiting.wait(timeout: .now() + 10), .success, "a chunk still waits for a hash that gave up")
        chunks[0].withUnsafeBytes { stream.hash($0, at: 0) }
        XCTAssertNil(stream.finish(size: Int64(chunks[0].count + chunks[1].count)))
    }

    func testADigestIsOnlyForTheSizeThatWasStreamed() throws {
        let stream = StreamingHash()
        XCTAssertTrue(stream.promise(chunks[0].count, at: 0))
        chunks[0].withUnsafeBytes { stream.hash($0, at: 0) }
        XCTAssertNil(stream.finish(size: Int64(chunks[0].count) + 1), "a file longer than its writes (a truncate up) has no streamed digest")
    }
}
