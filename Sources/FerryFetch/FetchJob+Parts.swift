import FerryHTTPCache

/// A job's stored parts: a client's range served from the URL's stored part, a plain GET resumed from a part that
/// starts at 0, and an origin's 206 planned to be kept as a part (`PartKeeper` keeps it).
///
/// ```swift
/// resumeOrFetch(creq)   // nothing stored: a part may serve the range, or start the body; else the origin
/// ```
extension FetchJob {
    /// Nothing stored: the URL's stored part (`PartKeeper`) may serve the client's range, and a part from byte 0
    /// (an interrupted download, or an earlier range) is resumed by a plain GET — its bytes copied into the new
    /// body, the origin asked only for the rest (`Range` + `If-Range`); else the whole is fetched. Only a plain
    /// GET resumes (a client's own range or condition asks for something else).
    func resumeOrFetch(_ creq: CacheRequest) {
        let ranged = creq.headers.contains("range")
        guard creq.method == "GET", creq.mode.storesResponses, spec.body.isEmpty,
              !["if-match", "if-unmodified-since"].contains(where: creq.headers.contains),
              ranged || !creq.headers.contains("if-range") else {
            return network(creq, stored: nil, validating: nil)
        }
        engine.responses.partial(for: creq) { [self] found in
            guard !finished else { return }
            let part = found.flatMap { f in f.body.knownSize.flatMap { StoredPart(record: f.response, bodySize: $0) } }
            guard let found, let part else { return network(creq, stored: nil, validating: nil) }
            if ranged { return serve(part, found, creq) }
            guard part.range.lowerBound == 0, let validator = part.validator else { return network(creq, stored: nil, validating: nil) }
            let spool = BodySpool(config: engine.config.spool)
            let copied: FetchFailure?
            switch found.body {
            case .stored(let blob): copied = spool.prefill(from: blob.filePath, count: blob.size)
            case .bytes(let bytes): copied = spool.prefill(bytes: bytes)
            default: copied = .internalError("no partial body")
            }
            guard copied == nil, spool.prefilled > 0 else { return network(creq, stored: nil, validating: nil) }
            engine.responses.dropPartial(found)  // the new body holds its bytes now (and is kept if it fails too)
            engine.stats.resumed += 1
            let resume = HTTPFields([("Range", "bytes=\(spool.prefilled)-"), ("If-Range", validator), ("Accept-Encoding", "identity")])
            network(creq, stored: nil, validating: nil, resume: (resume, spool, part.whole))
        }
    }

    /// A client's own range from the URL's stored part, when the part holds it, is fresh and is the request's
    /// variant (an unsatisfiable range is answered too: the part knows the whole's length); else from the origin.
    func serve(_ part: StoredPart, _ found: ResponseStore.Found, _ creq: CacheRequest) {
        let now = engine.now() / 1000
        guard variantMatches(stored: part.whole, request: creq),
              case .fresh(let age) = evaluate(request: creq, stored: part.whole, now: now) else {
            return network(creq, stored: nil, validating: nil)
        }
        switch rangeAnswer(request: creq.headers, stored: part.whole, size: part.total) {
        case .part(let range) where part.range.lowerBound <= range.lowerBound && range.upperBound <= part.range.upperBound:
            engine.stats.hits += 1
            let served = TargetedCacheControl.clientView(headersForServing(stored: part.whole, age: age))
            engine.stats.bytesFromCache += UInt64(range.count)
            let inPart = (range.lowerBound - part.range.lowerBound)..<(range.upperBound - part.range.lowerBound)
            reply(status: 206, headers: partialContentHeaders(served, range: range, size: part.total), body: found.body.part(inPart),
                  cache: .hit, age: age, timing: nil)
        case .unsatisfiable:
            engine.stats.hits += 1
            reply(status: 416, headers: unsatisfiableRangeHeaders(size: part.total), body: .empty, cache: .hit, age: age, timing: nil)
        default:
            network(creq, stored: nil, validating: nil)
        }
    }

    /// An origin's 206 (one range, with the whole's length) for a client's range is kept as a part of the body
    /// when the whole would be storable: later ranges inside it are served from the store, parts that meet under
    /// one validator are joined, and a plain GET resumes from a part that starts at 0.
    func partPlan(for head: OriginHead, _ creq: CacheRequest) -> PartPlan? {
        let fields = HTTPFields(head.headers)
        guard head.status == 206, creq.headers.contains("range"), !fields.contains("content-encoding"),
              let range = fields.first("content-range").flatMap(contentRange), let total = range.total else { return nil }
        let whole = engine.config.targets.policyView(fields.removingAll("content-range").replacingAll("content-length", with: String(total)))
        guard case .store(let key) = storageVerdict(request: creq, status: 200, responseHeaders: whole) else { return nil }
        let entry = StoredResponse(storing: 200, headers: whole, for: creq, requestTime: head.requestTime, responseTime: head.responseTime)
        return PartPlan(part: StoredPart(whole: entry, range: range.first..<(range.last + 1), total: total), key: key)
    }
}
