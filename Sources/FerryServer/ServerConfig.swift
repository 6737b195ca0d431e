import FerryProtocol
import FerryRedis
import FerryStore

/// Everything `ferryd` can be told; the defaults are the documented ones.
public struct ServerConfig: Sendable {
    /// The socket path (already resolved: flag, `FERRY_SOCKET`, or the default).
    public var socketPath: String
    /// Whether the socket path is the default one, whose directory the daemon owns and checks.
    public var socketIsDefault: Bool
    public var cacheDirectory: String
    public var logLevel: LogLevel = .info
    /// A listening socket handed over by systemd (socket activation): served instead of binding `socketPath`,
    /// which is then its path, for the log and the lock file. Nil: ferryd binds the socket itself.
    public var inheritedListener: Int32?
    /// Where log lines go: a file opened for appending (and again on SIGHUP); nil: stderr.
    public var logFile: String?
    /// `--socket-group`: the group whose members may connect (the socket 0660 and that group's); implies accepting
    /// their uids. Nil: the socket is the user's alone (0600), or everyone's (0666) with `allowOtherUsers`.
    public var socketGroup: (name: String, gid: UInt32)?
    /// Whether anyone but this user may connect: `--allow-other-users` or `--socket-group`.
    public var sharesSocket: Bool { allowOtherUsers || socketGroup != nil }
    /// `--l2`: Redis as a second tier shared by a fleet (nil: none), with `--l2-prefix`, `--l2-max-value`,
    /// `--l2-timeout`.
    public var l2: RedisEndpoint?
    /// `--l2 redis-cluster://…`: the cluster's seed nodes (empty: `l2` is one server).
    public var l2Cluster: [RedisEndpoint] = []
    /// What each connection to Redis begins with (`AUTH`, `SELECT`), from `--l2`'s URL.
    public var l2Setup: [[String]] = []
    public var l2Prefix = "ferry:v1:"
    public var l2MaxValueBytes = 1 << 20
    public var l2TimeoutMs: Int64 = 50
    /// `--l2-lease`: how long a cold fetch holds the fleet's lease on its key unless renewed (`FleetLeases`).
    public var l2LeaseMs: Int64 = 5_000
    /// `--l2-namespaces`: the `cache.*` namespaces shared through Redis (`L2Values`), and `--l2-idle-ttl`.
    public var l2Namespaces: Set<String> = []
    /// `--l2-partition-secret`: the fleet's key of credential partitions, which then go to Redis too (nil: they stay
    /// on each machine, keyed by its own secret).
    public var l2PartitionSecret: [UInt8]?
    public var l2IdleTtlMs: Int64 = 7 * 86_400_000
    /// `--metrics-listen`: where Prometheus scrapes `/metrics` (TCP; an IPv4 address, usually 127.0.0.1).
    public var metricsListen: (host: String, port: Int)?
    /// `--log-format`: logfmt lines (the default) or JSON lines, for every line and the access lines.
    public var logFormat = LogFormat.logfmt
    /// `--slow-ms`: requests at least this slow get `slow=true` in their access line, at warn.
    public var slowMs = 1000
    /// `--idle-exit`: stop after this long with no connection (an auto-started daemon's habit); nil: never.
    public var idleExitMs: UInt64?
    public var limits = ProtocolLimits()
    /// Connections open at once; beyond it new ones get `resource_exhausted` and are closed.
    public var maxConnections = 4096
    /// Requests in flight across all connections.
    public var maxTotalInFlight = 65536
    /// Unsent reply bytes at which the daemon stops reading from a connection, and where it starts again.
    public var highWaterBytes = 1024 * 1024
    public var lowWaterBytes = 256 * 1024
    /// The daemon's budget for bytes in transit (`MemoryBudget`, `--buffer-limit`): unwritten replies, arriving
    /// bodies, values waiting for the disk, bodies of transfers. Past it streamed replies wait (each connection still
    /// gets one piece at a time) and uploads and large sets are refused with `resource_exhausted`.
    public var bufferLimit = 64 * 1024 * 1024
    /// Bodies held in memory for replies a client has not read yet, per connection: past it, while the client has
    /// stopped reading, such replies fail with `resource_exhausted` (values on disk are read as the client takes
    /// them and do not count).
    public var maxUnreadReplyBytes = 64 * 1024 * 1024
    /// How long requests in flight may take to finish after SIGINT/SIGTERM.
    public var gracePeriodMs: UInt64 = 10_000
    /// Accept peers with another uid (SO_PEERCRED).
    public var allowOtherUsers = false
    /// Large reply bodies as descriptors for clients that ask (`body_fd`, `--no-body-fd` turns it off): from
    /// `bodyDescriptorMinBytes` up, with at most `sealedCopyBytes` of sealed copies of values in memory kept for reuse.
    public var bodyDescriptors = true
    public var bodyDescriptorMinBytes = 64 * 1024
    public var sealedCopyBytes = 64 * 1024 * 1024
    /// The largest stored file checked on the loop before its first hand-out as a descriptor
    /// (`--body-fd-check-limit`); a larger one goes as bytes until a read of it has checked it.
    public var bodyDescriptorCheckLimit = BlobChecks.checkLimit
    /// Whether the hot operations answer their plain requests on their fast path (`HotPath`); off only to compare.
    public var hotPath = true
    /// Memory and disk budgets of the cache (`--memory-limit`, `--disk-limit`).
    public var memoryLimit = 256 * 1024 * 1024
    public var diskLimit = 2 * 1024 * 1024 * 1024
    /// When acknowledged writes reach the disk (`--fsync`): what a power loss may cost.
    public var fsync = FsyncPolicy.everysec
    /// `fetch`: an extra CA certificate file trusted next to the system store (`--ca-file`), and the transfer
    /// limits (`--fetch-per-host`, `--fetch-total`; more wait in order).
    public var caFile: String?
    public var fetchPerHost = 6
    public var fetchTotal = 64
    /// How long connecting to an origin may take (`--fetch-connect-timeout`), and the limit of an exchange whose
    /// request sets no `timeout_ms` (`--fetch-timeout`).
    public var fetchConnectTimeoutMs = 30_000
    public var fetchTimeoutMs = 300_000
    /// The largest response body a fetch takes (`--max-fetch-bytes`): every request's default `max_bytes` and the
    /// most it may ask. Bodies stream, so this bounds time and disk, not memory; what is kept is bounded by the
    /// disk budget (half of it for one body).
    public var maxFetchBytes = 8 << 30
    /// The targeted cache-control fields the HTTP cache obeys over `Cache-Control` and `Expires` (RFC 9213,
    /// `--cache-control-targets`), first wins; a deployment that acts as a CDN adds `CDN-Cache-Control`.
    public var cacheControlTargets = ["Ferry-Cache-Control"]
    /// The image loader: memory budget and entry count (`--image-memory-limit`, `--image-max-entries`), the pixel
    /// limit (`--image-max-pixels`), downloads at once (`--image-downloads`) and images decoded at once
    /// (`--image-decoders`: the threads of libvips's pool; what bounds the memory decoding takes).
    public var imageMemoryLimit = 128 * 1024 * 1024
    public var imageMaxEntries = 1000
    public var imageMaxPixels = 100_000_000
    public var imageDownloads = 6
    public var imageDecoders = 2

    public init(socketPath: String, socketIsDefault: Bool = false, cacheDirectory: String) {
        self.socketPath = socketPath
        self.socketIsDefault = socketIsDefault
        self.cacheDirectory = cacheDirectory
    }
}

/// The daemon's version, reported by `--version`, `hello` and `stats`.
public let ferryVersion = "0.1.0"
