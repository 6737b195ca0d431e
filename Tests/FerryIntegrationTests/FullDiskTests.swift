import Foundation
import Testing
import FerryClient
import FerryProtocol
#if canImport(Glibc)
import Glibc
#endif

/// A full disk (issue 10, item 3), on a real 8 MiB tmpfs: before, `cache.list`, delete, touch and clear failed with
/// "database or disk is full", so no client could free space through Ferry, and after a clean stop ferryd would not
/// start. Now reads, lists and deletes work, new values are refused with a clear error, writes come back once space
/// frees, and the daemon starts on a full disk.
extension IntegrationTests {
    @Suite struct FullDiskTests {
        @Test(.enabled(if: getuid() == 0, "needs root to mount a tmpfs"))
        func aFullDiskCanBeEmptiedThroughFerryAndTheDaemonStartsOnOne() async throws {
            let mount = TempDir()
            defer { mount.remove() }
            try #require(try runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", mount.path]).status == 0)
            defer { _ = try? runCommand("/bin/umount", ["-l", mount.path]) }
            let cacheDir = mount.path + "/cache"
            // The disk budget is far above the file system: the file system fills first.
            let flags = ["--cache-dir", cacheDir, "--disk-limit", "1GiB"]
            var daemon = try Daemon(flags)
            defer { daemon.stop() }
            var client = try await FerryClient.connect(path: daemon.socket)

            let stored = try await Self.fill(client, from: 0)
            try #require(stored.count > 20, "only \(stored.count) values fit")
            #expect(try await client.stats()["cache"]?["disk"]?["full"] == true)

            // Everything that reads or frees space works on the full disk.
            #expect(try await client.cacheGet(stored[0])?.bytes.count == 60_000)
            let listed = try await client.cacheKeys()
            #expect(listed.count == stored.count, "listed \(listed.count) of \(stored.count)")
            #expect(try await client.cacheTouch(stored[1], ttl: .seconds(3600)))
            for key in stored[2..<(stored.count / 2)] { #expect(try await client.cacheDelete(key), "delete \(key)") }
            #expect(try await client.cacheGet(stored[2]) == nil)
            #expect(try await client.cacheClear(namespace: "other") == 0)

            // Once the deletes freed room, values are taken again (at the next sweep, about a second).
            var accepted = false
            for _ in 0..<60 where !accepted {
                try await Task.sleep(for: .milliseconds(100))
                accepted = (try? await client.cacheSet("again", [UInt8](repeating: 5, count: 60_000))) != nil
            }
            #expect(accepted, "no value taken after half the cache was deleted")
            #expect(daemon.log.contains("CACHE DISK FULL"), "\(daemon.log)")

            // Full again, then a clean stop: the next start serves what is there.
            let more = try await Self.fill(client, from: 10_000)
            #expect(!more.isEmpty)
            client.close()
            daemon.stop()
            // Whatever room the stop freed (the journal folded into the index), something else takes now.
            let filler = FileManager.default.createFile(atPath: mount.path + "/filler", contents: nil)
            try #require(filler)
            let fd = open(mount.path + "/filler", O_WRONLY)
            let block = [UInt8](repeating: 0, count: 4096)
            while write(fd, block, block.count) == block.count {}
            close(fd)
            daemon = try Daemon(flags)
            client = try await FerryClient.connect(path: daemon.socket)
            defer { client.close() }
            #expect(daemon.log.contains("CACHE DISK FULL"), "started on a full disk, and said so: \(daemon.log)")
            #expect(try await client.cacheGet(stored[0])?.bytes.count == 60_000)
            #expect(try await client.cacheGet(more[0])?.bytes.count == 60_000)
            #expect(try await client.stats()["cache"]?["disk"]?["full"] == true)
            await #expect(throws: WireError.self) { try await client.cacheSet("refused", [UInt8](repeating: 1, count: 60_000)) }
            #expect(try await client.cacheDelete(more[0]))
            #expect(try await client.cacheKeys().count >= stored.count / 2)
            // And it stops on SIGTERM, cleanly, on the full disk (the stop folds the journal into the index).
            daemon.signal(SIGTERM)
            #expect(daemon.waitExit(timeout: 5) == 0, "\(daemon.log)")
        }

        /// Sets distinct 60 KB values until the disk refuses three in a row (with `resource_exhausted`: the first
        /// refusals can come from the journal while the index still takes one); returns the keys stored.
        static func fill(_ client: FerryClient, from first: Int) async throws -> [String] {
            var stored: [String] = []
            var refusedInARow = 0
            for n in first..<(first + 1000) {
                do {
                    try await client.cacheSet("k\(n)", [UInt8](repeating: UInt8(truncatingIfNeeded: n), count: 60_000))
                    stored.append("k\(n)")
                    refusedInARow = 0
                } catch let e as WireError {
                    #expect(e.code == .resourceExhausted, "\(e)")
                    refusedInARow += 1
                    if refusedInARow == 3 { return stored }
                }
            }
            Issue.record("1,000 values of 60 KB fit an 8 MiB file system")
            return stored
        }
    }
}
