#if canImport(Glibc)
import Glibc
#endif
import FerryClient
import FerryProtocol

/// One Unix-socket connection to ferryd driven with plain blocking `send`/`recv` and the protocol codec, with none
/// of FerryClient's machinery (reader thread, locks, continuations). The raw modes use it so that what they measure
/// is ferryd plus the kernel, the same two things the C reference measures.
final class RawConnection {
    let fd: Int32
    private(set) var decoder: FrameDecoder
    /// What the server announced in `hello`; `maxInFlight` bounds the pipelined modes.
    private(set) var limits = ProtocolLimits()
    /// Size of the last frame taken from the decoder: the `reply_bytes` reported for the C reference.
    private(set) var lastFrameBytes = 0

    /// Connects and performs the `hello` handshake (PROTOCOL.md section 4: nothing but `hello` is served before it).
    init(path: String) throws(BenchError) {
        fd = try connectUnixSocket(path, server: "ferryd", hint: "start it, or pass --socket")
        decoder = FrameDecoder(maxFrameBytes: limits.handshakeFrameBytes, maxJSONBytes: limits.handshakeFrameBytes)
        try handshake()
    }

    deinit { close(fd) }

    private func handshake() throws(BenchError) {
        let hello = RequestEnvelope(id: 1, op: "hello",
                                    args: ["versions": .array(ProtocolLimits.versions.map { .int($0) }),
                                           "client": "ferry-bench"])
        try send(FrameEncoder.encode(json: hello.json))
        let value: JSONValue = try nextFrame { frame throws(BenchError) in
            do {
                return try JSONParser.parse(frame.json, maxDepth: 64)
            } catch {
                throw BenchError("ferryd sent invalid JSON in reply to hello: \(error)")
            }
        }
        switch ReplyEnvelope.parse(value) {
        case .result(_, let result)?:
            limits = ProtocolLimits(json: result["limits"]?.objectValue ?? JSONObject())
            decoder.maxFrameBytes = limits.maxFrameBytes
            decoder.maxJSONBytes = limits.maxJSONBytes
        case .error(_, let e)?:
            throw BenchError("hello refused: \(e.codeName): \(e.message)")
        default:
            throw BenchError("unexpected reply to hello")
        }
    }

    /// Writes all of `bytes`, retrying on EINTR and short writes.
    func send(_ bytes: [UInt8]) throws(BenchError) {
        if !sendAll(fd, bytes) { throw BenchError("ferryd closed the connection while we were writing") }
    }

    /// One `recv` straight into the decoder's free space; blocks until some bytes arrive. EOF is an error: ferryd
    /// never closes a healthy connection on its own.
    func receive() throws(BenchError) {
        try receiveSome(fd, into: decoder.buffer, server: "ferryd")
    }

    /// Takes the next whole frame out of the buffer, if one is there, without blocking.
    @inline(__always)
    func takeFrame<R>(_ body: (FrameView) throws(BenchError) -> R) throws(BenchError) -> R? {
        do {
            return try decoder.nextView { view in
                lastFrameBytes = ProtocolLimits.headerBytes + view.json.count + view.body.count
                return try body(view)
            }
        } catch let e as BenchError {
            throw e
        } catch {
            throw BenchError("ferryd sent a bad frame: \(error)")
        }
    }

    /// Blocks until a whole frame is there and hands it to `body`.
    func nextFrame<R>(_ body: (FrameView) throws(BenchError) -> R) throws(BenchError) -> R {
        while true {
            if let r = try takeFrame(body) { return r }
            try receive()
        }
    }
}

/// A connected, blocking Unix stream socket. `server` and `hint` make the error message when nobody answers.
func connectUnixSocket(_ path: String, server: String, hint: String) throws(BenchError) -> Int32 {
    do {
        return try SocketIO.connect(path: path)
    } catch {
        throw BenchError("\(server): \(error.message) (\(hint))")
    }
}

/// Writes all of `bytes` to `fd`; false when the peer is gone.
func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { SocketIO.writeAll(fd, $0) }
}

/// One `recv` into `buffer`'s free space; blocks until some bytes arrive. EOF is an error.
func receiveSome(_ fd: Int32, into buffer: ByteBuffer, server: String) throws(BenchError) {
    let space = buffer.writableSpace(minimum: 16 * 1024)
    while true {
        let n = recv(fd, space.baseAddress, space.count, 0)
        if n > 0 {
            buffer.didWrite(n)
            return
        }
        if n < 0 && errno == EINTR { continue }
        throw BenchError(n == 0 ? "\(server) closed the connection" : "recv(): \(String(cString: strerror(errno)))")
    }
}
