import Foundation
import Testing
import FerryClient
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

/// Bodies of any size stream origin → spool → clients as they arrive (issue 11, item 1), with the daemon's memory
/// flat, every coalesced client following the one download, and a late joiner reading what is there, then following.
extension IntegrationTests {
@Suite struct StreamingFetchTests {
    /// The peak resident size of a process in KiB (`VmHWM`).
    static func peakRSSKiB(_ pid: pid_t) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
        }
        return -1
    }

    static func fileSize(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : -1
    }

    /// A part file `ferry fetch -o` writes next to its target (FILE.ferry-part-PID), or nil.
    static func partFile(in dir: String, for name: String) -> String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.first { $0.hasPrefix(name + ".ferry-part-") }.map { dir + "/" + $0 }
    }

    /// The test: 1 GiB from the test origin through `ferry fetch -o`, three clients, one joining halfway.
    /// The origin sends it once, each file is the origin's bytes exactly (compared with curl's copy), and ferryd
    /// grows by less than 64 MiB.
    @Test func aGibibyteReachesThreeClientsFromOneDownloadWithFlatMemory() async throws {
        let origin = try OriginServer()
        defer { origin.stop() }
        let daemon = try Daemon()
        defer { daemon.stop() }
        let dir = TempDir()
        defer { dir.remove() }
        let size = 1 << 30
        let url = origin.url("/r?size=\(size)&cc=max-age%3D600")
        let rssBefore = rssKiB(daemon.pid)
        func ferry(_ name: String) throws -> Subprocess {
            try Subprocess(Binaries.ferry, ["fetch", "-s", url, "-o", dir.path + "/" + name],
                           environment: ["FERRY_SOCKET": daemon.socket], stderr: dir.path + "/" + name + ".err")
        }
        let first = try ferry("a.bin")
        let second = try ferry("b.bin")
        defer { first.stop(); second.stop() }
        // Halfway through the first download, a third client asks for the same URL.
        var half = false
        for _ in 0..<6000 {
            if let part = Self.partFile(in: dir.path, for: "a.bin"), Self.fileSize(part) >= size / 2 { half = true; break }
            if Self.fileSize(dir.path + "/a.bin") == size { break }
            usleep(10_000)
        }
        #expect(half, "the third client joins while the download is halfway")
        let third = try ferry("c.bin")
        defer { third.stop() }
        for p in [first, second, third] { #expect(p.wait(timeout: 300) == 0) }
        let peak = Self.peakRSSKiB(daemon.pid)
        #expect(try origin.count(path: "/r") == 1, "one download for the three")
        let reference = dir.path + "/curl.bin"
        #expect(try runCommand("/usr/bin/curl", ["-s", "-o", reference, url]).status == 0)
        for name in ["a.bin", "b.bin", "c.bin"] {
            #expect(Self.fileSize(dir.path + "/" + name) == size, "\(name)")
            #expect(try runCommand("/usr/bin/cmp", [reference, dir.path + "/" + name]).status == 0, "\(name) is the origin's bytes")
        }
        #expect(rssBefore > 0 && peak - rssBefore < 64 * 1024, "ferryd grew by \(peak - rssBefore) KiB (from \(rssBefore) KiB)")
        // Stored as it came (1 GiB is half the default disk budget): the next request is a hit, from the store's file.
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        var bytes = 0
        var status: CacheStatus?
        for try await event in client.fetchStream(FetchRequest(url)) {
            if case .chunk(let b) = event { bytes += b.count }
            if case .head(let r) = event { status = r.cacheStatus }
        }
        let count = try origin.count(path: "/r")
        #expect(bytes == size && status == .hit && count == 2, "a hit (curl's copy was the second)")
    }

    /// A no-store download nothing keeps streams through memory to its one client: no spool file while the client
    /// reads, and a client that stops reading holds the origin back (libcurl paused) instead of filling memory or
    /// the disk: asleep, it has ferryd hold about one window of the body (`BodySpool.Config.windowBytes`, 2 MiB).
    /// Asleep longer than a pause may last (`maxPauseMs`, 2 s), its unread bytes go to a file and the download
    /// goes on without it. Then it reads on, and every byte arrives, in order.
    @Test func aNoStoreDownloadStreamsThroughMemoryAndWaitsForASlowReaderAWhile() async throws {
        let rig = try await FetchRig()
        defer { rig.stop() }
        let origin = rig.origin, client = rig.client, daemon = rig.daemon
        let size = 64 << 20
        let url = origin.url("/r?size=\(size)&cc=max-age%3D600")
        let spoolDir = daemon.dir.path + "/cache/spool"
        func spoolFiles() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: spoolDir)) ?? [] }
        let watcher = try await FerryClient.connect(path: daemon.socket)
        defer { watcher.close() }
        var received = 0
        var mismatch: Int?
        var heldWhileAsleep: Int64?
        var filesWhileStreaming: Set<String> = []
        var filesAfterLongSleep: [String] = []
        for try await event in client.fetchStream(FetchRequest(url, cache: .noStore)) {
            guard case .chunk(let bytes) = event else { continue }
            for (i, b) in bytes.enumerated() where mismatch == nil && b != UInt8((received + i) % 251) { mismatch = received + i }
            received += bytes.count
            if heldWhileAsleep == nil { filesWhileStreaming.formUnion(spoolFiles()) }
            if heldWhileAsleep == nil && received >= 8 << 20 {
                // The reader sleeps: the client's read-ahead and the socket fill, then ferryd's window, then it waits.
                try await Task.sleep(for: .milliseconds(700))
                let stats = try await watcher.stats()
                heldWhileAsleep = stats["memory"]?["accounts"]?["fetch_bodies"]?.intValue
                filesWhileStreaming.formUnion(spoolFiles())
                // Asleep past the longest pause: the transfer stops waiting for it.
                try await Task.sleep(for: .milliseconds(3500))
                filesAfterLongSleep = spoolFiles()
            }
        }
        #expect(received == size && mismatch == nil, "\(received) bytes, first wrong at \(String(describing: mismatch))")
        #expect(filesWhileStreaming.isEmpty, "no spool file while the reader keeps up or waits briefly: \(filesWhileStreaming)")
        let held = try #require(heldWhileAsleep)
        #expect(held > 0 && held <= (2 << 20) + (512 << 10), "ferryd held \(held) bytes of the body while the reader slept")
        #expect(filesAfterLongSleep.count == 1, "after the longest pause the unread bytes went to a file")
        #expect(try origin.count(path: "/r") == 1)
    }

    /// The head comes first, the body as it arrives: with a slow origin, chunks reach the client long before the
    /// transfer ends, and a body too large for the store is still streamed, just not kept.
    @Test func chunksArriveWhileTheTransferRunsAndABodyTooLargeToKeepStillStreams() async throws {
        let rig = try await FetchRig(daemonArgs: ["--disk-limit", "8MiB"])
        defer { rig.stop() }
        let origin = rig.origin, client = rig.client, daemon = rig.daemon
        let size = 6_000_000
        let url = origin.url("/slow?size=\(size)&chunks=6&interval_ms=300&cc=max-age%3D600")
        var events: [String] = []
        var received = 0
        var firstChunkAt: ContinuousClock.Instant?
        let start = ContinuousClock.now
        for try await event in client.fetchStream(FetchRequest(url)) {
            switch event {
            case .head(let r): events.append("head \(r.status)")
            case .chunk(let b):
                if firstChunkAt == nil { firstChunkAt = .now }
                received += b.count
                if events.last != "chunk" { events.append("chunk") }
            case .progress: continue
            case .response(let r): events.append("response \(r.status)")
            }
        }
        #expect(events == ["head 200", "chunk", "response 200"], "\(events)")
        #expect(received == size)
        let firstChunk = try #require(firstChunkAt) - start
        #expect(firstChunk < .milliseconds(1200), "the first chunk came after \(firstChunk), the transfer takes 1.5 s")
        // Over half the 8 MiB disk budget: streamed, not stored; the next request goes to the origin again.
        let again = try await client.fetch(FetchRequest(url))
        let count = try origin.count(path: "/slow")
        #expect(again.body.count == size && again.cacheStatus == .miss && count == 2)
        let spool = try FileManager.default.contentsOfDirectory(atPath: daemon.dir.path + "/cache/spool")
        #expect(spool.isEmpty, "no spool file left: \(spool)")
    }

    /// A transfer cut by the origin after its head: the client that was following it gets an error after the
    /// chunks it had (and drops them), nothing is stored, and the spool file goes.
    @Test func aDownloadCutByTheOriginFailsItsReadersAndLeavesNothing() async throws {
        let rig = try await FetchRig()
        defer { rig.stop() }
        let origin = rig.origin, client = rig.client, daemon = rig.daemon
        let url = origin.url("/truncate?size=4000000&cc=max-age%3D600")  // sends 2 MB of 4, then closes
        var received = 0
        var failure: (any Error)?
        do {
            for try await event in client.fetchStream(FetchRequest(url)) {
                if case .chunk(let b) = event { received += b.count }
            }
        } catch {
            failure = error
        }
        let error = try #require(failure as? FerryError)
        #expect(error.code == .unavailable && received <= 2_000_000, "\(error), after \(received) bytes")
        let stats = try await client.stats()
        #expect(stats["cache"]?["disk"]?["entries"]?.intValue == 0, "nothing stored")
        try await Task.sleep(for: .milliseconds(100))
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.dir.path + "/cache/spool").isEmpty)
    }
}
}
