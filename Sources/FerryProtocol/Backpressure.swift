/// Whether a connection may be read from, given how many reply bytes it has not yet sent: a two-threshold
/// (hysteresis) state machine, so a connection near the mark does not flap between paused and reading.
///
/// ```swift
/// var bp = Backpressure(high: 1 << 20, low: 1 << 18)
/// bp.update(pendingBytes: 2 << 20)   // .pause
/// bp.update(pendingBytes: 1 << 19)   // .none: still above the low mark
/// bp.update(pendingBytes: 0)         // .resume
/// ```
public struct Backpressure: Sendable, Equatable {
    public enum Action: Sendable, Equatable { case none, pause, resume }

    public let high: Int
    public let low: Int
    public private(set) var isPaused = false

    public init(high: Int, low: Int) {
        precondition(low <= high, "the low-water mark must not exceed the high-water mark")
        self.high = high
        self.low = low
    }

    public mutating func update(pendingBytes: Int) -> Action {
        if !isPaused && pendingBytes > high {
            isPaused = true
            return .pause
        }
        if isPaused && pendingBytes <= low {
            isPaused = false
            return .resume
        }
        return .none
    }
}
