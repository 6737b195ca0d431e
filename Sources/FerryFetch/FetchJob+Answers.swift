import FerryHTTPCache
import FerryProtocol

/// How a job answers: from the store (a hit, a revalidated or stale response, a range of it), from the network
/// (the body in memory when it came whole, else the spool to follow), or 504 when it may not go to the network.
///
/// ```swift
/// serveStored(found, age: 30, cacheStatus: .hit)   // → reply(status:headers:body:…) → the job's `done`
/// ```
extension FetchJob {
    func serveStored(_ found: ResponseStore.Found, age: Int64, cacheStatus: CacheStatus) {
        // A stored redirect is followed like one from the origin: the next hop goes through the cache too.
        if followRedirect(status: found.response.status, headers: found.response.headers) { return }
        let creq = cacheRequest
        if clientConditionMatches(request: creq, stored: found.response) {
            var seen = found.response
            seen.headers = TargetedCacheControl.clientView(seen.headers)  // the client's fields, not the policy's
            return reply(status: 304, headers: notModifiedHeaders(stored: seen, age: age), body: .empty,
                         cache: cacheStatus, age: age, timing: nil)
        }
        let size = found.body.knownSize ?? 0
        var status = found.response.status, body = found.body
        var headers = TargetedCacheControl.clientView(headersForServing(stored: found.response, age: age))
        // A byte range of a complete stored response is served from the store (RFC 9110 §14).
        if spec.method == "GET" {
            switch rangeAnswer(request: creq.headers, stored: found.response, size: size) {
            case .whole: break
            case .part(let range):
                (status, headers, body) = (206, partialContentHeaders(headers, range: range, size: size), found.body.part(range))
            case .unsatisfiable:
                return reply(status: 416, headers: unsatisfiableRangeHeaders(size: size), body: .empty, cache: cacheStatus,
                             age: age, timing: nil)
            }
        }
        // The request's limit holds for stored bodies too: it was stored for someone who allowed more.
        let served = body.knownSize ?? 0
        if spec.method != "HEAD" && served > spec.maxBytes { return finish(.failure(.tooLarge(limit: spec.maxBytes))) }
        engine.stats.bytesFromCache += UInt64(served)
        reply(status: status, headers: headers, body: body, cache: cacheStatus, age: age, timing: nil)
    }

    /// The response from the origin: its body in memory when it came whole already, else the spool to follow.
    func serveNetwork(_ arrival: TransferGroup.Arrival, cacheStatus: CacheStatus) {
        let body: FetchBody
        if spec.method == "HEAD" {
            body = .empty  // no body: the transfer ends at once, and its end is what the cache learns from
        } else if let bytes = arrival.body.completeInMemory {
            leaveTransfer()
            body = .bytes(bytes)
        } else {
            body = .spool(arrival.body)  // the job stays in the group: cancelling it leaves the transfer
        }
        reply(status: arrival.head.status, headers: FetchEngine.served(arrival.head), body: body,
              cache: cacheStatus, age: 0, timing: arrival.head.timing)
    }

    /// RFC 9111 §5.2.1.7: nothing usable stored and the request may not go to the network.
    func gatewayTimeout() {
        engine.stats.misses += 1
        reply(status: 504, headers: HTTPFields([("Content-Length", "0")]), body: .empty, cache: .miss, age: 0, timing: nil)
    }
}
