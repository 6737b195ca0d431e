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
            let value = Self.patterned(Self.sixteenMiB)
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
            let buffered = try #require(stats["memory"]?["accounts"]?["replies"]?.intValue)
            #expect(buffered <= 2 * 1024 * 1024, "reply bytes buffered for the client that does not read: \(buffered)")

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

        /// A value deleted (and its file unreferenced) while a slow reply reads it still arrives whole: the file is
        /// pinned from the lookup until the reply is done, then removed.
        @Test func aValueDeletedWhileItStreamsArrivesWholeAndItsFileGoesAfter() async throws {
            let (daemon, client) = try await Self.diskOnlyDaemon()
            defer { daemon.stop(); client.close() }
            let value = Self.patterned(4 * 1024 * 1024)
            try await client.cacheSet("ahead", [UInt8](repeating: 1, count: 4 * 1024 * 1024))
            try await client.cacheSet("moving", value)
            // "moving" waits behind "ahead" on this connection: its file is not even open when the delete lands.
            let raw = try RawSocket(daemon.socket)
            try raw.hello()
            try raw.send(FrameEncoder.encode(json: ["id": 6, "op": "cache.get", "args": ["key": "ahead"]])
                         + FrameEncoder.encode(json: ["id": 7, "op": "cache.get", "args": ["key": "moving"]]))
            let (first, firstBody) = try #require(try raw.readFrame())
            #expect(ReplyEnvelope.parse(first) == .event(id: 6, name: "chunk", data: ["offset": 0, "size": 4_194_304]), "\(first)")
            #expect(try await client.cacheDelete("moving"))
            #expect(try await client.cacheGet("moving") == nil)
            let rest = try Self.readReplies(raw, count: 2, begun: [6: firstBody])
            #expect(rest[6]?.body.count == 4 * 1024 * 1024)
            let reply = try #require(rest[7])
            let got = reply.body
            // Compared by sum: a failed == of two 4 MiB arrays makes the test library diff them for minutes.
            #expect(reply.error == nil && got.count == value.count && Checksum64.of(got) == Checksum64.of(value),
                    "\(String(describing: reply.error)), \(got.count) bytes")
            try await client.cacheDelete("ahead")
            var left = Self.blobFiles(daemon.dir.path + "/cache")
            for _ in 0..<200 where !left.isEmpty {
                try await Task.sleep(for: .milliseconds(10))
                left = Self.blobFiles(daemon.dir.path + "/cache")
            }
            #expect(left.isEmpty, "the unreferenced file outlived its reply: \(left)")
        }

        /// Damage found after the first piece went out fails the reply `unavailable` (the client drops what it got);
        /// the entry is dropped and counted, and the next get is a miss.
        @Test func damageFoundMidStreamFailsTheReplyAndDropsTheEntry() async throws {
            let (daemon, client) = try await Self.diskOnlyDaemon()
            defer { daemon.stop(); client.close() }
            let value = [UInt8](repeating: 9, count: 2 * 1024 * 1024)
            try await client.cacheSet("worn", value)
            let files = Self.blobFiles(daemon.dir.path + "/cache")
            try #require(files.count == 1)
            let fd = open(files[0], O_WRONLY)
            var flipped: UInt8 = 8
            #expect(pwrite(fd, &flipped, 1, off_t(value.count - 10)) == 1)
            close(fd)
            do {
                // The byte path (no body_fd): a descriptor's hand-out checks the whole file first (BodyDescriptorTests).
                _ = try await client.call(.cacheGet, ["key": "worn"])
                Issue.record("a damaged value was served")
            } catch let error as WireError {
                #expect(error.code == .unavailable && error.details?["damaged"] == .bool(true), "\(error)")
            }
            #expect(try await client.cacheGet("worn") == nil)
            #expect(try await client.stats()["cache"]?["damaged"]?.intValue == 1)
        }

        /// Bodies stream from the origin through a spool file: four 30 MB downloads at once hold a few buffers of
        /// the daemon's memory each, not their bodies (before issue 11 they held 120 MB together, 1 GiB for four
        /// 200 MiB ones).
        @Test func fourLargeDownloadsAtOnceHoldAFewBuffersEach() async throws {
            let origin = try OriginServer()
            defer { origin.stop() }
            let daemon = try Daemon()
            defer { daemon.stop() }
            let client = try await FerryClient.connect(path: daemon.socket)
            let watcher = try await FerryClient.connect(path: daemon.socket)
            defer { client.close(); watcher.close() }
            let rssBefore = try await watcher.stats()["memory"]?["rss"]?.intValue ?? 0
            let size = 30_000_000
            let downloads = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for n in 0..<4 {
                        group.addTask {
                            try await client.fetch(FetchRequest(origin.url("/slow?size=\(size)&chunks=30&interval_ms=40&cc=no-store&n=\(n)"))).body.count
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
            }
            var peak = 0
            var rssPeak: Int64 = 0
            for _ in 0..<400 {
                let stats = try await watcher.stats()
                peak = max(peak, stats["memory"]?["accounts"]?["fetch_bodies"]?.intValue.map(Int.init) ?? 0)
                rssPeak = max(rssPeak, stats["memory"]?["rss"]?.intValue ?? 0)
                if stats["fetch"]?["transfers_active"] == 0 && peak > 0 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            let sizes = try await downloads.value
            #expect(sizes == [size, size, size, size])
            #expect(peak > 0 && peak <= 4 * 512 * 1024, "bodies in memory peaked at \(peak) bytes")
            #expect(rssPeak - rssBefore < 48 * 1024 * 1024, "the daemon grew by \(rssPeak - rssBefore) bytes")
        }

        /// A client that stops reading its downloads holds their spool files, not the daemon's memory; once it has
        /// read nothing for two seconds and 8 downloads wait for it, more are refused `resource_exhausted` (requests
        /// it sends after that are not even read: backpressure). It still gets the 8, whole, when it reads.
        @Test func aClientThatStopsReadingItsDownloadsIsRefusedPastItsCap() async throws {
            let origin = try OriginServer()
            defer { origin.stop() }
            let daemon = try Daemon()
            defer { daemon.stop() }
            let raw = try RawSocket(daemon.socket)
            try raw.hello()
            let size = 4_000_000
            // Ten at once: eight answer at once, two only after three seconds, when the client has stalled.
            let frames = (0..<10).flatMap { n in
                let delay = n < 8 ? "" : "&delay_ms=3000"
                return FrameEncoder.encode(json: ["id": .int(Int64(10 + n)), "op": "fetch",
                                                  "args": ["url": .string(origin.url("/r?size=\(size)&cc=no-store&n=\(n)\(delay)"))]])
            }
            try raw.send(frames)
            let watcher = try await FerryClient.connect(path: daemon.socket)
            defer { watcher.close() }
            try await Task.sleep(for: .milliseconds(2500))
            let buffers = try await watcher.stats()["memory"]?["buffers"]?.intValue ?? -1
            #expect(buffers >= 0 && buffers < 8 * 1024 * 1024, "the unread downloads hold \(buffers) bytes of buffers")
            for _ in 0..<500 {
                if try await watcher.stats()["fetch"]?["transfers_active"] == 0 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            let replies = try Self.readReplies(raw, count: 10)
            for n in 0..<8 {
                #expect(replies[UInt64(10 + n)]?.error == nil && replies[UInt64(10 + n)]?.body.count == size, "download \(n)")
            }
            #expect(replies[18]?.error?.code == .resourceExhausted, "\(String(describing: replies[18]?.error))")
            #expect(replies[19]?.error?.code == .resourceExhausted)
        }

        /// A ferryd whose memory tier keeps nothing, so every value is read from disk; and a client of it.
        static func diskOnlyDaemon() async throws -> (Daemon, FerryClient) {
            let daemon = try Daemon(["--memory-limit", "0"])
            do {
                return (daemon, try await FerryClient.connect(path: daemon.socket))
            } catch {
                daemon.stop()
                throw error
            }
        }

        /// Mostly zeros (cheap to make in a debug build), with a byte every 509 that says where it is: a piece out
        /// of place changes the sum.
        static func patterned(_ count: Int) -> [UInt8] {
            var value = [UInt8](repeating: 0, count: count)
            for i in stride(from: 0, to: count, by: 509) { value[i] = UInt8(truncatingIfNeeded: i >> 9) }
            return value
        }

        static func blobFiles(_ cacheDir: String) -> [String] {
            (FileManager.default.enumerator(atPath: cacheDir + "/blobs")?.allObjects as? [String] ?? [])
                .map { cacheDir + "/blobs/" + $0 }
                .filter { (try? FileManager.default.attributesOfItem(atPath: $0)[.type] as? FileAttributeType) == .typeRegular }
        }

        /// Reads `count` replies, joining each one's chunk events in offset order.
        static func readReplies(_ raw: RawSocket, count: Int, begun: [UInt64: [UInt8]] = [:]) throws -> [UInt64: (error: WireError?, body: [UInt8])] {
            var bodies = begun
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
