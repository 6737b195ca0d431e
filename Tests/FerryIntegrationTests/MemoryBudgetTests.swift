import Foundation
import Testing
import FerryBytes
import FerryClient
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

/// One memory budget (issue 10, item 1): a client that asks for large replies and never reads them stalls itself,
/// not the daemon, against a real ferryd.
extension IntegrationTests {
    @Suite struct MemoryBudgetTests {
        static let sixteenMiB = 16 * 1024 * 1024

        /// 64 pipelined `cache.get`s of a 16 MiB value, never read: before, the daemon read and buffered every reply
        /// whole (+2 GiB). The value on disk only (`--memory-limit 0`) and in the memory tier (the default).
        @Test(arguments: [["--memory-limit", "0"], []])
        func aClientThatNeverReadsLargeValuesCannotGrowTheDaemon(_ flags: [String]) async throws {
            let daemon = try Daemon(flags)
            defer { daemon.stop() }
            let client = try await FerryClient.connect(path: daemon.socket)
            defer { client.close() }
            var value = [UInt8](repeating: 0, count: Self.sixteenMiB)
            for i in stride(from: 0, to: value.count, by: 509) { value[i] = UInt8(truncatingIfNeeded: i >> 9) }  // pieces out of place show
            try await client.cacheSet("big", value)
            try await client.cacheSet("small", Array("bystander".utf8))
            let before = rssKiB(daemon.pid)

            let attacker = try RawSocket(daemon.socket)
            try attacker.hello()
            var frames: [UInt8] = []
            for n in 0..<64 { frames += FrameEncoder.encode(json: ["id": .int(Int64(100 + n)), "op": "cache.get", "args": ["key": "big"]]) }
            try attacker.send(frames)

            // The bystander is served all along, and the daemon does not grow with the replies it owes.
            var peak = before
            for _ in 0..<60 {
                _ = try await client.ping()
                #expect(try await client.cacheGet("small")?.bytes == Array("bystander".utf8))
                peak = max(peak, rssKiB(daemon.pid))
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(peak - before < 48 * 1024, "ferryd grew by \(peak - before) KiB for 64 unread replies of 16 MiB (\(flags))")
            let stats = try await client.stats()
            #expect(stats["connections"]?["open"] == 2, "\(stats)")

            // Once it reads, it gets its replies whole and exact (the first few; then it leaves mid-reply).
            let replies = try Self.readReplies(attacker, count: 3)
            let sum = Checksum64.of(value)
            for n in 0..<3 {
                let reply = try #require(replies[UInt64(100 + n)], "reply \(100 + n)")
                #expect(reply.error == nil && reply.body.count == value.count && Checksum64.of(reply.body) == sum,
                        "reply \(100 + n): \(String(describing: reply.error)), \(reply.body.count) bytes")
            }
            shutdown(attacker.fd, Int32(SHUT_RDWR))  // gone in the middle of its replies
            try await client.cacheDelete("big")
            #expect(try await client.cacheGet("big") == nil)
            #expect(try await client.ping() > .zero, "still serving after a client left in the middle of 61 replies")
        }

        /// Reads `count` replies, joining each one's chunk events in offset order.
        static func readReplies(_ raw: RawSocket, count: Int) throws -> [UInt64: (error: WireError?, body: [UInt8])] {
            var bodies: [UInt64: [UInt8]] = [:]
            var done: [UInt64: (error: WireError?, body: [UInt8])] = [:]
            while done.count < count, let (json, body) = try raw.readFrame() {
                guard let reply = ReplyEnvelope.parse(json) else { throw HarnessError("not a reply: \(json)") }
                switch reply {
                case .event(let id, let name, let data) where name == EventName.chunk.rawValue:
                    #expect(data["offset"] == .int(Int64(bodies[id]?.count ?? 0)), "chunks of \(id) in order")
                    bodies[id, default: []] += body
                case .event:
                    continue
                case .result(let id, _):
                    done[id] = (nil, (bodies.removeValue(forKey: id) ?? []) + body)
                case .error(let id, let e):
                    bodies[id] = nil
                    done[id] = (e, [])
                }
            }
            return done
        }
    }
}
