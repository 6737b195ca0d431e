#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryHTTPCache
import FerryProtocol
import FerryServer
import FerryStore

/// `ferryd`'s command line, turned into a `ServerConfig`.
enum DaemonOptions {
    static let parser = ArgParser([
        OptionSpec("socket", takesValue: true, help: "socket path (default: $FERRY_SOCKET, $XDG_RUNTIME_DIR/ferry/ferryd.sock, /tmp/ferry-$UID/ferryd.sock)"),
        OptionSpec("cache-dir", takesValue: true, help: "cache directory (default: $XDG_CACHE_HOME/ferry, else ~/.cache/ferry)"),
        OptionSpec("log-level", takesValue: true, help: "debug, info, warn or error (default: info)"),
        OptionSpec("grace", takesValue: true, help: "how long requests in flight may finish after SIGTERM (default: 10s)"),
        OptionSpec("max-connections", takesValue: true, help: "connections open at once (default: 4096)"),
        OptionSpec("max-in-flight", takesValue: true, help: "requests in flight per connection (default: 256)"),
        OptionSpec("max-frame-bytes", takesValue: true, help: "largest frame after hello, at least 65536 (default: 4194304)"),
        OptionSpec("memory-limit", takesValue: true, help: "cache memory budget, e.g. 256MiB (default: 256MiB)"),
        OptionSpec("buffer-limit", takesValue: true, help: "bytes in transit: unwritten replies, arriving bodies, values waiting for the disk (default: 64MiB)"),
        OptionSpec("disk-limit", takesValue: true, help: "cache disk budget, e.g. 2GiB (default: 2GiB)"),
        OptionSpec("max-value-bytes", takesValue: true, help: "largest cache value, e.g. 16MiB (default: 16MiB)"),
        OptionSpec("fsync", takesValue: true, help: "when writes reach the disk: always, everysec or no (default: everysec)"),
        OptionSpec("ca-file", takesValue: true, help: "fetch: also trust the CA certificates in this PEM file"),
        OptionSpec("fetch-per-host", takesValue: true, help: "fetch: transfers at once per host, more wait (default: 6)"),
        OptionSpec("fetch-total", takesValue: true, help: "fetch: transfers at once in all, more wait (default: 64)"),
        OptionSpec("fetch-connect-timeout", takesValue: true, help: "fetch: how long connecting to an origin may take (default: 30s)"),
        OptionSpec("fetch-timeout", takesValue: true, help: "fetch: limit of an exchange whose request sets no timeout_ms (default: 5m)"),
        OptionSpec("cache-control-targets", takesValue: true, help: "fetch: targeted cache-control fields obeyed over Cache-Control, first wins (default: Ferry-Cache-Control)"),
        OptionSpec("max-fetch-bytes", takesValue: true, help: "fetch: largest response body, the default max_bytes (default: 8GiB)"),
        OptionSpec("image-memory-limit", takesValue: true, help: "image loader memory budget (default: 128MiB)"),
        OptionSpec("image-max-entries", takesValue: true, help: "images kept in memory at most (default: 1000)"),
        OptionSpec("image-max-pixels", takesValue: true, help: "images with more pixels are refused (default: 100000000)"),
        OptionSpec("image-downloads", takesValue: true, help: "image downloads at once, more wait (default: 6)"),
        OptionSpec("image-decoders", takesValue: true, help: "images decoded at once (libvips threads), more wait (default: 2)"),
        OptionSpec("allow-other-users", help: "accept clients running as another uid"),
        OptionSpec("no-body-fd", help: "never hand a body out as a descriptor; clients that ask get the bytes"),
        OptionSpec("body-fd-min-bytes", takesValue: true, help: "smallest body handed out as a descriptor to clients that ask (default: 64KiB)"),
        OptionSpec("body-fd-check-limit", takesValue: true, help: "largest stored body checked before its first hand-out as a descriptor; larger ones are checked by their first read (default: 16MiB)"),
        OptionSpec("sealed-copy-limit", takesValue: true, help: "sealed memory copies of values kept for descriptor hand-outs (default: 64MiB)"),
        OptionSpec("no-hot-path", help: "answer every request on the general path (to compare: the replies are the same)"),
        OptionSpec("version", help: "print the version and exit"),
        OptionSpec("help", short: "h", help: "print this help and exit"),
    ])

    static let usage = """
        Usage: ferryd [OPTIONS]

        The Ferry daemon: serves fetch, cache and image requests to every program of this user over a Unix socket.

        Options:
        \(parser.helpText)
        """

    static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    static func config(from args: ParsedArgs) throws(UsageError) -> ServerConfig {
        guard args.positionals.isEmpty else { throw UsageError("unexpected argument \(args.positionals[0])") }
        let explicit = args.value("socket")
        let path = SocketPath.resolve(explicit: explicit, environment: environment, uid: getuid())
        let isDefault = SocketPath.isDefault(explicit: explicit, environment: environment)
        var config = ServerConfig(socketPath: path, socketIsDefault: isDefault,
                                  cacheDirectory: args.value("cache-dir") ?? SocketPath.defaultCacheDirectory(environment: environment))
        if let level = args.value("log-level") {
            guard let l = LogLevel(name: level) else { throw UsageError("unknown log level \"\(level)\" (debug, info, warn, error)") }
            config.logLevel = l
        }
        if let grace = args.value("grace") { config.gracePeriodMs = UInt64(try parseDurationMs(grace)) }
        if let n = args.value("max-connections") { config.maxConnections = try positive(n, "--max-connections") }
        if let n = args.value("max-in-flight") { config.limits.maxInFlight = try positive(n, "--max-in-flight") }
        if let n = args.value("max-frame-bytes") {
            let bytes = try positive(n, "--max-frame-bytes")
            guard bytes >= config.limits.handshakeFrameBytes, bytes <= 1 << 30 else {
                throw UsageError("--max-frame-bytes must be between \(config.limits.handshakeFrameBytes) and \(1 << 30)")
            }
            config.limits.maxFrameBytes = bytes
            config.limits.maxJSONBytes = min(config.limits.maxJSONBytes, bytes - 8)
        }
        if let v = args.value("memory-limit") { config.memoryLimit = try size(v, "--memory-limit", allowZero: true) }
        if let v = args.value("buffer-limit") { config.bufferLimit = try size(v, "--buffer-limit") }
        if let v = args.value("disk-limit") { config.diskLimit = try size(v, "--disk-limit") }
        if let v = args.value("max-value-bytes") { config.limits.maxValueBytes = try size(v, "--max-value-bytes") }
        if let v = args.value("fsync") {
            guard let policy = FsyncPolicy(rawValue: v) else { throw UsageError("--fsync must be always, everysec or no (got \"\(v)\")") }
            config.fsync = policy
        }
        if let file = args.value("ca-file") {
            guard access(file, R_OK) == 0 else { throw UsageError("--ca-file \(file): cannot read it") }
            config.caFile = file
        }
        if let n = args.value("fetch-per-host") { config.fetchPerHost = try positive(n, "--fetch-per-host") }
        if let n = args.value("fetch-total") { config.fetchTotal = try positive(n, "--fetch-total") }
        if let v = args.value("fetch-connect-timeout") { config.fetchConnectTimeoutMs = Int(try parseDurationMs(v)) }
        if let v = args.value("fetch-timeout") { config.fetchTimeoutMs = Int(try parseDurationMs(v)) }
        if let v = args.value("cache-control-targets") {
            let names = v.split(separator: ",").map { HTTPSyntax.trimmingOWS(String($0)) }.filter { !$0.isEmpty }
            guard !names.isEmpty, names.allSatisfy({ HTTPSyntax.isToken($0) && $0.lowercased() != "cache-control" }) else {
                throw UsageError("--cache-control-targets takes field names separated by commas, e.g. CDN-Cache-Control,Ferry-Cache-Control (got \"\(v)\")")
            }
            config.cacheControlTargets = names
        }
        if let v = args.value("max-fetch-bytes") { config.maxFetchBytes = try size(v, "--max-fetch-bytes") }
        if let v = args.value("image-memory-limit") { config.imageMemoryLimit = try size(v, "--image-memory-limit", allowZero: true) }
        if let n = args.value("image-max-entries") { config.imageMaxEntries = try positive(n, "--image-max-entries") }
        if let n = args.value("image-max-pixels") { config.imageMaxPixels = try positive(n, "--image-max-pixels") }
        if let n = args.value("image-downloads") { config.imageDownloads = try positive(n, "--image-downloads") }
        if let n = args.value("image-decoders") { config.imageDecoders = try positive(n, "--image-decoders") }
        config.allowOtherUsers = args.has("allow-other-users")
        config.hotPath = !args.has("no-hot-path")
        config.bodyDescriptors = !args.has("no-body-fd")
        if let v = args.value("body-fd-min-bytes") { config.bodyDescriptorMinBytes = try size(v, "--body-fd-min-bytes") }
        if let v = args.value("body-fd-check-limit") { config.bodyDescriptorCheckLimit = try size(v, "--body-fd-check-limit") }
        if let v = args.value("sealed-copy-limit") { config.sealedCopyBytes = try size(v, "--sealed-copy-limit", allowZero: true) }
        // A set of the largest value must be able to wait for the disk.
        guard config.bufferLimit >= config.limits.maxValueBytes else {
            throw UsageError("--buffer-limit (\(config.bufferLimit)) must hold at least one value of --max-value-bytes (\(config.limits.maxValueBytes))")
        }
        return config
    }

    private static func size(_ text: String, _ name: String, allowZero: Bool = false) throws(UsageError) -> Int {
        guard let n = parseByteSize(text), n > 0 || (allowZero && n == 0) else {
            throw UsageError("\(name) needs a size such as 64MiB, 2GiB or 1000000, not \"\(text)\"")
        }
        return n
    }

    private static func positive(_ text: String, _ name: String) throws(UsageError) -> Int {
        guard let n = Int(text), n > 0 else { throw UsageError("\(name) needs a positive integer, not \"\(text)\"") }
        return n
    }
}
