import FerryHTTPCache

/// One origin transfer and the requests following it: the first to ask, every identical request that arrived while
/// it ran (coalescing), and those that join once its body is already flowing (they read the spool from the start,
/// then follow). Loop thread only.
///
/// The rules: the first waiter always gets the response. The others get it only if they may use a response
/// fetched for someone else — it is storable for their request (`Waiter.accepts`) — otherwise each makes its own
/// request (`retryAlone`), so an uncacheable answer (a random quote, a private page) is never shared. A failure
/// before the head (refused, reset, timeout) is shared: retrying at once would only hammer a failing origin; a
/// failure after it voids the spool every reader follows. A waiter that goes away (cancel, deadline, disconnect)
/// leaves the others alone; the transfer stops when its last waiter goes.
///
/// ```swift
/// let group = engine.join(waiter, request: outgoing, coalescingKey: "GET http://a.test/x …")
/// group?.catchUp(waiter)   // a late joiner gets the head at once
/// group?.remove(waiter)    // on cancel
/// ```
final class TransferGroup {
    /// A response on its way: its head, and its body as it arrives.
    struct Arrival {
        let head: OriginHead
        let body: BodySpool
    }

    enum Outcome {
        /// The transfer made for this waiter (or a failure every waiter shares).
        case own(Result<Arrival, FetchFailure>)
        /// A response fetched for another request, usable by this one.
        case shared(Arrival)
        /// Not usable by this waiter: make a request of your own.
        case retryAlone
        /// Another machine of the fleet stored the response meanwhile (`FleetCoalescing`): consult the cache again.
        case lookAgain
    }

    final class Waiter {
        let wantsProgress: Bool
        let accepts: (OriginHead) -> Bool
        let receive: (Outcome) -> Void
        var progress: ((Int, Int?) -> Void)?
        fileprivate var answered = false

        init(wantsProgress: Bool, accepts: @escaping (OriginHead) -> Bool, receive: @escaping (Outcome) -> Void) {
            self.wantsProgress = wantsProgress
            self.accepts = accepts
            self.receive = receive
        }
    }

    /// What the first waiter decided to keep once the body is complete (`FetchEngine.absorbHead`).
    struct StorePlan {
        let entry: StoredResponse
        let key: HTTPCacheKey
        /// The body of the stored response this one replaces, when stored apart (dropped once this one is in).
        var replacing: String?
    }

    let key: String?
    unowned let engine: FetchEngine
    let spool: BodySpool
    /// The exchange with the origin, from `started` until it finishes or the last waiter leaves.
    private var exchange: OriginExchange?
    private(set) var isFinished = false
    /// The fleet key whose lease this transfer holds (`FetchEngine.claimed`), released when it is over.
    var lease: String?
    private(set) var head: OriginHead?
    /// How the complete body is stored, chosen at the head by the first waiter. A body that came whole with its
    /// head is stored as soon as the plan is made, before that waiter is served: every reader then gets the
    /// store's bytes, so the body is in memory once (the store's record), not once more in each reader.
    var storePlan: StorePlan? { didSet { storeIfComplete() } }
    private var stored = false
    /// An origin's 206 for a client's range, kept once complete as a part of the body (`PartKeeper`).
    var partPlan: PartPlan?
    /// A resumed download (its spool holds the bytes kept from an interrupted one): the stored head of the 200 it
    /// continues, which a 206 answer becomes.
    var resumes: StoredResponse?
    private(set) var waiters: [Waiter] = []
    private var lastProgressMs: Int64 = 0
    private var lastReceived = -1
    private var lastTotal: Int?
    /// The URL asked of the origin (for `stats`' list of transfers in flight).
    var url = ""

    init(key: String?, engine: FetchEngine, spool: BodySpool) {
        self.key = key
        self.engine = engine
        self.spool = spool
    }

    /// The transport started the exchange (it may have finished already, inside `start`).
    func started(_ exchange: OriginExchange) {
        if !isFinished { self.exchange = exchange }
    }

    func add(_ waiter: Waiter) { waiters.append(waiter) }

    /// What `stats` says of it: bytes received so far, the total when the origin said, the clients waiting.
    var inFlight: TransferInFlight {
        TransferInFlight(url: url, received: max(0, lastReceived), total: lastTotal, clients: waiters.count)
    }

    /// A waiter that joined after the head arrived gets its answer now (the caller has kept the group first).
    func catchUp(_ waiter: Waiter) {
        guard let head, !waiter.answered, waiters.contains(where: { $0 === waiter }) else { return }
        answer(waiter, head: head, first: false)
    }

    /// A waiter leaves; the last one to leave stops the transfer (one whose body is complete already is only
    /// waiting to report its end: it finishes, and is stored).
    func remove(_ waiter: Waiter) {
        waiters.removeAll { $0 === waiter }
        stopIfAbandoned()
    }

    /// Nobody follows it any more: it stops (what waits on it is released, its file removed).
    private func stopIfAbandoned() {
        guard waiters.isEmpty, spool.state == .receiving, let exchange else { return }
        self.exchange = nil
        exchange.cancel()
        engine.forget(self)
        spool.finish(.failure(.internalError("the transfer was stopped: every request for it went away")))
        keepPartial()
        releaseLease()
    }

    /// Every waiter left while the fleet decided, and this daemon was to fetch: nothing is asked.
    func abandonBeforeStart() {
        isFinished = true
        engine.forget(self)
        spool.finish(.failure(.internalError("the transfer was stopped: every request for it went away")))
        releaseLease()
    }

    /// The transport refused the exchange at once: every waiter has the failure.
    func failBeforeStart(_ failure: FetchFailure) {
        isFinished = true
        engine.forget(self)
        spool.finish(.failure(failure))
        let all = waiters
        waiters.removeAll()
        for waiter in all where !waiter.answered { waiter.receive(.own(.failure(failure))) }
        releaseLease()
    }

    /// Another machine stored the response while this transfer waited for its turn: it never starts, and its
    /// waiters look again (they find it in the shared tier).
    func lookAgain() {
        isFinished = true
        engine.forget(self)
        spool.finish(.failure(.internalError("answered by another machine of the fleet")))
        let all = waiters
        waiters.removeAll()
        for waiter in all where !waiter.answered { waiter.receive(.lookAgain) }
    }

    /// The lease goes back once this transfer's response is written (or at once, when nothing is).
    private func releaseLease() {
        guard let lease else { return }
        self.lease = nil
        engine.releaseLease(lease)
    }

    /// The final response's head: every waiter learns whether it follows this response.
    func headArrived(_ head: OriginHead) {
        var head = head
        if let resumes, head.status == 206, spool.prefilled > 0 { head = TransferGroup.continuing(resumes, with: head) }
        self.head = head
        let current = waiters  // answers may make waiters leave
        for (i, waiter) in current.enumerated() where !waiter.answered { answer(waiter, head: head, first: i == 0) }
    }

    private func answer(_ waiter: Waiter, head: OriginHead, first: Bool) {
        waiter.answered = true
        let arrival = Arrival(head: head, body: spool)
        if first { return waiter.receive(.own(.success(arrival))) }
        if waiter.accepts(head) { return waiter.receive(.shared(arrival)) }
        waiters.removeAll { $0 === waiter }
        waiter.receive(.retryAlone)
        stopIfAbandoned()
    }

    /// The 200 a 206 continues (RFC 9111 §3.4): the stored response's fields updated with the new ones as a 304
    /// updates them (§3.2: `updatedHeaders`, which leaves `Content-Range` and the whole body's `Content-Length`).
    static func continuing(_ stored: StoredResponse, with part: OriginHead) -> OriginHead {
        OriginHead(status: 200, headers: updatedHeaders(stored: stored.headers, notModified: HTTPFields(part.headers)).pairs,
                   requestTime: part.requestTime, responseTime: part.responseTime, timing: part.timing)
    }

    /// A download that ended early keeps what it has for the next request (`PartKeeper`): a storable 200 with a
    /// validator and its length, not encoded, with at least 1 MiB on disk.
    private func keepPartial() {
        guard let storePlan, let head, head.status == 200, spool.isSpilled, spool.length >= 1 << 20 else { return }
        let fields = HTTPFields(head.headers)
        guard !fields.contains("content-encoding"), let total = fields.first("content-length").flatMap({ Int($0) }),
              total > spool.length, ifRangeValidator(fields) != nil else { return }
        engine.parts.keep(StoredPart(whole: storePlan.entry, range: 0..<spool.length, total: total), body: spool, key: storePlan.key)
    }

    /// The transfer ended. Before a head, the failure goes to every waiter; after it, the spool ends (complete or
    /// void) for the readers, and a complete body the first waiter chose to keep is stored.
    func finished(_ result: Result<OriginTiming, FetchFailure>) {
        engine.forget(self)
        isFinished = true
        exchange = nil
        let all = waiters
        waiters.removeAll()
        guard head != nil else {
            let failure: FetchFailure
            if case .failure(let f) = result { failure = f } else { failure = .internalError("the exchange ended without a response") }
            spool.finish(.failure(failure))
            for waiter in all where !waiter.answered { waiter.receive(.own(.failure(failure))) }
            return releaseLease()
        }
        switch result {
        case .success(let timing):
            spool.timing = timing
            // Stored before the readers wake: a body the store keeps in memory is then the same bytes to them.
            spool.finish(.success(())) { [self] in
                engine.stats.bytesFromOrigin += UInt64(spool.length)
                if storePlan != nil {
                    storeIfComplete()
                } else if let partPlan, spool.length == partPlan.part.range.count {
                    engine.parts.keep(partPlan.part, body: spool, key: partPlan.key)
                }
                releaseLease()
            }
        case .failure(let failure):
            spool.finish(.failure(failure))
            keepPartial()
            releaseLease()
        }
    }

    private func storeIfComplete() {
        guard !stored, let storePlan, spool.state == .complete else { return }
        stored = true
        engine.responses.store(storePlan.entry, body: spool, key: storePlan.key, replacing: storePlan.replacing)
    }

    /// Progress to the waiters that asked for it, at most every 100 ms.
    func progressed(_ received: Int, _ total: Int?) {
        // libcurl calls back often, also with nothing new (and several times once the transfer is complete): only
        // new byte counts are news, the last one (all of it) at once, the others at most every 100 ms.
        let now = engine.now()
        guard received != lastReceived, now - lastProgressMs >= 100 || (total != nil && received == total) else { return }
        lastProgressMs = now
        lastReceived = received
        lastTotal = total
        for waiter in waiters where waiter.wantsProgress { waiter.progress?(received, total) }
    }
}

/// A transfer with an origin, as `stats` lists it (`fetch.in_flight`) and `ferry top` shows it.
public struct TransferInFlight: Sendable, Equatable {
    public var url: String
    public var received: Int
    public var total: Int?
    public var clients: Int
}
