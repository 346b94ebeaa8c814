import Dispatch

/// SHA-256 of a file while it is written front to back: each chunk is hashed on a queue
/// of its own, beside the writes, so that the close does not re-read and hash the whole
/// file. A write anywhere but at the end gives up (the close hashes the file then).
public final class StreamingHash: @unchecked Sendable {
    private let queue = DispatchQueue(label: "albumfs.hash")
    private var hasher: SHA256Hasher? = SHA256Hasher()   // used on `queue` only
    /// Bytes handed to the hasher so far (the writer's side, under its lock).
    public private(set) var length: Int64 = 0
    public private(set) var valid = true

    public init() {}

    /// A write of `bytes` at `offset`: hashed if it extends the file at its end.
    public func wrote(_ bytes: UnsafeRawBufferPointer, at offset: Int64) {
        guard valid else { return }
        guard offset == length else {
            valid = false
            return
        }
        length += Int64(bytes.count)
        let chunk = [UInt8](bytes)
        queue.async { chunk.withUnsafeBytes { buffer in self.hasher?.update(buffer) } }
    }

    /// The digest, if the whole file of `size` bytes went through the stream.
    public func finish(size: Int64) -> String? {
        queue.sync {}
        guard valid, size == length, let hasher = hasher.take() else { return nil }
        return hasher.finalizeHex()
    }
}
