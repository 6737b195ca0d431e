#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FerryProtocol

/// A connection to `ferryd`. One connection carries any number of concurrent calls, matched by id; the type is
/// `Sendable`, so share one client across tasks.
///
/// ```swift
/// let client = try await FerryClient.connect()          // finds the socket as ferryd does
/// let rtt = try await client.ping()
/// let reply = try await client.call("ping", ["delay_ms": 10], body: Array("hi".utf8), timeout: .seconds(1))
/// let stats = try await client.stats()
/// client.close()
/// ```
///
/// Cancelling the calling task cancels the call: it throws `FerryError` with code `.cancelled` at once and the
/// server is told to stop the work. Every error thrown is a `FerryError`.
public final class FerryClient: Sendable {
    private let connection: ClientConnection
    /// The protocol version agreed in `hello`.
    public let protocolVersion: Int
    /// The server's name and version, e.g. "ferryd 0.1.0".
    public let serverName: String
    /// The limits the server announced.
    public let limits: ProtocolLimits
    /// The operations the server implements.
    public let operations: [String]
    /// What the server offers beyond the version's core (`hello`'s `capabilities`).
    public let capabilities: Set<Capability>
    /// Whether large bodies come as descriptors (`Capability.bodyFD`, and `connect(bodyFiles:)` left on):
    /// `cacheGet` and `fetch` then ask for them, and read them (or hand them over, `bodyAsFile`) instead of taking
    /// the bytes through the socket.
    public var offersBodyFiles: Bool { usesBodyFiles && capabilities.contains(.bodyFD) }
    private let usesBodyFiles: Bool

    /// The socket path used when none is given: `$FERRY_SOCKET`, `$XDG_RUNTIME_DIR/ferry/ferryd.sock`, or
    /// `/tmp/ferry-$UID/ferryd.sock`, exactly as `ferryd` resolves it.
    public static var defaultSocketPath: String {
        SocketPath.resolve(environment: { getenv($0).map { String(cString: $0) } }, uid: getuid())
    }

    /// Connects and performs the `hello` handshake.
    /// - Parameters:
    ///   - path: the socket; `nil` for `defaultSocketPath`.
    ///   - clientName: a name for the daemon's logs.
    ///   - bodyFiles: take large bodies as descriptors when the daemon offers them (`offersBodyFiles`); false:
    ///     every body through the socket.
    /// Connects as `connect(path:clientName:)` does and, with `autostart`, starts `ferryd` in the background first
    /// when none answers (`FerryDaemon`; the daemon's executable is found beside this program or on PATH).
    ///
    /// ```swift
    /// let client = try await FerryClient.connect(autostart: true)
    /// ```
    public static func connect(path: String? = nil, clientName: String = "swift", autostart: Bool) async throws -> FerryClient {
        try await FerryDaemon(socket: path, clientName: clientName).connect(autostart: autostart)
    }

    public static func connect(path: String? = nil, clientName: String = "swift", bodyFiles: Bool = true) async throws -> FerryClient {
        let connection = try ClientConnection(path: path ?? defaultSocketPath)
        do {
            let hello = try await FerryClient.call(connection, "hello", helloArguments(clientName: clientName), body: [], timeout: .seconds(10))
            let limits = ProtocolLimits(json: hello.result["limits"]?.objectValue ?? JSONObject())
            connection.setLimits(limits)
            return FerryClient(connection: connection, hello: hello.result, limits: limits, bodyFiles: bodyFiles)
        } catch {
            connection.close()
            throw error
        }
    }

    private init(connection: ClientConnection, hello: JSONObject, limits: ProtocolLimits, bodyFiles: Bool) {
        self.connection = connection
        usesBodyFiles = bodyFiles
        protocolVersion = Int(hello["version"]?.intValue ?? 1)
        serverName = hello["server"]?.stringValue ?? "ferryd"
        self.limits = limits
        operations = hello["operations"]?.arrayValue?.compactMap(\.stringValue) ?? []
        capabilities = FerryClient.capabilities(ofHello: hello)
    }

    /// `hello`'s arguments: the protocol versions this client speaks, and its name for the daemon's logs.
    static func helloArguments(clientName: String) -> JSONObject {
        ["versions": .array(ProtocolLimits.versions.map { .int($0) }), "client": .string(clientName)]
    }

    /// The capabilities a `hello` result offers that this client knows.
    static func capabilities(ofHello hello: JSONObject) -> Set<Capability> {
        Set(hello["capabilities"]?.arrayValue?.compactMap { $0.stringValue.flatMap(Capability.init(rawValue:)) } ?? [])
    }

    deinit { connection.close() }

    /// Calls an operation and waits for its final reply. Events are skipped, except `chunk` events, whose bodies
    /// are joined into `FerryReply.body`.
    /// - Parameter timeout: sent as `timeout_ms`; the call also fails locally if no answer comes a second later.
    public func call(_ op: String, _ args: JSONObject = JSONObject(), body: [UInt8] = [],
                     timeout: Duration? = nil) async throws -> FerryReply {
        try await FerryClient.call(connection, op, args, body: body, timeout: timeout)
    }

    /// The same for an operation of this protocol version, by its typed name.
    ///
    /// ```swift
    /// let reply = try await client.call(.cacheGet, ["key": "token"])
    /// ```
    public func call(_ op: OperationName, _ args: JSONObject = JSONObject(), body: [UInt8] = [],
                     timeout: Duration? = nil) async throws -> FerryReply {
        try await call(op.rawValue, args, body: body, timeout: timeout)
    }

    /// The same for an operation of this protocol version, by its typed name.
    public func stream(_ op: OperationName, _ args: JSONObject = JSONObject(), body: [UInt8] = [],
                       timeout: Duration? = nil) -> FerryEventStream {
        stream(op.rawValue, args, body: body, timeout: timeout)
    }

    /// Calls an operation and yields its events as they arrive, then the final reply. Cancelling the consuming task
    /// (or dropping the stream) cancels the request. The connection reads ahead at most 8 MiB of bodies the
    /// consumer has not taken yet.
    public func stream(_ op: String, _ args: JSONObject = JSONObject(), body: [UInt8] = [],
                       timeout: Duration? = nil) -> FerryEventStream {
        let connection = self.connection
        let id = connection.allocateID()
        let account = StreamAccount(credit: connection.credit)
        let base = AsyncThrowingStream<FerryStreamItem, any Error> { continuation in
            continuation.onTermination = { termination in
                account.ended()
                if case .cancelled = termination { connection.cancel(id) }
            }
            let envelope = RequestEnvelope(id: id, op: op, args: args, timeoutMs: timeout.map(FerryClient.milliseconds))
            if let error = connection.start(envelope, body: body, waiter: .stream(.init(continuation, account))) {
                continuation.finish(throwing: error)
            }
        }
        return FerryEventStream(base: base, account: account)
    }

    /// One round trip; returns how long it took.
    public func ping() async throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        _ = try await call(.ping)
        return clock.now - start
    }

    /// Every operation with its arguments and result fields.
    public func describe() async throws -> JSONObject { try await call(.describe).result }

    /// The daemon's counters.
    public func stats() async throws -> JSONObject { try await call(.stats).result }

    /// Runs tasks on the thread that reads this connection's replies: a call made from such a task resumes right
    /// where its reply was read, and the requests such tasks send after a read leave together. Plain tasks batch
    /// as well since the last call of a batch reads the next replies itself (`ReadBaton`): measured, this executor
    /// is no longer faster than the global one (BENCHMARKS.md); it stays for code that wants its calls to resume on
    /// the connection's thread. Its rule is an event loop's: a task on it that blocks the thread (blocking I/O, long
    /// computation) holds up every reply on the connection; await instead.
    ///
    /// ```swift
    /// let values = try await withTaskExecutorPreference(client.executor) {
    ///     try await withThrowingTaskGroup(of: CachedValue?.self) { group in
    ///         for key in keys { group.addTask { try await client.cacheGet(key) } }
    ///         return try await group.reduce(into: []) { $0.append($1) }
    ///     }
    /// }
    /// ```
    public var executor: any TaskExecutor { connection.executor }

    /// Who reads the connection's replies, and how often calls read them in the reader thread's place (tests).
    var readBaton: ReadBaton { connection.baton.withLock { $0 } }

    /// Closes the connection; calls in flight fail with `unavailable`.
    public func close() { connection.close() }

    // MARK: Internals

    private static func call(_ connection: ClientConnection, _ op: String, _ args: JSONObject, body: [UInt8],
                             timeout: Duration?) async throws -> FerryReply {
        let id = connection.allocateID()
        let envelope = RequestEnvelope(id: id, op: op, args: args, timeoutMs: timeout.map(milliseconds))
        let watchdog = timeout.map { t in
            Task {
                // The server answers deadline_exceeded itself; this only covers a server that stopped answering.
                try await Task.sleep(for: t + .seconds(1))
                connection.finish(id, with: .failure(FerryError(.deadlineExceeded, "no reply within \(t) (ferryd did not answer)")))
            }
        }
        defer { watchdog?.cancel() }
        let delivery = await withTaskCancellationHandler {
            await withUnsafeContinuation { (c: ClientConnection.CallContinuation) in
                if let error = connection.start(envelope, body: body, waiter: .call(c, chunks: nil)) {
                    return connection.fail(c, error)
                }
                // Cancelled before the waiter was there, the cancellation handler found nothing to end: end it now
                // (and have the daemon drop it, if it left already).
                if Task.isCancelled { connection.cancel(id) }
            }
        } onCancel: {
            connection.cancel(id)
        }
        if delivery.counted { connection.callReturned() }
        return try delivery.outcome.get()
    }

    static func milliseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return max(1, min(RequestEnvelope.maxTimeoutMs, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
    }
}
