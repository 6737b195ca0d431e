import FerryLoop

/// `OriginTransport` through libcurl: one `Transfer` (an easy handle) per exchange on the daemon's `CurlMulti`, which
/// shares its connection pool (keep-alive, HTTP/2) and its per-host and total limits among every client.
///
/// ```swift
/// let transport = try CurlTransport(loop: loop, config: .init())
/// let engine = FetchEngine(transport: transport, responses: ResponseStore(storage: storage))
/// ```
public final class CurlTransport: OriginTransport {
    public struct Config: Sendable {
        /// An extra CA certificate file trusted next to the system store.
        public var caFile: String?
        public var maxPerHost = 6
        public var maxTotal = 64
        /// How long a connection to an origin may take to be made.
        public var connectTimeoutMs = 30_000
        /// The limit of an exchange whose request sets none (`timeout_ms`): without it, an origin trickling a few
        /// bytes a second would hold a slot for ever.
        public var defaultTimeoutMs = 300_000
        public init() {}
    }

    private let config: Config
    private let multi: CurlMulti

    public init(loop: EventLoop, config: Config) throws(FetchFailure) {
        self.config = config
        multi = try CurlMulti(loop: loop, maxPerHost: config.maxPerHost, maxTotal: config.maxTotal)
    }

    public func start(_ request: OriginRequest, body: BodySpool, events: OriginEvents) throws(FetchFailure) -> OriginExchange {
        var request = request
        request.timeoutMs = request.timeoutMs ?? config.defaultTimeoutMs
        let transfer = try Transfer(request, body: body, events: events, caFile: config.caFile,
                                    connectTimeoutMs: config.connectTimeoutMs)
        transfer.reportProgress(events.progress)
        let exchange = Exchange(transfer: transfer, multi: multi)
        multi.add(transfer)
        return exchange
    }

    public var activeTransfers: Int { multi.activeTransfers }
    public var bodyBytesInFlight: Int { multi.bodyBytes }

    public func close() { multi.close() }

    private final class Exchange: OriginExchange {
        let transfer: Transfer
        unowned let multi: CurlMulti

        init(transfer: Transfer, multi: CurlMulti) {
            self.transfer = transfer
            self.multi = multi
        }

        func cancel() { multi.remove(transfer) }
    }
}
