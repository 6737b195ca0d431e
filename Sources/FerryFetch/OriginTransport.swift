/// What the fetch engine asks of the network: one HTTP exchange per request, never following redirects (the engine
/// follows them itself, so that every hop goes through the cache). The response body goes into a `BodySpool` as it
/// arrives, where every waiter reads it. `CurlTransport` is the real one; tests drive the engine with a fake origin
/// through the same protocol. Loop thread only.
///
/// ```swift
/// let exchange = try transport.start(request, body: spool, events: OriginEvents(
///     head: { head in … },                 // the final response's status and headers: its body follows in `spool`
///     progress: { received, total in … },
///     done: { result in … }))              // .success(timing): `spool` holds the whole body
/// exchange.cancel()   // the last waiter left: `done` is not called
/// ```
public protocol OriginTransport: AnyObject {
    /// Starts an exchange. Throws when it cannot even start.
    func start(_ request: OriginRequest, body: BodySpool, events: OriginEvents) throws(FetchFailure) -> OriginExchange
    /// Exchanges running now.
    var activeTransfers: Int { get }
    /// Body bytes the exchanges running now hold in memory, for `stats`.
    var bodyBytesInFlight: Int { get }
    /// Exchanges waiting for a transfer slot (`FairTransport`).
    var waitingTransfers: Int { get }
    /// Ends every exchange (`done` with a failure) and frees the transport (the daemon stops).
    func close()
}

extension OriginTransport {
    public var bodyBytesInFlight: Int { 0 }
    public var waitingTransfers: Int { 0 }
}

/// What an exchange tells its owner, always from the loop and never from inside libcurl's callbacks (so an owner
/// may cancel any exchange from them): `head` at most once, when the final (non-1xx) response's head is in, before
/// `done(.success)`; `progress` as the body arrives; `done` once at the end (possibly inside `start`). A failure may
/// come before or after the head; after it, the bytes in the spool are void.
public struct OriginEvents {
    public var head: (OriginHead) -> Void
    public var progress: (Int, Int?) -> Void
    public var done: (Result<OriginTiming, FetchFailure>) -> Void

    public init(head: @escaping (OriginHead) -> Void, progress: @escaping (Int, Int?) -> Void = { _, _ in },
                done: @escaping (Result<OriginTiming, FetchFailure>) -> Void) {
        self.head = head
        self.progress = progress
        self.done = done
    }
}

/// One exchange in flight.
public protocol OriginExchange: AnyObject {
    /// Stops it; its `done` is not called.
    func cancel()
}

/// The outgoing request, as the engine built it.
public struct OriginRequest: Sendable {
    public var url: String
    public var method: String
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var timeoutMs: Int?
    public var maxBytes: Int
    /// Who asks (a client connection; 0: the daemon itself): transfer slots are shared fairly among owners.
    public var owner: UInt64
    /// Whether the transport may send it again on its own when a reused connection died under it (libcurl's
    /// retry). True for safe methods; a POST, PUT, PATCH or DELETE only when the client said so (RFC 9110 §9.2.2).
    public var mayReplay: Bool
    /// Whether the transport asks for the content codings it can decode and hands the body over decoded. False
    /// when the client sent its own `Accept-Encoding` (it gets exactly what the origin sent), or when the origin
    /// used a coding the transport does not know: then the bytes and `Content-Encoding` pass through untouched.
    public var decodes = true
    /// Whose certificates the transport trusts for this request (`TLSTrust`).
    public var tls = TLSTrust.system

    public init(url: String, method: String, headers: [(String, String)], body: [UInt8], timeoutMs: Int?, maxBytes: Int,
                owner: UInt64 = 0, mayReplay: Bool? = nil) {
        self.owner = owner
        self.mayReplay = mayReplay ?? OriginRequest.isIdempotent(method)
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeoutMs = timeoutMs
        self.maxBytes = maxBytes
    }
}

extension OriginRequest {
    /// GET, HEAD, OPTIONS, TRACE, PUT and DELETE are idempotent (RFC 9110 §9.2.2), but a PUT or DELETE replayed
    /// behind the client's back can still undo what another client did in between: only the safe ones replay.
    static func isIdempotent(_ method: String) -> Bool { ["GET", "HEAD", "OPTIONS", "TRACE"].contains(method) }
}

/// The final (non-1xx) response's head; its body arrives in the exchange's `BodySpool`.
public struct OriginHead: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    /// When the request was sent and the response headers arrived (Unix seconds, for RFC 9111 age).
    public var requestTime: Int64
    public var responseTime: Int64
    /// The exchange's times so far (`done` has the final ones).
    public var timing: OriginTiming
    /// The body is handed over decoded (the transport asked for a coding and undid it): its `Content-Encoding`
    /// and `Content-Length` describe bytes nobody gets.
    public var decoded = false

    public init(status: Int, headers: [(String, String)], requestTime: Int64, responseTime: Int64,
                timing: OriginTiming = OriginTiming()) {
        self.status = status
        self.headers = headers
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.timing = timing
    }
}

/// Where an exchange's time went, in milliseconds from its start.
public struct OriginTiming: Sendable, Equatable {
    public var dnsMs = 0.0, connectMs = 0.0, tlsMs = 0.0, firstByteMs = 0.0, totalMs = 0.0

    public init(dnsMs: Double = 0, connectMs: Double = 0, tlsMs: Double = 0, firstByteMs: Double = 0, totalMs: Double = 0) {
        self.dnsMs = dnsMs
        self.connectMs = connectMs
        self.tlsMs = tlsMs
        self.firstByteMs = firstByteMs
        self.totalMs = totalMs
    }
}
