#if canImport(Glibc)
import Glibc
#endif
import FerryLoop
import FerryProtocol
import FerryStore

/// `ferryd`: one libuv loop serving the Unix socket. Everything here runs on the loop thread.
///
/// ```swift
/// let server = Server(config: ServerConfig(socketPath: "/tmp/f.sock", cacheDirectory: "/tmp/cache"))
/// try server.run()   // returns after SIGINT/SIGTERM and a graceful drain
/// ```
public final class Server {
    public let config: ServerConfig
    let log: Logger
    let loop = EventLoop()
    let stats = ServerStats()
    let router = Router()
    var totalInFlight = 0
    /// Bytes of request bodies still arriving in continuation frames, across connections.
    var uploadBytes = 0
    private(set) var isDraining = false
    /// The storage engine; opened in `run`, before the socket is bound.
    private(set) var store: CacheStore!
    /// libcurl on this loop and the shared HTTP cache; created in `run` after the store.
    private(set) var fetch: FetchService?
    /// The shared image loader (an actor; its downloads go through `fetch`).
    private(set) var images: ImageLoader?
    private var mailbox: LoopMailbox?
    private var sweepTimer: LoopTimer?
    /// How often expired entries are swept and memory hits recorded in the disk tier's LRU order.
    static let sweepIntervalMs: UInt64 = 1000

    private var connections: [UInt64: Connection] = [:]
    private var needFlush: [Connection] = []
    private var nextConnectionID: UInt64 = 1
    private var serialCounter: UInt64 = 0
    private var deadlines = DeadlineQueue<DeadlineKey>()
    private var armedDeadline: UInt64?
    private var deadlineTimer: LoopTimer?
    private var graceTimer: LoopTimer?
    private var iterationHook: LoopIterationHook?
    private var signals: [LoopSignal] = []
    private var listener: LoopPipeListener?
    private var socketGuard: SocketGuard?
    private var readyToStop = false
    private var isStopping = false
    private var finalFlushTimer: LoopTimer?
    /// How long replies may take to reach clients once the daemon stops.
    static let finalFlushMs: UInt64 = 2000
    private var startedAt: UInt64 = 0

    private struct DeadlineKey {
        let connection: UInt64
        let request: UInt64
        let serial: UInt64
    }

    public init(config: ServerConfig) {
        self.config = config
        log = Logger(level: config.logLevel)
        for op in [HelloOperation(), PingOperation(), DescribeOperation(), StatsOperation(), CancelOperation(),
                   CacheSetOperation(), CacheGetOperation(), CacheDeleteOperation(), CacheTouchOperation(),
                   CacheListOperation(), CacheClearOperation(), FetchOperation(),
                   ImageGetOperation(), ImagePrefetchOperation(), ImageEvictOperation()] as [OperationHandler] {
            router.register(op)
        }
    }

    /// Binds the socket and serves until a signal asks to stop and the drain is over.
    public func run() throws(ServerError) {
        Server.raiseFileLimit()
        signal(SIGPIPE, SIG_IGN)
        // Whoever started us may have left SIGINT/SIGTERM blocked; the graceful stop depends on them.
        var shutdownSignals = sigset_t()
        sigemptyset(&shutdownSignals)
        sigaddset(&shutdownSignals, SIGINT)
        sigaddset(&shutdownSignals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &shutdownSignals, nil)
        let guardian = try SocketGuard.acquire(path: config.socketPath, ownsDirectory: config.socketIsDefault, log: log)
        socketGuard = guardian
        do {
            try openStore()
            try startFetch()
            try listen()
        } catch {
            guardian.release()
            store?.close()
            throw error
        }
        startedAt = loop.nowMs
        deadlineTimer = LoopTimer(loop: loop) { [unowned self] _ in self.deadlineTimerFired() }
        iterationHook = LoopIterationHook(loop: loop) { [unowned self] in self.endOfIteration() }
        for sig in [SIGINT, SIGTERM] {
            signals.append(LoopSignal(loop: loop, signal: sig) { [unowned self] s in self.beginShutdown(signal: s) })
        }
        sweepTimer = LoopTimer(loop: loop) { [unowned self] timer in
            self.store.sweep(now: WallClock.nowMs())
            timer.start(afterMs: Server.sweepIntervalMs)
        }
        sweepTimer?.start(afterMs: Server.sweepIntervalMs)
        log.info("ferryd \(ferryVersion) listening on \(config.socketPath) (pid \(getpid()))")
        loop.run()
        // Everything acknowledged is already on disk; this applies the journal to the index and waits for the rest of
        // the queue, then the worker ends.
        store.close()
        guardian.release()
        log.info("ferryd stopped")
    }

    private func openStore() throws(ServerError) {
        let mailbox = LoopMailbox(loop: loop)
        self.mailbox = mailbox
        var storeConfig = StoreConfig(directory: config.cacheDirectory)
        storeConfig.memoryBudget = config.memoryLimit
        storeConfig.diskBudget = config.diskLimit
        storeConfig.maxValueBytes = config.limits.maxValueBytes
        do {
            try Server.makeDirectories(config.cacheDirectory)
            store = try CacheStore(config: storeConfig, post: mailbox.post)
        } catch {
            mailbox.close()
            throw .store("cannot open the cache in \(config.cacheDirectory): \(error)")
        }
        store.batchesSubmissions = true
        for notice in store.notices { log.error(notice) }
        log.info("cache: \(config.cacheDirectory), \(store.counters.diskEntries) entries on disk")
    }

    private func startFetch() throws(ServerError) {
        var fetchConfig = FetchService.Config()
        fetchConfig.caFile = config.caFile
        fetchConfig.maxPerHost = config.fetchPerHost
        fetchConfig.maxTotal = config.fetchTotal
        do {
            fetch = try FetchService(loop: loop, responses: ResponseStore(store: store), config: fetchConfig)
        } catch {
            throw .store("cannot start the HTTP client: \(error)")
        }
        guard let fetch, let mailbox else { return }
        var imageConfig = ImageLoader.Config()
        imageConfig.memoryBudget = config.imageMemoryLimit
        imageConfig.maxEntries = config.imageMaxEntries
        imageConfig.maxPixels = config.imageMaxPixels
        imageConfig.maxConcurrent = config.imageDownloads
        images = ImageLoader(fetcher: LoopImageFetcher(service: fetch, post: mailbox.post), config: imageConfig)
    }

    /// `mkdir -p` with mode 0700 for the parts it creates.
    private static func makeDirectories(_ path: String) throws(StoreError) {
        var prefix = path.hasPrefix("/") ? "" : (Server.currentDirectory() ?? ".")
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + part
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                let e = errno
                let text = "mkdir \(prefix): \(String(cString: strerror(e)))"
                throw e == EROFS || e == EACCES || e == EPERM ? .readOnly(text) : .io(text)
            }
        }
    }

    private func listen() throws(ServerError) {
        let listener = LoopPipeListener(loop: loop)
        self.listener = listener
        do throws(LoopError) {
            try listener.bind(path: config.socketPath)
            try listener.listen(backlog: 4096) { [unowned self] status in accept(status: status) }
        } catch {
            throw .bind(path: config.socketPath, message: error.description)
        }
    }

    private func accept(status: Int32) {
        guard status == 0, let pipe = listener?.accept() else { return }
        let connection = Connection(id: nextConnectionID, server: self, pipe: pipe)
        nextConnectionID += 1
        connections[connection.id] = connection
        stats.connectionsOpen += 1
        stats.connectionsTotal += 1
        if let refusal = admissionProblem(pipe) {
            stats.connectionsRejected += 1
            stats.countConnectionError(refusal.code)
            log.info("conn=\(connection.id) refused: \(refusal.message)")
            connection.writeError(id: 0, error: refusal)
            connection.flush()
            connection.closeAfterFlush()
            return
        }
        log.debug("conn=\(connection.id) open")
        connection.startReading()
    }

    /// Why a new connection may not stay: another uid, or too many connections.
    private func admissionProblem(_ pipe: LoopPipe) -> WireError? {
        if !config.allowOtherUsers {
            guard let uid = pipe.peerUID() else { return WireError(.permissionDenied, "cannot read the peer's credentials") }
            if uid != getuid() {
                return WireError(.permissionDenied, "peer uid \(uid) is not the daemon's uid \(getuid()); start ferryd with --allow-other-users to allow it")
            }
        }
        if connections.count > config.maxConnections {
            return WireError(.resourceExhausted, "ferryd serves at most \(config.maxConnections) connections")
        }
        return nil
    }

    func connectionClosed(_ connection: Connection) {
        if connections.removeValue(forKey: connection.id) != nil {
            stats.connectionsOpen -= 1
            log.debug("conn=\(connection.id) closed")
        }
        if isStopping && connections.isEmpty { releaseLoop() }
    }

    func nextSerial() -> UInt64 {
        serialCounter += 1
        return serialCounter
    }

    func statsJSON() -> JSONObject {
        var json = stats.json(pid: getpid(), uptimeMs: loop.nowMs - startedAt, inFlight: totalInFlight, operations: router.counters)
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

    // MARK: Output

    func scheduleFlush(_ connection: Connection) { needFlush.append(connection) }

    /// Runs a closure on the loop thread; callable from any thread (the image loader's replies come this way).
    var post: @Sendable (@escaping @Sendable () -> Void) -> Void {
        if let mailbox { return mailbox.post }
        return { _ in }
    }

    /// Once per loop iteration: write the iteration's journaled sets (one append) and acknowledge them, flush every
    /// connection that has replies waiting, hand the disk work to the worker, then stop if the drain is over.
    private func endOfIteration() {
        // A flush can resume a paused connection, whose buffered frames then produce more replies (and sets):
        // repeat until nothing is waiting, or the loop would sleep on unsent replies. Ends because a connection
        // that produces too much pauses again.
        repeat {
            store?.writeJournal()
            while !needFlush.isEmpty {
                let batch = needFlush
                needFlush.removeAll(keepingCapacity: true)
                for connection in batch { connection.flush() }
            }
        } while store?.hasJournalWork == true
        store?.flushSubmissions()
        if readyToStop { stopNow() }
    }

    // MARK: Deadlines

    func scheduleDeadline(connection: UInt64, request: RequestContext, afterMs ms: UInt64) {
        // Entries of finished requests stay until their time; drop them when they outnumber the live ones, so
        // long timeouts on short requests cannot grow the heap without bound.
        if deadlines.count > 2 * totalInFlight + 1024 {
            deadlines.compact { key in connections[key.connection]?.request(id: key.request)?.serial == key.serial }
            armedDeadline = nil
        }
        deadlines.schedule(DeadlineKey(connection: connection, request: request.id, serial: request.serial), at: loop.nowMs + ms)
        armDeadlineTimer()
    }

    private func armDeadlineTimer() {
        guard let next = deadlines.nextDeadline, next != armedDeadline else { return }
        let now = loop.nowMs
        armedDeadline = next
        deadlineTimer?.start(afterMs: next > now ? next - now : 0)
    }

    private func deadlineTimerFired() {
        armedDeadline = nil
        for key in deadlines.popExpired(now: loop.nowMs) {
            guard let request = connections[key.connection]?.request(id: key.request), request.serial == key.serial else { continue }
            request.cancel(with: WireError(.deadlineExceeded, "the request's timeout_ms elapsed"))
        }
        armDeadlineTimer()
    }

    // MARK: Shutdown

    /// First signal: stop accepting, answer new requests with `unavailable`, give requests in flight the grace
    /// period. A second signal stops at once.
    private func beginShutdown(signal: Int32) {
        if isDraining {
            log.warn("second signal \(signal): stopping now")
            if isStopping { forceStop() } else { readyToStop = true }
            return
        }
        isDraining = true
        log.info("signal \(signal): draining \(totalInFlight) requests in flight (grace \(config.gracePeriodMs) ms)")
        listener?.close()
        listener = nil
        if totalInFlight == 0 {
            readyToStop = true
        } else {
            graceTimer = LoopTimer(loop: loop) { [unowned self] _ in
                self.log.warn("grace period over with \(self.totalInFlight) requests in flight")
                self.readyToStop = true
            }
            graceTimer?.start(afterMs: config.gracePeriodMs)
        }
    }

    func requestEnded() {
        if isDraining && totalInFlight == 0 { readyToStop = true }
    }

    /// Answers what is still in flight with `unavailable`, flushes what the sockets take, closes every handle so
    /// `uv_run` returns.
    /// Answers what is still in flight with `unavailable`, then closes each connection once its replies are written.
    /// A client that does not read gets `finalFlushMs` before it is cut off (as does everyone on a second signal).
    private func stopNow() {
        readyToStop = false
        guard !isStopping else { return forceStop() }
        isStopping = true
        for connection in Array(connections.values) {
            for request in Array(connection.inFlight.values) {
                request.cancel(with: WireError(.unavailable, "ferryd stopped before the request finished"))
            }
            connection.flush()
            connection.closeAfterFlush()
        }
        graceTimer?.close()
        deadlineTimer?.close()
        listener?.close()
        listener = nil
        if connections.isEmpty { return releaseLoop() }
        finalFlushTimer = LoopTimer(loop: loop) { [unowned self] _ in self.forceStop() }
        finalFlushTimer?.start(afterMs: Server.finalFlushMs)
    }

    /// Closes every connection now, unsent replies dropped.
    private func forceStop() {
        for connection in Array(connections.values) { connection.close() }
    }

    /// The last handles go; `uv_run` returns once their close callbacks ran.
    private func releaseLoop() {
        fetch?.close()
        finalFlushTimer?.close()
        sweepTimer?.close()
        mailbox?.close()
        iterationHook?.close()
        for s in signals { s.close() }
        signals.removeAll()
    }

    static func currentDirectory() -> String? {
        var buf = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buf, buf.count) != nil else { return nil }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Lets a daemon hold as many connections as the hard limit allows (the soft limit is often 1024).
    private static func raiseFileLimit() {
        var limit = rlimit()
        if getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
        }
    }
}

#if canImport(Glibc)
private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#endif
