import Glibc

/// Wall-clock time as nanoseconds since the Unix epoch, the unit of every stored mtime.
public func nowNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return ts.nanoseconds
}

public func nowSeconds() -> Int64 { nowNanoseconds() / 1_000_000_000 }

public let nanosecondsPerSecond: Int64 = 1_000_000_000

extension timespec {
    /// This time as nanoseconds since the epoch, the unit of every stored time.
    public var nanoseconds: Int64 { Int64(tv_sec) * nanosecondsPerSecond + Int64(tv_nsec) }
}
