#if canImport(Glibc)
import Glibc
#endif
import FerryProtocol

/// One connection of a load, to ferryd (`FerryLoadConnection`) or to Redis (`RedisConnection`): the load
/// driver below is the same for both, so that ferryd and Redis can be measured with one and the same client.
protocol CacheLoadConnection: AnyObject {
    var fd: Int32 { get }
    /// Requests the server lets one connection have in flight.
    var maxInFlight: Int { get }
    /// Size of the last reply taken (the `reply_bytes` reported).
    var lastReplyBytes: Int { get }
    /// Size of one request frame (the `msg_bytes` reported).
    var requestBytes: Int { get }
    /// Appends the request with this id for key number `key`.
    func appendRequest(id: UInt64, key: Int, to out: inout [UInt8])
    func send(_ bytes: [UInt8]) throws(BenchError)
    /// One `recv`; blocks until some bytes arrive.
    func receive() throws(BenchError)
    /// The id of the next whole reply in the buffer, checked, or nil when none is whole yet.
    func takeReply() throws(BenchError) -> UInt64?
}

/// `cache-set` and `cache-get`: the load redis-benchmark puts on Redis with `-t set,get -d 100 -r 10000 -c N [-P P]`:
/// `connections.count` connections, each sending `pipeline` requests in one write and sending the next batch only
/// when all of them are answered (with `pipeline` 1: one request in flight per connection, the same shape as
/// redis-benchmark without `-P`). Keys are drawn uniformly from `keySpace` keys; values are set by the connections'
/// request encoding (see `CacheFrames`).
///
/// Driven by one thread with `poll()` over all the sockets, like `raw-conns` and like redis-benchmark's own single
/// event loop. A request's latency runs from the `send` of its batch to the read of its reply (redis-benchmark
/// takes, for every reply of a batch, the time to the first read of that batch's replies: the same without `-P`
/// and slightly lower with it).
func runCacheLoad<C: CacheLoadConnection>(_ connections: [C], mode: String, budget: Budget, pipeline: Int,
                                          keySpace: Int, extra: String) throws(BenchError) -> BenchResult {
    let count = connections.count
    guard pipeline <= connections[0].maxInFlight else {
        throw BenchError("--pipeline \(pipeline) exceeds the server's max_in_flight of \(connections[0].maxInFlight)")
    }
    var pollSet = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    var pickers = (0..<count).map { KeyPicker(seed: UInt64($0 + 1), keySpace: keySpace) }
    var sentAt = [UInt64](repeating: 0, count: count)
    var sequence = [Int](repeating: 0, count: count)   // sequence number of the next request on each connection
    var batchFirst = [UInt64](repeating: 0, count: count)
    var batchSize = [Int](repeating: 0, count: count)
    var answered = [UInt64](repeating: 0, count: count)  // bit k: reply k of the current batch has arrived
    var latencies = LatencySamples()
    var batch: [UInt8] = []
    batch.reserveCapacity(pipeline * (connections[0].requestBytes + 16))

    let start = monoNanos()
    let running = budget.started(at: start)
    var issued = 0
    var completed = 0

    /// Sends the next batch on connection `c`: up to `pipeline` requests in one write, as many as the budget allows.
    func sendBatch(_ c: Int) throws(BenchError) {
        batch.removeAll(keepingCapacity: true)
        var n = 0
        while n < pipeline && running.allowsMore(issued: issued) {
            connections[c].appendRequest(id: PingFrames.id(sequence[c] + n), key: pickers[c].next(), to: &batch)
            issued += 1
            n += 1
        }
        guard n > 0 else { return }
        batchFirst[c] = PingFrames.id(sequence[c])
        batchSize[c] = n
        answered[c] = 0
        sequence[c] += n
        sentAt[c] = monoNanos()
        try connections[c].send(batch)
    }

    for c in 0..<count { try sendBatch(c) }
    while completed < issued {
        let ready = poll(&pollSet, nfds_t(count), -1)
        if ready < 0 {
            if errno == EINTR { continue }
            throw BenchError("poll(): \(String(cString: strerror(errno)))")
        }
        for c in 0..<count where pollSet[c].revents != 0 {
            let connection = connections[c]
            try connection.receive()
            while let id = try connection.takeReply() {
                latencies.record(monoNanos() - sentAt[c])
                // Replies may come in any order (PROTOCOL.md section 3); each must belong to the current batch, once.
                let k = (id &- batchFirst[c]) & (PingFrames.idSpan - 1)
                guard k < UInt64(batchSize[c]), answered[c] & (1 << k) == 0 else {
                    throw BenchError("connection \(c): unexpected reply to request \(id)")
                }
                answered[c] |= 1 << k
                completed += 1
                if answered[c].nonzeroBitCount == batchSize[c] { try sendBatch(c) }
            }
        }
    }
    let elapsed = monoNanos() - start

    return BenchResult(mode: mode, requests: completed, elapsedNanos: elapsed, latencies: latencies,
                       requestBytes: connections[0].requestBytes, replyBytes: connections[0].lastReplyBytes,
                       connections: count, inFlight: pipeline, extra: extra)
}

/// Stores every key of the key space once, pipelined on one connection (which must send sets), so that
/// `cache-get` reads only hits, as redis-benchmark's GET does after its SET run. Sets are acknowledged after they
/// are stored, so every key is there when this returns.
func populateCache<C: CacheLoadConnection>(_ connection: C, keySpace: Int) throws(BenchError) {
    let depth = min(200, connection.maxInFlight)
    var batch: [UInt8] = []
    var key = 0
    while key < keySpace {
        batch.removeAll(keepingCapacity: true)
        let n = min(depth, keySpace - key)
        for k in 0..<n { connection.appendRequest(id: PingFrames.id(key + k), key: key + k, to: &batch) }
        try connection.send(batch)
        var answered = 0
        while answered < n {
            if try connection.takeReply() != nil { answered += 1 } else { try connection.receive() }
        }
        key += n
    }
}

/// The request frames a load sends to ferryd and the check every reply gets (`CacheFrames`, `FetchFrames`).
protocol LoadFrames {
    /// Appends the request with this id for key number `key` (a load that has no keys ignores it).
    func append(id: UInt64, key: Int, to out: inout [UInt8])
    var requestBytes: Int { get }
    /// Checks one reply and returns its request id.
    func check(_ frame: FrameView) throws(BenchError) -> UInt64
}

extension CacheFrames: LoadFrames {}

/// A connection to ferryd sending `Frames`' requests, every reply checked.
final class FerryLoadConnection<Frames: LoadFrames>: CacheLoadConnection {
    let raw: RawConnection
    let frames: Frames

    init(socket: String, frames: Frames) throws(BenchError) {
        raw = try RawConnection(path: socket)
        self.frames = frames
    }

    var fd: Int32 { raw.fd }
    var maxInFlight: Int { raw.limits.maxInFlight }
    var lastReplyBytes: Int { raw.lastFrameBytes }
    var requestBytes: Int { frames.requestBytes }

    @inline(__always)
    func appendRequest(id: UInt64, key: Int, to out: inout [UInt8]) { frames.append(id: id, key: key, to: &out) }
    func send(_ bytes: [UInt8]) throws(BenchError) { try raw.send(bytes) }
    func receive() throws(BenchError) { try raw.receive() }
    @inline(__always)
    func takeReply() throws(BenchError) -> UInt64? { try raw.takeFrame { f throws(BenchError) in try frames.check(f) } }
}

/// The cache modes against ferryd (or, with `redis`, against a Redis server on that Unix socket, speaking RESP).
func runCacheMode(socket: String, redis: String?, budget: Budget, op: CacheOp, connections: Int, pipeline: Int,
                  keySpace: Int, valueBytes: Int, distinct: Bool = false) throws(BenchError) -> BenchResult {
    let mode = op == .set ? "cache-set" : "cache-get"
    let extra = "op=\(op.rawValue) keys=\(keySpace) value_bytes=\(valueBytes) pipeline=\(pipeline) target=\(redis == nil ? "ferryd" : "redis")"
        + (distinct ? " distinct=1" : "")
    let stamp = { (c: Int) -> UInt64? in distinct && op == .set ? UInt64(c + 1) << 40 : nil }
    if let redis {
        var conns: [RedisConnection] = []
        for c in 0..<connections { conns.append(try RedisConnection(path: redis, op: op, valueBytes: valueBytes, stamp: stamp(c))) }
        return try runCacheLoad(conns, mode: mode, budget: budget, pipeline: pipeline, keySpace: keySpace, extra: extra)
    }
    let frames = CacheFrames(op: op, valueBytes: valueBytes)
    var conns: [FerryLoadConnection<CacheFrames>] = []
    for c in 0..<connections {
        var own = frames
        own.stamp = stamp(c)
        conns.append(try FerryLoadConnection<CacheFrames>(socket: socket, frames: own))
    }
    return try runCacheLoad(conns, mode: mode, budget: budget, pipeline: pipeline, keySpace: keySpace, extra: extra)
}

/// Stores every key once (see `populateCache`) on ferryd, or on Redis with `redis`.
func populate(socket: String, redis: String?, keySpace: Int, valueBytes: Int) throws(BenchError) {
    if let redis {
        try populateCache(try RedisConnection(path: redis, op: .set, valueBytes: valueBytes), keySpace: keySpace)
    } else {
        try populateCache(try FerryLoadConnection<CacheFrames>(socket: socket, frames: CacheFrames(op: .set, valueBytes: valueBytes)),
                          keySpace: keySpace)
    }
}
