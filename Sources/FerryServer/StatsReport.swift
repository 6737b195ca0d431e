#if canImport(Glibc)
import Glibc
#endif
import FerryCache
import FerryFetch
import FerryLoop
import FerryProtocol
import FerryRedis
import FerryStore

/// The `stats` result, gathered from the parts that count: the daemon's counters, each operation's, the store's and
/// the fetch engine's (the image loader's are added by `StatsOperation`, from its actor). Loop thread only.
///
/// ```swift
/// let report = StatsReport(loop: loop, stats: stats, router: router, table: table, store: store, fetch: fetch)
/// report.json()["requests"]   // {"total": …, "in_flight": …, "errors": …}
/// ```
final class StatsReport {
    private let loop: EventLoop
    private let stats: ServerStats
    private let router: Router
    private let table: ConnectionTable
    private let store: CacheStore
    private let fetch: FetchEngine?
    private let startedAt: UInt64

    private let log: Logger
    /// `--l2`'s tier, for `stats`' `l2`.
    var l2: L2Responses?
    /// Where `--metrics-listen` serves (host:port as bound); nil without it.
    var metricsAddress: String?
    /// Each operation's counters (requests, errors by code, latency), for the Prometheus view.
    var operations: [(String, OperationCounters)] { router.counters }

    init(loop: EventLoop, stats: ServerStats, router: Router, table: ConnectionTable, store: CacheStore, fetch: FetchEngine?, log: Logger) {
        self.log = log
        self.loop = loop
        self.stats = stats
        self.router = router
        self.table = table
        self.store = store
        self.fetch = fetch
        startedAt = loop.nowMs
    }

    func json() -> JSONObject {
        var json = stats.json(pid: getpid(), uptimeMs: loop.nowMs - startedAt, inFlight: table.totalInFlight, operations: router.counters)
        // Where the log goes ("stderr", or the file), so `ferry logs` finds it, and its level now.
        json["log"] = ["file": .string(log.sink.path ?? "stderr"), "level": .string(log.level.name)]
        json["metrics"] = ["listen": .string(metricsAddress ?? "")]
        var uids = JSONObject()
        for (uid, entry) in table.usageByUID().sorted(by: { $0.key < $1.key }) {
            uids[String(uid)] = ["connections_open": .int(Int64(entry.open)), "connections": .int(Int64(entry.usage.connections)),
                                 "requests": .int(Int64(entry.usage.requests)), "bytes_in": .int(Int64(entry.usage.bytesIn)),
                                 "bytes_out": .int(Int64(entry.usage.bytesOut))]
        }
        json["uids"] = .object(uids)
        json["l2"] = .object(StatsReport.l2JSON(l2))
        let c = store.counters
        json["cache"] = [
            "hits": .int(Int64(c.memoryHits + c.diskHits + c.fleetHits)), "memory_hits": .int(Int64(c.memoryHits)),
            "disk_hits": .int(Int64(c.diskHits)), "fleet_hits": .int(Int64(c.fleetHits)), "misses": .int(Int64(c.misses)), "sets": .int(Int64(c.sets)),
            "evictions": ["memory": .int(Int64(c.memoryEvictions)), "disk": .int(Int64(c.diskEvictions))],
            "expirations": .int(Int64(c.expirations)), "damaged": .int(Int64(c.damaged)),
            "memory": ["bytes": .int(Int64(c.memoryBytes)), "entries": .int(Int64(c.memoryEntries)),
                       "budget": .int(Int64(store.memoryBudget))],
            "disk": ["bytes": .int(Int64(c.diskBytes)), "entries": .int(Int64(c.diskEntries)),
                     "budget": .int(Int64(store.config.diskBudget)), "full": .bool(c.diskFull)],
        ]
        if let fetch {
            var f = StatsReport.json(fetch.stats, active: fetch.activeTransfers)
            f["transfers_waiting"] = .int(Int64(fetch.waitingTransfers))
            f["in_flight"] = StatsReport.inFlight(fetch.transfersInFlight())
            json["fetch"] = .object(f)
        }
        if let descriptors = table.descriptors { json["descriptors"] = .object(descriptors.json) }
        json["memory"] = .object(memory(cacheBytes: c.memoryBytes))
        return json
    }

    /// What the daemon holds: its resident size, the transit budget and each of its accounts, and the memory tier
    /// (the image loader's bytes are added by `StatsOperation`).
    private func memory(cacheBytes: Int) -> JSONObject {
        let budget = table.budget
        var accounts = JSONObject()
        for account in MemoryBudget.Account.allCases { accounts[account.name] = .int(Int64(budget.used(by: account))) }
        // Counted by the transfers against the same limit (`CurlMulti`), not charged to this budget.
        let fetchBodies = fetch?.bodyBytesInFlight ?? 0
        accounts[MemoryBudget.Account.fetchBodies.name] = .int(Int64(fetchBodies))
        return ["rss": .int(StatsReport.residentBytes()), "buffers": .int(Int64(budget.used + fetchBodies)),
                "buffer_limit": .int(Int64(budget.limit)), "buffer_peak": .int(Int64(budget.peak)),
                "buffer_refusals": .int(Int64(budget.refusals)), "accounts": .object(accounts),
                "cache": .int(Int64(cacheBytes))]
    }

    /// VmRSS, from /proc/self/statm (pages), in bytes; 0 where there is no /proc.
    static func residentBytes() -> Int64 {
        let fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 128)
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress!, 127) }
        guard n > 0 else { return 0 }
        let fields = String(decoding: buf[..<n], as: UTF8.self).split(separator: " ")
        guard fields.count > 1, let pages = Int64(fields[1]) else { return 0 }
        return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// `l2`: the second tier's endpoint, link and counters (zeros without `--l2`).
    static func l2JSON(_ l2: L2Responses?) -> JSONObject {
        let tier = l2?.counters ?? L2Counters()
        let timeouts = l2?.redis.counters.timeouts ?? 0, connections = l2?.redis.counters.connections ?? 0
        var o: JSONObject = ["endpoint": .string(l2.map { "\($0.redis)" } ?? ""), "connected": .bool(l2?.redis.isConnected ?? false)]
        o["hits"] = .int(Int64(tier.hits))
        o["misses"] = .int(Int64(tier.misses))
        o["body_hits"] = .int(Int64(tier.bodyHits))
        o["writes"] = .int(Int64(tier.writes))
        o["dropped"] = .int(Int64(tier.dropped))
        o["unavailable"] = .int(Int64(tier.unavailable))
        o["timeouts"] = .int(Int64(timeouts))
        o["connections"] = .int(Int64(connections))
        o["redirections"] = .int(Int64(l2?.redis.counters.redirections ?? 0))
        o["invalidations_sent"] = .int(Int64(tier.invalidationsSent))
        o["invalidations_received"] = .int(Int64(tier.invalidationsReceived))
        let leases = l2?.leases?.counters ?? FleetCounters()
        o["leases"] = .object(["won": .int(Int64(leases.won)), "took_over": .int(Int64(leases.tookOver)),
                               "waits": .int(Int64(leases.waits)), "looked_again": .int(Int64(leases.lookedAgain)),
                               "gave_up": .int(Int64(leases.gaveUp)), "released": .int(Int64(leases.released)),
                               "unavailable": .int(Int64(leases.unavailable))])
        let v = l2?.values?.counters ?? L2ValueCounters()
        o["values"] = .object(["namespaces": .array((l2?.values?.namespaces.sorted() ?? []).map { .string($0) }),
                               "hits": .int(Int64(v.hits)), "misses": .int(Int64(v.misses)), "writes": .int(Int64(v.writes)), "dropped": .int(Int64(v.dropped)),
                               "unavailable": .int(Int64(v.unavailable)), "invalidations_received": .int(Int64(v.invalidationsReceived))])
        return o
    }

    /// `fetch.in_flight`: the shared transfers in flight (`total` -1 while the origin has not said).
    static func inFlight(_ transfers: [TransferInFlight]) -> JSONValue {
        .array(transfers.map { t in
            .object(["url": .string(t.url), "received": .int(Int64(t.received)), "total": .int(Int64(t.total ?? -1)),
                     "clients": .int(Int64(t.clients))])
        })
    }

    static func json(_ f: FetchStats, active: Int) -> JSONObject {
        ["requests": .int(Int64(f.requests)), "hits": .int(Int64(f.hits)), "misses": .int(Int64(f.misses)),
         "revalidated": .int(Int64(f.revalidated)), "stale": .int(Int64(f.stale)), "coalesced": .int(Int64(f.coalesced)),
         "bypass": .int(Int64(f.bypass)), "origin_requests": .int(Int64(f.originRequests)),
         "background_revalidations": .int(Int64(f.backgroundRevalidations)), "resumed": .int(Int64(f.resumed)),
         "parts_combined": .int(Int64(f.partsCombined)),
         "bytes_from_cache": .int(Int64(f.bytesFromCache)), "bytes_from_origin": .int(Int64(f.bytesFromOrigin)),
         "transfers_active": .int(Int64(active))]
    }
}
