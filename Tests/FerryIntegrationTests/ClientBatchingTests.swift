import Foundation
import Testing
@testable import FerryClient
import FerryProtocol

/// The client's request batching (`Outbox`) against a real ferryd: requests queued while resumed calls are still to
/// run are written by the last of them, or by the reader thread when one of them does not run.
extension IntegrationTests {
@Suite struct ClientBatchingTests {
    /// Many tasks on one connection, every call answered with its own reply (batches keep requests whole and in
    /// order; a mix of sizes crosses the 16-request flush and the direct write of large requests).
    @Test func concurrentCallsOnOneConnectionGetTheirOwnReplies() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<40 {
                group.addTask {
                    for round in 0..<50 {
                        let size = (task * 50 + round) % 97 == 0 ? 300_000 : (task + round) % 5
                        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ task &* 31 &+ round) }
                        let echoed = try await client.call("ping", body: body).body
                        #expect(echoed == body)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Calls in flight on the global executor read their replies themselves: the last call of a batch reads the
    /// next one in the reader thread's place (`ReadBaton`), and every call still gets its own reply, also with
    /// large replies read straight into their buffers and streams consumed meanwhile.
    @Test func theLastCallOfABatchReadsTheNextRepliesAndEveryCallGetsItsOwn() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<50 {
                group.addTask {
                    for round in 0..<200 {
                        let size = (task + round) % 151 == 0 ? 200_000 : (task &* 7 + round) % 13
                        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ task &+ round) }
                        let echoed = try await client.call("ping", body: body).body
                        #expect(echoed == body)
                    }
                }
            }
            group.addTask {
                for _ in 0..<20 {
                    var events = 0
                    for try await item in client.stream("ping", ["events": 3]) {
                        if case .event = item { events += 1 }
                    }
                    #expect(events == 3)
                }
            }
            try await group.waitForAll()
        }
        let baton = client.readBaton
        #expect(baton.takes > 0, "no call read in the reader thread's place")
        #expect(baton.holder == .thread || baton.holder == .lent)
    }

    /// A call resumed onto an executor that does not run it keeps its place among the calls a batch waits for; the
    /// requests queued behind it still leave, written once the reader finds them waiting.
    @Test func aStalledCallerDoesNotHoldBackOtherCalls() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let gate = GatedExecutor()
        defer { gate.stop() }
        let stalled = Task(executorPreference: gate) { try await client.call("ping", ["delay_ms": 200]) }
        try await Task.sleep(for: .milliseconds(50))
        gate.hold()
        // The stalled call's reply comes and is resumed onto the held executor: its task cannot run.
        try await Task.sleep(for: .milliseconds(400))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for k in 0..<5 {
                group.addTask {
                    let echoed = try await client.call("ping", body: [UInt8(k)], timeout: .seconds(2)).body
                    #expect(echoed == [UInt8(k)])
                }
            }
            try await group.waitForAll()
        }
        gate.release()
        let pong = try await stalled.value.result["pong"]
        #expect(pong == true)
    }


    /// A bad frame ends the connection whoever reads it, the reader thread or a call in its place: every call still
    /// waiting fails with `protocol_error` at once, not left waiting on a socket the peer keeps open and silent.
    @Test(.timeLimit(.minutes(1))) func aBadFrameEndsTheConnectionWhoeverReadsIt() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try BadFrameDaemon(path: dir.path + "/bad.sock", badAfter: 5_000)
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.path)
        defer { client.close() }
        let started = ContinuousClock.now
        let (answered, errors) = try await withThrowingTaskGroup(of: (Int, FerryError?).self) { group in
            for _ in 0..<40 {
                group.addTask {
                    var ok = 0
                    while ContinuousClock.now - started < .seconds(20) {
                        do { _ = try await client.call("ping") } catch let e as FerryError { return (ok, e) }
                        ok += 1
                    }
                    return (ok, nil)
                }
            }
            return try await group.reduce(into: (0, [FerryError?]())) { $0.0 += $1.0; $0.1.append($1.1) }
        }
        #expect(answered == 5_000)
        let codes = errors.map { $0?.code }
        #expect(codes == Array(repeating: .protocolError, count: 40), "every call ends with the bad frame's error")
        #expect(ContinuousClock.now - started < .seconds(10), "calls waited on a connection already known bad")
    }
}
}

/// A task executor with its own thread that can be held: jobs enqueued meanwhile wait for `release`.
final class GatedExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var held = false
    private var stopped = false

    init() {
        let thread = Thread { [unowned self] in run() }
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        locked { jobs.append(job) }
    }

    func hold() { locked { held = true } }
    func release() { locked { held = false } }
    func stop() { locked { stopped = true } }

    private func locked(_ change: () -> Void) {
        condition.lock()
        change()
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while !stopped && (held || jobs.isEmpty) { condition.wait() }
            if stopped {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
