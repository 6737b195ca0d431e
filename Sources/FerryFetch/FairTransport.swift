import FerryLoop

/// An `OriginTransport` that shares the transfer slots of the one below it fairly among clients (`SlotScheduler`):
/// an exchange starts below only when its owner is within its share, others wait here, in order, and the time they
/// wait counts against their `timeoutMs` (a request that runs out of time while waiting fails as timed out without
/// reaching the origin). Loop thread only.
///
/// ```swift
/// let fair = FairTransport(CurlTransport(loop: loop, config: c), loop: loop, capacity: c.maxTotal, defaultTimeoutMs: c.defaultTimeoutMs)
/// let engine = FetchEngine(transport: fair, responses: responses)
/// ```
public final class FairTransport: OriginTransport {
    private let inner: OriginTransport
    private var slots: SlotScheduler
    private let now: () -> Int64
    private let defaultTimeoutMs: Int
    private var nextID: UInt64 = 1
    /// Exchanges not started below yet, by scheduler id.
    private var queued: [UInt64: Queued] = [:]
    private var timer: LoopTimer?

    private final class Queued {
        let request: OriginRequest
        let body: BodySpool
        let events: OriginEvents
        let exchange: Exchange
        init(_ request: OriginRequest, _ body: BodySpool, _ events: OriginEvents, _ exchange: Exchange) {
            self.request = request
            self.body = body
            self.events = events
            self.exchange = exchange
        }
        func done(_ result: Result<OriginTiming, FetchFailure>) { events.done(result) }
    }

    /// `loop` nil: no timer (tests call `expireWaiting` themselves); `now` in milliseconds.
    public init(_ inner: OriginTransport, loop: EventLoop?, capacity: Int, maxPerOwner: Int? = nil,
                defaultTimeoutMs: Int, now: @escaping () -> Int64 = WallClock.nowMs) {
        self.inner = inner
        slots = SlotScheduler(capacity: capacity, maxPerOwner: maxPerOwner)
        self.now = now
        self.defaultTimeoutMs = defaultTimeoutMs
        if let loop { timer = LoopTimer(loop: loop) { [weak self] _ in self?.expireWaiting() } }
    }

    public func start(_ request: OriginRequest, body: BodySpool, events: OriginEvents) throws(FetchFailure) -> OriginExchange {
        let id = nextID
        nextID += 1
        let t = now()
        let timeout = request.timeoutMs ?? defaultTimeoutMs
        let exchange = Exchange(id: id, owner: request.owner, transport: self)
        switch slots.request(id, owner: request.owner, deadlineMs: t + Int64(timeout), now: t) {
        case .start:
            do {
                let below = try inner.start(request, body: body, events: ended(exchange, events))
                if !exchange.isDone { exchange.below = below }  // `done` may run before `start` returns
            } catch {
                release(owner: request.owner)
                throw error
            }
        case .wait:
            queued[id] = Queued(request, body, events, exchange)
            armTimer()
        }
        return exchange
    }

    public var activeTransfers: Int { inner.activeTransfers }
    public var bodyBytesInFlight: Int { inner.bodyBytesInFlight }
    /// Exchanges waiting for a slot.
    public var waitingTransfers: Int { slots.waitingCount }

    public func close() {
        timer?.close()
        timer = nil
        let waiting = queued.values
        queued.removeAll()
        for q in waiting { q.done(.failure(.unavailable(curlCode: 0, message: "ferryd is stopping"))) }
        inner.close()
    }

    /// Fails the waiting exchanges whose time ran out; re-arms the timer for the next.
    public func expireWaiting() {
        for id in slots.expire(now: now()) {
            guard let q = queued.removeValue(forKey: id) else { continue }
            q.done(.failure(.timeout("timed out after \(q.request.timeoutMs ?? defaultTimeoutMs) ms waiting for one of "
                                     + "\(slots.capacity) transfer slots (\(slots.activeCount) busy)")))
        }
        armTimer()
    }

    // MARK: Slots

    /// Wraps `done`: the exchange's end frees its slot for the next waiting one.
    private func ended(_ exchange: Exchange, _ events: OriginEvents) -> OriginEvents {
        var wrapped = events
        wrapped.done = { [weak self] result in
            exchange.below = nil
            exchange.isDone = true
            self?.release(owner: exchange.owner)
            events.done(result)
        }
        return wrapped
    }

    private func release(owner: UInt64) {
        for next in slots.finished(owner: owner) { startQueued(next.id, owner: next.owner, queuedAtMs: next.queuedAtMs) }
        armTimer()
    }

    private func startQueued(_ id: UInt64, owner: UInt64, queuedAtMs: Int64) {
        guard let q = queued.removeValue(forKey: id) else { return release(owner: owner) }
        var request = q.request
        guard let left = SlotScheduler.remainingMs(request.timeoutMs ?? defaultTimeoutMs, queuedAtMs: queuedAtMs, now: now()) else {
            releaseLater(q)
            return q.done(.failure(.timeout("timed out waiting for a transfer slot")))
        }
        request.timeoutMs = left
        do {
            let below = try inner.start(request, body: q.body, events: ended(q.exchange, q.events))
            if !q.exchange.isDone { q.exchange.below = below }
        } catch {
            releaseLater(q)
            q.done(.failure(error))
        }
    }

    /// A slot taken for an exchange that did not start gives itself back.
    private func releaseLater(_ q: Queued) { release(owner: q.request.owner) }

    private func cancel(_ exchange: Exchange) {
        guard !exchange.isDone else { return }
        if let below = exchange.below {
            exchange.below = nil
            below.cancel()
            release(owner: exchange.owner)
        } else if slots.cancelWaiting(exchange.id) {
            queued[exchange.id] = nil
            armTimer()
        }
    }

    private func armTimer() {
        guard let timer else { return }
        guard let next = slots.nextDeadlineMs else { return timer.stop() }
        timer.start(afterMs: UInt64(max(1, next - now())))
    }

    fileprivate final class Exchange: OriginExchange {
        let id: UInt64
        let owner: UInt64
        var below: OriginExchange?
        /// Its `done` ran: its slot is released, and a late `cancel` does nothing.
        var isDone = false
        unowned let transport: FairTransport
        init(id: UInt64, owner: UInt64, transport: FairTransport) {
            self.id = id
            self.owner = owner
            self.transport = transport
        }
        func cancel() { transport.cancel(self) }
    }
}
