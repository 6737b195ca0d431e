import Foundation
import Testing
import FerryClient

/// The second tier on a real Redis Cluster (three masters, a replica each, made by `redis-cli --cluster create`):
/// responses spread over the masters by their URL's slot and shared by every machine, cold storms coalesced, purges
/// heard across the cluster's pub/sub; a master killed and failed over to its replica loses no client request, and
/// the promoted replica serves what its master held.
extension IntegrationTests {
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server")))
struct FleetClusterTests {
    /// A machine of the fleet. Its Redis commands may take a second: six redis-servers, three daemons and the
    /// test share two cores here, and what is tested is the cluster's routing, not the bound on a slow Redis.
    static func daemon(_ rig: RedisClusterRig, seeds: [Int]) throws -> Daemon {
        try Daemon(["--l2", "redis-cluster://" + seeds.map { "127.0.0.1:\($0)" }.joined(separator: ","), "--l2-timeout", "1s"])
    }

    static func keyCount(_ rig: RedisClusterRig, _ masters: [Int]) -> Int {
        masters.reduce(0) { $0 + (Int((try? rig.cli($1, ["DBSIZE"]))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0) }
    }

    static func until(_ what: String, _ condition: () async throws -> Bool) async throws {
        try await FleetCoalescingTests.until(what, condition)
    }

    @Test func aClusterIsOneSecondTierForTheFleet() async throws {
        let rig = try RedisClusterRig()
        let origin = try OriginServer()
        let a = try Self.daemon(rig, seeds: [rig.ports[0], rig.ports[1]]), b = try Self.daemon(rig, seeds: [rig.ports[2]])
        let ca = try await FerryClient.connect(path: a.socket), cb = try await FerryClient.connect(path: b.socket)
        defer {
            ca.close(); cb.close(); a.stop(); b.stop(); origin.stop(); rig.stop()
        }
        for c in [ca, cb] { try await FleetTests.waitForRedis(c) }
        #expect(try await ca.stats()["l2"]?["endpoint"]?.stringValue?.hasPrefix("cluster ") == true)

        let paths = (0..<12).map { "/r?body=c\($0)&cc=max-age%3D60" }
        for path in paths { #expect(try await ca.fetch(FetchRequest(origin.url(path))).cacheStatus == .miss) }
        let masters = try rig.masters()
        #expect(masters.count == 3)
        try await Self.until("the twelve responses in the cluster") { Self.keyCount(rig, masters) >= 12 }
        let holding = masters.filter { Int((try? rig.cli($0, ["DBSIZE"]))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0 > 0 }
        #expect(holding.count >= 2, "spread over the masters by slot")
        for path in paths {
            let onB = try await cb.fetch(FetchRequest(origin.url(path)))
            #expect(onB.cacheStatus == .hit && String(decoding: onB.body, as: UTF8.self) == String(path.dropFirst(8).prefix { $0 != "&" }))
            #expect(try origin.countExact(path) == 1)
        }

        // A cold storm over both machines: one origin request.
        let storm = "/r?body=storm&cc=max-age%3D60&delay_ms=600"
        var clients: [FerryClient] = []
        for i in 0..<30 { clients.append(try await FerryClient.connect(path: (i % 2 == 0 ? a : b).socket)) }
        defer { for c in clients { c.close() } }
        let url = origin.url(storm)
        let answers = try await withThrowingTaskGroup(of: FetchResponse.self) { group in
            for c in clients { group.addTask { try await c.fetch(FetchRequest(url)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.allSatisfy { $0.status == 200 && String(decoding: $0.body, as: UTF8.self) == "storm" })
        let (la, lb) = (try await ca.stats()["l2"], try await cb.stats()["l2"])
        #expect(try origin.countExact(storm) == 1, "\(String(describing: la)) \(String(describing: lb))")

        // A purge on A, published on one node, heard by B on whichever node it listens.
        let purged = origin.url(paths[0])
        #expect(try await ca.httpPurge(purged))
        try await Self.until("B hears the purge") { try await cb.stats()["l2"]?["invalidations_received"]?.intValue ?? 0 >= 1 }
        #expect(try await cb.fetch(FetchRequest(purged)).cacheStatus == .miss)
    }

    @Test func aMasterFailedOverLosesNoRequestAndItsReplicaServesWhatItHeld() async throws {
        let rig = try RedisClusterRig()
        let origin = try OriginServer()
        let seeds = rig.ports
        let a = try Self.daemon(rig, seeds: seeds), b = try Self.daemon(rig, seeds: seeds)
        let ca = try await FerryClient.connect(path: a.socket), cb = try await FerryClient.connect(path: b.socket)
        defer {
            ca.close(); cb.close(); a.stop(); b.stop(); origin.stop(); rig.stop()
        }
        for c in [ca, cb] { try await FleetTests.waitForRedis(c) }

        let kept = "/r?body=kept&cc=max-age%3D600"
        _ = try await ca.fetch(FetchRequest(origin.url(kept)))
        let key = "ferry:v1:{GET \(origin.url(kept))}"
        var master: Int?
        try await Self.until("the response in the cluster") { master = try rig.master(holding: key); return master != nil }
        let doomed = try #require(master)
        var found: Int?
        try await Self.until("the master's replica") { found = try rig.replica(of: doomed); return found != nil }
        let replica = try #require(found)
        try await Self.until("the replica has it") { (try? rig.cli(replica, ["DBSIZE"]))?.hasPrefix("0") == false }

        rig.kill(doomed)
        // Requests all through the failover, on both machines: every one answered, and answered right.
        let urls = (0..<40).map { origin.url("/r?body=f\($0)&cc=max-age%3D60&delay_ms=\(50 * ($0 % 10))") }
        let clients = [ca, cb]
        let answers = try await withThrowingTaskGroup(of: (Int, FetchResponse).self) { group in
            for (i, url) in urls.enumerated() {
                group.addTask {
                    try await Task.sleep(for: .milliseconds(100 * i))
                    return (i, try await clients[i % 2].fetch(FetchRequest(url)))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 40)
        for (i, answer) in answers { #expect(answer.status == 200 && String(decoding: answer.body, as: UTF8.self) == "f\(i)") }
        try rig.waitUntilHealthy()
        #expect(try rig.masters().contains(replica), "the replica was promoted")

        // A machine that never saw the old master reads the promoted replica.
        let c = try Self.daemon(rig, seeds: seeds.filter { $0 != doomed })
        let cc = try await FerryClient.connect(path: c.socket)
        defer { cc.close(); c.stop() }
        try await FleetTests.waitForRedis(cc)
        let again = try await cc.fetch(FetchRequest(origin.url(kept)))
        #expect(again.cacheStatus == .hit && String(decoding: again.body, as: UTF8.self) == "kept")
        #expect(try origin.countExact(kept) == 1)

        // The machines that did see it write to the new master again: A's fetches are B's hits, on every slot.
        let before = Int(try rig.cli(replica, ["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        let masters = try rig.masters()
        let total = Self.keyCount(rig, masters)
        let after = (0..<15).map { "/r?body=n\($0)&cc=max-age%3D60" }
        for path in after { _ = try await ca.fetch(FetchRequest(origin.url(path))) }
        try await Self.until("A's fifteen writes") { Self.keyCount(rig, masters) >= total + 15 }
        for path in after { #expect(try await cb.fetch(FetchRequest(origin.url(path))).cacheStatus == .hit, "\(path)") }
        #expect(Int(try rig.cli(replica, ["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 > before,
                "the promoted replica took writes")
    }

    /// A slot migrating between masters while the machines use it: commands for keys not yet moved are sent on with
    /// `ASKING` (`ASK`), and once the slot is the new master's, a machine with the old table follows `MOVED`.
    @Test func aSlotMigratingAndMovedIsFollowed() async throws {
        let rig = try RedisClusterRig(nodes: 3)
        let origin = try OriginServer()
        let a = try Self.daemon(rig, seeds: rig.ports), b = try Self.daemon(rig, seeds: rig.ports)
        let ca = try await FerryClient.connect(path: a.socket), cb = try await FerryClient.connect(path: b.socket)
        defer {
            ca.close(); cb.close(); a.stop(); b.stop(); origin.stop(); rig.stop()
        }
        for c in [ca, cb] { try await FleetTests.waitForRedis(c) }

        let path = "/r?body=moving&cc=max-age%3D60"
        let key = "ferry:v1:{GET \(origin.url(path))}"
        let slot = try #require(Int(try rig.cli(rig.ports[0], ["CLUSTER", "KEYSLOT", key]).trimmingCharacters(in: .whitespacesAndNewlines)))
        func nodeID(_ port: Int) throws -> String {
            try rig.cli(port, ["CLUSTER", "MYID"]).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let masters = try rig.masters()
        // The master whose own line of CLUSTER NODES lists the slot.
        let owner = try #require(try masters.first { port in
            try rig.cli(port, ["CLUSTER", "NODES"]).split(whereSeparator: \.isNewline).first { $0.contains("myself") }?
                .split(separator: " ").dropFirst(8).contains { range in Self.covers(range, slot) } ?? false
        })
        let target = try #require(masters.first { $0 != owner })
        // The slot starts to move: the key is on neither yet, so every command for it is asked of the target.
        _ = try rig.cli(target, ["CLUSTER", "SETSLOT", String(slot), "IMPORTING", try nodeID(owner)])
        _ = try rig.cli(owner, ["CLUSTER", "SETSLOT", String(slot), "MIGRATING", try nodeID(target)])
        #expect(try await ca.fetch(FetchRequest(origin.url(path))).cacheStatus == .miss)
        try await Self.until("the response on the importing master") {
            try rig.cli(target, ["CLUSTER", "COUNTKEYSINSLOT", String(slot)]).hasPrefix("0") == false
        }
        #expect(try await ca.stats()["l2"]?["redirections"]?.intValue ?? 0 >= 1, "ASK followed")
        // The move ends: the slot is the target's, and B, whose table says otherwise, is sent there.
        for port in rig.ports { _ = try rig.cli(port, ["CLUSTER", "SETSLOT", String(slot), "NODE", try nodeID(target)]) }
        let onB = try await cb.fetch(FetchRequest(origin.url(path)))
        #expect(onB.cacheStatus == .hit && String(decoding: onB.body, as: UTF8.self) == "moving")
        #expect(try await cb.stats()["l2"]?["redirections"]?.intValue ?? 0 >= 1, "MOVED followed")
        #expect(try origin.countExact(path) == 1)
    }

    /// Whether a `CLUSTER NODES` slot field (`N` or `N-M`) covers `slot`.
    static func covers(_ field: Substring, _ slot: Int) -> Bool {
        let bounds = field.split(separator: "-").compactMap { Int($0) }
        guard let low = bounds.first else { return false }
        return (low...(bounds.last ?? low)).contains(slot)
    }
}
}
