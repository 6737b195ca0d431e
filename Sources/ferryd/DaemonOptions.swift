#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryCache
import FerryHTTPCache
import FerryProtocol
import FerryRedis
import FerryServer
import FerryStore

/// `ferryd`'s command line, turned into a `ServerConfig`.
enum DaemonOptions {
    static let parser = ArgParser([
        OptionSpec("socket", takesValue: true, help: "socket path (default: $FERRY_SOCKET, $XDG_RUNTIME_DIR/ferry/ferryd.sock, /tmp/ferry-$UID/ferryd.sock)"),
        OptionSpec("cache-dir", takesValue: true, help: "cache directory (default: $XDG_CACHE_HOME/ferry, else ~/.cache/ferry)"),
        OptionSpec("log-level", takesValue: true, default: "info", help: "debug, info (a line per request), warn (slow requests only) or error"),
        OptionSpec("log-file", takesValue: true, help: "write the log to this file (appended; opened again on SIGHUP) instead of stderr"),
        OptionSpec("log-format", takesValue: true, default: "logfmt", help: "logfmt or json (JSON lines), for every line and the access lines"),
        OptionSpec("slow-ms", takesValue: true, default: "1000", help: "requests at least this slow get slow=true in their access line, at warn"),
        OptionSpec("l2", takesValue: true, help: "Redis as a second tier shared by a fleet: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], redis+unix://[[USER]:PASSWORD@]/PATH[?db=N] or redis-cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT…]"),
        OptionSpec("l2-prefix", takesValue: true, default: "ferry:v1:", help: "the start of every key in Redis: a fleet's name and the format's version"),
        OptionSpec("l2-max-value", takesValue: true, default: "1MiB", help: "larger responses stay on this machine"),
        OptionSpec("l2-timeout", takesValue: true, default: "50ms", help: "how long a Redis command may take before it counts as a miss"),
        OptionSpec("l2-lease", takesValue: true, default: "5s", help: "how long a cold fetch holds the fleet's lease before another machine may take over (renewed while it runs)"),
        OptionSpec("l2-namespaces", takesValue: true, help: "cache namespaces shared through Redis by the fleet, comma-separated (default: none)"),
        OptionSpec("l2-idle-ttl", takesValue: true, default: "7d", help: "how long a shared value without a TTL of its own stays in Redis unread (each read restarts it)"),
        OptionSpec("l2-partition-secret", takesValue: true, help: "share credentialed responses through Redis too, partitioned with this key file (32+ bytes, mode 0600, the same on every machine)"),
        OptionSpec("metrics-listen", takesValue: true, help: "serve Prometheus metrics at http://HOST:PORT/metrics, e.g. 127.0.0.1:9187 (port 0: any free one, see stats)"),
        OptionSpec("idle-exit", takesValue: true, help: "stop after this long with no connection, e.g. 10m (as sccache's auto-started server does; default: never)"),
        OptionSpec("grace", takesValue: true, default: "10s", help: "how long requests in flight may finish after SIGTERM"),
        OptionSpec("max-connections", takesValue: true, default: "4096", help: "connections open at once"),
        OptionSpec("max-in-flight", takesValue: true, default: "256", help: "requests in flight per connection"),
        OptionSpec("max-frame-bytes", takesValue: true, default: "4194304", help: "largest frame after hello, at least 65536"),
        OptionSpec("memory-limit", takesValue: true, default: "256MiB", help: "cache memory budget, e.g. 256MiB"),
        OptionSpec("buffer-limit", takesValue: true, default: "64MiB", help: "bytes in transit: unwritten replies, arriving bodies, values waiting for the disk"),
        OptionSpec("disk-limit", takesValue: true, default: "2GiB", help: "cache disk budget, e.g. 2GiB"),
        OptionSpec("max-value-bytes", takesValue: true, default: "16MiB", help: "largest cache value, e.g. 16MiB"),
        OptionSpec("fsync", takesValue: true, default: "everysec", help: "when writes reach the disk: always, everysec or no"),
        OptionSpec("ca-file", takesValue: true, help: "fetch: also trust the CA certificates in this PEM file"),
        OptionSpec("fetch-per-host", takesValue: true, default: "6", help: "fetch: transfers at once per host, more wait"),
        OptionSpec("fetch-total", takesValue: true, default: "64", help: "fetch: transfers at once in all, more wait"),
        OptionSpec("fetch-connect-timeout", takesValue: true, default: "30s", help: "fetch: how long connecting to an origin may take"),
        OptionSpec("fetch-timeout", takesValue: true, default: "5m", help: "fetch: limit of an exchange whose request sets no timeout_ms"),
        OptionSpec("cache-control-targets", takesValue: true, default: "Ferry-Cache-Control", help: "fetch: targeted cache-control fields obeyed over Cache-Control, first wins"),
        OptionSpec("max-fetch-bytes", takesValue: true, default: "8GiB", help: "fetch: largest response body, the default max_bytes"),
        OptionSpec("image-memory-limit", takesValue: true, default: "128MiB", help: "image loader memory budget"),
        OptionSpec("image-max-entries", takesValue: true, default: "1000", help: "images kept in memory at most"),
        OptionSpec("image-max-pixels", takesValue: true, default: "100000000", help: "images with more pixels are refused"),
        OptionSpec("image-downloads", takesValue: true, default: "6", help: "image downloads at once, more wait"),
        OptionSpec("image-decoders", takesValue: true, default: "2", help: "images decoded at once (libvips threads), more wait"),
        OptionSpec("allow-other-users", help: "accept clients running as another uid: the socket becomes 0666 (every local user)"),
        OptionSpec("socket-group", takesValue: true, help: "the group whose members may connect: the socket becomes 0660 and that group's (a CI box's shared daemon)"),
        OptionSpec("no-body-fd", help: "never hand a body out as a descriptor; clients that ask get the bytes"),
        OptionSpec("body-fd-min-bytes", takesValue: true, default: "64KiB", help: "smallest body handed out as a descriptor to clients that ask"),
        OptionSpec("body-fd-check-limit", takesValue: true, default: "16MiB", help: "largest stored body checked before its first hand-out as a descriptor; larger ones are checked by their first read"),
        OptionSpec("sealed-copy-limit", takesValue: true, default: "64MiB", help: "sealed memory copies of values kept for descriptor hand-outs"),
        OptionSpec("no-hot-path", help: "answer every request on the general path (to compare: the replies are the same)"),
        OptionSpec("config", takesValue: true, help: "the configuration file (default: $FERRY_CONFIG, else $XDG_CONFIG_HOME/ferry/ferryd.conf, or /etc/ferry/ferryd.conf with --system; a missing default file is no error)"),
        OptionSpec("system", help: "the machine's shared daemon: its configuration file is /etc/ferry/ferryd.conf"),
        OptionSpec("no-config", help: "read no configuration file"),
        OptionSpec("print-config", help: "print every setting's effective value and where it came from (a valid configuration file), and exit"),
        OptionSpec("completions", takesValue: true, help: "print a completion script for bash, zsh or fish, and exit"),
        OptionSpec("version", help: "print the version and exit"),
        OptionSpec("help", short: "h", help: "print this help and exit"),
    ])

    static let usage = """
        Usage: ferryd [OPTIONS]

        The Ferry daemon: serves fetch, cache and image requests to every program of this user over a Unix socket.

        Every option can also be set in the configuration file (`memory-limit = 1GiB`, a flag as `name = true`) and
        as an environment variable (FERRY_MEMORY_LIMIT=1GiB); the command line wins over the environment, which
        wins over the file.

        Options:
        \(parser.helpText)
        """

    /// The options a configuration file or the environment may set (the others act on this invocation only).
    static let settable = parser.options.filter { !["help", "version", "print-config", "config", "no-config", "system", "completions"].contains($0.name) }

    /// The configuration file to read: `--config`, `$FERRY_CONFIG`, else the user's (root's: the system's). Nil
    /// with `--no-config`. `explicit`: a missing file is an error (a default one that is missing is not).
    static func configFile(_ args: ParsedArgs, environment: (String) -> String?, uid: UInt32) -> (path: String, explicit: Bool)? {
        if args.has("no-config") { return nil }
        if let path = args.value("config") { return (path, true) }
        if let path = environment("FERRY_CONFIG"), !path.isEmpty { return (path, true) }
        if args.has("system") { return (systemConfigFile, false) }
        if let xdg = environment("XDG_CONFIG_HOME"), xdg.hasPrefix("/") { return (xdg + "/ferry/ferryd.conf", false) }
        guard let home = environment("HOME"), !home.isEmpty else { return nil }
        return (home + "/.config/ferry/ferryd.conf", false)
    }

    /// `--system`'s places, as the system units lay them out.
    static let systemConfigFile = "/etc/ferry/ferryd.conf"
    static let systemSocket = "/run/ferry/ferryd.sock"
    static let systemCacheDirectory = "/var/cache/ferry"

    /// The layers read: the file (when there is one), the `FERRY_*` environment, the command line.
    static func settings(_ args: ParsedArgs, environment: (String) -> String?, uid: UInt32,
                         read: (String) -> String?) throws(UsageError) -> Settings {
        var settings = Settings(options: settable)
        if args.has("system") {
            settings.setDefault("socket", systemSocket)
            settings.setDefault("cache-dir", systemCacheDirectory)
        }
        if let (path, explicit) = configFile(args, environment: environment, uid: uid) {
            if let text = read(path) {
                try settings.apply(file: text, path: path)
            } else if explicit {
                throw UsageError("cannot read the configuration file \(path)")
            }
        }
        try settings.apply(environment: environment)
        settings.apply(args)
        return settings
    }

    /// `--print-config`: every setting as a configuration file would write it, with where its value came from.
    static func printed(_ settings: Settings, _ config: ServerConfig, file: (path: String, read: Bool)?) -> String {
        var rows: [(String, String)] = []
        for spec in settable {
            let value: String
            switch spec.name {
            case "socket": value = config.socketPath
            case "cache-dir": value = config.cacheDirectory
            case "l2": value = DaemonOptions.maskingPassword(settings.value("l2") ?? "")
            default: value = spec.takesValue ? settings.value(spec.name) ?? spec.defaultValue ?? "" : (settings.has(spec.name) ? "true" : "false")
            }
            if spec.takesValue && value.isEmpty { continue }
            rows.append(("\(spec.name) = \(value)", settings.source(spec.name).description))
        }
        let width = (rows.map(\.0.count).max() ?? 0) + 2
        let fileLine = file.map { "# configuration file: \($0.path)\($0.read ? "" : " (not present)")" } ?? "# configuration file: none (--no-config)"
        return (["# ferryd \(ferryVersion): each setting's effective value, and where it came from", fileLine]
                + rows.map { $0.0 + String(repeating: " ", count: max(1, width - $0.0.count)) + "# " + $0.1 }).joined(separator: "\n")
    }

    static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// A configuration file's text (at most 1 MiB); nil when it cannot be read.
    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count <= 1 << 20 {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes += buffer[..<n]
        }
        return nil
    }

    /// The server's configuration from the layered settings; an error names the setting and, for one from a file
    /// or the environment, where it was set (`/etc/ferry/ferryd.conf:3: memory-limit: …`).
    static func config(from settings: Settings) throws(UsageError) -> ServerConfig {
        guard settings.positionals.isEmpty else { throw UsageError("unexpected argument \(settings.positionals[0])") }
        var current = ""
        func value(_ name: String) -> String? {
            current = name
            return settings.value(name)
        }
        func has(_ name: String) -> Bool {
            current = name
            return settings.has(name)
        }
        do {
            return try build(value: value, has: has)
        } catch {
            throw UsageError(settings.located(current, error.message))
        }
    }

    private static func build(value: (String) -> String?, has: (String) -> Bool) throws(UsageError) -> ServerConfig {
        let explicit = value("socket")
        let path = SocketPath.resolve(explicit: explicit, environment: environment, uid: getuid())
        let isDefault = SocketPath.isDefault(explicit: explicit, environment: environment)
        var config = ServerConfig(socketPath: path, socketIsDefault: isDefault,
                                  cacheDirectory: value("cache-dir") ?? SocketPath.defaultCacheDirectory(environment: environment))
        if let level = value("log-level") {
            guard let l = LogLevel(name: level) else { throw UsageError("unknown log level \"\(level)\" (debug, info, warn, error)") }
            config.logLevel = l
        }
        if let file = value("log-file") { config.logFile = file }
        if let name = value("socket-group") {
            guard let group = getgrnam(name) else { throw UsageError("--socket-group: no group named \"\(name)\"") }
            config.socketGroup = (name, UInt32(group.pointee.gr_gid))
        }
        if let format = value("log-format") {
            guard let f = LogFormat(rawValue: format) else { throw UsageError("--log-format is logfmt or json (got \"\(format)\")") }
            config.logFormat = f
        }
        if let ms = value("slow-ms") { config.slowMs = try positive(ms, "--slow-ms") }
        try applyL2(value, to: &config)
        if let listen = value("metrics-listen") {
            guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port),
                  listen[..<colon].split(separator: ".").count == 4, listen[..<colon].split(separator: ".").allSatisfy({ UInt8($0) != nil }) else {
                throw UsageError("--metrics-listen takes an IPv4 address and a port, e.g. 127.0.0.1:9187 (got \"\(listen)\")")
            }
            config.metricsListen = (String(listen[..<colon]), port)
        }
        if let idle = value("idle-exit") {
            let ms = try parseDurationMs(idle)
            guard ms >= 1000 else { throw UsageError("--idle-exit must be at least 1s (got \"\(idle)\")") }
            config.idleExitMs = UInt64(ms)
        }
        if let grace = value("grace") { config.gracePeriodMs = UInt64(try parseDurationMs(grace)) }
        if let n = value("max-connections") { config.maxConnections = try positive(n, "--max-connections") }
        if let n = value("max-in-flight") { config.limits.maxInFlight = try positive(n, "--max-in-flight") }
        if let n = value("max-frame-bytes") {
            let bytes = try positive(n, "--max-frame-bytes")
            guard bytes >= config.limits.handshakeFrameBytes, bytes <= 1 << 30 else {
                throw UsageError("--max-frame-bytes must be between \(config.limits.handshakeFrameBytes) and \(1 << 30)")
            }
            config.limits.maxFrameBytes = bytes
            config.limits.maxJSONBytes = min(config.limits.maxJSONBytes, bytes - 8)
        }
        if let v = value("memory-limit") { config.memoryLimit = try size(v, "--memory-limit", allowZero: true) }
        if let v = value("buffer-limit") { config.bufferLimit = try size(v, "--buffer-limit") }
        if let v = value("disk-limit") { config.diskLimit = try size(v, "--disk-limit") }
        if let v = value("max-value-bytes") { config.limits.maxValueBytes = try size(v, "--max-value-bytes") }
        if let v = value("fsync") {
            guard let policy = FsyncPolicy(rawValue: v) else { throw UsageError("--fsync must be always, everysec or no (got \"\(v)\")") }
            config.fsync = policy
        }
        if let file = value("ca-file") {
            guard access(file, R_OK) == 0 else { throw UsageError("--ca-file \(file): cannot read it") }
            config.caFile = file
        }
        if let n = value("fetch-per-host") { config.fetchPerHost = try positive(n, "--fetch-per-host") }
        if let n = value("fetch-total") { config.fetchTotal = try positive(n, "--fetch-total") }
        if let v = value("fetch-connect-timeout") { config.fetchConnectTimeoutMs = Int(try parseDurationMs(v)) }
        if let v = value("fetch-timeout") { config.fetchTimeoutMs = Int(try parseDurationMs(v)) }
        if let v = value("cache-control-targets") {
            let names = v.split(separator: ",").map { HTTPSyntax.trimmingOWS(String($0)) }.filter { !$0.isEmpty }
            guard !names.isEmpty, names.allSatisfy({ HTTPSyntax.isToken($0) && $0.lowercased() != "cache-control" }) else {
                throw UsageError("--cache-control-targets takes field names separated by commas, e.g. CDN-Cache-Control,Ferry-Cache-Control (got \"\(v)\")")
            }
            config.cacheControlTargets = names
        }
        if let v = value("max-fetch-bytes") { config.maxFetchBytes = try size(v, "--max-fetch-bytes") }
        if let v = value("image-memory-limit") { config.imageMemoryLimit = try size(v, "--image-memory-limit", allowZero: true) }
        if let n = value("image-max-entries") { config.imageMaxEntries = try positive(n, "--image-max-entries") }
        if let n = value("image-max-pixels") { config.imageMaxPixels = try positive(n, "--image-max-pixels") }
        if let n = value("image-downloads") { config.imageDownloads = try positive(n, "--image-downloads") }
        if let n = value("image-decoders") { config.imageDecoders = try positive(n, "--image-decoders") }
        config.allowOtherUsers = has("allow-other-users")
        config.hotPath = !has("no-hot-path")
        config.bodyDescriptors = !has("no-body-fd")
        if let v = value("body-fd-min-bytes") { config.bodyDescriptorMinBytes = try size(v, "--body-fd-min-bytes") }
        if let v = value("body-fd-check-limit") { config.bodyDescriptorCheckLimit = try size(v, "--body-fd-check-limit") }
        if let v = value("sealed-copy-limit") { config.sealedCopyBytes = try size(v, "--sealed-copy-limit", allowZero: true) }
        // A set of the largest value must be able to wait for the disk.
        guard config.bufferLimit >= config.limits.maxValueBytes else {
            throw UsageError("--buffer-limit (\(config.bufferLimit)) must hold at least one value of --max-value-bytes (\(config.limits.maxValueBytes))")
        }
        return config
    }

    static func size(_ text: String, _ name: String, allowZero: Bool = false) throws(UsageError) -> Int {
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

extension String {
    /// `%40` → `@` (a password in a URL may need it); bytes that do not decode are kept as they are.
    func removingPercentEncoding() -> String {
        var out: [UInt8] = []
        var bytes = Array(utf8)[...]
        while let b = bytes.first {
            bytes = bytes.dropFirst()
            if b == UInt8(ascii: "%"), bytes.count >= 2, let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(v)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
