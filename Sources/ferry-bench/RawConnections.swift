#if canImport(Glibc)
import Glibc
#endif

/// `raw-conns`: `count` connections, each with one request in flight: many independent callers, as when every
/// process of a build talks to the daemon at once. Unlike `raw-pipelined`, ferryd gets at most one frame per
/// connection per read, so this measures its per-connection event handling (epoll readiness, one read and one write
/// per request) rather than batched parsing.
///
/// Driven by one thread with `poll()` over all the sockets, not a thread per connection. The benchmark is pinned
/// to one core (ferryd to the other) on a 2-core machine: 50 blocking threads on that core would cost a context
/// switch (and a scheduler decision) per reply on the generator's side, and the run would measure the client's
/// scheduler as much as ferryd. One poll loop handles every socket that became readable in a single wake-up, which
/// is what ferryd's own libuv loop does on the other side. The mode `raw-conns-threads` runs the thread-per-connection
/// variant so the difference can be seen rather than taken on trust (on the 2-core development VM: 300–320 k
/// requests/s with this loop, 150–210 k with 50 threads, ferryd's core busy in both).
func runRawConnections(socket: String, budget: Budget, count: Int) throws(BenchError) -> BenchResult {
    var connections: [RawConnection] = []
    for _ in 0..<count { connections.append(try RawConnection(path: socket)) }
    var pollSet = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    var sentAt = [UInt64](repeating: 0, count: count)
    var sequence = [Int](repeating: 0, count: count)
    var latencies = LatencySamples()
    var frame: [UInt8] = []
    frame.reserveCapacity(64)

    let start = monoNanos()
    let running = budget.started(at: start)
    var issued = 0
    var completed = 0

    /// Sends the next ping on connection `c` when the budget allows one.
    func sendNext(_ c: Int) throws(BenchError) {
        guard running.allowsMore(issued: issued) else { return }
        frame.removeAll(keepingCapacity: true)
        PingFrames.append(id: PingFrames.id(sequence[c]), to: &frame)
        sentAt[c] = monoNanos()
        try connections[c].send(frame)
        issued += 1
    }

    for c in 0..<count { try sendNext(c) }
    while completed < issued {
        let ready = poll(&pollSet, nfds_t(count), -1)
        if ready < 0 {
            if errno == EINTR { continue }
            throw BenchError("poll(): \(String(cString: strerror(errno)))")
        }
        for c in 0..<count where pollSet[c].revents != 0 {
            let connection = connections[c]
            try connection.receive()
            while let id = try connection.takeFrame({ f throws(BenchError) in try PingFrames.pongID(f) }) {
                latencies.record(monoNanos() - sentAt[c])
                guard id == PingFrames.id(sequence[c]) else {
                    throw BenchError("connection \(c) sent ping \(PingFrames.id(sequence[c])), got the reply to \(id)")
                }
                completed += 1
                sequence[c] += 1
                try sendNext(c)
            }
        }
    }
    let elapsed = monoNanos() - start

    return BenchResult(mode: "raw-conns", requests: completed, elapsedNanos: elapsed, latencies: latencies,
                       requestBytes: PingFrames.requestBytes, replyBytes: connections[0].lastFrameBytes,
                       connections: count, inFlight: 1)
}
