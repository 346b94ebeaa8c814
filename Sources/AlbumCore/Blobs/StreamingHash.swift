import Foundation

/// SHA-256 of a file while it is written front to back: each chunk is hashed as it is
/// written, on the write's own thread, so that the close does not re-read and hash the
/// whole file. A write anywhere but at the end gives up (the close hashes the file then).
public final class StreamingHash: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`. No hasher: a write came out of order, or the digest was taken.
    private var hasher: SHA256Hasher? = SHA256Hasher()
    private var hashed: Int64 = 0

    public init() {}

    /// Bytes hashed so far.
    public var length: Int64 { lock.withLock { hashed } }

    /// A write of `bytes` at `offset`: hashed if it extends the file at its end.
    public func wrote(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        lock.withLock {
            guard hasher != nil else { return }
            guard offset == hashed else {
                _ = hasher.take()
                return
            }
            hashed += Int64(bytes.count)
            hasher?.update(bytes)
        }
    }

    /// The digest, if the whole file of `size` bytes went through the stream.
    public func finish(size: Int64) -> String? {
        lock.withLock {
            guard size == hashed, let hasher = hasher.take() else { return nil }
            return hasher.finalizeHex()
        }
    }
}
