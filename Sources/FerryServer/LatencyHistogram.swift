#if canImport(Glibc)
import Glibc
#endif

/// How long an operation's requests took, in fixed buckets (Prometheus' cumulative `le` buckets when rendered):
/// from 100 µs to 30 s, then everything above. A request answered on the hot path, while its frame is read, counts
/// in the first bucket (it is answered in well under 100 µs; timing each would cost a clock read on the fastest path).
///
/// ```swift
/// var h = LatencyHistogram()
/// h.record(nanoseconds: 3_000_000)        // 3 ms: counted in the 5 ms bucket (and every larger one)
/// h.cumulative.last                       // 1 (the +Inf bucket)
/// ```
struct LatencyHistogram {
    /// Upper bounds of the buckets, in seconds (the last bucket, +Inf, is implicit).
    static let bounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                   1, 2.5, 5, 10, 30]
    private static let boundsNs: [UInt64] = bounds.map { UInt64($0 * 1e9) }

    /// Per bucket (not cumulative), the last one for everything above the largest bound.
    private(set) var counts = [UInt64](repeating: 0, count: bounds.count + 1)
    private(set) var sumNanoseconds: UInt64 = 0
    private(set) var count: UInt64 = 0

    mutating func record(nanoseconds ns: UInt64) {
        var i = 0
        while i < LatencyHistogram.boundsNs.count && ns > LatencyHistogram.boundsNs[i] { i += 1 }
        counts[i] += 1
        sumNanoseconds &+= ns
        count += 1
    }

    /// A request answered at once (the hot path): the first bucket, nothing added to the sum.
    mutating func recordInstant() {
        counts[0] += 1
        count += 1
    }

    /// Counts at or below each bound, then the total (+Inf).
    var cumulative: [UInt64] {
        var running: UInt64 = 0
        return counts.map { running += $0; return running }
    }

    /// The monotonic clock, for timing a request.
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
