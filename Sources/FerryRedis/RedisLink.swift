/// The lifecycle of the connection to Redis, as a pure rule: a state and a decide function that returns what to do,
/// with the clock injected (as the server's `Backpressure` and `RequestGate`). While it is not connected, commands
/// fail at once (`RedisClient` answers `unavailable` without waiting), so a Redis that is down adds no latency; the
/// link tries again after 100 ms, then 200, 400 … up to 5 s, and from the first success on at once.
///
/// ```swift
/// var link = RedisLink()
/// link.decide(.start, now: 0)          // [.connect]
/// link.decide(.failed, now: 5)         // [.failPending, .retry(afterMs: 100)]
/// link.decide(.retryDue, now: 105)     // [.connect]
/// link.decide(.connected, now: 110)    // [] — state .connected, failures reset
/// ```
public struct RedisLink: Equatable, Sendable {
    public enum State: Equatable, Sendable {
        case idle
        case connecting
        case connected
        /// Down; the next attempt is due at this time (ms).
        case waiting(until: Int64)
        case closed
    }

    public enum Event: Equatable, Sendable {
        case start
        case connected
        /// A connection attempt failed.
        case failed
        /// An established connection was lost.
        case lost
        case retryDue
        case close
    }

    public enum Action: Equatable, Sendable {
        case connect
        /// Answer every command still waiting with `unavailable`.
        case failPending
        case retry(afterMs: Int64)
        case disconnect
    }

    public private(set) var state: State = .idle
    /// Failures since the last success (sets the backoff).
    public private(set) var failures = 0
    /// Connections made (the first, then each reconnection).
    public private(set) var connections = 0

    public static let firstRetryMs: Int64 = 100
    public static let longestRetryMs: Int64 = 5000

    public init() {}

    public static func backoff(failures: Int) -> Int64 {
        guard failures > 0 else { return 0 }
        return min(longestRetryMs, firstRetryMs << Int64(min(failures - 1, 16)))
    }

    public var isConnected: Bool { state == .connected }

    public mutating func decide(_ event: Event, now: Int64) -> [Action] {
        switch (state, event) {
        case (.closed, _): return []
        case (_, .close):
            let wasUp = state == .connected || state == .connecting
            state = .closed
            return wasUp ? [.failPending, .disconnect] : [.failPending]
        case (.idle, .start):
            state = .connecting
            return [.connect]
        case (.connecting, .connected):
            state = .connected
            failures = 0
            connections += 1
            return []
        case (.connecting, .failed), (.connected, .lost), (.connecting, .lost):
            failures += 1
            let wait = RedisLink.backoff(failures: failures)
            state = .waiting(until: now + wait)
            return [.failPending, .retry(afterMs: wait)]
        case (.waiting(let until), .retryDue):
            // A timer that fires a little early still counts; one from an older wait does not.
            guard now + 5 >= until else { return [.retry(afterMs: until - now)] }
            state = .connecting
            return [.connect]
        default:
            return []
        }
    }
}
