#if canImport(Glibc)
import Glibc
#endif

/// `cache-set` and `cache-get`: the load redis-benchmark puts on Redis with `-t set,get -d 100 -r 10000 -c N [-P P]`,
/// put on ferryd: `connections` connections, each sending `pipeline` requests in one write and sending the next
/// batch only when all of them are answered (with `pipeline` 1: one request in flight per connection, the same
/// shape as redis-benchmark without `-P`). Keys are drawn uniformly from `keySpace` keys, values are `valueBytes`
/// bytes (see `CacheFrames`).
///
/// Driven by one thread with `poll()` over all the sockets, like `raw-conns` and like redis-benchmark's own single
/// event loop. A request's latency runs from the `send` of its batch to the read of its reply (redis-benchmark
/// takes, for every reply of a batch, the time to the first read of that batch's replies: the same without `-P`
/// and slightly lower with it).
func runCacheLoad(socket: String, budget: Budget, op: CacheOp, connections count: Int, pipeline: Int,
                  keySpace: Int, valueBytes: Int) throws(BenchError) -> BenchResult {
    let frames = CacheFrames(op: op, valueBytes: valueBytes)
    var connections: [RawConnection] = []
    for _ in 0..<count { connections.append(try RawConnection(path: socket)) }
    guard pipeline <= connections[0].limits.maxInFlight else {
        throw BenchError("--pipeline \(pipeline) exceeds ferryd's max_in_flight of \(connections[0].limits.maxInFlight)")
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
    batch.reserveCapacity(pipeline * (frames.requestBytes + 16))

    let start = monoNanos()
    let running = budget.started(at: start)
    var issued = 0
    var completed = 0

    /// Sends the next batch on connection `c`: up to `pipeline` requests in one write, as many as the budget allows.
    func sendBatch(_ c: Int) throws(BenchError) {
        batch.removeAll(keepingCapacity: true)
        var n = 0
        while n < pipeline && running.allowsMore(issued: issued) {
            frames.append(id: PingFrames.id(sequence[c] + n), key: pickers[c].next(), to: &batch)
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
            while let id = try connection.takeFrame({ f throws(BenchError) in try frames.check(f) }) {
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

    return BenchResult(mode: op == .set ? "cache-set" : "cache-get", requests: completed, elapsedNanos: elapsed,
                       latencies: latencies, requestBytes: frames.requestBytes, replyBytes: connections[0].lastFrameBytes,
                       connections: count, inFlight: pipeline,
                       extra: "op=\(op.rawValue) keys=\(keySpace) value_bytes=\(valueBytes) pipeline=\(pipeline)")
}

/// Stores every key of the key space once (pipelined on one connection), so that `cache-get` reads only hits, as
/// redis-benchmark's GET does after its SET run. The sets are acknowledged after their commit, so they are in the
/// memory tier and on disk when this returns.
func populateCache(socket: String, keySpace: Int, valueBytes: Int) throws(BenchError) {
    let connection = try RawConnection(path: socket)
    let frames = CacheFrames(op: .set, valueBytes: valueBytes)
    let depth = min(200, connection.limits.maxInFlight)
    var batch: [UInt8] = []
    var key = 0
    var sequence = 0
    while key < keySpace {
        batch.removeAll(keepingCapacity: true)
        let n = min(depth, keySpace - key)
        for k in 0..<n { frames.append(id: PingFrames.id(sequence + k), key: key + k, to: &batch) }
        try connection.send(batch)
        for _ in 0..<n { _ = try connection.nextFrame { f throws(BenchError) in try frames.check(f) } }
        key += n
        sequence += n
    }
}
