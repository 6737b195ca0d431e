import FerryClient
import FerryProtocol
import Synchronization

/// `client`: the path an application takes — `FerryClient` (async/await) with `tasks` concurrent tasks calling
/// `ping()` in a loop on one shared connection. Set beside `raw-pipelined` (same connection count, similar number
/// in flight) it shows what the library adds per call: envelope building through `JSONValue`, a lock for the write,
/// the reader thread, continuation resumption and task scheduling.
///
/// `onReader`: the tasks prefer the client's `executor`, so a call resumes on the thread that read its reply.
func runClient(socket: String, budget: Budget, tasks: Int, onReader: Bool) async throws -> BenchResult {
    let client = try await FerryClient.connect(path: socket, clientName: "ferry-bench")
    defer { client.close() }
    guard tasks <= client.limits.maxInFlight else {
        throw BenchError("--tasks \(tasks) exceeds ferryd's max_in_flight of \(client.limits.maxInFlight)")
    }
    let tickets = Tickets()

    let start = monoNanos()
    let running = budget.started(at: start)
    let latencies = try await withThrowingTaskGroup(of: LatencySamples.self) { group in
        let calls: @Sendable () async throws -> LatencySamples = {
            var samples = LatencySamples(expected: 1 << 14)
            while running.count == nil ? running.allowsMore(issued: 0)
                    : running.allowsMore(issued: tickets.next.add(1, ordering: .relaxed).oldValue) {
                samples.record(nanoseconds(try await client.ping()))
            }
            return samples
        }
        for _ in 0..<tasks {
            // Not `addTask(executorPreference: nil)` for the default: a task made so carries a preference record
            // all the same, and the runtime then takes the task's status lock at every resumption (perf: 5 % of
            // the client), which an application's plain `addTask` does not pay.
            if onReader {
                group.addTask(executorPreference: client.executor, operation: calls)
            } else {
                group.addTask(operation: calls)
            }
        }
        var all = LatencySamples()
        for try await samples in group { all.merge(samples) }
        return all
    }
    let elapsed = monoNanos() - start

    // The library writes the same envelope through JSONValue. Its ids count up from 2 (1 was hello), so its frames
    // are at most the size of the raw modes' 7-digit-id frames; report that size, as they do.
    let frame = FrameEncoder.encode(json: RequestEnvelope(id: PingFrames.firstID, op: "ping").json)
    let reply = FrameEncoder.encode(json: ReplyEnvelope.result(id: PingFrames.firstID, ["pong": true]).json)
    return BenchResult(mode: onReader ? "client-executor" : "client", requests: latencies.count, elapsedNanos: elapsed, latencies: latencies,
                       requestBytes: frame.count, replyBytes: reply.count, connections: 1, inFlight: tasks)
}

/// The ticket counter that spends a `--count` budget across tasks. A class because `Atomic` cannot be copied into
/// the tasks' closures.
final class Tickets: Sendable {
    let next = Atomic<Int>(0)
}

private func nanoseconds(_ d: Duration) -> UInt64 {
    let (seconds, attoseconds) = d.components
    return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
}
