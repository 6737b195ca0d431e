#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFerryIO
import FerryProtocol

/// A connection that makes its calls in the caller's thread, one at a time: blocking socket I/O, no task, no
/// reader thread. For a program that makes one or two calls and exits — a shell command — where `FerryClient`'s
/// machinery costs more than the call: the first `await` starts the concurrency runtime's threads, and a call's
/// watchdog a timer thread; `ferry ping` spent a fifth of its whole run on them (BENCHMARKS.md, start-up).
/// Everything else should use `FerryClient`: this has no auto-start, no concurrency and no streaming (a reply's
/// `chunk` events are joined, as `FerryClient.call` joins them). A body asked for as a descriptor (`body_fd`) comes
/// as `FerryReply.file`, as it does through `FerryClient`.
///
/// ```swift
/// let connection = try BlockingConnection(path: FerryClient.defaultSocketPath, clientName: "my-script")
/// let reply = try connection.call("cache.get", ["key": "token"])   // FerryReply: result and body
/// connection.close()
/// ```
public final class BlockingConnection {
    /// The daemon's name and version, from `hello`.
    public private(set) var serverName = "ferryd"
    /// Whether the daemon hands large bodies over as descriptors when asked (`body_fd`), from `hello`.
    public private(set) var offersBodyFiles = false
    /// Descriptors that came with reply bytes, oldest first (each with the first byte of the frame naming it).
    private var descriptors = DescriptorQueue()
    private var fd: Int32
    private var nextID: UInt64 = 1
    private var decoder: FrameDecoder
    private var limits = ProtocolLimits()

    /// Connects to `path` and performs the `hello` handshake; throws `unavailable` (raised by the connection) when
    /// no daemon listens there, `deadline_exceeded` when `hello` is not answered within `timeoutMs` (and a second),
    /// and the daemon's own error when it refuses the handshake.
    public init(path: String, clientName: String, timeoutMs: Int32 = 10_000) throws(FerryError) {
        fd = try SocketIO.connect(path: path)
        decoder = FrameDecoder(maxFrameBytes: limits.maxFrameBytes, maxJSONBytes: limits.maxJSONBytes)
        do {
            let hello = try call("hello", FerryClient.helloArguments(clientName: clientName), timeoutMs: timeoutMs)
            limits = ProtocolLimits(json: hello.result["limits"]?.objectValue ?? JSONObject())
            decoder.maxFrameBytes = limits.maxFrameBytes
            decoder.maxJSONBytes = limits.maxJSONBytes
            serverName = hello.result["server"]?.stringValue ?? serverName
            offersBodyFiles = FerryClient.capabilities(ofHello: hello.result).contains(.bodyFD)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    public func close() {
        descriptors.closeAll()
        guard fd >= 0 else { return }
        Platform.close(fd)
        fd = -1
    }

    /// Calls `op` and waits for its final reply (up to `timeoutMs`, which is also sent as the request's
    /// `timeout_ms`; nil: as long as it takes). A body too large for one frame is refused (`resource_exhausted`):
    /// uploads in pieces are `FerryClient`'s.
    public func call(_ op: String, _ args: JSONObject = JSONObject(), body: [UInt8] = [],
                     timeoutMs: Int32? = nil) throws(FerryError) -> FerryReply {
        guard fd >= 0 else { throw closedError }
        let id = nextID
        nextID += 1
        let envelope = RequestEnvelope(id: id, op: op, args: args, timeoutMs: timeoutMs.map { Int64($0) })
        let frames: [[UInt8]]
        switch ClientConnection.frames(envelope, body: body, maxFrameBytes: limits.maxFrameBytes, maxJSONBytes: limits.maxJSONBytes) {
        case .success(let f): frames = f
        case .failure(let e): throw e
        }
        guard frames.count == 1 else {
            throw FerryError(.resourceExhausted, "a body of \(body.count) bytes does not fit one frame; FerryClient sends it in pieces")
        }
        guard frames[0].withUnsafeBytes({ SocketIO.writeAll(fd, $0) }) else { throw lost() }
        // A server that stops answering: the request's own deadline, and a second for its answer to arrive.
        let deadline = timeoutMs.map { Self.nowMs() + Int64($0) + 1000 }
        var chunks: [UInt8] = []
        while true {
            guard let frame = try nextFrame(deadline: deadline) else {
                throw FerryError(.deadlineExceeded, "no reply within \(timeoutMs ?? 0) ms (ferryd did not answer)")
            }
            guard let reply = ReplyEnvelope.parse(frame.json, maxDepth: 64) else {
                close()
                throw FerryError.connection("ferryd sent a reply this client cannot read")
            }
            // A descriptor named by a reply is taken whatever the reply answers, so the next one pairs with its own
            // (one taken for a late answer is closed when its `BodyFile` goes).
            var file: BodyFile?
            if case .result(_, let result) = reply {
                switch descriptors.claim(for: result) {
                case .none: break
                case .file(let claimed): file = claimed
                case .missing(let error):
                    close()
                    throw error
                case .unreadable(let error): if reply.id == id { throw error }
                }
            }
            if case .error(0, let error) = reply {
                // Names no request (PROTOCOL.md §3): a refusal that ends the connection, or an answer this call cannot
                // vouch is its own. Either way the call fails, and the connection with it.
                close()
                throw error
            }
            guard reply.id == id else { continue }  // a late answer to an earlier call that gave up
            switch reply {
            case .result(_, let result):
                if let file { return FerryReply(result: result, body: [], file: file) }
                return FerryReply(result: result, body: chunks.isEmpty ? frame.body : chunks + frame.body)
            case .error(_, let error): throw error
            case .event(_, let name, _): if name == EventName.chunk.rawValue { chunks += frame.body }
            }
        }
    }

    /// The next whole frame, reading as needed; nil when `deadline` (ms on the monotonic clock) passed first.
    private func nextFrame(deadline: Int64?) throws(FerryError) -> Frame? {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            do {
                if let frame = try decoder.next() { return frame }
            } catch {
                close()
                throw FerryError.connection("ferryd sent a malformed frame: \(error)")
            }
            if let deadline {
                let left = deadline - Self.nowMs()
                if left <= 0 { return nil }
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&p, 1, Int32(min(left, Int64(Int32.max))))
                if ready == 0 { return nil }
                if ready < 0 && errno != EINTR { throw lost() }
                if ready <= 0 { continue }
            }
            var received = [Int32](repeating: -1, count: 4), count: Int32 = 0
            let n = chunk.withUnsafeMutableBytes { ferry_recv_with_fds(fd, $0.baseAddress, $0.count, &received, 4, &count, 0) }
            if n == -Int(EINTR) { continue }
            guard n > 0 else { throw lost() }
            guard count >= 0 else {
                close()
                throw FerryError(.resourceExhausted, "a descriptor ferryd sent was dropped by the kernel (this process is out of descriptors)")
            }
            for k in 0..<Int(count) { descriptors.push(received[k]) }
            chunk.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
        }
    }

    private var closedError: FerryError { FerryError.connection("the connection to ferryd is closed") }

    private func lost() -> FerryError {
        close()
        return FerryError.connection("the connection to ferryd was lost")
    }

    private static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

/// The calls a shell command makes, as `FerryClient`'s cache API makes them (same arguments, same results).
extension BlockingConnection {
    /// `FerryClient.ping`.
    public func ping() throws(FerryError) -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        _ = try call(OperationName.ping.rawValue)
        return clock.now - start
    }

    /// `FerryClient.cacheGet`: nil when the key is absent or expired.
    public func cacheGet(_ key: String, namespace: String? = nil, bodyAsFile: Bool = false) throws(FerryError) -> CachedValue? {
        do {
            return try CachedValue(reply: call(OperationName.cacheGet.rawValue, CacheCalls.get(key, namespace, bodyFD: offersBodyFiles)),
                                   bodyAsFile: bodyAsFile)
        } catch where error.code == .notFound {
            return nil
        }
    }

    /// `FerryClient.cacheSet`: false when `ifAbsent` and the key has a live entry.
    public func cacheSet(_ key: String, _ value: [UInt8], namespace: String? = nil, ttl: Duration? = nil,
                         ifAbsent: Bool = false) throws(FerryError) -> Bool {
        CacheCalls.stored(try call(OperationName.cacheSet.rawValue, CacheCalls.set(key, namespace, ttl: ttl, ifAbsent: ifAbsent), body: value).result)
    }

    /// `FerryClient.cacheDelete`: whether the key existed.
    @discardableResult
    public func cacheDelete(_ key: String, namespace: String? = nil) throws(FerryError) -> Bool {
        CacheCalls.deleted(try call(OperationName.cacheDelete.rawValue, CacheCalls.key(key, namespace)).result)
    }

    /// `FerryClient.cacheTouch`: false when there is no live entry.
    @discardableResult
    public func cacheTouch(_ key: String, ttl: Duration?, namespace: String? = nil) throws(FerryError) -> Bool {
        do {
            _ = try call(OperationName.cacheTouch.rawValue, CacheCalls.touch(key, namespace, ttl: ttl))
            return true
        } catch where error.code == .notFound {
            return false
        }
    }

    /// `FerryClient.cacheIncr`: the new value.
    @discardableResult
    public func cacheIncr(_ key: String, by delta: Int64 = 1, ttl: Duration? = nil, namespace: String? = nil) throws(FerryError) -> Int64 {
        try CacheCalls.value(call(OperationName.cacheIncr.rawValue, CacheCalls.incr(key, namespace, by: delta, ttl: ttl)).result)
    }
}
