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

    private func get(_ key: String, _ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        // A large value comes as a descriptor and is copied in the kernel, never read into this process.
        guard let value = try await commands.run({ try await client.cacheGet(key, namespace: namespace, bodyAsFile: true) }) else {
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
        let bytes = value == "-" ? readStdin() : Array(value.utf8)
        let ttl = try args.value("ttl").map { t throws(CommandFailure) in try CacheCommands.ttl(t) }
        let ifAbsent = args.has("if-absent")
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let stored = try await commands.run { try await client.cacheSet(key, bytes, namespace: namespace, ttl: ttl, ifAbsent: ifAbsent) }
        if !stored { throw CommandFailure(code: .operationFailed, message: "not stored: \"\(key)\" exists (--if-absent)") }
    }

    private func delete(_ key: String, _ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let existed = try await commands.run { try await client.cacheDelete(key, namespace: namespace) }
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
        let found = try await commands.run { try await client.cacheGet(key, namespace: namespace, bodyAsFile: true) } != nil
        print(found ? "1" : "0")
        if !found { throw CommandFailure(code: .operationFailed, message: "") }
    }

    private func ttl(_ key: String, _ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        guard let value = try await commands.run({ try await client.cacheGet(key, namespace: namespace, bodyAsFile: true) }) else {
            return print("-2")
        }
        print(value.expiresAt.map { String(max(0, ($0 - CacheCommands.nowMs() + 999) / 1000)) } ?? "-1")
    }

    private func touch(_ key: String, _ ttlText: String, _ namespace: String?) async throws(CommandFailure) {
        let ttl = ["never", "persist", "none"].contains(ttlText) ? nil : try CacheCommands.ttl(ttlText)
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let touched = try await commands.run { try await client.cacheTouch(key, ttl: ttl, namespace: namespace) }
        if !touched { throw CommandFailure(code: .operationFailed, message: "not_found: no entry \"\(key)\"") }
    }

    /// `incr`/`decr`: prints the new value, as redis-cli does; a value that is no integer exits 1 with the daemon's words.
    private func incr(_ key: String, _ byText: String, negate: Bool, _ namespace: String?) async throws(CommandFailure) {
        guard let by = Int64(byText), !(negate && by == Int64.min) else {
            throw CommandFailure(code: .usage, message: "the increment must be a 64-bit integer, not \"\(byText)\"")
        }
        let ttl = try args.value("ttl").map { t throws(CommandFailure) in try CacheCommands.ttl(t) }
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let value = try await commands.run { try await client.cacheIncr(key, by: negate ? -by : by, ttl: ttl, namespace: namespace) }
        print(value)
    }

    private func clear(_ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let n = try await commands.run { try await client.cacheClear(namespace: namespace) }
        print("removed \(n) entries from namespace \"\(namespace ?? "default")\"")
    }
}
