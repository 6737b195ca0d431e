// The two raw modes on a single connection: one request at a time, and many in flight.

/// `raw-seq`: one connection, one request at a time. Every round trip pays the whole path twice — a syscall, a
/// wake-up of the other process, ferryd's loop turn, decode, route, encode — with nothing to amortise it over, so
/// this is the latency floor a single-threaded caller sees, and its throughput is simply 1 / round-trip time.
func runRawSequential(socket: String, budget: Budget) throws(BenchError) -> BenchResult {
    let connection = try RawConnection(path: socket)
    var latencies = LatencySamples()
    var frame: [UInt8] = []
    frame.reserveCapacity(64)

    let start = monoNanos()
    let running = budget.started(at: start)
    var issued = 0
    while running.allowsMore(issued: issued) {
        let id = PingFrames.id(issued)
        frame.removeAll(keepingCapacity: true)
        PingFrames.append(id: id, to: &frame)
        let sent = monoNanos()
        try connection.send(frame)
        let answered = try connection.nextFrame { f throws(BenchError) in try PingFrames.pongID(f) }
        latencies.record(monoNanos() - sent)
        guard answered == id else { throw BenchError("sent ping \(id), got the reply to \(answered)") }
        issued += 1
    }
    let elapsed = monoNanos() - start

    return BenchResult(mode: "raw-seq", requests: issued, elapsedNanos: elapsed, latencies: latencies,
                       requestBytes: PingFrames.requestBytes, replyBytes: connection.lastFrameBytes,
                       connections: 1, inFlight: 1)
}

/// `raw-pipelined`: one connection with `depth` requests outstanding at all times. Pipelining lets ferryd read many
/// frames per `recv` and answer them in one loop turn, so this measures its per-request cost (parse, route, encode)
/// with the per-syscall and wake-up costs spread over a batch: the throughput ceiling of one connection.
///
/// Every reply read frees a slot that is refilled at once. The refills of one `recv` go out in a single `send`
/// rather than one `send` per reply: a write per request would make the generator (pinned to its own core) pay a
/// syscall per request and could become the bottleneck, which would understate ferryd. The number in flight is the
/// same either way.
func runRawPipelined(socket: String, budget: Budget, depth: Int) throws(BenchError) -> BenchResult {
    let connection = try RawConnection(path: socket)
    guard depth <= connection.limits.maxInFlight else {
        throw BenchError("--in-flight \(depth) exceeds ferryd's max_in_flight of \(connection.limits.maxInFlight)")
    }
    var latencies = LatencySamples()
    var sentAt = [UInt64](repeating: 0, count: PingFrames.slots)
    var batch: [UInt8] = []
    batch.reserveCapacity(depth * 64)

    let start = monoNanos()
    let running = budget.started(at: start)
    var issued = 0
    var completed = 0

    /// Appends requests to `batch` until `count` more are queued or the budget says stop.
    func enqueue(_ count: Int) {
        var k = 0
        while k < count && running.allowsMore(issued: issued) {
            let id = PingFrames.id(issued)
            PingFrames.append(id: id, to: &batch)
            sentAt[PingFrames.slot(of: id)] = monoNanos()
            issued += 1
            k += 1
        }
    }

    enqueue(depth)
    try connection.send(batch)
    while completed < issued {
        try connection.receive()
        var answered = 0
        while let id = try connection.takeFrame({ f throws(BenchError) in try PingFrames.pongID(f) }) {
            let now = monoNanos()
            latencies.record(now - sentAt[PingFrames.slot(of: id)])
            answered += 1
        }
        completed += answered
        batch.removeAll(keepingCapacity: true)
        enqueue(answered)
        if !batch.isEmpty { try connection.send(batch) }
    }
    let elapsed = monoNanos() - start

    return BenchResult(mode: "raw-pipelined", requests: completed, elapsedNanos: elapsed, latencies: latencies,
                       requestBytes: PingFrames.requestBytes, replyBytes: connection.lastFrameBytes,
                       connections: 1, inFlight: depth)
}
