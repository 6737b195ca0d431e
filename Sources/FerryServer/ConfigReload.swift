/// What a reload (SIGHUP) changes while the daemon serves, and what only a restart can: a pure comparison of the
/// running configuration with the one read again, by setting name (the names of `ferryd --print-config`).
///
/// Live: the log level, the memory budgets (a smaller one evicts now), the image loader's entry count, the
/// connection limit, the drain's grace, the idle exit. Who may connect (the socket's mode) waits for a restart. Everything else — the socket, the cache
/// directory and its disk budget, protocol limits a connected client has already been told, the fetch engine's
/// pools — is kept, and the reload says which changed settings need a restart.
///
/// ```swift
/// var next = running
/// next.memoryLimit = 1 << 30
/// next.diskLimit = 8 << 30
/// ConfigReload.plan(from: running, to: next)   // Plan(live: ["memory-limit"], restart: ["disk-limit"])
/// ```
public enum ConfigReload {
    public struct Plan: Equatable, Sendable {
        public var live: [String] = []
        public var restart: [String] = []
        public var isEmpty: Bool { live.isEmpty && restart.isEmpty }
    }

    /// Each setting: its name, whether it changes live, and whether two configurations differ in it.
    private static let settings: [(name: String, live: Bool, differs: @Sendable (ServerConfig, ServerConfig) -> Bool)] = [
        ("log-level", true, { $0.logLevel != $1.logLevel }),
        ("memory-limit", true, { $0.memoryLimit != $1.memoryLimit }),
        ("image-memory-limit", true, { $0.imageMemoryLimit != $1.imageMemoryLimit }),
        ("image-max-entries", true, { $0.imageMaxEntries != $1.imageMaxEntries }),
        ("max-connections", true, { $0.maxConnections != $1.maxConnections }),
        ("allow-other-users", false, { $0.allowOtherUsers != $1.allowOtherUsers }),
        ("socket-group", false, { $0.socketGroup?.gid != $1.socketGroup?.gid }),
        ("grace", true, { $0.gracePeriodMs != $1.gracePeriodMs }),
        ("socket", false, { $0.socketPath != $1.socketPath }),
        ("cache-dir", false, { $0.cacheDirectory != $1.cacheDirectory }),
        ("log-file", false, { $0.logFile != $1.logFile }),
        ("disk-limit", false, { $0.diskLimit != $1.diskLimit }),
        ("buffer-limit", false, { $0.bufferLimit != $1.bufferLimit }),
        ("max-value-bytes", false, { $0.limits.maxValueBytes != $1.limits.maxValueBytes }),
        ("max-in-flight", false, { $0.limits.maxInFlight != $1.limits.maxInFlight }),
        ("max-frame-bytes", false, { $0.limits.maxFrameBytes != $1.limits.maxFrameBytes }),
        ("fsync", false, { $0.fsync != $1.fsync }),
        ("ca-file", false, { $0.caFile != $1.caFile }),
        ("fetch-per-host", false, { $0.fetchPerHost != $1.fetchPerHost }),
        ("fetch-total", false, { $0.fetchTotal != $1.fetchTotal }),
        ("fetch-connect-timeout", false, { $0.fetchConnectTimeoutMs != $1.fetchConnectTimeoutMs }),
        ("fetch-timeout", false, { $0.fetchTimeoutMs != $1.fetchTimeoutMs }),
        ("cache-control-targets", false, { $0.cacheControlTargets != $1.cacheControlTargets }),
        ("max-fetch-bytes", false, { $0.maxFetchBytes != $1.maxFetchBytes }),
        ("image-max-pixels", false, { $0.imageMaxPixels != $1.imageMaxPixels }),
        ("image-downloads", false, { $0.imageDownloads != $1.imageDownloads }),
        ("image-decoders", false, { $0.imageDecoders != $1.imageDecoders }),
        ("no-body-fd", false, { $0.bodyDescriptors != $1.bodyDescriptors }),
        ("body-fd-min-bytes", false, { $0.bodyDescriptorMinBytes != $1.bodyDescriptorMinBytes }),
        ("body-fd-check-limit", false, { $0.bodyDescriptorCheckLimit != $1.bodyDescriptorCheckLimit }),
        ("sealed-copy-limit", false, { $0.sealedCopyBytes != $1.sealedCopyBytes }),
        ("no-hot-path", false, { $0.hotPath != $1.hotPath }),
        ("idle-exit", true, { $0.idleExitMs != $1.idleExitMs }),
        ("log-format", false, { $0.logFormat != $1.logFormat }),
        ("l2", false, { $0.l2 != $1.l2 || $0.l2Cluster != $1.l2Cluster || $0.l2Prefix != $1.l2Prefix || $0.l2MaxValueBytes != $1.l2MaxValueBytes || $0.l2TimeoutMs != $1.l2TimeoutMs || $0.l2LeaseMs != $1.l2LeaseMs || $0.l2Namespaces != $1.l2Namespaces || $0.l2IdleTtlMs != $1.l2IdleTtlMs || $0.l2PartitionSecret != $1.l2PartitionSecret }),
        ("slow-ms", false, { $0.slowMs != $1.slowMs }),
        ("metrics-listen", false, { $0.metricsListen?.host != $1.metricsListen?.host || $0.metricsListen?.port != $1.metricsListen?.port }),
    ]

    public static func plan(from running: ServerConfig, to next: ServerConfig) -> Plan {
        var plan = Plan()
        for s in settings where s.differs(running, next) {
            if s.live { plan.live.append(s.name) } else { plan.restart.append(s.name) }
        }
        return plan
    }

    /// The running configuration with `next`'s live settings taken over (the rest stays as it runs).
    public static func applying(_ next: ServerConfig, to running: ServerConfig) -> ServerConfig {
        var c = running
        c.logLevel = next.logLevel
        c.memoryLimit = next.memoryLimit
        c.imageMemoryLimit = next.imageMemoryLimit
        c.imageMaxEntries = next.imageMaxEntries
        c.maxConnections = next.maxConnections
        c.gracePeriodMs = next.gracePeriodMs
        c.idleExitMs = next.idleExitMs
        return c
    }
}
