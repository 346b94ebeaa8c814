import Glibc

/// Seconds on a clock that never jumps (for deadlines and how long an answer is kept).
func monotonicSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}
