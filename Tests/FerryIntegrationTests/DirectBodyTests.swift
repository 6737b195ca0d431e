import Foundation
import Testing
import FerryClient
import FerryProtocol

/// FerryClient receives the rest of a large reply frame straight into its call's buffer
/// (`ClientConnection+DirectBody`): every body must arrive whole and in order whatever the sizes, the interleaving
/// of several calls' chunks, or a call cancelled while its body is arriving.
extension IntegrationTests {
@Suite struct DirectBodyTests {
    static let sizes = [70_000, 5, 262_144, 262_145, 65_536, 200_000, 1_000_000, 3, 131_071, 4_000_000, 10_000_000]

    static func value(_ k: Int, _ n: Int) -> [UInt8] {
        (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ k &* 7 &+ $0 >> 9) }
    }

    /// A daemon holding a value of every size under `v0`, `v1`, …, and a client that takes bodies through the
    /// socket (one that takes descriptors would get the largest as files).
    static func storedValues() async throws -> (Daemon, FerryClient, [[UInt8]]) {
        let daemon = try Daemon()
        do {
            let client = try await FerryClient.connect(path: daemon.socket, bodyFiles: false)
            let values = sizes.enumerated().map { k, n in value(k, n) }
            for (k, value) in values.enumerated() { _ = try await client.cacheSet("v\(k)", value) }
            return (daemon, client, values)
        } catch {
            daemon.stop()
            throw error
        }
    }

    /// One at a time, every size: a value in one frame with a large body (read directly as a final result), in
    /// chunks (each read directly), at the 256 KiB boundary, and small ones (through the read buffer).
    @Test func everySizeArrivesWhole() async throws {
        let (daemon, client, values) = try await Self.storedValues()
        defer { daemon.stop() }
        defer { client.close() }
        for (k, value) in values.enumerated() {
            let got = try await client.cacheGet("v\(k)")?.bytes
            #expect(got?.count == value.count && got == value, "value \(k) of \(value.count) bytes")
        }
    }

    /// Several calls at once: their chunks interleave on the connection, each read into its own call's buffer.
    @Test func concurrentBodiesAreEachTheirOwn() async throws {
        let (daemon, client, values) = try await Self.storedValues()
        defer { daemon.stop() }
        defer { client.close() }
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for round in 0..<2 {
                for k in values.indices {
                    let key = (k + round) % values.count
                    group.addTask { try await client.cacheGet("v\(key)")?.bytes == values[key] ? 0 : 1 }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    @Test func aCallCancelledWhileItsBodyArrivesLeavesTheConnectionSound() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket, bodyFiles: false)
        defer { client.close() }
        let big = Self.value(1, 10_000_000), small = Self.value(2, 300_000)
        _ = try await client.cacheSet("big", big)
        _ = try await client.cacheSet("small", small)
        for delay in [0, 200, 1_000, 3_000] {
            let doomed = Task { try await client.cacheGet("big") }
            let after = Task { try await client.cacheGet("small") }
            try await Task.sleep(for: .microseconds(delay))
            doomed.cancel()
            let outcome = await doomed.result
            if case .success(let v) = outcome { #expect(v?.bytes == big, "a call that finished before its cancel is whole") }
            #expect(try await after.value?.bytes == small)
            #expect(try await client.cacheGet("big")?.bytes == big, "after a cancel at \(delay) µs")
        }
        _ = try await client.ping()
    }

    /// A stream's events read directly too: each chunk of a download (arriving, then a hit from the store) is its
    /// own item, in order, and together they are the origin's bytes, as a plain call gets them.
    @Test func aStreamsLargeChunksArriveWholeAndInOrder() async throws {
        let rig = try await FetchRig()
        defer { rig.stop() }
        let url = rig.origin.url("/slow?size=3000000&chunks=4&interval_ms=20&cc=max-age%3D600")
        let dir = TempDir()
        defer { dir.remove() }
        #expect(try runCommand("/usr/bin/curl", ["-s", "-o", dir.path + "/origin.bin", url]).status == 0)
        let reference = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.path + "/origin.bin")))
        #expect(reference.count == 3_000_000)
        for round in ["download", "hit"] {
            var streamed: [UInt8] = [], chunks = 0
            for try await event in rig.client.fetchStream(FetchRequest(url)) {
                if case .chunk(let b) = event {
                    streamed += b
                    chunks += 1
                }
            }
            #expect(chunks > 1 && streamed.count == reference.count && streamed == reference, "\(round): \(chunks) chunks")
        }
        #expect(try await rig.client.fetch(FetchRequest(url)).body == reference)
    }
}
}
