#if canImport(Glibc)
import Glibc
#endif
import FerryCache
import FerryFetch
import FerryHTTPCache
import FerryLoop
import FerryImages
import FerryVips
import FerryProtocol
import FerryRedis
import FerryStore

/// How the daemon's parts are made and connected, once, in `Server.run`: the store first (everything else keeps its
/// data there), then the fetch engine on the loop, the image loader on top of it, and every operation with exactly
/// the services it uses. The one place to add an operation: build it here.
///
/// ```swift
/// let store = try Wiring.openStore(config, budget: budget, post: mailbox.post, log: log)
/// let ops = Wiring.operations(config, loop: loop, log: log, store: store, fetch: fetch, images: images,
///                             report: report, post: mailbox.post)
/// ```
enum Wiring {
    static func openStore(_ config: ServerConfig, budget: MemoryBudget, post: @escaping LoopPost, log: Logger) throws(ServerError) -> CacheStore {
        var storeConfig = StoreConfig(directory: config.cacheDirectory)
        storeConfig.memoryBudget = config.memoryLimit
        storeConfig.diskBudget = config.diskLimit
        storeConfig.fsync = config.fsync
        storeConfig.maxValueBytes = config.limits.maxValueBytes
        let store: CacheStore
        do {
            try DaemonProcess.makeDirectories(config.cacheDirectory)
            store = try CacheStore(config: storeConfig, budget: budget, post: post)
        } catch {
            throw .store("cannot open the cache in \(config.cacheDirectory): \(error)")
        }
        for notice in store.notices { log.error(notice) }
        store.onNotice = { line in log.warn(line) }
        log.info("cache: \(config.cacheDirectory), \(store.counters.diskEntries) entries on disk")
        return store
    }

    /// libcurl's multi on the loop, with the HTTP cache stored in `store`.
    static func startFetch(_ config: ServerConfig, loop: EventLoop, store: CacheStore, l2: L2Responses? = nil) throws(ServerError) -> FetchEngine {
        var transportConfig = CurlTransport.Config()
        transportConfig.caFile = config.caFile
        transportConfig.maxPerHost = config.fetchPerHost
        transportConfig.maxTotal = config.fetchTotal
        transportConfig.connectTimeoutMs = config.fetchConnectTimeoutMs
        transportConfig.defaultTimeoutMs = config.fetchTimeoutMs
        do {
            let curl = try CurlTransport(loop: loop, config: transportConfig)
            // libcurl would queue past its limits in arrival order; the slots are shared among clients here first.
            let transport = FairTransport(curl, loop: loop, capacity: config.fetchTotal, defaultTimeoutMs: config.fetchTimeoutMs)
            var engineConfig = FetchEngine.Config()
            engineConfig.maxBytesLimit = config.maxFetchBytes
            engineConfig.targets = TargetedCacheControl(fields: config.cacheControlTargets)
            engineConfig.spool = BodySpool.Config(directory: try spoolDirectory(config))
            if let secret = config.l2PartitionSecret ?? partitionSecret(config) { engineConfig.partitionSecret = secret }
            let storage: ResponseStorage = l2 ?? CacheStoreResponses(store: store)
            let engine = FetchEngine(transport: transport, responses: ResponseStore(storage: storage), config: engineConfig)
            engine.fleet = l2?.leases
            return engine
        } catch {
            throw .store("cannot start the HTTP client: \(error)")
        }
    }

    /// `<cache dir>/spool`, where bodies larger than a MiB are written as they arrive (then renamed into the store,
    /// on the same file system). What a previous run left there is removed: no transfer survives a restart.
    static func spoolDirectory(_ config: ServerConfig) throws(StoreError) -> String {
        let dir = config.cacheDirectory + "/spool"
        try DaemonProcess.makeDirectories(dir)
        if let d = opendir(dir) {
            defer { closedir(d) }
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name.hasPrefix("body-") { unlink(dir + "/" + name) }
            }
        }
        return dir
    }

    /// The key of credential partitions, kept beside the socket when that directory is in memory (tmpfs, as
    /// `$XDG_RUNTIME_DIR` is), so partitions survive a restart of the daemon but the secret never reaches a disk;
    /// nil elsewhere (then each run has a fresh one, and partitions stored before it are never found again).
    static func partitionSecret(_ config: ServerConfig) -> [UInt8]? {
        let dir = String(config.socketPath[..<(config.socketPath.lastIndex(of: "/") ?? config.socketPath.startIndex)])
        guard !dir.isEmpty, MemoryFileSystem.holds(dir) else { return nil }
        let path = dir + "/ferryd.secret"
        var fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return nil }
            let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let written = secret.withUnsafeBytes { write(fd, $0.baseAddress, 32) }
            close(fd)
            return written == 32 ? secret : nil
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_uid == getuid(), st.st_mode & 0o077 == 0, st.st_size == 32 else { return nil }
        var secret = [UInt8](repeating: 0, count: 32)
        guard secret.withUnsafeMutableBytes({ read(fd, $0.baseAddress, 32) }) == 32 else { return nil }
        return secret
    }

    /// Redis behind the HTTP cache's storage (`--l2`): the connection started on the loop, changes logged.
    static func startL2(_ config: ServerConfig, loop: EventLoop, store: CacheStore, log: Logger) -> L2Responses? {
        guard let endpoint = config.l2 else { return nil }
        let client: RedisConnection, listener: RedisConnection
        if config.l2Cluster.isEmpty {
            client = RedisClient(loop: loop, endpoint: endpoint, timeoutMs: config.l2TimeoutMs, setup: config.l2Setup)
            // A second connection for the fleet's invalidations: a subscribed connection takes no other commands.
            listener = RedisClient(loop: loop, endpoint: endpoint, timeoutMs: config.l2TimeoutMs, setup: config.l2Setup)
        } else {
            // A cluster keeps its own subscribed connection, on a node of its choice.
            client = RedisCluster(loop: loop, seeds: config.l2Cluster, timeoutMs: config.l2TimeoutMs, setup: config.l2Setup)
            listener = client
        }
        client.onChange = { line in log.info("l2: " + line) }
        let l2 = L2Responses(local: CacheStoreResponses(store: store), redis: client, listener: listener, prefix: config.l2Prefix,
                             maxValueBytes: config.l2MaxValueBytes)
        l2.sharesPartitions = config.l2PartitionSecret != nil
        l2.leases = FleetLeases(loop: loop, tier: l2, leaseMs: config.l2LeaseMs)
        // Image variants are shared always (their keys name the original's version: a variant made on one machine
        // is the one every machine would make); `cache.*` namespaces when listed.
        let values = L2Values(redis: client, listener: listener, prefix: config.l2Prefix,
                              namespaces: config.l2Namespaces.union([VariantKey.namespace]), idleTtlMs: config.l2IdleTtlMs,
                              maxValueBytes: config.l2MaxValueBytes, store: store)
        store.remote = values
        l2.values = values
        client.start()
        if listener !== client { listener.start() }
        return l2
    }

    /// The image loader, with libvips decoding on a pool of `imageDecoders` threads (stopped by the caller), and
    /// its variants kept in the cache store.
    static func startImages(_ config: ServerConfig, fetch: FetchEngine, store: CacheStore, budget: MemoryBudget,
                            post: @escaping LoopPost) -> (ImageLoader, WorkerPool) {
        var imageConfig = ImageLoader.Config()
        imageConfig.memoryBudget = config.imageMemoryLimit
        imageConfig.maxEntries = config.imageMaxEntries
        imageConfig.maxPixels = config.imageMaxPixels
        imageConfig.maxConcurrent = config.imageDownloads
        imageConfig.maxResizing = config.imageDecoders
        let pool = WorkerPool(threads: config.imageDecoders, name: "ferry-image")
        let decoder = VipsDecoder(pool: pool, memory: LoopDecodeMemory(budget: budget, post: post))
        let loader = ImageLoader(fetcher: LoopImageFetcher(engine: fetch, post: post), decoder: decoder,
                                 variantStore: LoopVariantStore(store: store, post: post), config: imageConfig, now: WallClock.nowMs)
        return (loader, pool)
    }

    /// Every operation of protocol v1, in the catalog's order (the order `hello` and `describe` list them).
    static func operations(_ config: ServerConfig, loop: EventLoop, log: Logger, store: CacheStore, fetch: FetchEngine?,
                           images: ImageLoader?, report: StatsReport, post: @escaping LoopPost) -> [OperationHandler] {
        let served = OperationCatalog.v1
        let ops: [OperationHandler] = [
            HelloOperation(limits: config.limits, served: served.map(\.name),
                           bodyDescriptorMinBytes: config.bodyDescriptors ? config.bodyDescriptorMinBytes : nil, log: log),
            PingOperation(loop: loop),
            DescribeOperation(served: served),
            StatsOperation(report: report, loader: images, post: post),
            CancelOperation(),
            CacheSetOperation(store: store), CacheGetOperation(store: store), CacheDeleteOperation(store: store),
            CacheTouchOperation(store: store), CacheIncrOperation(store: store), CacheListOperation(store: store), CacheClearOperation(store: store),
            FetchOperation(engine: fetch, store: store),
            HTTPListOperation(engine: fetch, loader: images, post: post), HTTPShowOperation(engine: fetch, loader: images, post: post),
            HTTPPurgeOperation(engine: fetch, loader: images, post: post),
            ImageGetOperation(loader: images, post: post), ImagePrefetchOperation(loader: images, post: post),
            ImageEvictOperation(loader: images, post: post),
        ]
        precondition(ops.map(\.descriptor.name) == served.map(\.name), "every operation of the catalog, in its order")
        return ops
    }
}

/// What a daemon process sets up for itself before serving.
enum DaemonProcess {
    /// Closes what it creates to other users (umask 077), raises the file limit, ignores SIGPIPE (a closed peer is an error return, not a death), and unblocks the
    /// shutdown signals, which whoever started us may have left blocked.
    static func prepare() {
        // Every file and directory the daemon makes (index, WAL, journal, blobs) is its user's alone.
        umask(0o077)
        raiseFileLimit()
        signal(SIGPIPE, SIG_IGN)
        var shutdownSignals = sigset_t()
        sigemptyset(&shutdownSignals)
        sigaddset(&shutdownSignals, SIGINT)
        sigaddset(&shutdownSignals, SIGTERM)
        sigaddset(&shutdownSignals, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &shutdownSignals, nil)
    }

    /// `mkdir -p` with mode 0700 for the parts it creates.
    static func makeDirectories(_ path: String) throws(StoreError) {
        var prefix = path.hasPrefix("/") ? "" : (currentDirectory() ?? ".")
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + part
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                let e = errno
                let text = "mkdir \(prefix): \(String(cString: strerror(e)))"
                throw e == EROFS || e == EACCES || e == EPERM ? .readOnly(text) : .io(text)
            }
        }
    }

    static func currentDirectory() -> String? {
        var buf = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buf, buf.count) != nil else { return nil }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Descriptors kept free of connections: the loop's own, the index and its WAL, lock files, the journal, the
    /// log, a blob being written or read, and per origin transfer (`fetchTotal`) its socket and its spool file.
    static func reservedDescriptors(_ config: ServerConfig) -> Int { 96 + 2 * config.fetchTotal }

    /// The connections the daemon can hold with its open-file limit: the configured cap, lowered so that a
    /// connection past it still gets its `resource_exhausted` frame (accepting needs a descriptor) and blobs and
    /// transfers always find one.
    static func connectionCap(_ config: ServerConfig, fileLimit: Int) -> Int {
        max(1, min(config.maxConnections, fileLimit - reservedDescriptors(config)))
    }

    /// The soft limit on open files, after `prepare` raised it.
    static func fileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return 1024 }
        return Int(clamping: min(limit.rlim_cur, rlim_t(Int32.max)))
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
