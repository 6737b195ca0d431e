#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryClient

/// `ferry cache get|set|del|ls|clear`: the shared key-value cache from the shell. `get` writes the raw value to
/// stdout (or `-o FILE`); a missing key exits 1 with a message on stderr.
struct CacheCommands {
    let args: ParsedArgs
    let commands: Commands

    static let usage = """
        Usage: ferry cache get KEY [-o FILE] [--json]   the value (--json: with its size and times; exit 1 if none)
               ferry cache set KEY [VALUE | -] [--ttl 30s] [--if-absent]   (- or no VALUE: read stdin, binary-safe)
               ferry cache del KEY              exit 1 when there was no such key (as redis-cli's 0)
               ferry cache exists KEY           prints 1 or 0; exit 0 or 1
               ferry cache ttl KEY              seconds left; -1 never expires, -2 no such key (as redis-cli)
               ferry cache touch KEY TTL        a new TTL (30s, 1d, 1w, or "never"); exit 1 when no such key
               ferry cache incr KEY [BY]        add BY (default 1, may be negative) atomically; prints the value
               ferry cache decr KEY [BY]        subtract; a missing key counts from 0 (--ttl: its TTL)
               ferry cache ls [PREFIX] [-l]     keys (-l: size and seconds left)
               ferry cache clear                every key of the namespace
        TTLs: 500ms, 30s, 5m, 2h, 1d, 1w (more than 0; no --ttl: never expires).
        Each takes --namespace NS (default "default") and --socket PATH.
        """

    func run() async throws(CommandFailure) {
        let words = Array(args.positionals.dropFirst())
        guard let action = words.first else { throw CommandFailure(code: .usage, message: CacheCommands.usage) }
        let operands = Array(words.dropFirst())
        let namespace = args.value("namespace")
        switch (action, operands.count) {
        case ("get", 1): try await get(operands[0], namespace)
        case ("set", 1), ("set", 2): try await set(operands[0], operands.count == 2 ? operands[1] : "-", namespace)
        case ("del", 1), ("delete", 1): try await delete(operands[0], namespace)
        case ("ls", 0), ("ls", 1), ("list", 0), ("list", 1): try await list(operands.first ?? "", namespace)
        case ("exists", 1): try await exists(operands[0], namespace)
        case ("ttl", 1): try await ttl(operands[0], namespace)
        case ("touch", 2): try await touch(operands[0], operands[1], namespace)
        case ("incr", 1), ("incr", 2): try await incr(operands[0], operands.count == 2 ? operands[1] : "1", negate: false, namespace)
        case ("decr", 1), ("decr", 2): try await incr(operands[0], operands.count == 2 ? operands[1] : "1", negate: true, namespace)
        case ("clear", 0): try await clear(namespace)
        default: throw CommandFailure(code: .usage, message: CacheCommands.usage)
        }
    }

    /// The actions `runQuick` takes, by their number of operands: the ones that make one call with a small
    /// request (`set` only with its value on the command line: one read from stdin could not be given back).
    static func isQuick(_ words: [String]) -> Bool {
        switch (words.first, words.count - 1) {
        case ("get", 1), ("del", 1), ("delete", 1), ("exists", 1), ("ttl", 1), ("touch", 2),
             ("incr", 1), ("incr", 2), ("decr", 1), ("decr", 2): return true
        case ("set", 2): return words[2] != "-"
        default: return false
        }
    }

    /// `run` for the actions `isQuick` accepts, through a blocking connection (`QuickCommands`): the same calls,
    /// and the same output through the same functions.
    func runQuick(_ connection: BlockingConnection) throws(CommandFailure) {
        let words = Array(args.positionals.dropFirst())
        let key = words[1], namespace = args.value("namespace")
        switch words[0] {
        case "get": try show(quick { () throws(FerryError) in try connection.cacheGet(key, namespace: namespace, bodyAsFile: true) }, key, namespace)
        case "exists": try showExists(quick { () throws(FerryError) in try connection.cacheGet(key, namespace: namespace, bodyAsFile: true) } != nil)
        case "ttl": showTTL(try quick { () throws(FerryError) in try connection.cacheGet(key, namespace: namespace, bodyAsFile: true) })
        case "del", "delete": try showDeleted(quick { () throws(FerryError) in try connection.cacheDelete(key, namespace: namespace) }, key)
        case "touch":
            let ttl = try touchTTL(words[2])
            try showTouched(quick { () throws(FerryError) in try connection.cacheTouch(key, ttl: ttl, namespace: namespace) }, key)
        case "incr", "decr":
            let (by, ttl) = try incrInputs(words.count == 3 ? words[2] : "1", negate: words[0] == "decr")
            print(try quick { () throws(FerryError) in try connection.cacheIncr(key, by: by, ttl: ttl, namespace: namespace) })
        default:
            let (bytes, ttl, ifAbsent) = try setInputs(words[2])
            try showStored(quick { () throws(FerryError) in
                try connection.cacheSet(key, bytes, namespace: namespace, ttl: ttl, ifAbsent: ifAbsent)
            }, key)
        }
    }

    /// A call's failure as `Commands.run` words it.
    private func quick<T>(_ call: () throws(FerryError) -> T) throws(CommandFailure) -> T {
        do { return try call() } catch { throw CommandFailure(error) }
    }

    private func get(_ key: String, _ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        // A large value comes as a descriptor and is copied in the kernel, never read into this process.
        try show(try await commands.run({ try await client.cacheGet(key, namespace: namespace, bodyAsFile: true) }), key, namespace)
    }

    /// `get`'s output: the value (or its description with `--json`) on stdout or in `-o FILE`.
    private func show(_ found: CachedValue?, _ key: String, _ namespace: String?) throws(CommandFailure) {
        guard let value = found else {
            throw CommandFailure(code: .operationFailed, message: "not_found: no entry \"\(key)\" in namespace \"\(namespace ?? "default")\"")
        }
        if args.has("json") {
            let bytes = try value.file.map { f throws(CommandFailure) in try CacheCommands.read(f) } ?? value.bytes
            var o: JSONObject = ["key": .string(key), "size": .int(Int64(value.size)), "created_at": .int(value.createdAt)]
            if let e = value.expiresAt { o["expires_at"] = .int(e) }
            if let text = String(validating: bytes, as: UTF8.self) { o["value"] = .string(text) } else { o["value_base64"] = .string(Base64.encode(bytes)) }
            return print(jsonLine(.object(o)))
        }
        let out = args.value("output")
        switch (value.file, out) {
        case (let file?, let path?): try writeFile(path, file)
        case (let file?, nil): try copyToStdout(file)
        case (nil, let path?): try writeFile(path, value.bytes)
        case (nil, nil): writeStdout(value.bytes)
        }
    }

    private func set(_ key: String, _ value: String, _ namespace: String?) async throws(CommandFailure) {
        let (bytes, ttl, ifAbsent) = try setInputs(value)
        let client = try await commands.launcher.connect()
        defer { client.close() }
        try showStored(try await commands.run { try await client.cacheSet(key, bytes, namespace: namespace, ttl: ttl, ifAbsent: ifAbsent) }, key)
    }

    /// `set`'s value (`-`: stdin), TTL and `--if-absent`.
    private func setInputs(_ value: String) throws(CommandFailure) -> (bytes: [UInt8], ttl: Duration?, ifAbsent: Bool) {
        let ttl = try args.value("ttl").map { t throws(CommandFailure) in try CacheCommands.ttl(t) }
        return (value == "-" ? readStdin() : Array(value.utf8), ttl, args.has("if-absent"))
    }

    private func showStored(_ stored: Bool, _ key: String) throws(CommandFailure) {
        if !stored { throw CommandFailure(code: .operationFailed, message: "not stored: \"\(key)\" exists (--if-absent)") }
    }

    private func delete(_ key: String, _ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        try showDeleted(try await commands.run { try await client.cacheDelete(key, namespace: namespace) }, key)
    }

    private func showDeleted(_ existed: Bool, _ key: String) throws(CommandFailure) {
        if !existed { throw CommandFailure(code: .operationFailed, message: "not_found: no entry \"\(key)\"") }
    }

    private func list(_ prefix: String, _ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let keys = try await commands.run { try await client.cacheKeys(namespace: namespace, prefix: prefix) }
        if args.has("json") {
            print(jsonLine(.array(keys.map { k in
                var o: JSONObject = ["key": .string(k.key), "size": .int(Int64(k.size))]
                if let e = k.expiresAt { o["expires_at"] = .int(e) }
                return .object(o)
            })))
        } else if args.has("long") {
            let now = CacheCommands.nowMs()
            for k in keys { print("\(k.key)\t\(k.size)\t\(k.expiresAt.map { String(max(0, ($0 - now + 999) / 1000)) } ?? "-1")") }
        } else {
            for k in keys { print(k.key) }
        }
    }

    /// Milliseconds since the Unix epoch (the daemon's `expires_at` clock).
    static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// A TTL as the user wrote it: more than 0 (0 and negative durations are refused, as redis refuses them).
    static func ttl(_ text: String) throws(CommandFailure) -> Duration {
        let ms: Int64
        do { ms = try parseDurationMs(text) } catch { throw CommandFailure(code: .usage, message: "--ttl: \(error.message)") }
        guard ms > 0 else { throw CommandFailure(code: .usage, message: "a TTL must be more than 0 (\"\(text)\"); to keep a key for ever, give none") }
        return .milliseconds(ms)
    }

    static func read(_ file: BodyFile) throws(CommandFailure) -> [UInt8] {
        do { return try file.bytes() } catch { throw CommandFailure(code: .operationFailed, message: "\(error)") }
    }

    private func exists(_ key: String, _ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        try showExists(try await commands.run { try await client.cacheGet(key, namespace: namespace, bodyAsFile: true) } != nil)
    }

    private func showExists(_ found: Bool) throws(CommandFailure) {
        print(found ? "1" : "0")
        if !found { throw CommandFailure(code: .operationFailed, message: "") }
    }

    private func ttl(_ key: String, _ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        showTTL(try await commands.run({ try await client.cacheGet(key, namespace: namespace, bodyAsFile: true) }))
    }

    private func showTTL(_ found: CachedValue?) {
        guard let value = found else { return print("-2") }
        print(value.expiresAt.map { String(max(0, ($0 - CacheCommands.nowMs() + 999) / 1000)) } ?? "-1")
    }

    private func touch(_ key: String, _ ttlText: String, _ namespace: String?) async throws(CommandFailure) {
        let ttl = try touchTTL(ttlText)
        let client = try await commands.launcher.connect()
        defer { client.close() }
        try showTouched(try await commands.run { try await client.cacheTouch(key, ttl: ttl, namespace: namespace) }, key)
    }

    /// `touch`'s TTL: nil for never.
    private func touchTTL(_ text: String) throws(CommandFailure) -> Duration? {
        ["never", "persist", "none"].contains(text) ? nil : try CacheCommands.ttl(text)
    }

    private func showTouched(_ touched: Bool, _ key: String) throws(CommandFailure) {
        if !touched { throw CommandFailure(code: .operationFailed, message: "not_found: no entry \"\(key)\"") }
    }

    /// `incr`/`decr`: prints the new value, as redis-cli does; a value that is no integer exits 1 with the daemon's words.
    private func incr(_ key: String, _ byText: String, negate: Bool, _ namespace: String?) async throws(CommandFailure) {
        let (by, ttl) = try incrInputs(byText, negate: negate)
        let client = try await commands.launcher.connect()
        defer { client.close() }
        print(try await commands.run { try await client.cacheIncr(key, by: by, ttl: ttl, namespace: namespace) })
    }

    /// `incr`'s (or `decr`'s, negated) increment and `--ttl`.
    private func incrInputs(_ byText: String, negate: Bool) throws(CommandFailure) -> (by: Int64, ttl: Duration?) {
        guard let by = Int64(byText), !(negate && by == Int64.min) else {
            throw CommandFailure(code: .usage, message: "the increment must be a 64-bit integer, not \"\(byText)\"")
        }
        return (negate ? -by : by, try args.value("ttl").map { t throws(CommandFailure) in try CacheCommands.ttl(t) })
    }

    private func clear(_ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let n = try await commands.run { try await client.cacheClear(namespace: namespace) }
        print("removed \(n) entries from namespace \"\(namespace ?? "default")\"")
    }
}
