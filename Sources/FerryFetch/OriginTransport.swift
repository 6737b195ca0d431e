/// What the fetch engine asks of the network: one HTTP exchange per request, never following redirects (the engine
/// follows them itself, so that every hop goes through the cache). `CurlTransport` is the real one; tests drive the
/// engine with a fake origin through the same protocol. Loop thread only.
///
/// ```swift
/// let exchange = try transport.start(request, progress: { received, total in … }) { result in … }
/// exchange.cancel()   // the last waiter left: `done` is not called
/// ```
public protocol OriginTransport: AnyObject {
    /// Starts an exchange. `progress` gets (bytes received, total if known) as the body arrives; `done` runs once
    /// when it ends (possibly before `start` returns). Throws when the exchange cannot even start.
    func start(_ request: OriginRequest, progress: @escaping (Int, Int?) -> Void,
               done: @escaping (Result<OriginResponse, FetchFailure>) -> Void) throws(FetchFailure) -> OriginExchange
    /// Exchanges running now.
    var activeTransfers: Int { get }
    /// Body bytes received by the exchanges running now (held until each ends), for `stats`.
    var bodyBytesInFlight: Int { get }
    /// Exchanges waiting for a transfer slot (`FairTransport`).
    var waitingTransfers: Int { get }
    /// Exchanges paused because bodies in flight passed the buffer limit (`CurlMulti`).
    var pausedTransfers: Int { get }
    /// Ends every exchange (`done` with a failure) and frees the transport (the daemon stops).
    func close()
}

extension OriginTransport {
    public var bodyBytesInFlight: Int { 0 }
    public var waitingTransfers: Int { 0 }
    public var pausedTransfers: Int { 0 }
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

    public init(url: String, method: String, headers: [(String, String)], body: [UInt8], timeoutMs: Int?, maxBytes: Int,
                owner: UInt64 = 0) {
        self.owner = owner
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeoutMs = timeoutMs
        self.maxBytes = maxBytes
    }
}

/// What came back: the final (non-1xx) response.
public struct OriginResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// When the request was sent and the response headers arrived (Unix seconds, for RFC 9111 age).
    public var requestTime: Int64
    public var responseTime: Int64
    public var timing: OriginTiming

    public init(status: Int, headers: [(String, String)], body: [UInt8], requestTime: Int64, responseTime: Int64,
                timing: OriginTiming = OriginTiming()) {
        self.status = status
        self.headers = headers
        self.body = body
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
