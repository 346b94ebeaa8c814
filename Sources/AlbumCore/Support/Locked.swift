import Foundation

/// A value guarded by a lock. Used where Synchronization's `Mutex` would need values
/// to be `sending` (SQLite connections and the like are not Sendable, but each is only
/// ever touched under its lock).
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
