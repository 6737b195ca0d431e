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
        let pieceBytes = request.pieceBytes
        // The common reply — a body in memory that fits one frame, as bytes — is written straight into the output,
        // without the result's tree (`writeResult(_:to:)`; a quarter of a fetch hit went to building and walking it).
        if case .bytes(let bytes) = outcome.body, bytes.count <= pieceBytes, !request.wantsBodyDescriptor {
            return request.succeed(writing: { FetchOperation.writeResult(outcome, to: &$0) }, body: bytes)
        }
        let result = FetchOperation.result(outcome)
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

    /// `result(o)` written as JSON, as `JSONWriter` writes it, without building it first.
    static func writeResult(_ o: FetchOutcome, to out: inout [UInt8]) {
        JSONWriter.appendASCII(#"{"status":"#, to: &out)
        JSONWriter.writeInt(Int64(o.status), to: &out)
        JSONWriter.appendASCII(#","headers":["#, to: &out)
        for (k, pair) in o.headers.pairs.enumerated() {
            JSONWriter.appendASCII(k == 0 ? "[" : ",[", to: &out)
            JSONWriter.writeString(pair.0, to: &out)
            out.append(UInt8(ascii: ","))
            JSONWriter.writeString(pair.1, to: &out)
            out.append(UInt8(ascii: "]"))
        }
        JSONWriter.appendASCII(#"],"url":"#, to: &out)
        JSONWriter.writeString(o.url, to: &out)
        JSONWriter.appendASCII(#","redirects":"#, to: &out)
        JSONWriter.writeInt(Int64(o.redirects), to: &out)
        JSONWriter.appendASCII(#","cache":{"status":"#, to: &out)
        JSONWriter.writeString(o.cache.rawValue, to: &out)
        JSONWriter.appendASCII(#","age_s":"#, to: &out)
        JSONWriter.writeInt(o.ageSeconds, to: &out)
        JSONWriter.appendASCII(#"},"timing":{"total_ms":"#, to: &out)
        JSONWriter.writeInt(o.totalMs, to: &out)
        if let timing = o.origin {
            for (name, ms): (StaticString, Double) in [(#","dns_ms":"#, timing.dnsMs), (#","connect_ms":"#, timing.connectMs),
                                                        (#","tls_ms":"#, timing.tlsMs), (#","first_byte_ms":"#, timing.firstByteMs),
                                                        (#","transfer_ms":"#, timing.totalMs)] {
                JSONWriter.appendASCII(name, to: &out)
                JSONWriter.writeDouble(ms, to: &out)
            }
        }
        JSONWriter.appendASCII("}}", to: &out)
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
