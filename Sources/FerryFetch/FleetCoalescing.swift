/// Coalescing across machines (issue 16): before a daemon asks the origin for a response nobody has (a cold miss of
/// a shareable `GET`), it claims the response's key in the fleet's shared tier. The daemon that wins fetches and
/// stores it, then releases the key; the others wait for that, look again (now a hit in the shared tier), and only
/// fetch themselves when the winner went away or their wait ran out. `FetchEngine.fleet` holds the daemon's
/// implementation (Redis: `FleetLeases` in the server); without one, every miss goes to the origin. Loop thread only.
///
/// ```swift
/// fleet.claim("GET https://a.test/x", waitMs: 30_000) { verdict in
///     switch verdict {
///     case .fetch(let leased): …   // ask the origin; when leased, `release` once the response is stored
///     case .lookAgain: …           // another machine stored it meanwhile: consult the cache again
///     }
/// }
/// ```
public protocol FleetCoalescing: AnyObject {
    /// Decides, once, whether this daemon fetches `key` (a primary storage key) or another machine does;
    /// `waitMs` bounds the wait for another machine.
    func claim(_ key: String, waitMs: Int, _ decided: @escaping (FleetVerdict) -> Void)
    /// The fetch a `.fetch(leased: true)` allowed is over and what it stored is written: the other machines look
    /// again.
    func release(_ key: String)
}

public enum FleetVerdict: Equatable, Sendable {
    /// Ask the origin. `leased`: this daemon holds the key's lease and must `release` it.
    case fetch(leased: Bool)
    /// Another machine fetched and stored the response: look it up again.
    case lookAgain
}

/// One claim's lifecycle, as a pure decision over what the shared tier answered and the time (injected), in the
/// manner of `RequestGate`: the lease is asked for; won, it is this daemon's fetch; held elsewhere, the claim
/// waits for the holder's release, asks again when the lease would have expired (the holder died: this daemon
/// takes over), and gives up at its deadline (then it fetches on its own).
///
/// ```swift
/// var claim = LeaseClaim(deadline: now + 30_000)
/// claim.decide(.answered(.heldFor(ms: 5_000)), now: now)   // .wakeAt(now + 5_001)
/// claim.decide(.notified, now: later)                      // .verdict(.lookAgain)
/// ```
public struct LeaseClaim: Equatable, Sendable {
    public enum State: Equatable, Sendable {
        /// The lease was asked for; the answer has not come.
        case asking
        /// Another machine holds it; ask again at `retryAt`.
        case waiting(retryAt: Int64)
        case decided
    }

    /// What the shared tier said to a request for the lease.
    public enum Answer: Equatable, Sendable {
        case won
        /// Nobody held it, but the response is stored already (it was stored after this daemon's lookup).
        case storedMeanwhile
        /// Another machine holds it for `ms` more milliseconds.
        case heldFor(ms: Int64)
    }

    public enum Event: Equatable, Sendable {
        case answered(Answer)
        /// The key's release was announced.
        case notified
        /// A wake-up asked for with `.wakeAt`.
        case tick
        /// The shared tier did not answer (down, timed out).
        case unavailable
    }

    public enum Action: Equatable, Sendable {
        case verdict(FleetVerdict)
        /// Ask for the lease (again).
        case ask
        case wakeAt(Int64)
        /// A lease won after the claim was decided (the release came first): give it back at once.
        case release
    }

    public private(set) var state = State.asking
    public let deadline: Int64
    /// The lease was won after waiting for another machine's (it went away without releasing it).
    public private(set) var tookOver = false
    private var waited = false

    public init(deadline: Int64) { self.deadline = deadline }

    public mutating func decide(_ event: Event, now: Int64) -> Action? {
        switch (state, event) {
        case (.decided, .answered(.won)):
            return .release
        case (.decided, _):
            return nil
        case (_, .unavailable):
            return decided(.fetch(leased: false))
        case (_, .notified):
            // Sent while asking: whatever the answer is, the response is there now (a lease won meanwhile is
            // given back when its answer comes).
            return decided(.lookAgain)
        case (.asking, .answered(.won)):
            tookOver = waited
            return decided(.fetch(leased: true))
        case (.asking, .answered(.storedMeanwhile)):
            return decided(.lookAgain)
        case (.asking, .answered(.heldFor(let ms))):
            guard now < deadline else { return decided(.fetch(leased: false)) }
            waited = true
            // One millisecond past the holder's expiry: Redis expires a key once its time has passed.
            let retryAt = now + max(1, ms) + 1
            state = .waiting(retryAt: retryAt)
            return .wakeAt(min(retryAt, deadline))
        case (.waiting(let retryAt), .tick):
            if now >= deadline { return decided(.fetch(leased: false)) }
            guard now >= retryAt else { return .wakeAt(min(retryAt, deadline)) }
            state = .asking
            return .ask
        case (.asking, .tick), (.waiting, .answered):
            return nil
        }
    }

    private mutating func decided(_ verdict: FleetVerdict) -> Action {
        state = .decided
        return .verdict(verdict)
    }
}
