import Foundation
import Testing
import FerryClient

/// One access line per request, as nginx users read theirs: logfmt by default (op, connection, uid, key or URL,
/// result, HTTP and cache status, bytes, ms), JSON lines with `--log-format json`, slow requests flagged and, at
/// `--log-level warn`, the only ones written. Hot-path answers and streamed bodies get their lines too.
extension IntegrationTests {
@Suite struct AccessLogTests {
    static func lines(_ path: String, _ filter: String = "access") throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init).filter { filter.isEmpty || $0.contains(filter) }
    }

    @Test func logfmtLinesSayWhatEachRequestDid() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let log = dir.path + "/ferryd.log"
        let rig = try await FetchRig(daemonArgs: ["--log-file", log, "--log-level", "info"])
        defer { rig.stop() }
        let url = rig.origin.url("/r?size=300000&cc=max-age%3D60")
        _ = try await rig.client.fetch(FetchRequest(url))
        _ = try await rig.client.fetch(FetchRequest(url))
        try await rig.client.cacheSet("a key", [1, 2, 3], namespace: "ns1")
        _ = try await rig.client.cacheGet("a key", namespace: "ns1")
        _ = try await rig.client.cacheGet("missing")
        try await Task.sleep(for: .milliseconds(100))
        let access = try Self.lines(log).filter { !$0.contains("op=hello") }
        #expect(access.count == 5, "\(access)")
        let uid = getuid()
        #expect(access[0].contains(" info access op=fetch conn=") && access[0].contains("uid=\(uid) url=\"\(url)\" status=ok http=200 cache=miss bytes=300000 ms="),
                "a streamed miss: its size once known: \(access[0])")
        #expect(access[1].contains("cache=hit bytes=300000"))
        #expect(access[2].contains("op=cache.set") && access[2].contains("ns=ns1 key=\"a key\" status=ok bytes=3"), "\(access[2])")
        #expect(access[3].contains("op=cache.get") && access[3].contains("key=\"a key\" status=ok bytes=3"))
        #expect(access[4].contains("key=missing status=not_found bytes=0"))
        #expect(access.allSatisfy { $0.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "#, options: .regularExpression) != nil })
    }

    @Test func jsonLinesAndSlowRequestsAtWarn() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let log = dir.path + "/ferryd.log"
        let rig = try await FetchRig(daemonArgs: ["--log-file", log, "--log-format", "json", "--log-level", "warn", "--slow-ms", "50"])
        defer { rig.stop() }
        _ = try await rig.client.fetch(FetchRequest(rig.origin.url("/r?body=fast&cc=no-store")))
        _ = try await rig.client.fetch(FetchRequest(rig.origin.url("/r?body=slow&delay_ms=120&cc=no-store")))
        _ = try await rig.client.ping()
        try await Task.sleep(for: .milliseconds(100))
        let lines = try Self.lines(log, "")
        let objects = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
        #expect(objects.allSatisfy { $0["time"] is String && $0["level"] is String && $0["msg"] is String }, "every line is JSON: \(lines)")
        let access = objects.filter { $0["msg"] as? String == "access" }
        #expect(access.count == 1, "at warn, only the slow request: \(lines)")
        #expect(access.first?["slow"] as? Bool == true && access.first?["level"] as? String == "warn")
        #expect((access.first?["url"] as? String)?.contains("body=slow") == true && (access.first?["ms"] as? Double ?? 0) >= 120)
        #expect(access.first?["http"] as? Int == 200 && access.first?["cache"] as? String == "miss")
    }
}
}
