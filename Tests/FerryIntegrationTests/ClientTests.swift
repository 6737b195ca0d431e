import Foundation
import Testing
import FerryClient
import FerryProtocol

/// FerryClient against a real ferryd on a temporary socket.
extension IntegrationTests {
@Suite struct ClientTests {
    @Test func helloPingDescribeStats() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket, clientName: "tests")
        defer { client.close() }
        #expect(client.protocolVersion == 1)
        #expect(client.serverName.hasPrefix("ferryd "))
        #expect(client.limits.maxFrameBytes == 4 * 1024 * 1024)
        #expect(client.operations == OperationCatalog.v1.map(\.name))
        #expect(client.limits.maxValueBytes == 16 * 1024 * 1024)
        _ = try await client.ping()
        let described = try await client.describe()
        let names = described["operations"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        #expect(names == client.operations)
        let ping = described["operations"]?.arrayValue?.first { $0["name"] == "ping" }
        #expect(ping?["args"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["delay_ms", "events"])
        let stats = try await client.stats()
        #expect(stats["pid"]?.intValue == Int64(daemon.pid))
        #expect(stats["ops"]?["ping"]?["requests"]?.intValue == 1)
        #expect(stats["ops"]?["hello"]?["requests"]?.intValue == 1)
        #expect(stats["connections"]?["open"]?.intValue == 1)
        #expect((stats["bytes"]?["in"]?.intValue ?? 0) > 0)
    }

    @Test func binaryBodiesEchoExactly() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let allBytes = (0...255).map { UInt8($0) }
        #expect(try await client.call("ping", body: allBytes).body == allBytes)
        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 7) }
        #expect(try await client.call("ping", body: big).body == big)
    }

    @Test func bodiesLargerThanAFrameArriveAsChunks() async throws {
        let daemon = try Daemon(["--max-frame-bytes", "65536"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let body = (0..<65_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let reply = try await client.call("ping", body: body)
        #expect(reply.body == body)
        #expect(reply.result["size"]?.intValue == 65_000, "a chunked reply carries its total size")
        var chunks = 0
        for try await item in client.stream("ping", body: body) {
            if case .event("chunk", let data, let part) = item {
                #expect(data["offset"]?.intValue == Int64(chunks * 61_432))
                chunks += 1
                #expect(!part.isEmpty)
            }
        }
        #expect(chunks == 1)
        // The first chunk says the whole size (a client makes room once); later ones do not repeat it.
        let three = (0..<150_000).map { UInt8(truncatingIfNeeded: $0 * 13) }
        var sizes: [Int64?] = []
        for try await item in client.stream("ping", body: three) {
            if case .event("chunk", let data, _) = item { sizes.append(data["size"]?.intValue) }
        }
        #expect(sizes == [150_000, nil])
        #expect(try await client.call("ping", body: three).body == three)
        // A request body over the frame limit goes up in continuation frames and comes back in chunks.
        let upload = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 * 11) }
        #expect(try await client.call("ping", body: upload).body == upload)
        _ = try await client.ping()
    }

    @Test func eventsStreamThenFinal() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        var items: [FerryStreamItem] = []
        for try await item in client.stream("ping", ["events": 3]) { items.append(item) }
        #expect(items == [
            .event(name: "tick", data: ["n": 0], body: []), .event(name: "tick", data: ["n": 1], body: []),
            .event(name: "tick", data: ["n": 2], body: []), .final(FerryReply(result: ["pong": true])),
        ])
    }

    @Test func concurrentCallsOnOneConnection() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for k in 0..<200 {
                group.addTask {
                    let body = Array("call \(k)".utf8)
                    // Later calls finish first: replies come back out of order and must still match by id.
                    let reply = try await client.call("ping", ["delay_ms": .int(Int64(200 - k) / 20)], body: body)
                    return reply.body == body
                }
            }
            for try await ok in group { #expect(ok) }
        }
    }

    @Test func taskCancellationCancelsTheRequest() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let started = ContinuousClock.now
        let task = Task { try await client.call("ping", ["delay_ms": 5000]) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("a cancelled call must throw")
        } catch let e as FerryError {
            #expect(e.code == .cancelled)
        }
        #expect(ContinuousClock.now - started < .seconds(3))
        // The server stopped the work: the request is counted as cancelled and no longer in flight.
        var stats = try await client.stats()
        for _ in 0..<50 where stats["errors"]?["cancelled"]?.intValue != 1 {
            try await Task.sleep(for: .milliseconds(20))
            stats = try await client.stats()
        }
        #expect(stats["errors"]?["cancelled"]?.intValue == 1)
        #expect(stats["requests"]?["in_flight"]?.intValue == 0, "nothing is left in flight")
    }

    /// Calls cancelled at every moment around their sending (before their waiter is there, between it and the
    /// write, after): none reaches the daemon after its `cancel`, which would leave it running there for seconds.
    @Test func callsCancelledAroundTheirSendingLeaveNothingRunning() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        for round in 0..<300 {
            let task = Task { try await client.call("ping", ["delay_ms": 5000]) }
            for _ in 0..<(round % 9) { await Task.yield() }
            task.cancel()
            await #expect(throws: FerryError.self) { _ = try await task.value }
        }
        var inFlight: Int64?
        for _ in 0..<100 {
            inFlight = try await client.stats()["requests"]?["in_flight"]?.intValue
            if inFlight == 0 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(inFlight == 0, "a request sent after its cancel is still running")
        _ = try await client.ping()
    }

    /// A task already cancelled when it calls: the cancellation handler ran before the call had a waiter, so the
    /// call itself sees it and ends, unsent.
    @Test func aCallFromACancelledTaskEndsAtOnce() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let started = ContinuousClock.now
        let task = Task { () async throws -> FerryReply in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.call("ping", ["delay_ms": 5000])
        }
        await #expect(throws: FerryError(.cancelled, "the calling task was cancelled")) { _ = try await task.value }
        #expect(ContinuousClock.now - started < .seconds(3))
        _ = try await client.ping()
    }

    @Test func deadlinesAnswerDeadlineExceeded() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        do {
            _ = try await client.call("ping", ["delay_ms": 3000], timeout: .milliseconds(100))
            Issue.record("expected deadline_exceeded")
        } catch let e as FerryError {
            #expect(e.code == .deadlineExceeded)
        }
        // A request that finishes in time is unaffected by its deadline.
        #expect(try await client.call("ping", ["delay_ms": 10], timeout: .seconds(5)).result["pong"] == true)
        let stats = try await client.stats()
        #expect(stats["errors"]?["deadline_exceeded"]?.intValue == 1)
    }

    @Test func errorsAreTypedAndTheConnectionSurvives() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        await #expect(throws: FerryError(.unimplemented, "unknown operation \"nope\"", details: ["op": "nope"])) {
            try await client.call("nope")
        }
        do {
            _ = try await client.call("ping", ["delay_ms": -1])
        } catch let e as FerryError {
            #expect(e.code == .invalidArgument)
        }
        await #expect(throws: FerryError.self) { try await client.call("hello", ["versions": [1]]) }
        _ = try await client.ping()
    }

    /// Requests the server would reject as protocol errors fail locally, so one bad call cannot take down the
    /// connection that other calls share.
    @Test func oversizedOrTooDeepArgumentsFailLocally() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let slow = Task { try await client.call("ping", ["delay_ms": 300]) }
        var deep: JSONValue = [1]
        for _ in 0..<32 { deep = [deep] }
        await #expect(throws: FerryError.self) { try await client.call("ping", ["x": deep]) }
        let huge = JSONValue.string(String(repeating: "a", count: 1_100_000))
        await #expect(throws: FerryError.self) { try await client.call("ping", ["x": huge]) }
        #expect(try await slow.value.result["pong"] == true, "the other call was not hurt")
        _ = try await client.ping()
    }

    @Test func connectingWithoutADaemonIsUnavailable() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        do {
            _ = try await FerryClient.connect(path: dir.path + "/none.sock")
            Issue.record("expected unavailable")
        } catch let e as FerryError {
            #expect(e.code == .unavailable)
            #expect(e.message.contains("none.sock"))
        }
    }

    @Test func daemonDeathFailsCallsInFlight() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        let task = Task { try await client.call("ping", ["delay_ms": 10_000]) }
        try await Task.sleep(for: .milliseconds(100))
        daemon.signal(SIGKILL)
        do {
            _ = try await task.value
            Issue.record("expected unavailable")
        } catch let e as FerryError {
            #expect(e.code == .unavailable)
        }
        await #expect(throws: FerryError.self) { try await client.ping() }
    }
}
}
