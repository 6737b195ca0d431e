#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryClient
import FerryProtocol

/// The `ferry` subcommands. Each returns normally on success or throws a `CommandFailure`.
struct Commands {
    let args: ParsedArgs
    let launcher: DaemonLauncher

    /// Runs an operation, turning a `FerryError` into exit code 1 (or 3 when the daemon went away).
    func run<T>(_ body: () async throws -> T) async throws(CommandFailure) -> T {
        do {
            return try await body()
        } catch let e as FerryError {
            throw CommandFailure(e)
        } catch let e as CommandFailure {
            throw e
        } catch {
            throw CommandFailure(code: .operationFailed, message: "\(error)")
        }
    }

    func ping() async throws(CommandFailure) {
        let count = try intOption("count", default: 1)
        let client = try await launcher.connect()
        defer { client.close() }
        for _ in 0..<count {
            let rtt = try await run { try await client.ping() }
            print(Commands.pong(from: client.serverName, after: rtt))
        }
    }

    /// `ping`'s line for one round trip (the quick form prints it too).
    static func pong(from server: String, after rtt: Duration) -> String { "pong from \(server): \(formatMs(rtt))" }

    func describe() async throws(CommandFailure) {
        let client = try await launcher.connect()
        defer { client.close() }
        let d = try await run { try await client.describe() }
        if args.has("json") {
            print(jsonLine(.object(d)))
            return
        }
        for op in d["operations"]?.arrayValue ?? [] {
            print("\(op["name"]?.stringValue ?? "?")  —  \(op["summary"]?.stringValue ?? "")")
            for a in op["args"]?.arrayValue ?? [] {
                let req = a["required"]?.boolValue == true ? " (required)" : ""
                print("    \(a["name"]?.stringValue ?? "?"): \(a["type"]?.stringValue ?? "?")\(req)  \(a["doc"]?.stringValue ?? "")")
            }
            let fields = (op["result"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
            print("    → \(fields.isEmpty ? "{}" : fields.joined(separator: ", "))")
        }
    }

    func stats() async throws(CommandFailure) {
        let client = try await launcher.connect()
        defer { client.close() }
        if args.has("prometheus") {
            let reply = try await run { try await client.call(.stats, ["format": "prometheus"]) }
            return writeStdout(reply.body)
        }
        let s = try await run { try await client.stats() }
        if args.has("json") {
            print(jsonLine(.object(s)))
            return
        }
        print(Commands.formatStats(s))
    }

    /// `ferry stats` for a person: first what is asked first — how often each tier answers, what was served, what
    /// the origins were spared — then the daemon, connections, requests by operation, errors.
    static func formatStats(_ s: JSONObject) -> String {
        func n(_ v: JSONValue?, _ key: String) -> Int64 { v?[key]?.intValue ?? 0 }
        func ratio(_ hits: Int64, _ total: Int64) -> String {
            total == 0 ? "-" : (Commands.format1(100 * Double(hits) / Double(total))) + " %"
        }
        let cache = s["cache"], fetch = s["fetch"], image = s["image"]
        let cacheHits = n(cache, "memory_hits") + n(cache, "disk_hits"), cacheReads = cacheHits + n(cache, "misses")
        let fetchAnswered = n(fetch, "hits") + n(fetch, "stale") + n(fetch, "revalidated") + n(fetch, "coalesced")
        let fetchTotal = fetchAnswered + n(fetch, "misses") + n(fetch, "bypass")
        let imageHits = n(image, "memory_hits") + n(image, "disk_hits"), imageTotal = imageHits + n(image, "downloads") + n(image, "coalesced")
        var lines = [
            "hit ratio:   HTTP \(ratio(n(fetch, "hits") + n(fetch, "stale"), fetchTotal)) of \(fetchTotal) fetches"
                + " (+ \(n(fetch, "revalidated")) revalidated, \(n(fetch, "coalesced")) coalesced)",
            "             cache \(ratio(cacheHits, cacheReads)) of \(cacheReads) reads (memory \(ratio(n(cache, "memory_hits"), cacheReads)),"
                + " disk \(ratio(n(cache, "disk_hits"), cacheReads)))",
            "             images \(ratio(imageHits, imageTotal)) of \(imageTotal) (memory \(ratio(n(image, "memory_hits"), imageTotal)))",
            "served:      \(humanBytes(n(fetch, "bytes_from_cache"))) from the cache, \(humanBytes(n(fetch, "bytes_from_origin"))) from origins",
            "saved:       \(n(fetch, "hits") + n(fetch, "stale") + n(fetch, "coalesced")) origin requests"
                + " (\(n(fetch, "coalesced")) by coalescing); \(n(fetch, "origin_requests")) made",
            "memory:      cache \(humanBytes(n(cache?["memory"], "bytes"))) of \(humanBytes(n(cache?["memory"], "budget"))),"
                + " images \(humanBytes(n(image, "bytes"))) of \(humanBytes(n(image, "budget"))); disk \(humanBytes(n(cache?["disk"], "bytes")))"
                + " of \(humanBytes(n(cache?["disk"], "budget")))",
        ]
        if let endpoint = s["l2"]?["endpoint"]?.stringValue, !endpoint.isEmpty {
            let l2 = s["l2"]
            lines.append("fleet:       Redis \(endpoint) \(l2?["connected"]?.boolValue == true ? "connected" : "DOWN"),"
                         + " \(n(l2, "hits")) hits, \(n(l2, "misses")) misses, \(n(l2, "writes")) writes, \(n(l2, "unavailable")) unanswered")
            let leases = l2?["leases"], values = l2?["values"]
            lines.append("             cold misses: \(n(leases, "won")) fetched here for the fleet, \(n(leases, "looked_again")) answered by"
                         + " another machine, \(n(leases, "took_over")) taken over; shared values: \(n(values, "hits")) hits,"
                         + " \(n(values, "writes")) writes")
        }
        lines += [
            "",
            "ferryd \(s["version"]?.stringValue ?? "?"), pid \(s["pid"]?.intValue ?? 0), up \(humanDuration(ms: s["uptime_ms"]?.intValue ?? 0))",
            "connections: \(n(s["connections"], "open")) open, \(n(s["connections"], "total")) total, \(n(s["connections"], "rejected")) rejected",
            "requests:    \(n(s["requests"], "total")) total, \(n(s["requests"], "in_flight")) in flight, \(n(s["requests"], "errors")) errors",
            "bytes:       \(humanBytes(n(s["bytes"], "in"))) in, \(humanBytes(n(s["bytes"], "out"))) out",
        ]
        for (name, c) in s["ops"]?.objectValue ?? JSONObject() where n(c, "requests") > 0 {
            lines.append("  \(name): \(n(c, "requests")) requests, \(n(c, "errors")) errors")
        }
        let errors = (s["errors"]?.objectValue ?? JSONObject()).map { "\($0.key) \($0.value.intValue ?? 0)" }
        if !errors.isEmpty { lines.append("errors:      " + errors.joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }

    /// One decimal: 97.5.
    static func format1(_ v: Double) -> String {
        let tenths = Int((v * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// `ferry call OP [JSON | -]`: a raw call for scripts; the result goes to stdout as one JSON line.
    func call() async throws(CommandFailure) {
        guard args.positionals.count >= 2 else { throw CommandFailure(code: .usage, message: "usage: ferry call OP [JSON | -]") }
        let op = args.positionals[1]
        var argsObject = JSONObject()
        if args.positionals.count >= 3 {
            let text = args.positionals[2] == "-" ? readStdin() : Array(args.positionals[2].utf8)
            do {
                guard case .object(let o) = try JSONParser.parse(text) else {
                    throw CommandFailure(code: .usage, message: "the arguments must be a JSON object")
                }
                argsObject = o
            } catch let e as CommandFailure {
                throw e
            } catch {
                throw CommandFailure(code: .usage, message: "invalid JSON arguments: \(error)")
            }
        }
        guard args.positionals.count <= 3 else { throw CommandFailure(code: .usage, message: "unexpected argument \(args.positionals[3])") }
        let body = try args.value("body").map { path throws(CommandFailure) in try readFile(path) } ?? []
        var timeout: Duration? = nil
        if let t = args.value("timeout") {
            do { timeout = .milliseconds(try parseDurationMs(t)) } catch { throw CommandFailure(code: .usage, message: error.message) }
        }
        let client = try await launcher.connect()
        defer { client.close() }
        let reply = try await run { try await client.call(op, argsObject, body: body, timeout: timeout) }
        print(jsonLine(.object(reply.result)))
        if let out = args.value("output") {
            try writeFile(out, reply.body)
        } else if !reply.body.isEmpty {
            writeStderr("ferry: the reply has a body of \(reply.body.count) bytes; use -o FILE to save it")
        }
    }

    private func intOption(_ name: String, default value: Int) throws(CommandFailure) -> Int {
        guard let text = args.value(name) else { return value }
        guard let n = Int(text), n > 0 else { throw CommandFailure(code: .usage, message: "--\(name) needs a positive integer") }
        return n
    }
}
