#if canImport(Glibc)
import Glibc
#endif
import FerryProtocol

/// A connection to a Redis server on a Unix socket, speaking RESP, for `--redis`: the cache modes then put exactly
/// the load they put on ferryd on Redis, from the same client code. bench/run.sh uses it beside redis-benchmark
/// because redis-benchmark, on the one client core, can run out of CPU before Redis does; with one load generator
/// for both servers, a difference in the numbers is a difference between the servers.
///
/// Requests are what redis-benchmark sends: `SET key:NNNNNNNNNNNN <value>` and `GET key:NNNNNNNNNNNN` as RESP arrays.
/// Every reply is checked: `+OK` for SET; for GET a bulk string with exactly the stored value (a miss is an error).
/// Redis answers in order, so reply ids are counted, not read.
final class RedisConnection: CacheLoadConnection {
    let fd: Int32
    let op: CacheOp
    private let value: [UInt8]
    /// `CacheFrames.stamp`: with `--distinct`, every SET's value starts with this plus its request id.
    private let stamp: UInt64?
    private let buffer = ByteBuffer()
    private var replies = 0
    private(set) var lastReplyBytes = 0
    /// Redis has no per-connection limit; the driver's 64-request batches stay far below any buffer limit.
    var maxInFlight: Int { 1 << 20 }

    init(path: String, op: CacheOp, valueBytes: Int, stamp: UInt64? = nil) throws(BenchError) {
        self.stamp = stamp
        fd = try connectUnixSocket(path, server: "Redis", hint: "start redis-server with --unixsocket, or fix --redis")
        self.op = op
        value = [UInt8](repeating: UInt8(ascii: "x"), count: valueBytes)
    }

    deinit { close(fd) }

    var requestBytes: Int {
        var out: [UInt8] = []
        appendRequest(id: 0, key: 0, to: &out)
        return out.count
    }

    @inline(__always)
    func appendRequest(id: UInt64, key: Int, to out: inout [UInt8]) {
        switch op {
        case .set: JSONWriter.appendASCII("*3\r\n$3\r\nSET\r\n$16\r\nkey:", to: &out)
        case .get: JSONWriter.appendASCII("*2\r\n$3\r\nGET\r\n$16\r\nkey:", to: &out)
        }
        CacheFrames.appendDigits(key, width: 12, to: &out)
        JSONWriter.appendASCII("\r\n", to: &out)
        if op == .set {
            out.append(UInt8(ascii: "$"))
            JSONWriter.writeInt(Int64(value.count), to: &out)
            JSONWriter.appendASCII("\r\n", to: &out)
            out.append(contentsOf: value)
            if let stamp { CacheFrames.stamp(stamp + id, bodyEndingAt: out.count, valueBytes: value.count, in: &out) }
            JSONWriter.appendASCII("\r\n", to: &out)
        }
    }

    func send(_ bytes: [UInt8]) throws(BenchError) {
        if !sendAll(fd, bytes) { throw BenchError("Redis closed the connection while we were writing") }
    }

    func receive() throws(BenchError) { try receiveSome(fd, into: buffer, server: "Redis") }

    func takeReply() throws(BenchError) -> UInt64? {
        let r = buffer.readable
        guard let eol = RedisConnection.lineEnd(r) else { return nil }
        let consumed: Int
        switch (r[0], op) {
        case (UInt8(ascii: "+"), .set) where eol == 3 && r[1] == UInt8(ascii: "O") && r[2] == UInt8(ascii: "K"):
            consumed = eol + 2
        case (UInt8(ascii: "$"), .get):
            guard let size = RedisConnection.integer(r[1..<eol]), size == value.count else {
                throw BenchError("Redis answered GET with \"\(RedisConnection.text(r[0..<eol]))\", not a \(value.count)-byte value")
            }
            let start = eol + 2
            guard r.count >= start + size + 2 else { return nil }
            guard size == 0 || value.withUnsafeBytes({ memcmp($0.baseAddress!, r.baseAddress! + start, size) == 0 }),
                  r[start + size] == 13, r[start + size + 1] == 10 else {
                throw BenchError("Redis answered GET with a value that is not the one stored")
            }
            consumed = start + size + 2
        default:
            throw BenchError("unexpected reply to \(op == .set ? "SET" : "GET") from Redis: \"\(RedisConnection.text(r[0..<eol]))\"")
        }
        buffer.consume(consumed)
        lastReplyBytes = consumed
        let id = PingFrames.id(replies)
        replies += 1
        return id
    }

    /// Index of the `\r` of the first `\r\n`, if a whole line is there.
    private static func lineEnd(_ r: UnsafeRawBufferPointer) -> Int? {
        guard r.count >= 2 else { return nil }
        var i = 0
        while i + 1 < r.count {
            if r[i] == 13 && r[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }

    private static func integer(_ digits: Slice<UnsafeRawBufferPointer>) -> Int? {
        guard !digits.isEmpty else { return nil }
        var n = 0
        for d in digits {
            guard d >= UInt8(ascii: "0") && d <= UInt8(ascii: "9") else { return nil }
            n = n * 10 + Int(d - UInt8(ascii: "0"))
        }
        return n
    }

    private static func text(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        String(decoding: bytes.prefix(200), as: UTF8.self)
    }
}
