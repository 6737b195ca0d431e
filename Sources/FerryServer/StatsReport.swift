#if canImport(Glibc)
import Glibc
#endif
import FerryLoop
import FerryProtocol
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
    private let fetch: FetchService?
    private let startedAt: UInt64

    init(loop: EventLoop, stats: ServerStats, router: Router, table: ConnectionTable, store: CacheStore, fetch: FetchService?) {
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
        let c = store.counters
        json["cache"] = [
            "hits": .int(Int64(c.memoryHits + c.diskHits)), "memory_hits": .int(Int64(c.memoryHits)),
            "disk_hits": .int(Int64(c.diskHits)), "misses": .int(Int64(c.misses)), "sets": .int(Int64(c.sets)),
            "evictions": ["memory": .int(Int64(c.memoryEvictions)), "disk": .int(Int64(c.diskEvictions))],
            "expirations": .int(Int64(c.expirations)),
            "memory": ["bytes": .int(Int64(c.memoryBytes)), "entries": .int(Int64(c.memoryEntries)),
                       "budget": .int(Int64(store.config.memoryBudget))],
            "disk": ["bytes": .int(Int64(c.diskBytes)), "entries": .int(Int64(c.diskEntries)),
                     "budget": .int(Int64(store.config.diskBudget))],
        ]
        if let fetch {
            var f = fetch.stats.json
            f["transfers_active"] = .int(Int64(fetch.multi.activeTransfers))
            json["fetch"] = .object(f)
        }
        return json
    }
}
