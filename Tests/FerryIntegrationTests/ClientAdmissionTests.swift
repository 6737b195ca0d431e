import Foundation
import Testing
import FerryClient
import FerryProtocol

/// More concurrent calls than the server's `max_in_flight` on one connection: the client holds the extra ones until
/// replies free slots, instead of letting the server refuse them with `resource_exhausted`.
extension IntegrationTests {
@Suite(.timeLimit(.minutes(2))) struct ClientAdmissionTests {
    static func refusals(_ client: FerryClient) async throws -> Int64 {
        try await client.stats()["errors"]?["resource_exhausted"]?.intValue ?? 0
    }

    @Test func callsPastTheLimitWaitForASlot() async throws {
        let daemon = try Daemon(["--max-in-flight", "4"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        #expect(client.limits.maxInFlight == 4)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for k in 0..<60 {
                group.addTask {
                    let body = Array("call \(k)".utf8)
                    let echoed = try await client.call("ping", ["delay_ms": 10], body: body).body
                    #expect(echoed == body)
                }
            }
            try await group.waitForAll()
        }
        // The same from tasks on the reader thread, where held requests leave from the reader itself.
        try await withTaskExecutorPreference(client.executor) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for k in 0..<60 {
                    group.addTask {
                        let echoed = try await client.call("ping", body: [UInt8(k)]).body
                        #expect(echoed == [UInt8(k)])
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(try await Self.refusals(client) == 0, "nothing was refused for being past the limit")
    }

    /// A held call cancelled before it was sent ends at once; the slots stay counted right afterwards.
    @Test func aHeldCallCanBeCancelled() async throws {
        let daemon = try Daemon(["--max-in-flight", "1"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let first = Task { try await client.call("ping", ["delay_ms": 400]) }
        try await Task.sleep(for: .milliseconds(50))
        let held = Task { try await client.call("ping", ["delay_ms": 5000]) }
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        held.cancel()
        await #expect(throws: FerryError(.cancelled, "the calling task was cancelled")) { _ = try await held.value }
        #expect(ContinuousClock.now - started < .seconds(2))
        _ = try await first.value
        for k in 0..<5 { #expect(try await client.call("ping", body: [UInt8(k)]).body == [UInt8(k)]) }
        #expect(try await Self.refusals(client) == 0)
    }
}
}
