import Foundation
import Synchronization
import Testing
import FerryClient
import FerryCodable
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
/// The daemon's side of damaged and unwritable cache directories.
@Suite struct CacheDirectoryTests {
    @Test func aDamagedIndexIsMovedAsideLoudlyAndTheDaemonServes() async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        _ = FileManager.default.createFile(atPath: cacheDir.path + "/index.db",
                                           contents: Data((0..<16384).map { UInt8(truncatingIfNeeded: $0 * 131 + 7) }))
        let daemon = try Daemon(["--cache-dir", cacheDir.path])
        defer { daemon.stop() }
        #expect(daemon.log.contains("error CACHE INDEX DAMAGED"), "\(daemon.log)")
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        try await client.cacheSet("fresh", [1])
        #expect(try await client.cacheGet("fresh")?.bytes == [1])
        let aside = try FileManager.default.contentsOfDirectory(atPath: cacheDir.path).filter { $0.hasPrefix("index.db.corrupt-") }
        #expect(aside.count == 1)
    }

    @Test func fsyncAlwaysServesAndKeepsWritesAndAWrongPolicyIsAUsageError() async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        do {
            let daemon = try Daemon(["--cache-dir", cacheDir.path, "--fsync", "always"])
            let client = try await FerryClient.connect(path: daemon.socket)
            try await client.cacheSet("small", [1, 2])
            try await client.cacheSet("blob", [UInt8](repeating: 9, count: 150_000))
            client.close()
            daemon.stop()
        }
        let daemon = try Daemon(["--cache-dir", cacheDir.path, "--fsync", "no"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        #expect(try await client.cacheGet("small")?.bytes == [1, 2])
        #expect(try await client.cacheGet("blob")?.bytes.count == 150_000)
        let wrong = try Daemon(["--fsync", "sometimes"], waitReady: false)
        defer { wrong.stop() }
        #expect(wrong.waitExit() == 2 && wrong.log.contains("--fsync must be always, everysec or no"), "\(wrong.log)")
    }

    /// One flipped byte in a blob file was served as the value (names are SHA-256, reads were not checked): now the
    /// value is a miss, the damage is counted in stats, and the entry can be stored again.
    @Test func aDamagedBlobIsNeverServed() async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        let value = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        do {
            let daemon = try Daemon(["--cache-dir", cacheDir.path])
            let client = try await FerryClient.connect(path: daemon.socket)
            try await client.cacheSet("poster", value)
            client.close()
            daemon.stop()
        }
        let files = (FileManager.default.enumerator(atPath: cacheDir.path + "/blobs")?.allObjects as? [String] ?? [])
            .map { cacheDir.path + "/blobs/" + $0 }.filter { (try? FileManager.default.attributesOfItem(atPath: $0)[.type] as? FileAttributeType) == .typeRegular }
        try #require(files.count == 1)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: files[0])))
        bytes[1234] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: files[0]))
        let daemon = try Daemon(["--cache-dir", cacheDir.path])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        #expect(try await client.cacheGet("poster") == nil)
        #expect(try await client.stats()["cache"]?["damaged"]?.intValue == 1)
        try await client.cacheSet("poster", value)
        #expect(try await client.cacheGet("poster")?.bytes == value)
    }

    /// A journal file whose name is the largest generation crashed every start (an overflow trap): now it is moved
    /// aside with an error line and the daemon serves.
    @Test func aJournalFileWithAnImpossibleNumberDoesNotStopTheDaemon() async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        _ = FileManager.default.createFile(atPath: cacheDir.path + "/journal.18446744073709551615", contents: Data([0, 0, 0, 1, 2, 3]))
        let daemon = try Daemon(["--cache-dir", cacheDir.path])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        try await client.cacheSet("fresh", [1])
        #expect(try await client.cacheGet("fresh")?.bytes == [1])
        #expect(daemon.log.contains("JOURNAL FILE"), "\(daemon.log)")
        #expect(FileManager.default.fileExists(atPath: cacheDir.path + "/damaged-journal.18446744073709551615"))
    }

    /// The blob folder turns read-only under a running daemon (a read-only bind mount): large sets fail with a
    /// clear error, everything else keeps working.
    @Test(.enabled(if: getuid() == 0, "needs root to bind-mount"))
    func unwritableBlobsFailSetsAndKeepServingGets() async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        let daemon = try Daemon(["--cache-dir", cacheDir.path])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        try await client.cacheSet("before", Array("kept".utf8))
        let blobs = cacheDir.path + "/blobs"
        try #require(try runCommand("/bin/mount", ["--bind", blobs, blobs]).status == 0)
        defer { _ = try? runCommand("/bin/umount", ["-l", blobs]) }
        try #require(try runCommand("/bin/mount", ["-o", "remount,bind,ro", blobs]).status == 0)
        do {
            try await client.cacheSet("after", [UInt8](repeating: 1, count: 200_000))
            Issue.record("a blob was written to a read-only folder")
        } catch let e as FerryError {
            #expect(e.code == .unavailable && e.message.contains("not writable"), "\(e)")
        }
        #expect(try await client.cacheGet("after") == nil)
        #expect(try await client.cacheGet("before")?.bytes == Array("kept".utf8))
        try await client.cacheSet("small", [2])
        _ = try await client.ping()
    }

    /// A cache directory that cannot be written at start: ferryd says so and exits, it does not "repair" anything.
    @Test(.enabled(if: getuid() == 0, "needs root to mount a tmpfs"))
    func aReadOnlyCacheDirectoryAtStartIsAClearError() throws {
        let mountPoint = TempDir()
        defer { mountPoint.remove() }
        try #require(try runCommand("/bin/mount", ["-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", mountPoint.path]).status == 0)
        defer { _ = try? runCommand("/bin/umount", ["-l", mountPoint.path]) }
        let sockDir = TempDir()
        defer { sockDir.remove() }
        let r = try runCommand(Binaries.ferryd, ["--socket", sockDir.path + "/s.sock", "--cache-dir", mountPoint.path + "/cache"])
        #expect(r.status == 1)
        #expect(r.err.contains("cannot open the cache") && r.err.contains("not writable"), "\(r.err)")
        #expect(!r.err.contains("DAMAGED"))
    }
}
}
