import Glibc

/// Wall-clock time as nanoseconds since the Unix epoch, the unit of every stored mtime.
public func nowNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

public func nowSeconds() -> Int64 { nowNanoseconds() / 1_000_000_000 }

public let nanosecondsPerSecond: Int64 = 1_000_000_000
