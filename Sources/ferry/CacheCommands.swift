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
        Usage: ferry cache get KEY [-o FILE]
               ferry cache set KEY [VALUE | -] [--ttl 30s] [--if-absent]   (- or no VALUE: read stdin, binary-safe)
               ferry cache del KEY
               ferry cache ls [PREFIX]
               ferry cache clear
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
        var ttl: Duration? = nil
        if let t = args.value("ttl") {
            do { ttl = .milliseconds(try parseDurationMs(t)) } catch { throw CommandFailure(code: .usage, message: error.message) }
        }
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
        } else {
            for k in keys { print(k.key) }
        }
    }

    private func clear(_ namespace: String?) async throws(CommandFailure) {
        let client = try await commands.launcher.connect()
        defer { client.close() }
        let n = try await commands.run { try await client.cacheClear(namespace: namespace) }
        print("removed \(n) entries from namespace \"\(namespace ?? "default")\"")
    }
}
