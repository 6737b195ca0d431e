#if canImport(Glibc)
import Glibc
#endif

/// Nanoseconds on the monotonic clock. `clock_gettime` goes through the vDSO (~20 ns), cheap enough to call twice
/// per request without moving the numbers; wall-clock time could jump under NTP in the middle of a run.
@inline(__always)
func monoNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// How much work one measurement may do: a fixed duration, or a fixed number of requests when `count` is set (a
/// count makes runs comparable across machines of different speed; a duration keeps slow modes from taking forever).
struct Budget: Sendable {
    var seconds: Double
    var count: Int?

    /// The same budget, measured from `start`.
    func started(at start: UInt64) -> RunningBudget {
        RunningBudget(deadline: start + UInt64(seconds * 1e9), count: count)
    }
}

/// A budget being spent: asked before each request is sent, so every mode stops issuing at the same rule and then
/// drains what is still in flight.
struct RunningBudget: Sendable {
    let deadline: UInt64
    let count: Int?

    /// Whether request number `issued + 1` may still be sent. The clock is read only in duration mode.
    @inline(__always)
    func allowsMore(issued: Int) -> Bool {
        if let count { return issued < count }
        return monoNanos() < deadline
    }
}

/// Round-trip times of one measurement, in nanoseconds. Appending to a reserved array keeps recording out of the
/// way; percentiles are computed once, at the end, by sorting (exact, unlike a histogram, and cheap at these sizes).
struct LatencySamples {
    private(set) var values: [UInt64] = []

    init(expected: Int = 1 << 18) { values.reserveCapacity(expected) }

    @inline(__always)
    mutating func record(_ nanos: UInt64) { values.append(nanos) }

    mutating func merge(_ other: LatencySamples) { values.append(contentsOf: other.values) }

    var count: Int { values.count }

    /// p50 and p99 in microseconds, by nearest rank (index ⌈p·n⌉−1): the same rule rawpingpong.c uses, so the two
    /// programs' percentiles are comparable.
    func percentilesMicros() -> (p50: Double, p99: Double)? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func rank(_ p: Double) -> Double {
            let index = max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1)
            return Double(sorted[index]) / 1000
        }
        return (rank(0.50), rank(0.99))
    }
}

/// Why a measurement could not run: no daemon, a refused handshake, a reply that is not a pong.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ message: String) { description = message }
}
