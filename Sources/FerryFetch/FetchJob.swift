import FerryHTTPCache
import FerryProtocol

/// One fetch, hop by hop: for each URL of the redirect chain, consult the shared cache (RFC 9111 through
/// `FerryHTTPCache`), then serve from it, validate, or join/start an origin transfer; absorb what the origin said
/// into the cache; follow redirects itself (so that every hop is cached under its own URL). The answer is typed
/// (`FetchOutcome`); who asked (a client's `fetch`, the image loader) turns it into what it needs. Loop thread only.
///
/// ```swift
/// let job = FetchJob(engine: engine, spec: spec) { result in ... }   // Result<FetchOutcome, FetchFailure>
/// job.onProgress = { received, total in ... }                          // when spec.progress
/// job.start()
/// job.cancel()   // leaves the transfer; the last waiter to leave stops it
/// ```
public final class FetchJob {
    unowned let engine: FetchEngine
    private(set) var spec: FetchSpec
    private var url: String
    private var redirects = 0
    private var group: TransferGroup?
    private var waiter: TransferGroup.Waiter?
    private(set) var finished = false
    /// The origin's bytes are passed through encoded (it used a coding the transport does not decode).
    private var passThrough = false
    /// This hop's cold miss waited for another machine's fetch already (`FleetCoalescing`): it does not wait twice.
    private var fleetWaited = false
    private let startedMs: Int64
    private var onDone: ((Result<FetchOutcome, FetchFailure>) -> Void)?
    /// Bytes received so far and the total when known, while a transfer of this job runs (with `spec.progress`).
    public var onProgress: ((Int, Int?) -> Void)?

    public init(engine: FetchEngine, spec: FetchSpec, done: @escaping (Result<FetchOutcome, FetchFailure>) -> Void) {
        self.engine = engine
        startedMs = engine.now()
        self.spec = spec
        url = spec.url
        onDone = done
    }

    public func start() {
        engine.stats.requests += 1
        hop()
    }

    var cacheRequest: CacheRequest {
        CacheRequest(method: spec.method, url: url, headers: HTTPFields(spec.headers), mode: spec.cacheMode,
                     partition: partition)
    }

    /// The request's credential partition, made once per hop (a redirect may drop the credentials).
    private var partitionOfHop: String??
    /// The store's placement mark and the keys of this hop's lookup, until its miss reaches the origin (`network`).
    private var lookedUp: (mark: UInt64, primaries: [String])?
    private var partition: String? {
        if let p = partitionOfHop { return p }
        let p = engine.partition(for: spec)
        partitionOfHop = .some(p)
        return p
    }

    /// One URL of the chain: the cache first, where the request allows it.
    private func hop() {
        let creq = cacheRequest
        // The keys once: each is the URL parsed and normalised.
        let keys = creq.mode.consultsCache ? creq.lookupKeys : []
        guard !keys.isEmpty else { return network(creq, stored: nil, validating: nil) }
        lookedUp = (engine.responses.placements, keys.map(\.description))
        engine.responses.lookup(creq, keys: keys) { [self] found in
            guard !finished else { return }
            decide(creq, found)
        }
    }

    private func decide(_ creq: CacheRequest, _ found: ResponseStore.Found?) {
        let now = engine.now() / 1000
        guard let found else {
            if creq.requiresCachedResponse { return gatewayTimeout() }
            return resumeOrFetch(creq)
        }
        switch evaluate(request: creq, stored: found.response, now: now, facts: found.facts) {
        case .fresh(let age):
            engine.stats.hits += 1
            serveStored(found, age: age, cacheStatus: .hit)
        case .staleWhileRevalidate(let age):
            engine.stats.stale += 1
            engine.revalidateInBackground(creq, found: found, spec: spec)
            serveStored(found, age: age, cacheStatus: .stale)
        case .validate(let conditional):
            if creq.requiresCachedResponse { return gatewayTimeout() }
            network(creq, stored: found, validating: conditional)
        case .mustFetch:
            if creq.requiresCachedResponse { return gatewayTimeout() }
            network(creq, stored: found, validating: nil)
        }
    }

    /// To the origin: joins an identical transfer in flight when the request may share one.
    func network(_ creq: CacheRequest, stored: ResponseStore.Found?, validating conditional: HTTPFields?, alone: Bool = false,
                         resume: (fields: HTTPFields, spool: BodySpool, stored: StoredResponse)? = nil) {
        let key = alone ? nil : coalescingKey(creq, conditional).map { k in resume.map { k + "\nresume:\($0.spool.prefilled)" } ?? k }
        // The lookup that found nothing ran while an identical transfer may have ended and begun storing its
        // response: that transfer is gone from the groups, and its response may not be in what the lookup read.
        // Look again instead of asking the origin a second time (again only if yet another one was stored).
        if let key, stored == nil, conditional == nil, resume == nil, let (mark, primaries) = lookedUp,
           !engine.hasTransfer(for: key), engine.responses.placed(since: mark, anyOf: primaries) {
            lookedUp = nil
            return hop()
        }
        lookedUp = nil
        var headers = HTTPFields(spec.headers)
        if let conditional {
            // Our validators replace the client's; the client's own condition is answered afterwards.
            for name in FetchEngine.clientConditions { headers.removeAll(name) }
            headers = headers.appending(contentsOf: conditional)
        }
        if let resume {
            headers = headers.removingAll(names: ["accept-encoding"]).appending(contentsOf: resume.fields)
        }
        var outgoing = OriginRequest(url: url, method: spec.method, headers: headers.pairs, body: spec.body,
                                     timeoutMs: spec.timeoutMs, maxBytes: spec.maxBytes, owner: spec.owner,
                                     mayReplay: spec.mayReplay)
        outgoing.decodes = !passThrough && !HTTPFields(spec.headers).contains("accept-encoding") && resume == nil
        outgoing.tls = spec.tls
        let clock = engine.now
        let targets = engine.config.targets
        let waiter = TransferGroup.Waiter(wantsProgress: spec.progress, accepts: { head in
            // Someone else's response is ours only if the cache could have stored it for our request and would now
            // serve it to us without asking the origin (RFC 9111 §4: collapsed requests get reusable responses).
            let headers = targets.policyView(HTTPFields(head.headers))
            // A 304 answers every waiter of a validation alike: they sent the same validators for the same entry.
            if head.status == 304 && conditional != nil { return true }
            guard storageVerdict(request: creq, status: head.status, responseHeaders: headers).isStorable else { return false }
            let stored = StoredResponse(storing: head.status, headers: headers, for: creq, requestTime: head.requestTime,
                                        responseTime: head.responseTime)
            if case .fresh = evaluate(request: creq, stored: stored, now: clock() / 1000) { return true }
            return false
        }) { [weak self] outcome in
            // Weak: the job is kept by who waits for it (a request, an image download), not by its own waiter.
            guard let self else { return }
            guard !finished else { return leaveTransfer() }
            switch outcome {
            case .own(let result): received(result, creq: creq, stored: stored, validating: conditional != nil, shared: false)
            case .shared(let arrival): received(.success(arrival), creq: creq, stored: stored, validating: conditional != nil, shared: true)
            case .retryAlone:
                group = nil
                network(creq, stored: stored, validating: conditional, alone: true, resume: nil)
            case .lookAgain:
                group = nil
                fleetWaited = true
                hop()
            }
        }
        waiter.progress = { [weak self] received, total in self?.onProgress?(received, total) }
        self.waiter = waiter
        group = engine.join(waiter, request: outgoing, coalescingKey: key, fleetKey: fleetKey(creq, stored, conditional, resume != nil),
                            resuming: resume.map { ($0.spool, $0.stored) })
        // A no-store request's transfer is its own and nothing keeps its body: it streams through memory from the
        // first byte (at the head would be late: libcurl may bring a fast origin's first megabytes with it).
        if key == nil, resume == nil, !creq.mode.storesResponses, let group, group.waiters.count == 1 { group.spool.streamThrough() }
        group?.catchUp(waiter)
    }

    /// This job no longer follows its transfer's body (it serves something else, or it is done with it).
    func leaveTransfer() {
        if let group, let waiter { group.remove(waiter) }
        group = nil
    }

    /// The key a cold miss claims across the fleet: a plain `GET` of a response stored for everyone (no
    /// credentials), nothing stored yet, asked once per hop.
    private func fleetKey(_ creq: CacheRequest, _ stored: ResponseStore.Found?, _ conditional: HTTPFields?, _ resuming: Bool) -> String? {
        guard engine.fleet != nil, !fleetWaited, stored == nil, conditional == nil, !resuming, creq.method == "GET",
              creq.partition == nil, spec.body.isEmpty, let key = creq.lookupKey?.description,
              SharedTier.isShareable(key: key) else { return nil }
        return key
    }

    /// Identical requests share a transfer: same method, URL and headers (validators included), no body, and a
    /// mode that reads the cache. Anything else gets a transfer of its own.
    private func coalescingKey(_ creq: CacheRequest, _ conditional: HTTPFields?) -> String? {
        guard creq.method == "GET" || creq.method == "HEAD", spec.body.isEmpty,
              creq.mode.consultsCache, let key = creq.lookupKey else { return nil }
        // Limits are part of the identity: a waiter must not inherit another request's timeout or body limit.
        var parts = [creq.method, key.url, "timeout:\(spec.timeoutMs ?? 0)", "max_bytes:\(spec.maxBytes)",
                     "partition:\(creq.partition ?? "")"]
        for (name, value) in spec.headers.sorted(by: { ($0.0.lowercased(), $0.1) < ($1.0.lowercased(), $1.1) }) {
            parts.append(name.lowercased() + ":" + value)
        }
        for (name, value) in conditional?.pairs ?? [] { parts.append("cond:" + name.lowercased() + ":" + value) }
        return parts.joined(separator: "\n")
    }

    private func received(_ result: Result<TransferGroup.Arrival, FetchFailure>, creq: CacheRequest, stored: ResponseStore.Found?,
                          validating: Bool, shared: Bool) {
        let now = engine.now() / 1000
        switch result {
        case .failure(let failure):
            group = nil
            if case .unavailable(curlCode: 61, _) = failure, !passThrough, isSafeMethod(creq.method) {
                // The origin used a content coding libcurl does not know: ask again and pass the bytes through.
                passThrough = true
                return network(creq, stored: stored, validating: nil, alone: true)
            }
            if let stored, staleIfErrorAllowed(stored: stored.response, request: creq, now: now, disconnected: true) {
                engine.stats.stale += 1
                return serveStored(stored, age: currentAge(stored: stored.response, now: now), cacheStatus: .stale)
            }
            finish(.failure(failure))
        case .success(let arrival):
            let head = arrival.head
            if head.status >= 500, let stored, staleIfErrorAllowed(stored: stored.response, request: creq, now: now) {
                leaveTransfer()
                engine.stats.stale += 1
                return serveStored(stored, age: currentAge(stored: stored.response, now: now), cacheStatus: .stale)
            }
            // Only the transfer's own waiter feeds the cache (a shared response is stored once); a shared 304
            // refreshes each waiter's stored response, which is how it gets served.
            if !shared || head.status == 304 {
                let absorbed = engine.absorbHead(head, for: creq, stored: stored, validating: validating)
                if !shared, var plan = absorbed.plan {
                    plan.replacing = stored?.bodyKey
                    group?.storePlan = plan
                }
                if !shared, group?.resumes == nil, let plan = partPlan(for: head, creq) { group?.partPlan = plan }
                // A body nothing will keep (no-store, uncacheable) needs no checksum: it is only read as it comes.
                if !shared, let group, group.storePlan == nil, group.partPlan == nil {
                    arrival.body.forgoChecksum()
                    // A transfer of its own (no key: nobody joins it) has this job as its one reader, in order.
                    if group.key == nil { arrival.body.streamThrough() }
                }
                if let refreshed = absorbed.refreshed {
                    leaveTransfer()
                    engine.stats.revalidated += 1
                    return serveStored(refreshed, age: currentAge(stored: refreshed.response, now: now), cacheStatus: .revalidated)
                }
            }
            if redirectsToFollow(head.status, HTTPFields(head.headers)) && arrival.body.state == .receiving {
                // Its body is not served, but it is stored with the redirect: follow once the transfer is done.
                return afterBody(arrival.body) { [self] in
                    _ = followRedirect(status: head.status, headers: HTTPFields(head.headers), leaving: true)
                }
            }
            if followRedirect(status: head.status, headers: HTTPFields(head.headers), leaving: true) { return }
            let status: CacheStatus = shared ? .coalesced : (creq.mode.consultsCache ? .miss : .bypass)
            if status == .miss { engine.stats.misses += 1 }
            if status == .bypass { engine.stats.bypass += 1 }
            serveNetwork(arrival, cacheStatus: status)
        }
    }

    private func redirectsToFollow(_ status: Int, _ headers: HTTPFields) -> Bool {
        [301, 302, 303, 307, 308].contains(status) && spec.redirect != .manual && headers.first("location") != nil
    }

    /// Runs `next` once the body has ended (complete or failed), unless this job ended meanwhile. A body streamed
    /// to this job alone is let go: nobody will read it, and its transfer would otherwise wait for a reader.
    private func afterBody(_ body: BodySpool, _ next: @escaping () -> Void) {
        guard body.state == .receiving else { return next() }
        body.discardUnread()
        body.whenGrows { [weak self] in
            guard let self, !finished else { return }
            afterBody(body, next)
        }
    }

    /// Follows a redirect the way browsers and curl do (RFC 9110 §15.4); true when a new hop started (or the
    /// request failed on it).
    func followRedirect(status: Int, headers: HTTPFields, leaving: Bool = false) -> Bool {
        guard redirectsToFollow(status, headers), let location = headers.first("location") else { return false }
        if leaving { leaveTransfer() }  // its body is not served: the transfer finishes (or stops) without this job
        if spec.redirect == .error {
            finish(.failure(.redirect("the origin redirected (\(status) to \(location.truncatedForMessages)) and \"redirect\" is \"error\"")))
            return true
        }
        guard redirects < spec.maxRedirects else {
            finish(.failure(.redirect("more than \(spec.maxRedirects) redirects (max_redirects)")))
            return true
        }
        guard let next = CacheKeyURL.resolve(location, against: url), FetchSpec.urlProblem(next) == nil else {
            finish(.failure(.redirect("the origin redirected to \(location.truncatedForMessages), which is not an http(s) URL Ferry fetches")))
            return true
        }
        redirects += 1
        RedirectRules.apply(status: status, from: url, to: next, spec: &spec)
        partitionOfHop = nil
        fleetWaited = false
        url = next
        hop()
        return true
    }

    // MARK: Answers (serving: FetchJob+Answers.swift)

    func reply(status: Int, headers: HTTPFields, body: FetchBody, cache: CacheStatus, age: Int64, timing: OriginTiming?) {
        let now = engine.now()
        finish(.success(FetchOutcome(status: status, headers: headers, body: spec.method == "HEAD" ? .empty : body, url: url,
                                     redirects: redirects, cache: cache, ageSeconds: age, totalMs: now - startedMs,
                                     origin: timing, servedAtSeconds: now / 1000)))
    }

    func finish(_ outcome: Result<FetchOutcome, FetchFailure>) {
        guard !finished else { return }
        finished = true
        let done = onDone
        onDone = nil
        // Progress goes on while the body streams from the transfer (until it ends or the job is cancelled).
        if case .success(let o) = outcome, case .spool = o.body {} else { onProgress = nil }
        done?(outcome)
    }

    /// Cancel, deadline or a closed connection — also after the answer, while its body still streams from the
    /// transfer: leave the transfer (the last waiter to leave stops it); nothing more is answered.
    public func cancel() {
        finished = true
        onDone = nil
        onProgress = nil
        leaveTransfer()
    }
}
