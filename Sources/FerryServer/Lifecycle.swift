/// The daemon's life from the first signal to the end of `run`: one state and a pure `decide` that turns each event
/// into the next state and what the server must do, so every path of a shutdown is tested without a loop.
///
/// ```
/// running ──signal──▶ draining ──drained / grace over / 2nd signal──▶ stopPending
/// stopPending ──end of iteration──▶ stopping ──all closed──▶ stopped
/// stopping ──signal / final flush over──▶ (close every connection now) ──all closed──▶ stopped
/// ```
///
/// ```swift
/// var life = Lifecycle()
/// life.decide(.signal, inFlight: 3, connections: 5)          // [.stopAccepting, .startGraceTimer]; life.state == .draining
/// life.decide(.drained, inFlight: 0, connections: 5)         // [], life.state == .stopPending
/// life.decide(.endOfIteration, inFlight: 0, connections: 5)  // [.closeTimers, .startFinalFlushTimer, .cancelInFlight,
///                                                            //  .closeAfterFlush]; life.state == .stopping
/// ```
struct Lifecycle: Equatable {
    enum State: Equatable {
        /// Serving.
        case running
        /// A signal came: no new connections or requests; requests in flight have the grace period.
        case draining
        /// The drain is over: the server stops at the end of this loop iteration (after its replies are flushed).
        case stopPending
        /// Requests in flight were answered `unavailable`; each connection closes once its replies are written.
        case stopping
        /// Every connection is closed; the last handles are released and `run` returns.
        case stopped
    }

    enum Event: Equatable {
        /// SIGINT or SIGTERM.
        case signal
        /// No request is in flight any more.
        case drained
        /// The grace period passed with requests still in flight.
        case graceOver
        /// The loop is about to sleep (the iteration hook).
        case endOfIteration
        /// The time given to write the last replies passed.
        case finalFlushOver
        /// The last connection closed.
        case allClosed
    }

    enum Action: Equatable {
        /// Close the listening socket; new requests are answered `unavailable`.
        case stopAccepting
        case startGraceTimer
        /// Stop the grace and deadline timers.
        case closeTimers
        /// Before the connections close, so that the last one to close (`releaseLoop`) stops it again.
        case startFinalFlushTimer
        /// Answer every request in flight with `unavailable` (and stop its work).
        case cancelInFlight
        /// Flush each connection and close it once its replies are written.
        case closeAfterFlush
        /// Close every connection at once, unsent replies dropped.
        case closeAllNow
        /// Close the loop's remaining handles (the final flush timer too) so that `uv_run` returns.
        case releaseLoop
    }

    private(set) var state: State = .running

    /// Whether new work is refused (`unavailable`).
    var isDraining: Bool { state != .running }

    /// The actions for `event`, given how many requests are in flight and connections are open now.
    mutating func decide(_ event: Event, inFlight: Int, connections: Int) -> [Action] {
        let (next, actions) = Lifecycle.decide(state, event, inFlight: inFlight, connections: connections)
        state = next
        return actions
    }

    static func decide(_ state: State, _ event: Event, inFlight: Int, connections: Int) -> (State, [Action]) {
        switch (state, event) {
        case (.running, .signal):
            return inFlight == 0 ? (.stopPending, [.stopAccepting]) : (.draining, [.stopAccepting, .startGraceTimer])
        case (.draining, .signal), (.draining, .graceOver), (.draining, .drained):
            // A second signal does not cut replies off yet: it ends the grace period.
            return (.stopPending, [])
        case (.stopPending, .endOfIteration):
            if connections == 0 { return (.stopped, [.closeTimers, .releaseLoop]) }
            // Closing connections may close the last one at once: `.allClosed` then arrives in `.stopping`.
            return (.stopping, [.closeTimers, .startFinalFlushTimer, .cancelInFlight, .closeAfterFlush])
        case (.stopping, .signal), (.stopping, .finalFlushOver):
            return (.stopping, [.closeAllNow])
        case (.stopping, .allClosed):
            return (.stopped, [.releaseLoop])
        default:
            // Everything else changes nothing: a drain reported while running, a signal while the stop is pending,
            // requests answered `unavailable` while stopping (they end the drain a second time), a late timer.
            return (state, [])
        }
    }
}
