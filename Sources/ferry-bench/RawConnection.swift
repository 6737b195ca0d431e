#if canImport(Glibc)
import Glibc
#endif
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
    if let problem = SocketPath.problem(with: path) { throw BenchError(problem) }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket(): \(String(cString: strerror(errno)))") }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { p in
        for (k, b) in path.utf8.enumerated() { p[k] = b }
    }
    let rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    if rc != 0 {
        let message = String(cString: strerror(errno))
        close(fd)
        throw BenchError("no \(server) answers on \(path): \(message) (\(hint))")
    }
    return fd
}

/// Writes all of `bytes` to `fd`, retrying on EINTR and short writes; false when the peer is gone.
func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { b -> Bool in
        var off = 0
        while off < b.count {
            let n = Glibc.send(fd, b.baseAddress! + off, b.count - off, Int32(MSG_NOSIGNAL))
            if n > 0 {
                off += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
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
