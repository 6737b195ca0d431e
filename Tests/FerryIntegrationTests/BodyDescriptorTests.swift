import Foundation
import Testing
import FerryClient
#if canImport(Glibc)
import Glibc
#endif

extension IntegrationTests {
/// Bodies as descriptors (`body_fd`, PROTOCOL.md §5) against a real ferryd: what a client receives is its value and
/// only that, it cannot write it, it does not change when the key does, and descriptors pair with their frames under
/// concurrency.
@Suite struct BodyDescriptorTests {
    /// A value of `count` bytes that differs for each `seed`.
    static func value(_ count: Int, seed: UInt32) -> [UInt8] {
        var x = seed &* 2654435761 | 1
        return (0..<count).map { _ in
            x ^= x << 13; x ^= x >> 17; x ^= x << 5
            return UInt8(truncatingIfNeeded: x)
        }
    }

    /// Sets `key` through a daemon of its own on `cacheDir`, then stops it: the next daemon finds the value on disk.
    static func store(_ key: String, _ value: [UInt8], in cacheDir: TempDir) async throws {
        let (daemon, client) = try await daemonWithClient(cacheDir)
        defer { client.close(); daemon.stop() }
        try await client.cacheSet(key, value)
    }

    /// A daemon on `cacheDir` (with `args`) and a client of it; the caller closes the client and stops the daemon.
    static func daemonWithClient(_ cacheDir: TempDir, _ args: [String] = []) async throws -> (Daemon, FerryClient) {
        let daemon = try Daemon(["--cache-dir", cacheDir.path] + args)
        do { return (daemon, try await FerryClient.connect(path: daemon.socket)) } catch { daemon.stop(); throw error }
    }

    @Test func aValueInMemoryComesAsASealedFileThatNeverChanges() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        #expect(client.offersBodyFiles)
        let first = BodyDescriptorTests.value(1 << 20, seed: 1)
        try await client.cacheSet("big", first)
        let got = try #require(try await client.cacheGet("big", bodyAsFile: true))
        let file = try #require(got.file, "a 1 MiB value asked for as a file comes as a descriptor")
        #expect(got.bytes.isEmpty && got.size == first.count && file.length == first.count && got.source == "memory")
        #expect(try file.bytes() == first)

        // Sealed: not through this descriptor, nor through a new one opened on it with write access.
        #expect(pwrite(file.fd, [0x55], 1, 0) < 0)
        let reopened = open("/proc/self/fd/\(file.fd)", O_RDWR)
        if reopened >= 0 {
            #expect(pwrite(reopened, [0x55], 1, 0) < 0 && errno == EPERM, "the memory file is sealed against writing")
            #expect(ftruncate(reopened, 10) != 0, "and against shrinking")
            close(reopened)
        }

        // The key changes and goes; the bytes held do not.
        try await client.cacheSet("big", BodyDescriptorTests.value(1 << 20, seed: 2))
        #expect(try await client.cacheDelete("big"))
        #expect(try file.bytes() == first)

        // The default (bytes) read goes through a descriptor too, and a second hand-out reuses the sealed copy.
        try await client.cacheSet("again", first)
        #expect(try await client.cacheGet("again")?.bytes == first)
        #expect(try await client.cacheGet("again")?.bytes == first)
        let stats = try await client.stats()
        #expect(stats["descriptors"]?["sent"]?.intValue == 3)
        #expect(stats["descriptors"]?["sealed_copies_reused"]?.intValue == 1)
    }

    @Test func aValueOnDiskComesAsItsReadOnlyFile() async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        let big = BodyDescriptorTests.value(3 << 20, seed: 3)
        try await BodyDescriptorTests.store("big", big, in: cacheDir)
        let (daemon, client) = try await BodyDescriptorTests.daemonWithClient(cacheDir)
        defer { client.close(); daemon.stop() }
        let got = try #require(try await client.cacheGet("big", bodyAsFile: true))
        let file = try #require(got.file)
        #expect(got.source == "disk" && file.offset == 0 && file.length == big.count)
        var st = stat()
        #expect(fstat(file.fd, &st) == 0 && Int(st.st_size) == big.count, "the file is exactly the value")
        #expect(fcntl(file.fd, F_GETFL) & O_ACCMODE == O_RDONLY)
        #expect(pwrite(file.fd, [1], 1, 0) < 0 && errno == EBADF)
        // Copied in the kernel to a file of the caller's.
        let out = cacheDir.path + "/copy"
        try file.copy(toPath: out)
        #expect(FileManager.default.contents(atPath: out).map(Array.init) == big)
        // Replaced and deleted: the descriptor still shows the value it was handed out as.
        try await client.cacheSet("big", BodyDescriptorTests.value(3 << 20, seed: 4))
        #expect(try await client.cacheDelete("big"))
        #expect(try file.bytes() == big)
    }

    @Test func aDamagedFileIsNeverHandedOut() async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        let big = BodyDescriptorTests.value(2 << 20, seed: 5)
        try await BodyDescriptorTests.store("big", big, in: cacheDir)
        // One byte flipped in the middle of the value's file, size unchanged.
        let blobs = (FileManager.default.enumerator(atPath: cacheDir.path + "/blobs")?.allObjects as? [String] ?? [])
            .map { cacheDir.path + "/blobs/" + $0 }
            .filter { (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) == big.count }
        let blob = try #require(blobs.first)
        let fd = open(blob, O_RDWR)
        try #require(fd >= 0)
        #expect(pwrite(fd, [~big[1 << 20]], 1, off_t(1 << 20)) == 1)
        close(fd)
        let (daemon, client) = try await BodyDescriptorTests.daemonWithClient(cacheDir)
        defer { client.close(); daemon.stop() }
        // The check before the hand-out finds it: the value is dropped and the answer is a miss, as for a damaged
        // value read whole.
        #expect(try await client.cacheGet("big", bodyAsFile: true) == nil)
        #expect(try await client.cacheGet("big") == nil)
        let stats = try await client.stats()
        #expect(stats["cache"]?["damaged"]?.intValue == 1)
        #expect(stats["descriptors"]?["sent"]?.intValue == 0)
    }

    /// A stored file larger than the check limit is not read on the loop before its first hand-out: that request
    /// gets the bytes (checked as they are read), and the hand-outs after it get the descriptor.
    @Test func aLargeFileIsCheckedByItsFirstReadNotOnTheLoop() async throws {
        let cacheDir = TempDir()
        defer { cacheDir.remove() }
        let big = BodyDescriptorTests.value(3 << 20, seed: 6)
        try await BodyDescriptorTests.store("big", big, in: cacheDir)
        let (daemon, client) = try await BodyDescriptorTests.daemonWithClient(cacheDir, ["--body-fd-check-limit", "1MiB"])
        defer { client.close(); daemon.stop() }
        let first = try #require(try await client.cacheGet("big", bodyAsFile: true))
        #expect(first.file == nil && first.bytes == big, "not checked yet: the bytes")
        let second = try #require(try await client.cacheGet("big", bodyAsFile: true))
        #expect(try second.file?.bytes() == big, "checked by the first read: the descriptor")
        #expect(try await client.stats()["descriptors"]?["sent"]?.intValue == 1)
    }

    /// A client that asks for descriptors and never reads them, then goes: the daemon closes every descriptor it
    /// still held for it (none leaks), and a client that reads with plain `recv` loses only its own (the kernel
    /// closes what it does not take).
    @Test func descriptorsOfAClientThatGoesAreClosed() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        try await client.cacheSet("big", BodyDescriptorTests.value(1 << 20, seed: 40))
        func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd").count) ?? -1 }
        // The value's sealed copy is made (and kept, one descriptor) by a first hand-out.
        #expect(try await client.cacheGet("big", bodyAsFile: true)?.file != nil)
        let before = openDescriptors()
        for _ in 0..<3 {
            let s = try RawSocket(daemon.socket)
            try s.hello()
            // 200 replies of a descriptor each, far past what the socket holds unread.
            var frames: [UInt8] = []
            for id in 2..<202 {
                frames += HotPathTests.frame(#"{"id":\#(id),"op":"cache.get","args":{"key":"big","body_fd":true}}"#)
            }
            try s.send(frames)
            _ = try s.readRawFrame()   // one reply read with plain recv: its descriptor is dropped by the kernel
        }   // the socket closes here, with the rest unread
        var after = openDescriptors()
        for _ in 0..<100 where after > before {
            try await Task.sleep(for: .milliseconds(20))
            after = openDescriptors()
        }
        #expect(after <= before, "ferryd holds \(after) descriptors, \(before) before the clients came and went")
        #expect(try await client.cacheGet("big")?.size == 1 << 20, "and still serves")
    }

    @Test func descriptorsPairWithTheirFramesUnderConcurrency() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        let values = (0..<6).map { BodyDescriptorTests.value(300_000 + $0 * 4096, seed: UInt32(10 + $0)) }
        for (k, v) in values.enumerated() { try await client.cacheSet("v\(k)", v) }
        try await client.cacheSet("small", [7, 7, 7])
        // 300 calls on one connection: large values as descriptors, small ones and pings as bytes in between.
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<300 {
                group.addTask {
                    switch i % 3 {
                    case 0:
                        let k = i % values.count
                        // Past 64 descriptors waiting unsent on the connection, a body comes as bytes instead.
                        guard let got = try await client.cacheGet("v\(k)", bodyAsFile: true) else { return 1 }
                        return try (got.file?.bytes() ?? got.bytes) == values[k] ? 0 : 1
                    case 1:
                        return try await client.cacheGet("small")?.bytes == [7, 7, 7] ? 0 : 1
                    default:
                        let k = i % values.count
                        return try await client.cacheGet("v\(k)")?.bytes == values[k] ? 0 : 1
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
        let sent = try #require(try await client.stats()["descriptors"]?["sent"]?.intValue)
        #expect(sent >= 100, "most of the 200 large replies came as descriptors (\(sent))")
    }

    @Test func smallBodiesAndADaemonWithoutTheCapabilityGiveBytes() async throws {
        do {
            let daemon = try Daemon()
            defer { daemon.stop() }
            let client = try await FerryClient.connect(path: daemon.socket)
            defer { client.close() }
            let small = BodyDescriptorTests.value(65535, seed: 20)
            try await client.cacheSet("s", small)
            let got = try #require(try await client.cacheGet("s", bodyAsFile: true))
            #expect(got.file == nil && got.bytes == small, "under body_fd_min_bytes the bytes come in the frame")
            await #expect(throws: FerryError.self) { try await client.call(.cacheGet, ["key": "s", "body_fd": "yes"]) }
        }
        let daemon = try Daemon(["--no-body-fd"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        #expect(!client.offersBodyFiles)
        let big = BodyDescriptorTests.value(1 << 20, seed: 21)
        try await client.cacheSet("b", big)
        let reply = try await client.call(.cacheGet, ["key": "b", "body_fd": true])
        #expect(reply.file == nil && reply.body == big && reply.result["body_fd"] == nil)
    }

    @Test func theCLICopiesADescriptorIntoTheOutputFile() async throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let big = BodyDescriptorTests.value(5_000_000, seed: 30)
        let env = ["FERRY_SOCKET": daemon.socket]
        #expect(try runCommand(Binaries.ferry, ["cache", "set", "big", "-"], environment: env, stdin: Data(big)).status == 0)
        let out = daemon.dir.path + "/out"
        #expect(try runCommand(Binaries.ferry, ["cache", "get", "big", "-o", out], environment: env).status == 0)
        #expect(FileManager.default.contents(atPath: out).map(Array.init) == big)
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        #expect(try await client.stats()["descriptors"]?["sent"]?.intValue == 1)
    }
}
}
