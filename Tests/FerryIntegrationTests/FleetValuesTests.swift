import Foundation
import Testing
import FerryClient

/// `cache.*` namespaces shared by the fleet (`--l2-namespaces`): a value set on one machine is read on another (from
/// Redis, then kept), changes and deletes reach the copies other machines hold, a clear clears everywhere, `--nx`
/// is decided by Redis for the whole fleet, and values without a TTL of their own stay in Redis while they are read.
extension IntegrationTests {
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server")))
struct FleetValuesTests {
    typealias Fleet = FleetTests.Fleet

    static func text(_ v: CachedValue?) -> String? { v.map { String(decoding: $0.bytes, as: UTF8.self) } }

    static func pttl(_ redis: FleetTests.Redis, _ key: String) throws -> Int {
        Int(try redis.cli(["PTTL", key]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -3
    }

    @Test func aSharedNamespaceIsOneCacheForTheFleet() async throws {
        let fleet = try await Fleet(machines: 2, ["--l2-namespaces", "builds, shared", "--l2-idle-ttl", "1h"])
        defer { fleet.stop() }
        let (ca, cb, redis) = (fleet.ca, fleet.cb, fleet.redis)
        try await Task.sleep(for: .milliseconds(100))   // the listeners subscribe once connected

        try await ca.cacheSet("k", Array("v1".utf8), namespace: "builds")
        let onB = try await cb.cacheGet("k", namespace: "builds")
        #expect(Self.text(onB) == "v1" && onB?.source == "fleet")
        #expect(try await cb.cacheGet("k", namespace: "builds")?.source == "memory", "kept on B")
        #expect(try await cb.stats()["cache"]?["fleet_hits"]?.intValue == 1)
        try await ca.cacheSet("mine", Array("x".utf8), namespace: "local")
        #expect(try await cb.cacheGet("mine", namespace: "local") == nil, "a namespace not listed stays on its machine")

        // A change on A reaches B's copy; so does a delete.
        try await ca.cacheSet("k", Array("v2".utf8), namespace: "builds")
        try await FleetCoalescingTests.until("B sees v2") { Self.text(try await cb.cacheGet("k", namespace: "builds")) == "v2" }
        #expect(try await ca.cacheDelete("k", namespace: "builds"))
        try await FleetCoalescingTests.until("B's copy gone") { try await cb.cacheGet("k", namespace: "builds") == nil }

        // Times to live: the value's own, or the idle one, which a read restarts.
        try await ca.cacheSet("ttl", Array("t".utf8), namespace: "builds", ttl: .seconds(60))
        try await ca.cacheSet("idle", Array("i".utf8), namespace: "builds")
        #expect((55_000...60_000).contains(try Self.pttl(redis, "ferry:v1:v:builds:ttl")))
        #expect((3_500_000...3_600_000).contains(try Self.pttl(redis, "ferry:v1:v:builds:idle")))
        _ = try redis.cli(["PEXPIRE", "ferry:v1:v:builds:idle", "5000"])
        #expect(Self.text(try await cb.cacheGet("idle", namespace: "builds")) == "i")
        try await FleetCoalescingTests.until("the idle time restarted") { try Self.pttl(redis, "ferry:v1:v:builds:idle") > 3_500_000 }
        let ttlOnB = try await cb.cacheGet("ttl", namespace: "builds")
        let ttlOnA = try await ca.cacheGet("ttl", namespace: "builds")
        #expect(ttlOnB?.expiresAt != nil && ttlOnB?.expiresAt == ttlOnA?.expiresAt, "the value's own expiry travels with it")

        // --nx: Redis decides for the fleet.
        #expect(try await ca.cacheSet("lock", Array("a".utf8), namespace: "shared", ifAbsent: true))
        #expect(!(try await cb.cacheSet("lock", Array("b".utf8), namespace: "shared", ifAbsent: true)), "A holds it")
        #expect(Self.text(try await cb.cacheGet("lock", namespace: "shared")) == "a")

        // A clear on A clears B's copies and what B never read.
        #expect(Self.text(try await cb.cacheGet("ttl", namespace: "builds")) == "t")
        _ = try await ca.cacheClear(namespace: "builds")
        try await FleetCoalescingTests.until("B's copy cleared") { try await cb.cacheGet("ttl", namespace: "builds") == nil }
        #expect(try await cb.cacheGet("idle", namespace: "builds") == nil)
        let values = try await cb.stats()["l2"]?["values"]
        #expect(values?["hits"]?.intValue ?? 0 >= 3 && values?["invalidations_received"]?.intValue ?? 0 >= 3)
    }

    /// A variant made on one machine is read, not made, on another: the original comes from the HTTP cache's tier,
    /// the variant from the store's.
    @Test func aVariantMadeOnOneMachineIsNotMadeAgainOnAnother() async throws {
        let redis = try FleetTests.Redis()
        let origin = try OriginServer(files: ImageTests.fixtures)
        let l2 = ["--l2", "redis+unix://\(redis.socket)"]
        let a = try Daemon(l2), b = try Daemon(l2)
        let ca = try await FerryClient.connect(path: a.socket), cb = try await FerryClient.connect(path: b.socket)
        defer {
            ca.close(); cb.close(); a.stop(); b.stop(); origin.stop(); redis.stop()
        }
        for c in [ca, cb] { try await FleetTests.waitForRedis(c) }
        let url = origin.url("/file/jpeg-baseline-64x40.jpg?content_etag=1&cc=max-age%3D600")
        let variant = ImageVariant(width: 32, height: 32, fit: .cover, format: .png)
        let made = try await ca.image(url, variant: variant)
        #expect(made.source == .made && made.width == 32 && made.height == 32)
        try await FleetCoalescingTests.until("the variant in Redis") {
            (try redis.cli(["--scan", "--pattern", "ferry:v1:v:ferry.image-variants:*"])).contains("ferry")
        }
        let onB = try await cb.image(url, variant: variant)
        #expect(onB.bytes == made.bytes && onB.source != .made)
        let stats = try await cb.stats()
        #expect(stats["image"]?["variants_made"]?.intValue == 0, "B made nothing")
        #expect(stats["cache"]?["fleet_hits"]?.intValue ?? 0 >= 1)
        #expect(try origin.count(path: "/file/jpeg-baseline-64x40.jpg") == 1)
    }
}
}
