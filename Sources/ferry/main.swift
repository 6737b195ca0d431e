#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import Dispatch

/// ferry: the command-line client. Exit codes: 0 success, 1 the operation failed, 2 usage error, 3 no daemon.
let fetchLike = ["fetch", "image"]  // image downloads take fetch's request options
let parser = ArgParser([
    OptionSpec("socket", takesValue: true, help: "the daemon's socket (default: $FERRY_SOCKET, then the standard path)"),
    OptionSpec("json", help: "print JSON instead of text (describe, stats, cache get, image); fetch: send DATA as JSON, as curl's --json",
               commands: ["describe", "stats", "cache", "http", "image", "call", "fetch"]),
    OptionSpec("count", short: "c", takesValue: true, help: "ping: how many round trips", commands: ["ping"]),
    OptionSpec("timeout", takesValue: true, help: "call: deadline; fetch: per exchange; e.g. 500ms, 10s", commands: ["call"] + fetchLike),
    OptionSpec("body", takesValue: true, help: "call: send this file as the request body", commands: ["call"]),
    OptionSpec("output", short: "o", takesValue: true, help: "call, cache get, fetch, image: write the body to this file",
               commands: ["call", "cache"] + fetchLike),
    OptionSpec("namespace", short: "n", takesValue: true, help: "cache: the namespace (default \"default\")", commands: ["cache"]),
    OptionSpec("ttl", takesValue: true, help: "cache set, incr: expire after this long, e.g. 30s, 5m (incr: a key it creates)", commands: ["cache"]),
    OptionSpec("if-absent", help: "cache set: store only if the key has no live entry", commands: ["cache"]),
    OptionSpec("long", short: "l", help: "cache ls: with sizes and seconds left; http ls: with status, size, age", commands: ["cache", "http"]),
    OptionSpec("prefix", takesValue: true, help: "http purge: every URL starting with this", commands: ["http"]),
    OptionSpec("request", short: "X", takesValue: true, help: "fetch: the HTTP method", commands: ["fetch"]),
    OptionSpec("header", short: "H", takesValue: true, help: "fetch: add a header 'Name: value' (repeatable)", commands: fetchLike),
    OptionSpec("data", short: "d", takesValue: true, help: "fetch: request body (@FILE, @- for stdin; newlines of a file dropped); implies POST",
               commands: ["fetch"]),
    OptionSpec("data-binary", takesValue: true, help: "fetch: request body, byte for byte (@FILE, @-)", commands: ["fetch"]),
    OptionSpec("include", short: "i", help: "fetch: print status line and headers before the body", commands: ["fetch"]),
    OptionSpec("head", short: "I", help: "fetch: HEAD request; print status line and headers", commands: ["fetch"]),
    OptionSpec("fail", short: "f", help: "fetch: exit 22 on HTTP status >= 400", commands: ["fetch"]),
    OptionSpec("fail-with-body", help: "fetch: exit 22 on HTTP status >= 400, after writing the body", commands: ["fetch"]),
    OptionSpec("silent", short: "s", help: "fetch: no progress bar", commands: ["fetch"]),
    OptionSpec("show-error", short: "S", help: "fetch: accepted for curl habits (errors are always shown)", commands: ["fetch"]),
    OptionSpec("location", short: "L", help: "fetch: accepted for curl habits (redirects are followed by default)", commands: ["fetch"]),
    OptionSpec("max-redirs", takesValue: true, help: "fetch: at most this many redirects", commands: ["fetch"]),
    OptionSpec("retry", takesValue: true, help: "fetch: retry a timeout or an HTTP 408, 429, 500, 502, 503, 504 this many times (1 s, 2 s, 4 s … apart)",
               commands: ["fetch"]),
    OptionSpec("retry-delay", takesValue: true, help: "fetch: wait this many seconds between retries instead", commands: ["fetch"]),
    OptionSpec("retry-max-time", takesValue: true, help: "fetch: no retry after this many seconds since the first try", commands: ["fetch"]),
    OptionSpec("retry-connrefused", help: "fetch: --retry also a refused connection", commands: ["fetch"]),
    OptionSpec("retry-all-errors", help: "fetch: --retry every failure (with -f, any status of 400 or more too)", commands: ["fetch"]),
    OptionSpec("continue-at", short: "C", takesValue: true, help: "fetch: resume a download into -o FILE ('-': from its size)",
               commands: ["fetch"]),
    OptionSpec("cache", takesValue: true, help: "fetch: the cache mode (default, no-store, reload, no-cache, force-cache, only-if-cached)",
               commands: fetchLike),
    OptionSpec("user-agent", short: "A", takesValue: true, help: "fetch: the User-Agent (default ferry/VERSION)", commands: ["fetch"]),
    OptionSpec("max-time", short: "m", takesValue: true, help: "fetch: the whole transfer's limit in seconds (exit 28)", commands: ["fetch"]),
    OptionSpec("max-filesize", takesValue: true, help: "fetch: refuse a body larger than this many bytes (exit 63)", commands: ["fetch"]),
    OptionSpec("get", short: "G", help: "fetch: send -d and --data-urlencode data in the URL's query (GET)", commands: ["fetch"]),
    OptionSpec("data-urlencode", takesValue: true, help: "fetch: data, URL-encoded (name=content, @file)", commands: ["fetch"]),
    OptionSpec("form", short: "F", takesValue: true, help: "fetch: a multipart form field (name=value, name=@file[;type=T])",
               commands: ["fetch"]),
    OptionSpec("user", short: "u", takesValue: true, help: "fetch: user:password, sent as Basic authorization", commands: ["fetch"]),
    OptionSpec("compressed", help: "fetch: accepted for curl habits (ferryd always asks for compression and hands the body over decoded)",
               commands: ["fetch"]),
    OptionSpec("insecure", short: "k", help: "fetch: trust any TLS certificate (bypasses the shared cache)", commands: ["fetch"]),
    OptionSpec("cacert", takesValue: true, help: "fetch: trust only the CA certificates in this PEM file (bypasses the shared cache)",
               commands: ["fetch"]),
    OptionSpec("remote-name", short: "O", help: "fetch: write to a file named as the URL's last path segment", commands: ["fetch"]),
    OptionSpec("verbose", short: "v", help: "fetch: the request and the response's head on stderr, with the cache status",
               commands: ["fetch"]),
    OptionSpec("write-out", short: "w", takesValue: true, help: "fetch: print FORMAT after the transfer (%{http_code}, %{json}, …)",
               commands: ["fetch"]),
    OptionSpec("info", help: "image: print format, size and source", commands: ["image"]),
    OptionSpec("width", takesValue: true, help: "image: a variant this many points wide (times --density pixels)", commands: ["image"]),
    OptionSpec("height", takesValue: true, help: "image: a variant this many points high", commands: ["image"]),
    OptionSpec("fit", takesValue: true, help: "image: inside (default), cover, contain, fill or outside", commands: ["image"]),
    OptionSpec("format", takesValue: true, help: "image: original (default), jpeg, png, webp or avif", commands: ["image"]),
    OptionSpec("quality", takesValue: true, help: "image: encoder quality 1-100", commands: ["image"]),
    OptionSpec("density", takesValue: true, help: "image: pixels per point, 1-4 (default 1)", commands: ["image"]),
    OptionSpec("follow", help: "logs: keep printing lines as they come (-f)", commands: ["logs"]),
    OptionSpec("lines", takesValue: true, help: "logs: only the last N lines (-n)", commands: ["logs"]),
    OptionSpec("prometheus", help: "stats: Prometheus' text exposition (for node_exporter's textfile collector, or a look)", commands: ["stats"]),
    OptionSpec("version", help: "print the version"),
    OptionSpec("help", short: "h", help: "print help"),
])
/// `fetch` reads `--json DATA` as curl does (7.82+): the body is DATA, sent as JSON.
let fetchParser = parser.with("json", takingValue: true, help: "fetch: send DATA (@FILE, @-) as JSON: POST, Content-Type and Accept application/json")

let usage = """
    Usage: ferry COMMAND [OPTIONS]

    Commands:
      ping                     round trip to ferryd; prints the time
      describe                 every operation with its arguments and results
      stats                    the daemon's counters
      call OP [JSON | -]       call an operation with JSON arguments (- reads stdin); prints the result as JSON
      fetch URL [curl-like options]  HTTP through ferryd's shared cache (ferry fetch --help)
      cache get|set|del|ls|incr|…  the shared key-value cache (ferry cache --help)
      http ls|show|purge       the shared HTTP cache: what it holds, and purging (ferry http --help)
      image URL -o FILE | --info     an image through the shared image loader (ferry image --help)
      daemon start|stop|status control the daemon
      logs [-f] [-n N]         the daemon's log (-f: follow it)
      top                      a live view: requests/s, hit ratios, bytes/s, budgets, transfers (q quits)
      completions bash|zsh|fish  a completion script for the shell

    When no daemon answers, ferry starts ferryd in the background (FERRY_NO_AUTOSTART=1 turns this off).
    Exit codes: 0 success, 1 the operation failed, 2 usage error, 3 no daemon could be reached, 22 fetch -f and
    an HTTP status of 400 or more.

    Options:
    \(parser.helpText)
    """

/// The commands and their actions, for shell completion (`ferry completions SHELL`).
let cliCompletions = Completions(program: "ferry", commands: [
    ("ping", []), ("describe", []), ("stats", []), ("call", []), ("fetch", []),
    ("cache", ["get", "set", "del", "exists", "ttl", "touch", "incr", "decr", "ls", "clear"]),
    ("http", ["ls", "show", "purge"]), ("image", ["prefetch"]), ("daemon", ["start", "stop", "status"]),
    ("logs", []), ("top", []), ("completions", ["bash", "zsh", "fish"]),
], options: parser.options)

let subcommandHelp: [String: String] = [
    "ping": "Usage: ferry ping [--count N] [--socket PATH]\n\nSends ping requests and prints each round-trip time.",
    "describe": "Usage: ferry describe [--json] [--socket PATH]\n\nLists every operation the daemon serves with its arguments and result fields.",
    "stats": "Usage: ferry stats [--json | --prometheus] [--socket PATH]\n\nPrints the hit ratio of each tier, bytes served, origin requests saved, budgets in use, then uptime, connections, requests and errors per operation and code. --json: the whole object; --prometheus: Prometheus' text exposition.",
    "call": "Usage: ferry call OP [JSON | -] [--timeout 5s] [--body FILE] [-o FILE] [--socket PATH]\n\nCalls OP with a JSON object of arguments (- reads it from stdin) and prints the result as one JSON line.\nErrors go to stderr as `code: message` with exit code 1.",
    "cache": CacheCommands.usage,
    "http": HTTPCommands.usage,
    "logs": LogsCommand.usage,
    "top": TopCommand.usage,
    "fetch": FetchCommand.usage,
    "image": ImageCommand.usage,
    "daemon": "Usage: ferry daemon start [FERRYD-OPTIONS] | stop | status [--socket PATH]\n\nstart: start ferryd in the background with these of its options, e.g. --disk-limit 1GiB (no-op if running; ferryd also reads its configuration file, ferryd --print-config)\nstop: SIGTERM the daemon and wait for it to exit\nstatus: print the daemon's state; exit 3 if it is not running",
]

/// What the command line asks for, read before anything else runs.
enum CommandLineReading {
    /// Answered already (help, version, a usage error): exit with this code.
    case done(Int32)
    case run(ParsedArgs, DaemonLauncher)
}

/// Reads the command line; synchronous, so that a quick command (`QuickCommands`) never starts the concurrency
/// runtime.
func readCommandLine() -> CommandLineReading {
    var args: ParsedArgs
    var words = LogsCommand.rewrite(Array(CommandLine.arguments.dropFirst()))
    // `ferry daemon start FLAGS…`: ferryd's own flags go to the daemon it starts (ferryd checks them, and the
    // CLI says why at once when it refuses them); --socket and --help stay the CLI's.
    var daemonArgs: [String] = []
    if words.count > 1, words[0] == "daemon", words[1] == "start" {
        let rest = words.dropFirst(2)
        words = ["daemon", "start"]
        var k = rest.startIndex
        while k < rest.endIndex {
            let w = rest[k]
            if w == "--socket", k + 1 < rest.endIndex {
                words += [w, rest[k + 1]]
                k += 2
                continue
            }
            if w.hasPrefix("--socket=") || w == "--help" || w == "-h" { words.append(w) } else { daemonArgs.append(w) }
            k += 1
        }
    }
    do {
        args = try parser.parse(words)
        // fetch reads `--json DATA` (a value), the others `--json` (a flag): read fetch's words again its way.
        if args.positionals.first == "fetch" { args = try fetchParser.parse(words) }
    } catch {
        // `ferry fetch --json DATA URL` is a usage error to the first reading only.
        if let again = try? fetchParser.parse(words), again.positionals.first == "fetch" {
            args = again
        } else {
            writeStderr("ferry: \(error.message)\n\n\(usage)")
            return .done(ExitCode.usage.rawValue)
        }
    }
    let command = args.positionals.first
    if let command, let problem = parser.misplaced(args, command: command) {
        writeStderr("ferry: \(problem)\n\n\(subcommandHelp[command] ?? usage)")
        return .done(ExitCode.usage.rawValue)
    }
    if args.has("help") {
        print(command.flatMap { subcommandHelp[$0] } ?? usage)
        return .done(0)
    }
    if args.has("version") {
        print("ferry \(ferryVersion)")
        return .done(0)
    }
    return .run(args, DaemonLauncher(explicitSocket: args.value("socket"), daemonArguments: daemonArgs))
}

/// Runs the command (every one; `QuickCommands` runs some of them sooner when it can).
func runCommand(_ args: ParsedArgs, _ launcher: DaemonLauncher) async -> Int32 {
    let command = args.positionals.first
    let commands = Commands(args: args, launcher: launcher)
    do {
        switch command {
        case "ping": try await commands.ping()
        case "describe": try await commands.describe()
        case "stats": try await commands.stats()
        case "call": try await commands.call()
        case "cache": try await CacheCommands(args: args, commands: commands).run()
        case "http": try await HTTPCommands(args: args, commands: commands).run()
        case "logs": try await LogsCommand(args: args, commands: commands).run()
        case "top": try await TopCommand(args: args, commands: commands).run()
        case "completions":
            guard args.positionals.count == 2, let shell = Completions.Shell(rawValue: args.positionals[1]) else {
                writeStderr("usage: ferry completions bash|zsh|fish")
                return ExitCode.usage.rawValue
            }
            print(cliCompletions.render(shell), terminator: "")
        case "fetch": try await FetchCommand(args: args, commands: commands).run()
        case "image": try await ImageCommand(args: args, commands: commands).run()
        case "daemon": try await DaemonCommands(launcher: launcher).run(args.positionals.count > 1 ? args.positionals[1] : nil)
        case nil:
            writeStderr(usage)
            return ExitCode.usage.rawValue
        case let other?:
            writeStderr("ferry: unknown command \"\(other)\"\n\n\(usage)")
            return ExitCode.usage.rawValue
        }
    } catch {
        return error.report()
    }
    return 0
}

switch readCommandLine() {
case .done(let code):
    exit(code)
case .run(let args, let launcher):
    if let code = QuickCommands(args: args, launcher: launcher).run() { exit(code) }
    // What an async top level would do, started only here: the runtime's threads cost a quick command ~1 ms.
    Task { exit(await runCommand(args, launcher)) }
    dispatchMain()
}
