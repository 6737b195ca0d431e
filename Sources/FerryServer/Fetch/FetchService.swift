import FerryLoop
import FerryHTTPCache
import FerryProtocol

/// The daemon's fetch machinery, shared by every client: the libcurl multi on the loop, the HTTP cache's storage,
/// and the table of transfers in flight that identical requests join (coalescing). Loop thread only.
final class FetchService {
    struct Config {
        var caFile: String?
        var maxPerHost = 6
        var maxTotal = 64
        /// Largest `max_bytes` a request may ask for.
        var maxBytesLimit = 1 << 30
    }

    let config: Config
    let multi: CurlMulti
    let responses: ResponseStore
    let stats = FetchStats()
    private var groups: [String: TransferGroup] = [:]
    /// Storage keys with a background revalidation running (stale-while-revalidate: exactly one at a time).
    private var revalidating: Set<String> = []

    init(loop: EventLoop, responses: ResponseStore, config: Config) throws(FetchFailure) {
        self.config = config
        self.responses = responses
        multi = try CurlMulti(loop: loop, maxPerHost: config.maxPerHost, maxTotal: config.maxTotal)
    }

    func close() { multi.close() }

    /// Joins the transfer in flight for `coalescingKey` or starts one; `nil` key: a transfer of its own.
    func join(_ waiter: TransferGroup.Waiter, request: Transfer.Request, coalescingKey: String?) -> TransferGroup? {
        if let key = coalescingKey, let group = groups[key] {
            stats.coalesced += 1
            group.add(waiter)
            return group
        }
        let group = TransferGroup(key: coalescingKey, service: self)
        let transfer: Transfer
        do {
            // The transfer holds its group until it finishes (a background revalidation's group has no other owner);
            // the group drops the transfer when it finishes or its last waiter leaves, which ends the cycle.
            transfer = try Transfer(request, caFile: config.caFile) { result in group.finished(result) }
        } catch {
            waiter.receive(.own(.failure(error)))
            return nil
        }
        group.transfer = transfer
        group.add(waiter)
        if let key = coalescingKey { groups[key] = group }
        stats.originRequests += 1
        multi.add(transfer)
        return group
    }

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
        for name in ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range", "range"] {
            headers.removeAll(name)
        }
        headers = headers.appending(contentsOf: conditionalHeaders(for: found.response))
        let outgoing = Transfer.Request(url: request.url, method: "GET", headers: headers.pairs, body: [],
                                        timeoutMs: 60_000, maxBytes: spec.maxBytes)
        let storageKey = found.storageKey
        let waiter = TransferGroup.Waiter(wantsProgress: false, accepts: { _ in true }) { [weak self] outcome in
            guard let self else { return }
            revalidating.remove(storageKey)
            guard case .own(.success(let response)) = outcome else { return }
            _ = absorb(response, for: request, stored: found, validating: true)
        }
        _ = join(waiter, request: outgoing, coalescingKey: nil)
    }

    /// What a response from the origin does to the cache: a 304 for a validation refreshes the stored response
    /// (returned, to be served); a storable response is stored; a successful unsafe method invalidates. Returns
    /// the stored response to serve instead of `response` (after a 304), or nil.
    func absorb(_ response: Transfer.Response, for request: CacheRequest, stored: ResponseStore.Found?,
                validating: Bool) -> ResponseStore.Found? {
        let headers = HTTPFields(response.headers)
        if response.status == 304, validating, let stored {
            // The body we keep is decoded; the stored Content-Encoding describes that body, not a new one.
            let updated = stored.response.updating(withNotModified: headers, requestTime: response.requestTime,
                                                   responseTime: response.responseTime,
                                                   keepingStored: ["content-encoding", "content-length"])
            responses.update(updated, body: stored.body, storageKey: stored.storageKey)
            return ResponseStore.Found(response: updated, body: stored.body, storageKey: stored.storageKey)
        }
        if !isSafeMethod(request.method) {
            let urls = invalidatedURLs(requestMethod: request.method, requestURL: request.url,
                                       responseStatus: response.status, responseHeaders: headers)
            responses.invalidate(urls: urls)
        }
        if case .store(let key) = storageVerdict(request: request, status: response.status, responseHeaders: headers),
           request.method != "HEAD" {
            let entry = StoredResponse(storing: response.status, headers: Self.decoded(headers), for: request,
                                       requestTime: response.requestTime, responseTime: response.responseTime,
                                       bodySize: response.body.count)
            responses.store(entry, body: response.body, key: key)
        }
        return nil
    }

    /// libcurl hands bodies over decoded: a stored `Content-Encoding` / `Content-Length` would describe bytes we
    /// do not have, so they are dropped from what is stored (and served).
    static func decoded(_ headers: HTTPFields) -> HTTPFields {
        guard headers.contains("content-encoding") else { return headers }
        return headers.removingAll(names: ["content-encoding", "content-length"])
    }
}

/// Counters for `stats`.
final class FetchStats {
    var requests: UInt64 = 0
    var hits: UInt64 = 0
    var misses: UInt64 = 0
    var revalidated: UInt64 = 0
    var stale: UInt64 = 0
    var coalesced: UInt64 = 0
    var bypass: UInt64 = 0
    var originRequests: UInt64 = 0
    var backgroundRevalidations: UInt64 = 0
    var bytesFromCache: UInt64 = 0
    var bytesFromOrigin: UInt64 = 0

    var json: JSONObject {
        ["requests": .int(Int64(requests)), "hits": .int(Int64(hits)), "misses": .int(Int64(misses)),
         "revalidated": .int(Int64(revalidated)), "stale": .int(Int64(stale)), "coalesced": .int(Int64(coalesced)),
         "bypass": .int(Int64(bypass)), "origin_requests": .int(Int64(originRequests)),
         "background_revalidations": .int(Int64(backgroundRevalidations)),
         "bytes_from_cache": .int(Int64(bytesFromCache)), "bytes_from_origin": .int(Int64(bytesFromOrigin))]
    }
}
