#if canImport(Glibc)
import Glibc
#endif
import FerryArgs
import FerryClient

/// `ferry http ls|show|purge`: the shared HTTP cache from the shell, as Varnish's and nginx's users inspect and
/// purge theirs. URLs are matched as stored: normalised (`ferry http ls` shows them).
struct HTTPCommands {
    let args: ParsedArgs
    let commands: Commands

    static let usage = """
        Usage: ferry http ls [URL-PREFIX] [-l] [--json]   URLs the HTTP cache holds (-l: status, size, age, fresh or stale)
               ferry http show URL [--json]              stored responses: headers, age, freshness, variants;
                                                         partitions (credentialed or private copies) by count only
               ferry http purge URL                      remove it: every variant and partition (exit 1 if none)
               ferry http purge --prefix URL-PREFIX      remove every URL starting with it
        Each takes --socket PATH.
        """

    func run() async throws(CommandFailure) {
        let words = Array(args.positionals.dropFirst())
        guard let action = words.first else { throw CommandFailure(code: .usage, message: HTTPCommands.usage) }
        let operands = Array(words.dropFirst())
        let client = try await commands.launcher.connect()
        defer { client.close() }
        switch (action, operands.count, args.value("prefix")) {
        case ("ls", 0...1, nil), ("list", 0...1, nil): try await list(client, operands.first ?? "")
        case ("show", 1, nil): try await show(client, operands[0])
        case ("purge", 1, nil):
            let url = operands[0]
            if !(try await commands.run { try await client.httpPurge(url) }) {
                throw CommandFailure(code: .operationFailed, message: "not_found: the HTTP cache holds nothing for \(url)")
            }
        case ("purge", 0, let prefix?):
            let n = try await commands.run { try await client.httpPurge(prefix: prefix) }
            print("purged \(n) URL\(n == 1 ? "" : "s")")
        default: throw CommandFailure(code: .usage, message: HTTPCommands.usage)
        }
    }

    private func list(_ client: FerryClient, _ prefix: String) async throws(CommandFailure) {
        let urls = try await commands.run { try await client.httpCacheList(prefix: prefix) }
        if args.has("json") { return print(jsonLine(.array(urls.map { .object(HTTPCommands.json($0)) }))) }
        guard args.has("long") else { return urls.forEach { print($0.url) } }
        for u in urls {
            let what: String
            if let variants = u.variants {
                what = "vary:\(u.vary ?? "")\t\(variants) variant\(variants == 1 ? "" : "s")"
            } else if let status = u.status {
                what = "\(status)\t\(u.size ?? 0)\tage \(u.ageSeconds ?? 0)s\t\(u.fresh == true ? "fresh" : "stale")"
            } else {
                what = "-\t-\t-\t-"
            }
            print("\(u.url)\t\(what)\tpartitions \(u.partitions)")
        }
    }

    private func show(_ client: FerryClient, _ url: String) async throws(CommandFailure) {
        guard let (cached, responses) = try await commands.run({ try await client.httpCacheShow(url) }) else {
            throw CommandFailure(code: .operationFailed, message: "not_found: the HTTP cache holds nothing for \(url)")
        }
        if args.has("json") {
            var o = HTTPCommands.json(cached)
            o["responses"] = .array(responses.map { r in
                var e: JSONObject = ["status": .int(Int64(r.status)), "stored_at": .int(r.storedAt), "age_s": .int(r.ageSeconds),
                                     "lifetime_s": .int(r.lifetimeSeconds), "fresh": .bool(r.fresh), "size": .int(Int64(r.size)),
                                     "headers": .array(r.headers.map { .array([.string($0.name), .string($0.value)]) })]
                if let v = r.variant { e["variant"] = .string(v) }
                return .object(e)
            })
            return print(jsonLine(.object(o)))
        }
        print("URL: \(cached.url)")
        print("Stored: \(cached.bytes) bytes\(cached.vary.map { ", Vary: \($0)" } ?? "")")
        print("Partitions: \(cached.partitions) (credentialed or private copies; not shown)")
        for r in responses {
            print("")
            if let v = r.variant { print("Variant: \(v)") }
            let left = r.lifetimeSeconds - r.ageSeconds
            print("Status: \(r.status), \(r.size) bytes")
            print("Age: \(r.ageSeconds)s of \(r.lifetimeSeconds)s: \(r.fresh ? "fresh for \(left)s more" : "stale by \(-left)s")")
            for (name, value) in r.headers { print("\(name): \(value)") }
        }
    }

    static func json(_ u: CachedHTTPURL) -> JSONObject {
        var o: JSONObject = ["url": .string(u.url), "bytes": .int(Int64(u.bytes)), "partitions": .int(Int64(u.partitions))]
        if let v = u.vary { o["vary"] = .string(v) }
        if let n = u.variants { o["variants"] = .int(Int64(n)) }
        if let s = u.status { o["status"] = .int(Int64(s)) }
        if let s = u.size { o["size"] = .int(Int64(s)) }
        if let a = u.ageSeconds { o["age_s"] = .int(a) }
        if let f = u.fresh { o["fresh"] = .bool(f) }
        return o
    }
}
