import Foundation

/// SHA-256 of a file while it is written front to back: each chunk is hashed as it is
/// written, so that the close does not re-read and hash the whole file. A write anywhere
/// but at the end gives up (the close hashes the file then).
///
/// A write first promises its chunk (in the order the writes reach the file), then
/// hashes it, which may be after the write was answered: the writer's next chunk is
/// copied into the kernel on one core while this one is hashed on the other. The chunks
/// are hashed in the order they were promised; the digest waits for every promise.
public final class StreamingHash: @unchecked Sendable {
    private let lock = NSCondition()
    // Guarded by `lock`. No hasher: a write came out of order, or the digest was taken.
    private var hasher: SHA256Hasher? = SHA256Hasher()
    /// The end of the chunks promised, and of those hashed (never past it).
    private var promised: Int64 = 0
    private var hashed: Int64 = 0

    public init() {}

    /// Bytes promised so far: what the file's length is when every write was in order.
    public var length: Int64 { lock.withLock { promised } }

    /// A write of `count` bytes at `offset` reached the file: true if it extends what was
    /// promised at its end, and then its bytes must be given to `hash` (no other promise
    /// is hashed until they are). Out of order, the hash gives up.
    public func promise(_ count: Int, at offset: Int64) -> Bool {
        lock.withLock {
            guard hasher != nil else { return false }
            guard offset == promised else {
                giveUp()
                return false
            }
            promised += Int64(count)
            return true
        }
    }

    /// The bytes of a promise made by `promise(_:at:)`: hashed once every chunk promised
    /// before them is.
    public func hash(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        lock.lock()
        defer { lock.unlock() }
        while hasher != nil && hashed != offset { lock.wait() }
        guard hasher != nil else { return }
        hasher?.update(bytes)
        hashed += Int64(bytes.count)
        lock.broadcast()
    }

    /// The digest, if the whole file of `size` bytes went through the stream; waits for
    /// the chunks promised and not yet hashed.
    public func finish(size: Int64) -> String? {
        lock.lock()
        defer { lock.unlock() }
        while hasher != nil && hashed != promised { lock.wait() }
        guard size == hashed, let hasher = hasher.take() else { return nil }
        lock.broadcast()
        return hasher.finalizeHex()
    }

    /// The digest of the file as it is now, if its `size` bytes are exactly what went
    /// through the stream; the stream goes on (a write at the end extends it). Waits for
    /// the chunks promised and not yet hashed.
    public func digestSoFar(size: Int64) -> String? {
        lock.lock()
        defer { lock.unlock() }
        while hasher != nil && hashed != promised { lock.wait() }
        guard size == hashed, hasher != nil else { return nil }
        return hasher?.digestSoFarHex()
    }

    /// Under `lock`: no digest; a chunk waiting for its turn stops waiting.
    private func giveUp() {
        _ = hasher.take()
        lock.broadcast()
    }
}
