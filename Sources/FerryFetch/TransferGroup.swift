
/// One origin transfer and the requests waiting for it: the first to ask, and every identical request that arrived
/// while it ran (coalescing). Loop thread only.
///
/// The rules: the first waiter always gets the response. The others get it only if they may use a response
/// fetched for someone else — it is storable for their request (`Waiter.accepts`) — otherwise each makes its own
/// request (`retryAlone`), so an uncacheable answer (a random quote, a private page) is never shared. A failure
/// (refused, reset, timeout) is shared: retrying at once would only hammer a failing origin. A waiter that goes
/// away (cancel, deadline, disconnect) leaves the others alone; the transfer stops when its last waiter goes.
///
/// ```swift
/// let group = engine.join(waiter, request: outgoing, coalescingKey: "GET http://a.test/x …")
/// group?.remove(waiter)   // on cancel
/// ```
final class TransferGroup {
    enum Outcome {
        /// The transfer made for this waiter (or a failure every waiter shares).
        case own(Result<OriginResponse, FetchFailure>)
        /// A response fetched for another request, usable by this one.
        case shared(OriginResponse)
        /// Not usable by this waiter: make a request of your own.
        case retryAlone
    }

    final class Waiter {
        let wantsProgress: Bool
        let accepts: (OriginResponse) -> Bool
        let receive: (Outcome) -> Void
        var progress: ((Int, Int?) -> Void)?

        init(wantsProgress: Bool, accepts: @escaping (OriginResponse) -> Bool, receive: @escaping (Outcome) -> Void) {
            self.wantsProgress = wantsProgress
            self.accepts = accepts
            self.receive = receive
        }
    }

    let key: String?
    unowned let engine: FetchEngine
    /// The exchange with the origin, from `started` until it finishes or the last waiter leaves.
    private var exchange: OriginExchange?
    private var isFinished = false
    private(set) var waiters: [Waiter] = []
    private var lastProgressMs: Int64 = 0
    private var lastReceived = -1

    init(key: String?, engine: FetchEngine) {
        self.key = key
        self.engine = engine
    }

    /// The transport started the exchange (it may have finished already, inside `start`).
    func started(_ exchange: OriginExchange) {
        if !isFinished { self.exchange = exchange }
    }

    func add(_ waiter: Waiter) { waiters.append(waiter) }

    /// A waiter leaves; the last one to leave stops the transfer.
    func remove(_ waiter: Waiter) {
        waiters.removeAll { $0 === waiter }
        guard waiters.isEmpty, let exchange else { return }
        self.exchange = nil
        exchange.cancel()
        engine.forget(self)
    }

    /// The transfer ended: hand the outcome to every waiter, in arrival order.
    func finished(_ result: Result<OriginResponse, FetchFailure>) {
        engine.forget(self)
        isFinished = true
        exchange = nil
        let all = waiters
        waiters.removeAll()
        if case .success(let r) = result { engine.stats.bytesFromOrigin += UInt64(r.body.count) }
        for (i, waiter) in all.enumerated() {
            guard i > 0, case .success(let response) = result else {
                waiter.receive(.own(result))
                continue
            }
            waiter.receive(waiter.accepts(response) ? .shared(response) : .retryAlone)
        }
    }

    /// Progress to the waiters that asked for it, at most every 100 ms.
    func progressed(_ received: Int, _ total: Int?) {
        // libcurl calls back often, also with nothing new (and several times once the transfer is complete): only
        // new byte counts are news, the last one (all of it) at once, the others at most every 100 ms.
        let now = engine.now()
        guard received != lastReceived, now - lastProgressMs >= 100 || (total != nil && received == total) else { return }
        lastProgressMs = now
        lastReceived = received
        for waiter in waiters where waiter.wantsProgress { waiter.progress?(received, total) }
    }
}
