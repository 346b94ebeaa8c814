import Glibc

/// Wall-clock time as nanoseconds since the Unix epoch, the unit of every stored mtime.
public func nowNanoseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return ts.nanoseconds
}

public func nowSeconds() -> Int64 { nowNanoseconds() / 1_000_000_000 }

public let nanosecondsPerSecond: Int64 = 1_000_000_000

/// The earliest and latest times the library keeps (1684-10-19 and 2255-03-14, UTC):
/// nanoseconds since the epoch in 64 bits reach a little further (1677 to 2262), and
/// the years left between are room for arithmetic on a kept time (`x - 1 s` of the
/// earliest one overflowed, and a trap stops the daemon).
public let storedNanosecondsRange: ClosedRange<Int64> = -9_000_000_000 * 1_000_000_000 ... 9_000_000_000 * 1_000_000_000

/// A time of `seconds` (and `nanoseconds`) since the epoch in the unit of every stored
/// time, held to `storedNanosecondsRange`. A time outside it (`touch -d 2400-01-01`,
/// smbtorture's year 30828) is kept as the nearest one it holds, as the kernel keeps a
/// time outside the range of a filesystem's own timestamps (ext4's: 1901 to 2446).
public func storedNanoseconds(seconds: Int64, nanoseconds: Int64 = 0) -> Int64 {
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: nanosecondsPerSecond)
    let (sum, past) = whole.addingReportingOverflow(nanoseconds)
    if overflow || past { return seconds < 0 ? storedNanosecondsRange.lowerBound : storedNanosecondsRange.upperBound }
    return min(max(sum, storedNanosecondsRange.lowerBound), storedNanosecondsRange.upperBound)
}

extension timespec {
    /// This time as nanoseconds since the epoch, the unit of every stored time.
    public var nanoseconds: Int64 { storedNanoseconds(seconds: Int64(tv_sec), nanoseconds: Int64(tv_nsec)) }
}
