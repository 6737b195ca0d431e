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
    private unowned let engine: FetchEngine
    private var spec: FetchSpec
    private var url: String
    private var redirects = 0
    private var group: TransferGroup?
    private var waiter: TransferGroup.Waiter?
    private var finished = false
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

    private var cacheRequest: CacheRequest {
        CacheRequest(method: spec.method, url: url, headers: HTTPFields(spec.headers), mode: spec.cacheMode)
    }

    /// One URL of the chain: the cache first, where the request allows it.
    private func hop() {
        let creq = cacheRequest
        guard creq.mode.consultsCache, creq.lookupKey != nil else { return network(creq, stored: nil, validating: nil) }
        engine.responses.lookup(creq) { [self] found in
            guard !finished else { return }
            decide(creq, found)
        }
    }

    private func decide(_ creq: CacheRequest, _ found: ResponseStore.Found?) {
        let now = engine.now() / 1000
        guard let found else {
            if creq.requiresCachedResponse { return gatewayTimeout() }
            return network(creq, stored: nil, validating: nil)
        }
        switch evaluate(request: creq, stored: found.response, now: now) {
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
    private func network(_ creq: CacheRequest, stored: ResponseStore.Found?, validating conditional: HTTPFields?, alone: Bool = false) {
        var headers = HTTPFields(spec.headers)
        if let conditional {
            // Our validators replace the client's; the client's own condition is answered afterwards.
            for name in FetchEngine.clientConditions { headers.removeAll(name) }
            headers = headers.appending(contentsOf: conditional)
        }
        let outgoing = OriginRequest(url: url, method: spec.method, headers: headers.pairs, body: spec.body,
                                     timeoutMs: spec.timeoutMs, maxBytes: spec.maxBytes, owner: spec.owner)
        let clock = engine.now
        let waiter = TransferGroup.Waiter(wantsProgress: spec.progress, accepts: { response in
            // Someone else's response is ours only if the cache could have stored it for our request and would now
            // serve it to us without asking the origin (RFC 9111 §4: collapsed requests get reusable responses).
            let headers = HTTPFields(response.headers)
            // A 304 answers every waiter of a validation alike: they sent the same validators for the same entry.
            if response.status == 304 && conditional != nil { return true }
            guard storageVerdict(request: creq, status: response.status, responseHeaders: headers).isStorable else { return false }
            let stored = StoredResponse(storing: response.status, headers: headers, for: creq, requestTime: response.requestTime,
                                        responseTime: response.responseTime, bodySize: response.body.count)
            if case .fresh = evaluate(request: creq, stored: stored, now: clock() / 1000) { return true }
            return false
        }) { [self] outcome in
            group = nil
            guard !finished else { return }
            switch outcome {
            case .own(let result): received(result, creq: creq, stored: stored, validating: conditional != nil, shared: false)
            case .shared(let response): received(.success(response), creq: creq, stored: stored, validating: conditional != nil, shared: true)
            case .retryAlone: network(creq, stored: stored, validating: conditional, alone: true)
            }
        }
        waiter.progress = { [weak self] received, total in self?.onProgress?(received, total) }
        self.waiter = waiter
        group = engine.join(waiter, request: outgoing, coalescingKey: alone ? nil : coalescingKey(creq, conditional))
    }

    /// Identical requests share a transfer: same method, URL and headers (validators included), no body, and a
    /// mode that reads the cache. Anything else gets a transfer of its own.
    private func coalescingKey(_ creq: CacheRequest, _ conditional: HTTPFields?) -> String? {
        guard creq.method == "GET" || creq.method == "HEAD", spec.body.isEmpty,
              creq.mode.consultsCache, let key = creq.lookupKey else { return nil }
        // Limits are part of the identity: a waiter must not inherit another request's timeout or body limit.
        var parts = [creq.method, key.url, "timeout:\(spec.timeoutMs ?? 0)", "max_bytes:\(spec.maxBytes)"]
        for (name, value) in spec.headers.sorted(by: { ($0.0.lowercased(), $0.1) < ($1.0.lowercased(), $1.1) }) {
            parts.append(name.lowercased() + ":" + value)
        }
        for (name, value) in conditional?.pairs ?? [] { parts.append("cond:" + name.lowercased() + ":" + value) }
        return parts.joined(separator: "\n")
    }

    private func received(_ result: Result<OriginResponse, FetchFailure>, creq: CacheRequest, stored: ResponseStore.Found?,
                          validating: Bool, shared: Bool) {
        let now = engine.now() / 1000
        switch result {
        case .failure(let failure):
            if let stored, staleIfErrorAllowed(stored: stored.response, request: creq, now: now, disconnected: true) {
                engine.stats.stale += 1
                return serveStored(stored, age: currentAge(stored: stored.response, now: now), cacheStatus: .stale)
            }
            finish(.failure(failure))
        case .success(let response):
            if response.status >= 500, let stored, staleIfErrorAllowed(stored: stored.response, request: creq, now: now) {
                engine.stats.stale += 1
                return serveStored(stored, age: currentAge(stored: stored.response, now: now), cacheStatus: .stale)
            }
            // Only the transfer's own waiter feeds the cache (a shared response is stored once); a shared 304
            // refreshes each waiter's stored response, which is how it gets served.
            let refreshed = shared && response.status != 304
                ? nil : engine.absorb(response, for: creq, stored: stored, validating: validating)
            if let refreshed {
                engine.stats.revalidated += 1
                return serveStored(refreshed, age: currentAge(stored: refreshed.response, now: now), cacheStatus: .revalidated)
            }
            if followRedirect(status: response.status, headers: HTTPFields(response.headers)) { return }
            let status: CacheStatus = shared ? .coalesced : (creq.mode.consultsCache ? .miss : .bypass)
            if status == .miss { engine.stats.misses += 1 }
            if status == .bypass { engine.stats.bypass += 1 }
            serveNetwork(response, cacheStatus: status)
        }
    }

    /// Follows a redirect the way browsers and curl do (RFC 9110 §15.4); true when a new hop started (or the
    /// request failed on it).
    private func followRedirect(status: Int, headers: HTTPFields) -> Bool {
        guard [301, 302, 303, 307, 308].contains(status), spec.redirect != .manual,
              let location = headers.first("location") else { return false }
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
        url = next
        hop()
        return true
    }

    // MARK: Answers

    private func serveStored(_ found: ResponseStore.Found, age: Int64, cacheStatus: CacheStatus) {
        // A stored redirect is followed like one from the origin: the next hop goes through the cache too.
        if followRedirect(status: found.response.status, headers: found.response.headers) { return }
        let creq = cacheRequest
        if clientConditionMatches(request: creq, stored: found.response) {
            return reply(status: 304, headers: notModifiedHeaders(stored: found.response, age: age), body: [][...],
                         cache: cacheStatus, age: age, timing: nil)
        }
        // The request's limit holds for stored bodies too: it was stored for someone who allowed more.
        if spec.method != "HEAD" && found.body.count > spec.maxBytes { return finish(.failure(.tooLarge(limit: spec.maxBytes))) }
        engine.stats.bytesFromCache += UInt64(found.body.count)
        reply(status: found.response.status, headers: headersForServing(stored: found.response, age: age),
              body: found.body, cache: cacheStatus, age: age, timing: nil)
    }

    private func serveNetwork(_ response: OriginResponse, cacheStatus: CacheStatus) {
        reply(status: response.status, headers: FetchEngine.decoded(HTTPFields(response.headers)), body: response.body[...],
              cache: cacheStatus, age: 0, timing: response.timing)
    }

    /// RFC 9111 §5.2.1.7: nothing usable stored and the request may not go to the network.
    private func gatewayTimeout() {
        engine.stats.misses += 1
        reply(status: 504, headers: HTTPFields([("Content-Length", "0")]), body: [][...], cache: .miss, age: 0, timing: nil)
    }

    private func reply(status: Int, headers: HTTPFields, body: ArraySlice<UInt8>, cache: CacheStatus, age: Int64, timing: OriginTiming?) {
        let now = engine.now()
        finish(.success(FetchOutcome(status: status, headers: headers, body: spec.method == "HEAD" ? [][...] : body, url: url,
                                     redirects: redirects, cache: cache, ageSeconds: age, totalMs: now - startedMs,
                                     origin: timing, freshForSeconds: FetchOutcome.freshFor(status: status, headers: headers, now: now / 1000))))
    }

    private func finish(_ outcome: Result<FetchOutcome, FetchFailure>) {
        guard !finished else { return }
        finished = true
        let done = onDone
        onDone = nil
        onProgress = nil
        done?(outcome)
    }

    /// Cancel, deadline or a closed connection: leave the transfer (the last waiter to leave stops it); nothing is
    /// answered.
    public func cancel() {
        finished = true
        onDone = nil
        onProgress = nil
        if let group, let waiter { group.remove(waiter) }
        group = nil
    }
}
