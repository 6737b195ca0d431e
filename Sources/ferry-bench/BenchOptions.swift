import FerryArgs
import FerryClient

/// The load shapes ferry-bench knows, in the order it runs them.
enum BenchMode: String, CaseIterable {
    case rawSeq = "raw-seq"
    case rawPipelined = "raw-pipelined"
    case rawConns = "raw-conns"
    case rawConnsThreads = "raw-conns-threads"
    case client = "client"
    case clientExecutor = "client-executor"
    case cacheSet = "cache-set"
    case cacheGet = "cache-get"
    case fetch = "fetch"
    case fetchStorm = "fetch-storm"
    case fetchRaw = "fetch-raw"
    case image = "image"

    /// What runs when no mode is named: the four `ping` load shapes of BENCHMARKS.md (the threads variant is a side
    /// experiment; the cache modes run when named, or with `all`).
    static let defaults: [BenchMode] = [.rawSeq, .rawPipelined, .rawConns, .client]

    /// The modes that fetch `--url` through ferryd (never part of `all`).
    var fetchesURL: Bool { [.fetch, .fetchStorm, .fetchRaw, .image].contains(self) }
}

/// How `fetch` takes a large body: through the socket (`body_fd` not used), or as a descriptor that the client reads
/// into memory (one copy), maps (no copy; every page touched), or only holds (`fd`: what handing a body to a file,
/// another process or `sendfile` costs before any byte moves).
enum BodyPath: String {
    case socket, read, map, fd
}

/// ferry-bench's command line. Parsed with FerryArgs, the parser `ferry` and `ferryd` use, so flags behave the same
/// across the three programs (`--socket=PATH` or `--socket PATH`, `--` ends options).
struct BenchOptions {
    var socket: String
    var modes: [BenchMode]
    var budget: Budget
    var warmup: Budget
    var inFlight = 50
    var connections = 50
    var tasks = 50
    var pipeline = 1
    var keySpace = 10_000
    var valueBytes = 100
    /// fetch, fetch-storm: the URL to fetch through ferryd.
    var url: String?
    /// image: a URL of its own for every request.
    var distinct = false
    /// image, with `variant`: a variant of its own for every request, of the one URL.
    var distinctVariants = false
    /// image: a variant instead of the original (`--variant 200x200:cover:webp`).
    var variant: ImageVariant?
    /// fetch: how the body reaches the client.
    var body = BodyPath.read
    /// cache-*: a Redis server's Unix socket to load instead of ferryd (RESP, the same requests redis-benchmark sends).
    var redis: String?

    static let parser = ArgParser([
        OptionSpec("socket", takesValue: true, help: "ferryd's socket (default: $FERRY_SOCKET, then the standard path)"),
        OptionSpec("mode", takesValue: true, help: "comma-separated modes (default: raw-seq,raw-pipelined,raw-conns,client)"),
        OptionSpec("seconds", takesValue: true, help: "measure each mode this long (default: 3)"),
        OptionSpec("count", takesValue: true, help: "measure each mode for this many requests instead of a duration"),
        OptionSpec("warmup", takesValue: true, help: "seconds of unmeasured load before each mode (default: 0.5; 0 = none)"),
        OptionSpec("in-flight", takesValue: true, help: "raw-pipelined: requests outstanding (default: 50)"),
        OptionSpec("conns", takesValue: true, help: "raw-conns, cache-*: connections (default: 50)"),
        OptionSpec("pipeline", takesValue: true, help: "cache-*: requests sent together per connection, 1 … 64 (default: 1; redis-benchmark -P)"),
        OptionSpec("keys", takesValue: true, help: "cache-*: key space, keys key:000000000000 … (default: 10000; redis-benchmark -r)"),
        OptionSpec("value-bytes", takesValue: true, help: "cache-*: value size in bytes (default: 100; redis-benchmark -d)"),
        OptionSpec("redis", takesValue: true, help: "cache-*: load the Redis server on this Unix socket instead of ferryd (SET/GET)"),
        OptionSpec("url", takesValue: true, help: "fetch, fetch-storm, image: the URL to fetch through ferryd"),
        OptionSpec("body", takesValue: true, help: "fetch: socket (bytes through the socket), read (a descriptor read into memory; the default), map (mapped) or fd (only held)"),
        OptionSpec("distinct", help: "image: every request asks for a URL of its own (url&n=K); cache-set: every value bytes of its own"),
        OptionSpec("distinct-variants", help: "image, with --variant: every request asks for a variant of its own of the one URL (width + 1 … 100)"),
        OptionSpec("variant", takesValue: true, help: "image: ask for a variant, WxH[:fit][:format] (0 for a free side), e.g. 200x200:cover:webp"),
        OptionSpec("tasks", takesValue: true, help: "client: concurrent tasks sharing one FerryClient (default: 50)"),
        OptionSpec("help", short: "h", help: "print this help"),
    ])

    static let usage = """
        Usage: ferry-bench [MODE...] [OPTIONS]

        Measures ferryd's `ping` round trips, or its cache, against a running daemon and prints, per mode, one
        line `RESULT mode=… ops_per_s=… p50_us=… p99_us=… msg_bytes=… reply_bytes=…` and one line for people.

        Modes:
          raw-seq            1 connection, 1 request at a time, blocking I/O, frames hand-encoded
          raw-pipelined      1 connection, --in-flight requests outstanding
          raw-conns          --conns connections, 1 in flight each, one poll() loop
          raw-conns-threads  as raw-conns, one blocking thread per connection (comparison only)
          client             FerryClient, --tasks concurrent tasks on one connection
          client-executor    as client, the tasks preferring the client's executor (its reader thread)
          cache-set          cache.set of --value-bytes values under random keys of --keys, --conns connections,
                             each sending --pipeline requests at a time (1: one in flight; as redis-benchmark -c/-P)
          cache-get          cache.get, same shape; every key is stored first, so every get is a hit
                             (with --redis PATH both send SET / GET to a Redis server instead: same client, other server)
          fetch              --conns FerryClients each fetching --url in a loop (cache hits once ferryd has it)
          fetch-storm        --conns FerryClients fetch --url once, all at the same moment (coalescing)
          fetch-raw          --conns connections fetching --url, one poll() loop, frames by hand (as wrk on nginx)
          image              --conns FerryClients each calling image.get for --url in a loop (--distinct: new URLs)

        Options:
        \(parser.helpText)
        """

    /// Reads the options; `nil` when help was asked for.
    static func parse(_ arguments: [String]) throws(UsageError) -> BenchOptions? {
        let args = try parser.parse(arguments)
        if args.has("help") { return nil }
        var names = args.positionals
        if let list = args.value("mode") { names += list.split(separator: ",").map(String.init) }
        var modes: [BenchMode] = []
        for name in names where name != "all" {
            guard let mode = BenchMode(rawValue: name) else {
                throw UsageError("unknown mode \"\(name)\" (\(BenchMode.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            if !modes.contains(mode) { modes.append(mode) }
        }
        if names.contains("all") { modes = BenchMode.allCases.filter { !$0.fetchesURL } }
        // Run in a fixed order whatever the command line's order, so runs compare line by line.
        modes = (modes.isEmpty ? BenchMode.defaults : BenchMode.allCases.filter(modes.contains))

        let seconds = try number(args.value("seconds"), "--seconds", default: 3, minimum: 0.001)
        let count = try args.value("count").map { text throws(UsageError) in Int(try number(text, "--count", default: 0, minimum: 1)) }
        let warmup = try number(args.value("warmup"), "--warmup", default: 0.5, minimum: 0)
        let socket = args.value("socket").flatMap { $0.isEmpty ? nil : $0 } ?? FerryClient.defaultSocketPath
        var options = BenchOptions(socket: socket, modes: modes, budget: Budget(seconds: seconds, count: count),
                                   warmup: Budget(seconds: warmup, count: nil))
        // 1024 is the size of the send-time table (PingFrames.slots); ferryd's own limit (256 by default) is
        // checked against its hello reply.
        options.inFlight = Int(try number(args.value("in-flight"), "--in-flight", default: 50, minimum: 1, maximum: 1024))
        options.connections = Int(try number(args.value("conns"), "--conns", default: 50, minimum: 1, maximum: 1000))
        options.tasks = Int(try number(args.value("tasks"), "--tasks", default: 50, minimum: 1, maximum: 1024))
        // 64: the cache modes track a batch's replies in one 64-bit mask.
        options.pipeline = Int(try number(args.value("pipeline"), "--pipeline", default: 1, minimum: 1, maximum: 64))
        options.keySpace = Int(try number(args.value("keys"), "--keys", default: 10_000, minimum: 1, maximum: 1e12 - 1))
        options.redis = args.value("redis").flatMap { $0.isEmpty ? nil : $0 }
        options.url = args.value("url")
        options.distinct = args.has("distinct")
        options.distinctVariants = args.has("distinct-variants")
        if options.distinct && options.distinctVariants { throw UsageError("--distinct and --distinct-variants: one or the other") }
        if let spec = args.value("variant") { options.variant = try variant(spec) }
        if options.distinctVariants && options.variant == nil { throw UsageError("--distinct-variants needs --variant") }
        if let b = args.value("body") {
            guard let path = BodyPath(rawValue: b) else { throw UsageError("--body must be socket, read, map or fd, not \"\(b)\"") }
            options.body = path
        }
        if options.url == nil, modes.contains(where: \.fetchesURL) {
            throw UsageError("the fetch modes need --url")
        }
        options.valueBytes = Int(try number(args.value("value-bytes"), "--value-bytes", default: 100, minimum: 0,
                                            maximum: 1_000_000))
        return options
    }

    private static func number(_ text: String?, _ name: String, default value: Double, minimum: Double,
                               maximum: Double = 1e12) throws(UsageError) -> Double {
        guard let text else { return value }
        guard let v = Double(text), v.isFinite, v >= minimum, v <= maximum else {
            let low = decimal(minimum, minimum < 1 ? 3 : 0)
            let range = maximum < 1e12 ? "from \(low) to \(decimal(maximum, 0))" : "of at least \(low)"
            throw UsageError("\(name) needs a number \(range), not \"\(text)\"")
        }
        if name != "--seconds" && name != "--warmup" && v.rounded() != v {
            throw UsageError("\(name) needs a whole number, not \"\(text)\"")
        }
        return v
    }

    /// `WxH[:fit][:format]`, 0 for a side left free: `200x200:cover:webp`, `300x0`.
    private static func variant(_ spec: String) throws(UsageError) -> ImageVariant {
        let parts = spec.split(separator: ":").map(String.init)
        let sides = parts.first?.split(separator: "x").compactMap { Int($0) } ?? []
        guard sides.count == 2, sides.allSatisfy({ $0 >= 0 }), parts.count <= 3 else {
            throw UsageError("--variant needs WxH[:fit][:format], e.g. 200x200:cover:webp, not \"\(spec)\"")
        }
        var variant = ImageVariant(width: sides[0] > 0 ? sides[0] : nil, height: sides[1] > 0 ? sides[1] : nil)
        for word in parts.dropFirst() {
            if let fit = ImageFit(rawValue: word) {
                variant.fit = fit
            } else if let format = ImageOutputFormat(rawValue: word) {
                variant.format = format
            } else {
                throw UsageError("--variant: \"\(word)\" is neither a fit nor a format")
            }
        }
        return variant
    }
}
