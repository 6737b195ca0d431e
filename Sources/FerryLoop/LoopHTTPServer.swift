#if canImport(Glibc)
import Glibc
#endif
import CLibUV

/// A very small HTTP/1.1 server on the loop, for what a monitoring system scrapes (`--metrics-listen`): each
/// connection sends one request head (at most 8 KiB, within 10 s), `respond` is given its request line and answers
/// with the whole response's bytes, which are written before the connection closes (`Connection: close`). Nothing
/// here parses more than the request line: the caller decides.
///
/// ```swift
/// let server = try LoopHTTPServer(loop: loop, host: "127.0.0.1", port: 0) { line, reply in
///     reply(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8))
/// }
/// server.port   // the port bound (the kernel's choice for 0)
/// ```
public final class LoopHTTPServer {
    private let loop: EventLoop
    private let handle: UnsafeMutablePointer<uv_tcp_t>
    private let respond: (_ requestLine: String, _ reply: @escaping ([UInt8]) -> Void) -> Void
    public private(set) var port = 0
    /// Exchanges open at once, at most `maxExchanges` (more are closed at once: a scraper needs one).
    private var open = 0
    static let maxExchanges = 16

    public init(loop: EventLoop, host: String, port: Int,
                respond: @escaping (_ requestLine: String, _ reply: @escaping ([UInt8]) -> Void) -> Void) throws(LoopError) {
        self.loop = loop
        self.respond = respond
        handle = .allocate(capacity: 1)
        uv_tcp_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        var address = sockaddr_in()
        var rc = uv_ip4_addr(host, Int32(port), &address)
        if rc == 0 {
            rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(handle, $0, 0) } }
        }
        if rc == 0 {
            rc = uv_listen(handle.asStream, 64) { server, status in
                guard status == 0 else { return }
                Unmanaged<LoopHTTPServer>.fromOpaque(server!.pointee.data).takeUnretainedValue().accept()
            }
        }
        guard rc == 0 else {
            close()
            throw LoopError(code: rc)
        }
        var bound = sockaddr_in()
        var length = Int32(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(handle, $0, &length) } }
        self.port = Int(UInt16(bigEndian: bound.sin_port))
    }

    public func close() {
        uv_close(handle.asHandle) { h in
            let me = Unmanaged<LoopHTTPServer>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.handle.deallocate()
        }
    }

    private func accept() {
        let exchange = HTTPExchange(loop: loop, server: self)
        guard uv_accept(handle.asStream, exchange.stream) == 0, open < LoopHTTPServer.maxExchanges else { return exchange.finish() }
        open += 1
        exchange.start()
    }

    fileprivate func answer(_ line: String, _ exchange: HTTPExchange) { respond(line) { [weak exchange] bytes in exchange?.send(bytes) } }
    fileprivate func ended() { open -= 1 }

    /// A complete response: status line, `Content-Type`, `Content-Length`, `Connection: close`, and the body.
    public static func response(status: String, contentType: String, body: [UInt8]) -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
    }
}

/// One connection of a `LoopHTTPServer`: its request head, the answer, then closed. Keeps itself alive (a retain in
/// its handle's `data`) until libuv has closed the handle.
private final class HTTPExchange {
    private let handle: UnsafeMutablePointer<uv_tcp_t>
    private weak var server: LoopHTTPServer?
    private var head: [UInt8] = []
    private var readSpace = [UInt8](repeating: 0, count: 4096)
    private var timer: LoopTimer?
    private var closing = false
    private var counted = false

    var stream: UnsafeMutablePointer<uv_stream_t> { handle.asStream }

    init(loop: EventLoop, server: LoopHTTPServer) {
        self.server = server
        handle = .allocate(capacity: 1)
        uv_tcp_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        // A client that never finishes its request is dropped.
        timer = LoopTimer(loop: loop) { [weak self] _ in self?.finish() }
        timer?.start(afterMs: 10_000)
    }

    func start() {
        counted = true
        uv_read_start(stream, { h, _, buf in
            let me = Unmanaged<HTTPExchange>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            me.readSpace.withUnsafeMutableBufferPointer { p in
                buf!.pointee = uv_buf_init(UnsafeMutableRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self), UInt32(p.count))
            }
        }, { h, n, _ in
            Unmanaged<HTTPExchange>.fromOpaque(h!.pointee.data).takeUnretainedValue().didRead(n)
        })
    }

    private func didRead(_ n: Int) {
        guard n > 0 else { return n < 0 ? finish() : () }
        head += readSpace[..<n]
        guard let end = HTTPExchange.headEnd(head) else {
            if head.count > 8192 { send(LoopHTTPServer.response(status: "431 Request Header Fields Too Large", contentType: "text/plain", body: [])) }
            return
        }
        uv_read_stop(stream)
        let line = String(decoding: head[..<end].prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
        server?.answer(line, self)
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i }
        return nil
    }

    func send(_ bytes: [UInt8]) {
        guard !closing else { return }
        let block = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<uv_write_t>.stride + bytes.count, alignment: 16)
        let request = block.assumingMemoryBound(to: uv_write_t.self)
        let data = block + MemoryLayout<uv_write_t>.stride
        bytes.withUnsafeBytes { data.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        request.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        var buf = uv_buf_init(data.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
        let rc = uv_write(request, stream, &buf, 1) { req, _ in
            let me = Unmanaged<HTTPExchange>.fromOpaque(req!.pointee.data).takeUnretainedValue()
            UnsafeMutableRawPointer(req!).deallocate()
            me.finish()
        }
        if rc != 0 {
            block.deallocate()
            finish()
        }
    }

    func finish() {
        guard !closing else { return }
        closing = true
        timer?.close()
        timer = nil
        if counted { server?.ended() }
        uv_close(handle.asHandle) { h in
            let me = Unmanaged<HTTPExchange>.fromOpaque(h!.pointee.data).takeRetainedValue()
            me.handle.deallocate()
        }
    }
}
