#if canImport(Glibc)
import Glibc
#endif
import FerryCache
import FerryFetch
import FerryImages
import FerryLoop
import FerryProtocol
import FerryStore
import FerryVips

/// `ferryd`: one libuv loop serving the Unix socket. `run` opens the store, starts the fetch engine and the image
/// loader, builds every operation with the services it needs, then serves until a signal and the drain are over.
/// Everything here runs on the loop thread.
///
/// ```swift
/// let server = Server(config: ServerConfig(socketPath: "/tmp/f.sock", cacheDirectory: "/tmp/cache"))
/// try server.run()   // returns after SIGINT/SIGTERM and a graceful drain
/// ```
public final class Server {
    /// As given, but for `maxConnections`, which `run` lowers to what the open-file limit allows.
    public private(set) var config: ServerConfig
    private let log: Logger
    private let loop = EventLoop()
    private var lifecycle = Lifecycle()
    /// Set in `run`, in the order they start.
    private var store: CacheStore?
    private var mailbox: LoopMailbox?
    private var fetch: FetchEngine?
    /// The threads that decode images (libvips), stopped after the loop.
    private var imagePool: WorkerPool?
    private var table: ConnectionTable?
    private var listener: Listener?
    private var handles: [LoopHandle] = []
    private var graceTimer: LoopTimer?
    private var finalFlushTimer: LoopTimer?
    /// How often expired entries are swept and memory hits recorded in the disk tier's LRU order.
    static let sweepIntervalMs: UInt64 = 1000
    /// How long replies may take to reach clients once the daemon stops.
    static let finalFlushMs: UInt64 = 2000

    /// The image loader, for a reload's new memory bounds.
    private var images: ImageLoader?
    /// `--l2`: Redis behind the HTTP cache, closed when the daemon stops (its handles would keep the loop alive).
    private var l2: L2Responses?
    /// `--metrics-listen`: Prometheus' scrape endpoint, `/metrics`.
    private var metricsServer: LoopHTTPServer?
    /// Since when no connection has been open (for `--idle-exit`), in ms of the wall clock.
    private var idleSince: Int64?
    /// Reads the configuration again for SIGHUP (ferryd: its file, the environment, the flags it started with);
    /// nil: SIGHUP only reopens the log file.
    public var reload: (() throws(ReloadError) -> ServerConfig)?
    /// systemd's `NOTIFY_SOCKET` (a `Type=notify` service): told when the daemon is ready, reloading and stopping.
    public var notifier: SystemdNotifier?

    public init(config: ServerConfig) {
        self.config = config
        log = Logger(level: config.logLevel, file: config.logFile, format: config.logFormat)
    }

    /// Binds the socket and serves until a signal asks to stop and the drain is over.
    public func run() throws(ServerError) {
        DaemonProcess.prepare()
        let fileLimit = DaemonProcess.fileLimit()
        let cap = DaemonProcess.connectionCap(config, fileLimit: fileLimit)
        if cap < config.maxConnections {
            log.warn("serving at most \(cap) connections: the open-file limit is \(fileLimit) (\(DaemonProcess.reservedDescriptors(config)) kept for the cache and transfers); raise it with ulimit -n")
            config.maxConnections = cap
        }
        // A socket systemd bound is systemd's: no lock beside it, no stale file to remove, and it stays after we stop
        // (the next connection starts ferryd again).
        let guardian = config.inheritedListener == nil
            ? try SocketGuard.acquire(path: config.socketPath, ownsDirectory: config.socketIsDefault, sharedWith: SocketSharing(config), log: log)
            : nil
        do {
            try start()
        } catch {
            guardian?.release()
            store?.close()
            throw error
        }
        log.info("ferryd \(ferryVersion) listening on \(config.socketPath) (pid \(getpid()))"
                 + (config.inheritedListener != nil ? ", socket passed by systemd" : ""))
        notifier?.send("READY=1\nSTATUS=listening on \(config.socketPath)\nMAINPID=\(getpid())")
        loop.run()
        // Everything acknowledged is already on disk; this applies the journal to the index and waits for the rest of
        // the queue, then the worker ends.
        store?.close()
        imagePool?.stop()
        guardian?.release()
        log.info("ferryd stopped")
    }

    /// Opens the store, starts the fetch engine and the image loader, wires the operations, binds the socket.
    private func start() throws(ServerError) {
        let budget = MemoryBudget(limit: config.bufferLimit)
        let mailbox = LoopMailbox(loop: loop)
        self.mailbox = mailbox
        let store: CacheStore
        do {
            store = try Wiring.openStore(config, budget: budget, post: mailbox.post, log: log)
        } catch {
            mailbox.close()
            throw error
        }
        self.store = store
        let l2 = Wiring.startL2(config, loop: loop, store: store, log: log)
        self.l2 = l2
        let fetch = try Wiring.startFetch(config, loop: loop, store: store, l2: l2)
        self.fetch = fetch
        let (images, imagePool) = Wiring.startImages(config, fetch: fetch, store: store, budget: budget, post: mailbox.post)
        self.imagePool = imagePool
        self.images = images
        let stats = ServerStats()
        let router = Router()
        router.hotPath = config.hotPath
        let descriptors = config.bodyDescriptors
            ? BodyDescriptors(minBytes: config.bodyDescriptorMinBytes, copies: SealedCopies(limitBytes: config.sealedCopyBytes),
                              checks: store.blobChecks, checkLimit: config.bodyDescriptorCheckLimit)
            : nil
        let table = ConnectionTable(loop: loop, config: config, log: log, stats: stats, router: router, budget: budget,
                                    descriptors: descriptors,
                                    access: AccessLog(sink: log.sink, format: config.logFormat, slowMs: config.slowMs),
                                    prefetcher: config.hotPath ? store : nil)
        self.table = table
        let report = StatsReport(loop: loop, stats: stats, router: router, table: table, store: store, fetch: fetch, log: log)
        report.l2 = l2
        for op in Wiring.operations(config, loop: loop, log: log, store: store, fetch: fetch, images: images, report: report,
                                    post: mailbox.post) {
            router.register(op)
        }
        if let listen = config.metricsListen {
            do throws(LoopError) {
                let server = try LoopHTTPServer(loop: loop, host: listen.host, port: listen.port) { line, reply in
                    Server.answerScrape(line, report: report, loader: images, post: mailbox.post, reply: reply)
                }
                metricsServer = server
                report.metricsAddress = "\(listen.host):\(server.port)"
                log.info("metrics on http://\(listen.host):\(server.port)/metrics")
            } catch {
                throw .bind(path: "\(listen.host):\(listen.port)", message: "--metrics-listen: \(error)")
            }
        }
        table.onDrained = { [unowned self] in handle(.drained) }
        table.onEmpty = { [unowned self] in handle(.allClosed) }
        listener = try Listener(loop: loop, config: config, table: table, log: log)
        handles.append(LoopIterationHook(loop: loop) { [unowned self] in endOfIteration() })
        for sig in [SIGINT, SIGTERM] {
            handles.append(LoopSignal(loop: loop, signal: sig) { [unowned self] s in
                if lifecycle.isDraining {
                    log.warn("second signal \(s): stopping now")
                } else {
                    notifier?.send("STOPPING=1\nSTATUS=draining \(table.totalInFlight) requests in flight")
                    log.info("signal \(s): draining \(table.totalInFlight) requests in flight (grace \(config.gracePeriodMs) ms)")
                }
                handle(.signal)
            })
        }
        handles.append(LoopSignal(loop: loop, signal: SIGHUP) { [unowned self] _ in reloadNow() })
        let sweep = LoopTimer(loop: loop) { [unowned self] timer in
            store.sweep(now: WallClock.nowMs())
            checkIdle(table: table)
            timer.start(afterMs: Server.sweepIntervalMs)
        }
        sweep.start(afterMs: Server.sweepIntervalMs)
        handles.append(sweep)
    }

    /// `--metrics-listen`'s answers: `/metrics` is the Prometheus view of `stats`; anything else is 404.
    static func answerScrape(_ line: String, report: StatsReport, loader: ImageLoader?, post: @escaping LoopPost,
                             reply: @escaping ([UInt8]) -> Void) {
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0] == "GET" || parts[0] == "HEAD" else {
            return reply(LoopHTTPServer.response(status: "405 Method Not Allowed", contentType: "text/plain", body: Array("GET /metrics\n".utf8)))
        }
        guard parts[1] == "/metrics" || parts[1].hasPrefix("/metrics?") else {
            return reply(LoopHTTPServer.response(status: "404 Not Found", contentType: "text/plain", body: Array("ferryd serves /metrics\n".utf8)))
        }
        StatsOperation.collect(report: report, loader: loader, post: post) { json in
            let text = Array(MetricsReport.render(stats: json, operations: report.operations).utf8)
            var response = LoopHTTPServer.response(status: "200 OK", contentType: "text/plain; version=0.0.4; charset=utf-8", body: text)
            if parts[0] == "HEAD" { response.removeLast(text.count) }
            reply(response)
        }
    }

    // MARK: Reload and idle exit

    /// SIGHUP: the log file is opened again (after logrotate moved it), and the configuration read again; what can
    /// change live does (`ConfigReload`), and the log says what needs a restart. A configuration that no longer
    /// reads keeps the running one.
    private func reloadNow() {
        notifier?.send("RELOADING=1\nMONOTONIC_USEC=\(SystemdNotifier.monotonicMicroseconds())")
        defer { notifier?.send("READY=1\nSTATUS=listening on \(config.socketPath)") }
        if let problem = log.sink.reopen() { log.error(problem) }
        guard let reload else { return log.info("SIGHUP: log reopened (no configuration to read again)") }
        let next: ServerConfig
        do { next = try reload() } catch {
            return log.error("SIGHUP: the configuration does not read, keeping the running one: \(error.message)")
        }
        let plan = ConfigReload.plan(from: config, to: next)
        let running = config
        config = ConfigReload.applying(next, to: config)
        config.maxConnections = min(config.maxConnections, DaemonProcess.connectionCap(config, fileLimit: DaemonProcess.fileLimit()))
        log.sink.level = config.logLevel
        if config.memoryLimit != running.memoryLimit { store?.resizeMemory(config.memoryLimit) }
        if config.imageMemoryLimit != running.imageMemoryLimit || config.imageMaxEntries != running.imageMaxEntries, let images {
            let (budget, entries) = (config.imageMemoryLimit, config.imageMaxEntries)
            Task { await images.resizeMemory(budget: budget, maxEntries: entries) }
        }
        listener?.update(maxConnections: config.maxConnections, allowOtherUsers: config.allowOtherUsers)
        if plan.isEmpty { return log.info("SIGHUP: configuration read again, nothing changed") }
        log.info("SIGHUP: configuration read again; changed now: \(plan.live.isEmpty ? "nothing" : plan.live.joined(separator: ", "))"
                 + (plan.restart.isEmpty ? "" : "; needs a restart (kept as running): \(plan.restart.joined(separator: ", "))"))
    }

    /// `--idle-exit`: with no connection open for that long, the daemon stops as on SIGTERM.
    private func checkIdle(table: ConnectionTable) {
        guard let limit = config.idleExitMs, !lifecycle.isDraining else { return }
        let now = WallClock.nowMs()
        guard table.count == 0 else { return idleSince = nil }
        let since = idleSince ?? now
        idleSince = since
        if now - since >= Int64(limit) {
            log.info("idle for \(limit / 1000) s with no connection: stopping (--idle-exit)")
            notifier?.send("STOPPING=1\nSTATUS=idle, stopping")
            handle(.signal)
        }
    }

    /// Once per loop iteration: the requests read in its poll phase are answered (`ReadBatch`), the store writes
    /// and acknowledges the iteration's journaled sets, every connection with replies waiting is flushed, the disk
    /// work goes to the worker; then the lifecycle may stop.
    private func endOfIteration() {
        guard let table else { return }
        table.answerBatch()
        store?.endOfIteration { table.flushPending() }
        table.access?.flush()
        if lifecycle.state == .stopPending { handle(.endOfIteration) }
    }

    // MARK: Lifecycle

    /// Feeds an event to the lifecycle and carries out what it decides.
    private func handle(_ event: Lifecycle.Event) {
        guard let table else { return }
        // Requests read in this poll phase before the event (a signal comes in the same phase as reads) are handled
        // before it, as when every read was handled at once: a get read just before a SIGTERM is served, not refused.
        table.answerBatch()
        for action in lifecycle.decide(event, inFlight: table.totalInFlight, connections: table.count) {
            perform(action, table)
        }
    }

    private func perform(_ action: Lifecycle.Action, _ table: ConnectionTable) {
        switch action {
        case .stopAccepting:
            table.isDraining = true
            listener?.close()
            // The scrape endpoint stops with the socket: an open handle would keep the loop (and the daemon) alive.
            metricsServer?.close()
            metricsServer = nil
            listener = nil
        case .startGraceTimer:
            let timer = LoopTimer(loop: loop) { [unowned self] _ in
                log.warn("grace period over with \(table.totalInFlight) requests in flight")
                handle(.graceOver)
            }
            timer.start(afterMs: config.gracePeriodMs)
            graceTimer = timer
        case .closeTimers:
            graceTimer?.close()
            table.deadlines.close()
        case .startFinalFlushTimer:
            let timer = LoopTimer(loop: loop) { [unowned self] _ in handle(.finalFlushOver) }
            timer.start(afterMs: Server.finalFlushMs)
            finalFlushTimer = timer
        case .cancelInFlight:
            table.cancelEveryRequest(with: WireError(.unavailable, "ferryd stopped before the request finished"))
        case .closeAfterFlush:
            table.closeEachAfterFlush()
        case .closeAllNow:
            table.closeAllNow()
        case .releaseLoop:
            // The lines of the requests just cancelled or closed: this iteration's end may not come.
            table.access?.flush()
            fetch?.close()
            l2?.leases?.close()
            l2?.redis.close()
            if l2?.listener !== l2?.redis { l2?.listener?.close() }
            finalFlushTimer?.close()
            mailbox?.close()
            for h in handles { h.close() }
            handles.removeAll()
        }
    }
}

/// The loop handles the server closes together when it stops.
protocol LoopHandle: AnyObject {
    func close()
}

extension LoopTimer: LoopHandle {}
extension LoopSignal: LoopHandle {}
extension LoopIterationHook: LoopHandle {}
