import FerryCache
import FerryBytes
import FerryHTTPCache
import FerryLoop
import FerryProtocol

/// The daemon's fetch machinery, shared by every client: an origin transport (libcurl on the loop), the HTTP cache's
/// storage, and the table of transfers in flight that identical requests join (coalescing). Its API is typed: a
/// `FetchSpec` in (through `FetchJob`), a `FetchOutcome` out; it knows nothing of the protocol's JSON. Loop thread
/// only.
///
/// ```swift
/// let engine = FetchEngine(transport: try CurlTransport(loop: loop, config: .init()),
///                          responses: ResponseStore(storage: CacheStoreResponses(store: store)))
/// FetchJob(engine: engine, spec: FetchSpec(url: "https://a.test/x")) { result in … }.start()
/// ```
public final class FetchEngine {
    public struct Config: Sendable {
        /// The daemon's `max_bytes`: the default of every request and the most one may ask for (`--max-fetch-bytes`).
        /// The real bound of what is kept is the store's (`StoreConfig.maxAdoptedBytes`); larger bodies still
        /// stream to their clients.
        public var maxBytesLimit = 8 << 30
        /// Where bodies go as they arrive (`BodySpool`); no directory keeps them in memory.
        public var spool = BodySpool.Config(directory: nil)
        /// The targeted cache-control fields this cache obeys over `Cache-Control` (RFC 9213,
        /// `--cache-control-targets`), first wins.
        public var targets = TargetedCacheControl.ferry
        /// The key of credential partitions (`partition(for:)`): random per installation, kept off the disk.
        public var partitionSecret: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }
        public init() {}
    }

    public let config: Config
    let transport: OriginTransport
    let responses: ResponseStore
    public let stats = FetchStats()
    /// The fleet's coalescing of cold misses (`--l2`); nil: every miss asks the origin.
    public var fleet: FleetCoalescing?
    /// The stored responses as an operator inspects and purges them (`http.*`).
    public var catalog: ResponseCatalog { ResponseCatalog(storage: responses.storage) }
    let parts: PartKeeper
    /// Wall-clock milliseconds (injected: tests run the cache rules on a clock of their own).
    let now: () -> Int64
    private var groups: [String: TransferGroup] = [:]
    /// Storage keys with a background revalidation running (stale-while-revalidate: exactly one at a time).
    private var revalidating: Set<String> = []

    /// The request's own conditions, replaced by the engine's validators when it validates a stored response.
    static let clientConditions = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since"]

    public init(transport: OriginTransport, responses: ResponseStore, config: Config = Config(),
                now: @escaping () -> Int64 = WallClock.nowMs) {
        self.config = config
        self.transport = transport
        self.responses = responses
        self.now = now
        parts = PartKeeper(responses: responses, spool: config.spool, stats: stats)
    }

    /// The credential partition of a request with `Authorization` or `Cookie` (nil without): an HMAC of the uid
    /// that asks and those fields' values under the installation's secret, so equal credentials of one user meet
    /// in one partition and nothing stored (keys included) reveals them.
    func partition(for spec: FetchSpec) -> String? {
        let fields = HTTPFields(spec.headers)
        let auth = fields.values("authorization"), cookie = fields.values("cookie")
        guard !auth.isEmpty || !cookie.isEmpty else { return nil }
        let message = "\(spec.uid)\u{0}" + auth.joined(separator: "\u{1}") + "\u{0}" + cookie.joined(separator: "\u{1}")
        return String(HMACSHA256.hex(key: config.partitionSecret, message: Array(message.utf8)).prefix(32))
    }

    /// Exchanges with origins running now.
    public var activeTransfers: Int { transport.activeTransfers }
    public var bodyBytesInFlight: Int { transport.bodyBytesInFlight }
    public var waitingTransfers: Int { transport.waitingTransfers }

    public func close() { transport.close() }

    /// The shared transfers in flight, furthest along first, at most `limit` (`stats`' `fetch.in_flight`).
    public func transfersInFlight(limit: Int = 20) -> [TransferInFlight] {
        Array(groups.values.map(\.inFlight).sorted { ($0.received, $0.url) > ($1.received, $1.url) }.prefix(limit))
    }

    /// Joins the transfer in flight for `coalescingKey` or starts one; `nil` key: a transfer of its own. With a
    /// `fleetKey` (a cold miss of a shareable response) and a `fleet`, the new transfer first claims the key across
    /// machines, and only asks the origin if this daemon is to fetch it; identical requests join it meanwhile.
    func join(_ waiter: TransferGroup.Waiter, request: OriginRequest, coalescingKey: String?, fleetKey: String? = nil,
              resuming: (spool: BodySpool, stored: StoredResponse)? = nil) -> TransferGroup? {
        if let key = coalescingKey, let group = groups[key] {
            stats.coalesced += 1
            group.add(waiter)
            return group
        }
        let group = TransferGroup(key: coalescingKey, engine: self, spool: resuming?.spool ?? BodySpool(config: config.spool))
        group.resumes = resuming?.stored
        group.url = request.url
        group.add(waiter)
        if let key = coalescingKey { groups[key] = group }
        if let fleet, let fleetKey, coalescingKey != nil {
            stats.fleetClaims += 1
            fleet.claim(fleetKey, waitMs: request.timeoutMs ?? FetchEngine.fleetWaitMs) { [self] verdict in
                claimed(group, fleetKey: fleetKey, verdict: verdict, request: request)
            }
            return group.isFinished ? nil : group
        }
        return startExchange(group, request) ? group : nil
    }

    /// How long a cold miss waits for another machine's fetch when its request has no timeout of its own.
    static let fleetWaitMs = 30_000

    /// The fleet decided who fetches the group's response.
    private func claimed(_ group: TransferGroup, fleetKey: String, verdict: FleetVerdict, request: OriginRequest) {
        switch verdict {
        case .fetch(let leased):
            if leased { group.lease = fleetKey }
            guard !group.waiters.isEmpty else { return group.abandonBeforeStart() }
            _ = startExchange(group, request)
        case .lookAgain:
            stats.fleetLookAgain += 1
            group.lookAgain()
        }
    }

    /// Asks the origin for the group's response; false when the transport refused at once (every waiter then has
    /// the failure).
    private func startExchange(_ group: TransferGroup, _ request: OriginRequest) -> Bool {
        do {
            // The exchange holds its group until it finishes (a background revalidation's group has no other owner);
            // the group drops the exchange when it finishes or its last waiter leaves, which ends the cycle.
            let events = OriginEvents(head: { head in group.headArrived(head) },
                                      progress: { received, total in group.progressed(received, total) },
                                      done: { result in group.finished(result) })
            let exchange = try transport.start(request, body: group.spool, events: events)
            stats.originRequests += 1
            group.started(exchange)
            return true
        } catch {
            group.failBeforeStart(error)
            return false
        }
    }

    /// A fetch that held the fleet's lease on its key is over: once what it stored is written, the other machines
    /// look again.
    func releaseLease(_ key: String) {
        responses.whenPlaced(key) { [self] in fleet?.release(key) }
    }

    /// Whether a transfer for `key` is in flight (a request may join it).
    func hasTransfer(for key: String) -> Bool { groups[key] != nil }

    /// The group is done or abandoned: later identical requests start a new transfer.
    func forget(_ group: TransferGroup) {
        if let key = group.key, groups[key] === group { groups[key] = nil }
    }

    /// Stale-while-revalidate: one conditional request in the background, whose answer refreshes the store.
    func revalidateInBackground(_ request: CacheRequest, found: ResponseStore.Found, spec: FetchSpec) {
        guard !revalidating.contains(found.storageKey) else { return }
        revalidating.insert(found.storageKey)
        stats.backgroundRevalidations += 1
        var headers = HTTPFields(spec.headers)
        // Only our validators: the client's own conditions and ranges were for its request, not for the refresh.
        for name in FetchEngine.clientConditions + ["if-range", "range"] { headers.removeAll(name) }
        headers = headers.appending(contentsOf: conditionalHeaders(for: found.response))
        let outgoing = OriginRequest(url: request.url, method: "GET", headers: headers.pairs, body: [],
                                        timeoutMs: 60_000, maxBytes: spec.maxBytes, owner: spec.owner)
        let storageKey = found.storageKey
        var group: TransferGroup?
        let waiter = TransferGroup.Waiter(wantsProgress: false, accepts: { _ in true }) { [weak self] outcome in
            guard let self else { return }
            revalidating.remove(storageKey)
            guard case .own(.success(let arrival)) = outcome else { return }
            let absorbed = absorbHead(arrival.head, for: request, stored: found, validating: true)
            // A new response replaces the stored one once its body is in; nobody reads it meanwhile.
            var plan = absorbed.plan
            plan?.replacing = found.bodyKey
            group?.storePlan = plan
        }
        group = join(waiter, request: outgoing, coalescingKey: nil)
    }

    /// What a response's head does to the cache: a 304 for a validation refreshes the stored response (returned,
    /// to be served); a successful unsafe method invalidates; a storable response gets a plan to store it once its
    /// body is complete (`TransferGroup.storePlan`).
    func absorbHead(_ head: OriginHead, for request: CacheRequest, stored: ResponseStore.Found?,
                    validating: Bool) -> (refreshed: ResponseStore.Found?, plan: TransferGroup.StorePlan?) {
        let headers = config.targets.policyView(HTTPFields(head.headers))
        if head.status == 304, validating, let stored {
            // The body we keep is decoded; the stored Content-Encoding describes that body, not a new one.
            var updated = stored.response.updating(withNotModified: HTTPFields(head.headers), requestTime: head.requestTime,
                                                   responseTime: head.responseTime,
                                                   keepingStored: ["content-encoding", "content-length"])
            updated.headers = config.targets.policyView(TargetedCacheControl.clientView(updated.headers))
            let refreshed = ResponseStore.Found(response: updated, body: stored.body, storageKey: stored.storageKey,
                                                bodyKey: stored.bodyKey)
            responses.update(refreshed)
            return (refreshed, nil)
        }
        if !isSafeMethod(request.method) {
            let urls = invalidatedURLs(requestMethod: request.method, requestURL: request.url,
                                       responseStatus: head.status, responseHeaders: headers)
            responses.invalidate(urls: urls, partition: request.partition)
        }
        if case .store(let key) = storageVerdict(request: request, status: head.status, responseHeaders: headers),
           request.method != "HEAD" {
            let entry = StoredResponse(storing: head.status, headers: config.targets.policyView(Self.served(head)), for: request,
                                       requestTime: head.requestTime, responseTime: head.responseTime, bodySize: 0)
            return (nil, TransferGroup.StorePlan(entry: entry, key: key))
        }
        return (nil, nil)
    }

    /// libcurl hands bodies over decoded: a stored `Content-Encoding` / `Content-Length` would describe bytes we
    /// do not have, so they are dropped from what is stored (and served).
    /// A response's fields as served and stored: without what described an encoding libcurl undid; and a body
    /// passed through encoded varies on `Accept-Encoding` (whatever the origin said), so it only ever reaches a
    /// request that accepts the same.
    static func served(_ head: OriginHead) -> HTTPFields {
        let headers = HTTPFields(head.headers)
        if head.decoded { return decoded(headers) }
        guard headers.contains("content-encoding"),
              !(varyFieldNames(headers.combined("vary"))?.contains("accept-encoding") ?? true) else { return headers }
        return headers.appending("Vary", "Accept-Encoding")
    }

    static func decoded(_ headers: HTTPFields) -> HTTPFields {
        guard headers.contains("content-encoding") else { return headers }
        return headers.removingAll(names: ["content-encoding", "content-length"])
    }
}

/// Counters for `stats`.
public final class FetchStats {
    public internal(set) var requests: UInt64 = 0
    public internal(set) var hits: UInt64 = 0
    public internal(set) var misses: UInt64 = 0
    public internal(set) var revalidated: UInt64 = 0
    public internal(set) var stale: UInt64 = 0
    public internal(set) var coalesced: UInt64 = 0
    public internal(set) var bypass: UInt64 = 0
    public internal(set) var originRequests: UInt64 = 0
    public internal(set) var backgroundRevalidations: UInt64 = 0
    /// Cold misses that claimed their key across the fleet, and those another machine's fetch then answered.
    public internal(set) var fleetClaims: UInt64 = 0
    public internal(set) var fleetLookAgain: UInt64 = 0
    /// Downloads that went on from what an interrupted one had kept.
    public internal(set) var resumed: UInt64 = 0
    /// Stored parts joined with a new one into one (RFC 9111 §3.4), or into the whole body.
    public internal(set) var partsCombined: UInt64 = 0
    public internal(set) var bytesFromCache: UInt64 = 0
    public internal(set) var bytesFromOrigin: UInt64 = 0
}
