import FerryFetch
import FerryProtocol

/// `fetch`: an HTTP request made by the daemon on the client's behalf, through the shared HTTP cache
/// (`FetchJob` does the work; this checks the arguments and writes the typed outcome as the reply).
final class FetchOperation: OperationHandler {
    let descriptor = OperationCatalog.fetch
    private let engine: FetchEngine?

    /// `engine` nil: the daemon has no fetch engine; every fetch answers `unavailable`.
    init(engine: FetchEngine?) { self.engine = engine }

    func start(_ request: RequestContext) {
        guard let engine else {
            return request.fail(.unavailable, "fetch is not available in this daemon")
        }
        let spec: FetchSpec
        switch FetchArguments.parse(request.args, body: request.body, maxBytesLimit: engine.config.maxBytesLimit) {
        case .failure(let failure): return request.fail(failure.wireError)
        case .success(var s):
            s.owner = request.clientID  // its share of the transfer slots is this connection's
            spec = s
        }
        let job = FetchJob(engine: engine, spec: spec) { result in
            switch result {
            case .success(let outcome): request.succeed(FetchOperation.result(outcome), body: outcome.body)
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
