import FerryCache
import FerryLoop
import FerryProtocol
import FerryStore

/// Every open connection and what they share: the daemon-wide counts that admission and limits read (requests in
/// flight, upload bytes), the list of connections with replies to flush this iteration, the request deadlines, and
/// the services a connection needs (configuration, log, counters, operations). Connections reach it, never the
/// server. Loop thread only.
///
/// ```swift
/// let table = ConnectionTable(loop: loop, config: config, log: log, stats: stats, router: router, budget: budget)
/// let connection = table.open(pipe)   // from the listener
/// table.flushPending()                // once per loop iteration
/// ```
final class ConnectionTable {
    let config: ServerConfig
    let log: Logger
    let stats: ServerStats
    let router: Router
    /// Where connections make their timers.
    let loop: EventLoop
    /// Large reply bodies as descriptors, for clients that ask (`body_fd`); nil when the daemon hands none out.
    let descriptors: BodyDescriptors?
    /// One line per request (`AccessLog`), written at the end of each loop iteration. A `let`: every request asks
    /// it, and a `var` was retained and released at each asking (callgrind).
    let access: AccessLog?
    /// The same, for the fast path's question (`wants`) without a retain and a release of the log (callgrind).
    let accessRef: Unmanaged<AccessLog>?
    private(set) var deadlines: RequestDeadlines!
    private var connections: [UInt64: Connection] = [:]
    /// What the closed connections of each uid did (the open ones count their own until they close).
    private var closedUsage: [UInt32: UIDUsage] = [:]

    /// Each uid's connections and their totals, open and closed (`stats`' `uids`).
    func usageByUID() -> [UInt32: (open: Int, usage: UIDUsage)] {
        var out = closedUsage.mapValues { (open: 0, usage: $0) }
        for c in connections.values {
            var entry = out[c.peerUID] ?? (0, UIDUsage())
            entry.open += 1
            entry.usage.add(c.usage)
            out[c.peerUID] = entry
        }
        return out
    }
    /// Connections whose reads wait for the end of the poll phase, and the spare that takes the next ones while
    /// they are answered (`ReadBatch`). Unretained: a connection lives until its pipe's close callback, which comes
    /// after the iteration's end, where the batch is answered, and one that closes leaves the batch (`close`).
    var batch: [Unmanaged<Connection>] = []
    var answering: [Unmanaged<Connection>] = []
    /// The store, for its prefetch hints on a batch's keys; nil: none (the batch is still answered together).
    /// Unretained, and asked through `_withUnsafeGuaranteedRef`: the store outlives the table (the server holds
    /// both), and a reference copied out of an optional was a retain and a release a request, through the slow
    /// path of an object with weak references (callgrind).
    let prefetcher: Unmanaged<CacheStore>?
    private var needFlush: [Connection] = []
    /// The connections `flushPending` is writing (the spare of `needFlush`, which takes the next ones meanwhile).
    private var flushing: [Connection] = []
    private var nextConnectionID: UInt64 = 1
    private var serialCounter: UInt64 = 0
    /// Requests in flight across connections.
    var totalInFlight = 0
    /// The in-flight limits, read out of `config` once: every request is admitted by them, and reading them
    /// through the configuration (a struct of strings and arrays) retained and released two of its fields each time.
    let maxConnectionInFlight: Int
    let maxTotalInFlight: Int
    /// The daemon's budget for bytes in transit, shared with the store and the fetch engine.
    let budget: MemoryBudget
    /// Bytes of request bodies still arriving in continuation frames, across connections (budget: `.uploads`).
    var uploadBytes = 0 {
        didSet { budget.adjust(by: uploadBytes - oldValue, account: .uploads) }
    }
    /// Reply bytes buffered and not yet written, across connections (`out` and queued writes; budget: `.replies`).
    var outputBytes = 0 {
        didSet { budget.adjust(by: outputBytes - oldValue, account: .replies) }
    }
    /// New requests are answered `unavailable` (the daemon is stopping).
    var isDraining = false
    /// The last request in flight ended.
    var onDrained: () -> Void = {}
    /// The last connection closed.
    var onEmpty: () -> Void = {}

    init(loop: EventLoop, config: ServerConfig, log: Logger, stats: ServerStats, router: Router, budget: MemoryBudget,
         descriptors: BodyDescriptors? = nil, access: AccessLog? = nil, prefetcher: CacheStore? = nil) {
        self.loop = loop
        self.prefetcher = prefetcher.map { Unmanaged.passUnretained($0) }
        self.access = access
        accessRef = access.map { Unmanaged.passUnretained($0) }
        self.descriptors = descriptors
        self.config = config
        maxConnectionInFlight = config.limits.maxInFlight
        maxTotalInFlight = config.maxTotalInFlight
        self.budget = budget
        self.log = log
        self.stats = stats
        self.router = router
        deadlines = RequestDeadlines(loop: loop) { [unowned self] connection, id in connections[connection]?.request(id: id) }
    }

    var count: Int { connections.count }

    /// A new connection on an accepted pipe, counted and entered in the table.
    func open(_ pipe: LoopPipe) -> Connection {
        let connection = Connection(id: nextConnectionID, table: self, pipe: pipe)
        nextConnectionID += 1
        connections[connection.id] = connection
        stats.connectionsOpen += 1
        stats.connectionsTotal += 1
        return connection
    }

    func closed(_ connection: Connection) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        stats.connectionsOpen -= 1
        closedUsage[connection.peerUID, default: UIDUsage()].add(connection.usage)
        log.debug("conn=\(connection.id) closed")
        if connections.isEmpty { onEmpty() }
    }

    /// Tells a deadline entry for a request from one for a later request that reuses its id.
    func nextSerial() -> UInt64 {
        serialCounter += 1
        return serialCounter
    }

    func requestStarted(_ request: RequestContext, on connection: UInt64, timeoutMs: Int64?) {
        totalInFlight += 1
        if let ms = timeoutMs { deadlines.schedule(connection: connection, request: request, afterMs: UInt64(ms), live: totalInFlight) }
    }

    func requestEnded() {
        totalInFlight -= 1
        if totalInFlight == 0 && isDraining { onDrained() }
    }

    // MARK: Output

    func scheduleFlush(_ connection: Connection) { needFlush.append(connection) }

    /// Flushes every connection that has replies waiting (a flush may produce more: drained until none is left).
    func flushPending() {
        while !needFlush.isEmpty {
            // Swapped with a spare, not copied: emptying an array whose buffer a copy shared allocated a new one, and
            // the old one was freed after the loop, once per loop iteration (perf: 2.5 % of ferryd at 50 pings).
            swap(&needFlush, &flushing)
            for connection in flushing { connection.flush() }
            flushing.removeAll(keepingCapacity: true)
        }
    }

    // MARK: Stopping

    /// Answers every request in flight on every connection with `error`, stopping its work.
    func cancelEveryRequest(with error: WireError) {
        for connection in Array(connections.values) { connection.cancelEveryRequest(with: error) }
    }

    /// Writes what each connection has buffered, then closes it once the kernel took it.
    func closeEachAfterFlush() {
        for connection in Array(connections.values) {
            connection.flush()
            connection.closeAfterFlush()
        }
    }

    /// Closes every connection now, unsent replies dropped.
    func closeAllNow() {
        for connection in Array(connections.values) { connection.close() }
    }
}
