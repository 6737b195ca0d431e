import FerryFetch
import FerryProtocol
import FerryStore
import FerryLoop

/// `fetch`: an HTTP request made by the daemon on the client's behalf, through the shared HTTP cache
/// (`FetchJob` does the work; this checks the arguments and writes the typed outcome as the reply). A body still
/// arriving, or larger than one chunk, streams: a `head` event with the result first, then `chunk`s as the body
/// arrives (or is read from the store's file), then the final frame.
final class FetchOperation: OperationHandler {
    let descriptor = OperationCatalog.fetch
    private let engine: FetchEngine?
    private let store: CacheStore?

    /// `engine` nil: the daemon has no fetch engine; every fetch answers `unavailable`. `store`: where stored
    /// bodies are read from (a damaged one is reported to it).
    init(engine: FetchEngine?, store: CacheStore?) {
        self.engine = engine
        self.store = store
    }

    func start(_ request: RequestContext) {
        guard let engine else {
            return request.fail(.unavailable, "fetch is not available in this daemon")
        }
        if let problem = request.bodyDescriptorArgumentProblem { return request.fail(.invalidArgument, problem) }
        let spec: FetchSpec
        switch FetchArguments.parse(request.args, body: request.body, maxBytesLimit: engine.config.maxBytesLimit) {
        case .failure(let failure): return request.fail(failure.wireError)
        case .success(var s):
            s.owner = request.clientID  // its share of the transfer slots is this connection's
            s.uid = request.clientUID   // and its credentials' partition, its user's
            spec = s
        }
        let startedMs = WallClock.nowMs()
        let job = FetchJob(engine: engine, spec: spec) { [store] result in
            switch result {
            case .success(let outcome): FetchOperation.answer(request, outcome, store: store, startedMs: startedMs)
            case .failure(let failure): request.fail(failure.wireError)
            }
        }
        if spec.progress {
            job.onProgress = { received, total in
                var data: JSONObject = ["received": .int(Int64(received))]
                if let total { data["total"] = .int(Int64(total)) }
                request.event(.progress, data: data)
            }
        }
        request.onCancel = { job.cancel() }
        job.start()
    }

    private static func answer(_ request: RequestContext, _ outcome: FetchOutcome, store: CacheStore?, startedMs: Int64) {
        let result = FetchOperation.result(outcome)
        let pieceBytes = request.pieceBytes
        if answerWithDescriptor(request, result, outcome.body, store: store, fromStore: outcome.cache.servedFromStore) { return }
        switch outcome.body {
        case .bytes(let bytes):
            if bytes.count > pieceBytes { request.event(.head, data: result) }
            request.succeed(result, body: bytes)
        case .stored(let blob):
            guard let store else { return request.fail(.internal, "a stored body without its store") }
            if blob.size > pieceBytes { request.event(.head, data: result) }
            request.succeed(result, streaming: .blob(blob, store: store))
        case .storedRange(let blob, let range):
            guard let store else { return request.fail(.internal, "a stored body without its store") }
            if range.count > pieceBytes { request.event(.head, data: result) }
            request.succeed(result, streaming: .blobRange(blob, range, store: store))
        case .spool(let spool):
            request.event(.head, data: result)
            // The client may leave while the body arrives: then this request no longer holds the transfer.
            let leave = request.onCancel
            request.succeed(result, streaming: .spool(spool), onDrop: leave) { result in
                guard let timing = spool.timing else { return }
                var t = result["timing"]?.objectValue ?? JSONObject()
                t["total_ms"] = .int(WallClock.nowMs() - startedMs)
                t["transfer_ms"] = .double(timing.totalMs)
                result["timing"] = .object(t)
            }
        }
    }

    /// A complete body (not one still arriving) as a descriptor, when the client asked and it is large enough.
    /// `fromStore`: a body in memory is the stored record's (asked for again, so its sealed copy is kept), not one
    /// just downloaded.
    private static func answerWithDescriptor(_ request: RequestContext, _ result: JSONObject, _ body: FetchBody,
                                             store: CacheStore?, fromStore: Bool) -> Bool {
        switch (body, store) {
        case (.bytes(let bytes), _): return request.succeedWithDescriptor(result, body: .bytes(bytes), keepCopy: fromStore)
        case (.stored(let blob), let store?): return request.succeedWithDescriptor(result, body: .blob(blob, store: store))
        case (.storedRange(let blob, let range), let store?):
            return request.succeedWithDescriptor(result, body: .blobRange(blob, range, store: store))
        default: return false
        }
    }

    /// The reply's result object (PROTOCOL.md, `fetch`).
    static func result(_ o: FetchOutcome) -> JSONObject {
        var result: JSONObject = [
            "status": .int(Int64(o.status)),
            "headers": .array(o.headers.pairs.map { .array([.string($0.0), .string($0.1)]) }),
            "url": .string(o.url),
            "redirects": .int(Int64(o.redirects)),
            "cache": .object(["status": .string(o.cache.rawValue), "age_s": .int(o.ageSeconds)]),
        ]
        // total_ms: this request in the daemon, redirects included; the rest: the last origin exchange, if any.
        var t: JSONObject = ["total_ms": .int(o.totalMs)]
        if let timing = o.origin {
            t["dns_ms"] = .double(timing.dnsMs)
            t["connect_ms"] = .double(timing.connectMs)
            t["tls_ms"] = .double(timing.tlsMs)
            t["first_byte_ms"] = .double(timing.firstByteMs)
            t["transfer_ms"] = .double(timing.totalMs)
        }
        result["timing"] = .object(t)
        return result
    }
}
