import Foundation
import Testing
import FerryClient
import FerryProtocol

/// `FerryClient.executor`: tasks that prefer it run on the connection's reader thread, between its reads. What
/// must hold: every call gets its own reply; large bodies in both directions at once do not deadlock the thread that
/// both reads and writes; a stream consumed there still gets read credit; cancellation works; and a task preferring
/// the executor of a closed connection still runs (to see its calls fail).
extension IntegrationTests {
@Suite(.timeLimit(.minutes(2))) struct ClientExecutorTests {
    /// The thread a task runs on, as a number (pthread_t).
    static func thread() -> UInt { UInt(pthread_self()) }

    @Test func tasksOnTheExecutorRunOnTheReaderThreadAndGetTheirOwnReplies() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let threads = try await withThrowingTaskGroup(of: Set<UInt>.self) { group in
            for task in 0..<40 {
                group.addTask(executorPreference: client.executor) {
                    var seen: Set<UInt> = []
                    for round in 0..<50 {
                        // A mix of sizes: the 16-request write, and large requests queued (never written directly
                        // from this thread).
                        let size = (task * 50 + round) % 97 == 0 ? 300_000 : (task + round) % 5
                        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ task &* 31 &+ round) }
                        let echoed = try await client.call("ping", body: body).body
                        #expect(echoed == body)
                        seen.insert(ClientExecutorTests.thread())
                    }
                    return seen
                }
            }
            return try await group.reduce(into: Set<UInt>()) { $0.formUnion($1) }
        }
        #expect(threads.count == 1, "every call resumed on the one reader thread, not on the global pool")
        // The same calls from tasks on the global executor share no thread with it.
        let elsewhere = try await Task { () async throws -> UInt in
            _ = try await client.ping()
            return ClientExecutorTests.thread()
        }.value
        #expect(!threads.contains(elsewhere))
    }

    /// The README's and `FerryClient.executor`'s example, as written there.
    @Test func theDocumentedBatchOfReads() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let keys = (0..<300).map { "k\($0)" }
        for key in keys where key.hasSuffix("7") { #expect(try await client.cacheSet(key, Array(key.utf8))) }
        let values = try await withTaskExecutorPreference(client.executor) {
            try await withThrowingTaskGroup(of: CachedValue?.self) { group in
                for key in keys { group.addTask { try await client.cacheGet(key) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(values.count == 300)
        #expect(Set(values.compactMap { $0.map { String(decoding: $0.bytes, as: UTF8.self) } }) == Set(keys.filter { $0.hasSuffix("7") }))
    }

    /// Eight tasks on the reader thread send 2 MB requests while 2 MB replies come back: the thread that writes is
    /// the one that must read, so its writes take what the socket accepts and wait for room without blocking.
    @Test func largeBodiesBothWaysDoNotDeadlockTheReaderThread() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket, bodyFiles: false)
        defer { client.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask(executorPreference: client.executor) {
                    for round in 0..<4 {
                        var body = [UInt8](repeating: UInt8(truncatingIfNeeded: task &* 16 &+ round), count: 2_000_000)
                        for k in stride(from: 0, to: body.count, by: 4093) { body[k] = UInt8(truncatingIfNeeded: k &+ task) }
                        let echoed = try await client.call("ping", body: body, timeout: .seconds(30)).body
                        #expect(echoed == body)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// A 12 MB value streamed in 64 KiB chunks to a consumer on the reader thread: more than the 8 MiB the reader
    /// reads ahead, so it must run the consumer instead of waiting for it.
    @Test func aStreamConsumedOnTheReaderThreadGetsItsCredit() async throws {
        let daemon = try Daemon(["--max-frame-bytes", "65536"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket, bodyFiles: false)
        defer { client.close() }
        var value = [UInt8](repeating: 7, count: 12_000_000)
        for k in stride(from: 0, to: value.count, by: 997) { value[k] = UInt8(truncatingIfNeeded: k >> 10) }
        #expect(try await client.cacheSet("big", value))
        let joined = try await Task(executorPreference: client.executor) { () async throws -> [UInt8] in
            var bytes: [UInt8] = []
            for try await item in client.stream(.cacheGet, ["key": "big"]) {
                switch item {
                case .event("chunk", _, let part):
                    bytes += part
                    await Task.yield()
                case .final(let reply): bytes += reply.body  // the last part (PROTOCOL.md §5)
                default: break
                }
            }
            return bytes
        }.value
        #expect(joined.count == value.count)
        #expect(joined == value, "the same bytes")
    }

    @Test func aCancelledCallOnTheExecutorEndsAtOnce() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let slow = Task(executorPreference: client.executor) { try await client.call("ping", ["delay_ms": 30_000]) }
        try await Task.sleep(for: .milliseconds(100))
        slow.cancel()
        await #expect(throws: FerryError.self) { _ = try await slow.value }
        _ = try await Task(executorPreference: client.executor) { try await client.ping() }.value
    }

    /// Tasks waiting on the executor when the connection closes, and tasks started on it afterwards, run (on the
    /// global executor) and see the connection's error.
    @Test func theExecutorOfAClosedConnectionStillRunsTasks() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        let waiting = Task(executorPreference: client.executor) { try await client.call("ping", ["delay_ms": 30_000]) }
        try await Task.sleep(for: .milliseconds(100))
        client.close()
        await #expect(throws: FerryError.self) { _ = try await waiting.value }
        let later = Task(executorPreference: client.executor) { () async -> String in
            do {
                _ = try await client.ping()
                return "answered"
            } catch {
                return "\(error)"
            }
        }
        #expect(await later.value != "answered")
    }
}
}
