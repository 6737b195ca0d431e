#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// `raw-conns-threads`: the same load as `raw-conns` (`count` connections, one request in flight each), driven by
/// one blocking pthread per connection instead of a poll loop. Kept as a comparison point only: on the 2-core
/// bench machine the generator's threads share one core, so each reply costs a thread wake-up there; see
/// RawConnections.swift for why `poll()` is the default.
func runRawConnectionThreads(socket: String, budget: Budget, count: Int) throws(BenchError) -> BenchResult {
    // Connect (and say hello) before the clock starts; each connection then belongs to its thread alone.
    var handoffs: [Handoff] = []
    for _ in 0..<count { handoffs.append(Handoff(try RawConnection(path: socket))) }
    let requestBytes = PingFrames.requestBytes
    let shared = SharedOutcome()

    let start = monoNanos()
    let running = budget.started(at: start)
    let threads = handoffs.map { handoff in
        spawnJoinableThread {
            let connection = handoff.connection
            var samples = LatencySamples(expected: 1 << 14)
            var frame: [UInt8] = []
            var done = 0
            do throws(BenchError) {
                // A shared ticket counter spends a `--count` budget across threads; duration mode needs only the clock.
                while running.count == nil ? running.allowsMore(issued: 0)
                        : running.allowsMore(issued: shared.tickets.add(1, ordering: .relaxed).oldValue) {
                    let id = PingFrames.id(done)
                    frame.removeAll(keepingCapacity: true)
                    PingFrames.append(id: id, to: &frame)
                    let sent = monoNanos()
                    try connection.send(frame)
                    let answered = try connection.nextFrame { f throws(BenchError) in try PingFrames.pongID(f) }
                    samples.record(monoNanos() - sent)
                    guard answered == id else { throw BenchError("sent ping \(id), got the reply to \(answered)") }
                    done += 1
                }
            } catch {
                shared.outcome.withLock { $0.error = $0.error ?? error }
            }
            shared.outcome.withLock {
                $0.samples.merge(samples)
                $0.requests += done
                $0.replyBytes = max($0.replyBytes, connection.lastFrameBytes)
            }
        }
    }
    for t in threads { pthread_join(t, nil) }
    let elapsed = monoNanos() - start

    let outcome = shared.outcome.withLock { $0 }
    if let error = outcome.error { throw error }
    return BenchResult(mode: "raw-conns-threads", requests: outcome.requests, elapsedNanos: elapsed,
                       latencies: outcome.samples, requestBytes: requestBytes,
                       replyBytes: outcome.replyBytes, connections: count, inFlight: 1)
}

/// What the threads share: the ticket counter of a `--count` budget and what they measured. A class because
/// `Atomic` and `Mutex` cannot be copied into the threads' closures.
private final class SharedOutcome: Sendable {
    struct Totals {
        var samples = LatencySamples()
        var requests = 0
        var replyBytes = 0
        var error: BenchError?
    }
    let tickets = Atomic<Int>(0)
    let outcome = Mutex(Totals())
}

/// Carries a connection to the one thread that will use it. `RawConnection` is not `Sendable` (its decoder is not
/// thread-safe); handing it over once, with the creating thread never touching it again, is safe.
private final class Handoff: @unchecked Sendable {
    let connection: RawConnection
    init(_ connection: RawConnection) { self.connection = connection }
}

/// Starts a joinable pthread running `body`. Not a Swift `Task`: the point is one blocking OS thread per
/// connection, which the cooperative pool (one thread per core) would not give.
private func spawnJoinableThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let arg = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, arg)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    return thread
}
