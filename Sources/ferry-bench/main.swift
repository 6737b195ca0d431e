#if canImport(Glibc)
import Glibc
#endif
import FerryArgs

/// ferry-bench: a load generator for ferryd's `ping` and cache, run by bench/run.sh beside the C reference
/// (bench/rawpingpong.c); BENCHMARKS.md explains the rows. Exit codes: 0 measured, 1 a mode failed, 2 usage.
func writeStderr(_ s: String) {
    var line = s + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// Prints and flushes at once: run.sh tees the output, and a mode that fails later should not take the lines of
/// the modes before it down with a lost buffer.
func emit(_ s: String) {
    print(s)
    fflush(nil)
}

func measure(_ mode: BenchMode, _ budget: Budget, _ o: BenchOptions) async throws -> BenchResult {
    switch mode {
    case .rawSeq: return try runRawSequential(socket: o.socket, budget: budget)
    case .rawPipelined: return try runRawPipelined(socket: o.socket, budget: budget, depth: o.inFlight)
    case .rawConns: return try runRawConnections(socket: o.socket, budget: budget, count: o.connections)
    case .rawConnsThreads: return try runRawConnectionThreads(socket: o.socket, budget: budget, count: o.connections)
    case .client: return try await runClient(socket: o.socket, budget: budget, tasks: o.tasks, onReader: false)
    case .clientExecutor: return try await runClient(socket: o.socket, budget: budget, tasks: o.tasks, onReader: true)
    case .fetch: return try await runFetch(socket: o.socket, url: o.url!, budget: budget, connections: o.connections, body: o.body)
    case .fetchRaw:
        return try await runFetchRaw(socket: o.socket, url: o.url!, budget: budget, connections: o.connections, pipeline: o.pipeline)
    case .fetchStorm: return try await runFetchStorm(socket: o.socket, url: o.url!, connections: o.connections)
    case .image:
        return try await runImage(socket: o.socket, url: o.url!, budget: budget, connections: o.connections, distinct: o.distinct,
                                  distinctVariants: o.distinctVariants, variant: o.variant)
    case .cacheSet, .cacheGet:
        return try runCacheMode(socket: o.socket, redis: o.redis, budget: budget, op: mode == .cacheSet ? .set : .get,
                                connections: o.connections, pipeline: o.pipeline, keySpace: o.keySpace,
                                valueBytes: o.valueBytes, distinct: o.distinct)
    }
}

let options: BenchOptions
do {
    guard let parsed = try BenchOptions.parse(Array(CommandLine.arguments.dropFirst())) else {
        print(BenchOptions.usage)
        exit(0)
    }
    options = parsed
} catch {
    writeStderr("ferry-bench: \(error.message)\n\n\(BenchOptions.usage)")
    exit(2)
}

var failed = false
var populated = false
for mode in options.modes {
    do {
        // cache-get reads only hits: store every key once, before its first (warm-up) run.
        if mode == .cacheGet && !populated {
            try populate(socket: options.socket, redis: options.redis, keySpace: options.keySpace, valueBytes: options.valueBytes)
            populated = true
        }
        // The warm-up runs the same code on its own connections and is thrown away: it brings the CPUs out of
        // their idle states and lets both processes' allocators reach a steady size before anything is counted.
        // (A storm is one round by nature: its warm-up would warm the very cache it is meant to find cold.)
        if options.warmup.seconds > 0 && mode != .fetchStorm && !(mode == .image && (options.distinct || options.distinctVariants)) { _ = try await measure(mode, options.warmup, options) }
        let result = try await measure(mode, options.budget, options)
        emit(result.machineLine)
        emit("# " + result.humanLine)
    } catch {
        writeStderr("ferry-bench: \(mode.rawValue): \(error)")
        failed = true
    }
}
exit(failed ? 1 : 0)
