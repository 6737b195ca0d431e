import Foundation
import Testing
import FerryClient

/// Metrics as Prometheus reads them: `ferry stats --prometheus` and `--metrics-listen`'s `/metrics` pass `promtool
/// check metrics`, count requests by operation and code with a latency histogram each, and a real Prometheus
/// started here scrapes the daemon (`up` 1, the counters in its database). Text `ferry stats` leads with hit ratios.
extension IntegrationTests {
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool")))
struct MetricsTests {
    static func sample(_ text: String, _ prefix: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(prefix + " ") }.flatMap { Double($0.split(separator: " ").last!) }
    }

    @Test func prometheusTextIsValidAndCountsWhatHappened() async throws {
        let rig = try await FetchRig(daemonArgs: ["--metrics-listen", "127.0.0.1:0"])
        defer { rig.stop() }
        let url = rig.origin.url("/r?body=m&cc=max-age%3D60")
        for _ in 0..<3 { _ = try await rig.client.fetch(FetchRequest(url)) }
        try await rig.client.cacheSet("k", [1])
        _ = try await rig.client.cacheGet("k")
        _ = try await rig.client.cacheGet("missing")
        let env = ["FERRY_SOCKET": rig.daemon.socket, "FERRY_NO_AUTOSTART": "1"]
        let text = try runCommand(Binaries.ferry, ["stats", "--prometheus"], environment: env).out
        let checked = try runCommand("/usr/bin/promtool", ["check", "metrics"], stdin: Data(text.utf8))
        #expect(checked.status == 0 && checked.out.isEmpty && checked.err.isEmpty, "promtool: \(checked.out) \(checked.err)")
        #expect(Self.sample(text, "ferry_requests_total{op=\"fetch\",code=\"ok\"}") == 3)
        #expect(Self.sample(text, "ferry_requests_total{op=\"cache.get\",code=\"not_found\"}") == 1)
        #expect(Self.sample(text, "ferry_request_duration_seconds_count{op=\"fetch\"}") == 3)
        #expect(Self.sample(text, "ferry_request_duration_seconds_bucket{op=\"fetch\",le=\"+Inf\"}") == 3)
        #expect(Self.sample(text, "ferry_http_requests_total{cache=\"hit\"}") == 2)
        #expect(Self.sample(text, "ferry_http_origin_requests_total") == 1)
        #expect(Self.sample(text, "ferry_http_origin_requests_saved_total{by=\"cache\"}") == 2)
        #expect(Self.sample(text, "ferry_cache_budget_bytes{tier=\"memory\"}") == Double(256 << 20))

        // The same over HTTP, as a scraper sees it.
        let address = try await rig.client.stats()["metrics"]?["listen"]?.stringValue ?? ""
        #expect(address.hasPrefix("127.0.0.1:") && !address.hasSuffix(":0"))
        let scraped = try runCommand("/usr/bin/curl", ["-s", "-i", "http://\(address)/metrics"])
        #expect(scraped.out.hasPrefix("HTTP/1.1 200 OK") && scraped.out.contains("Content-Type: text/plain; version=0.0.4"))
        #expect(scraped.out.contains("ferry_requests_total{op=\"fetch\",code=\"ok\"} 3"))
        #expect(try runCommand("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://\(address)/other"]).out == "404")

        let human = try runCommand(Binaries.ferry, ["stats"], environment: env).out
        #expect(human.hasPrefix("hit ratio:   HTTP 66.7 % of 3 fetches"), "\(human)")
        #expect(human.contains("saved:       2 origin requests"))
        rig.daemon.signal(SIGTERM)
        #expect(rig.daemon.waitExit(timeout: 5) == 0, "the scrape endpoint does not keep a stopping daemon alive")
    }

    /// A real Prometheus, started on loopback with a one-second scrape of the daemon, stores its counters.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prometheus")))
    func aRealPrometheusScrapesTheDaemon() async throws {
        let daemon = try Daemon(["--metrics-listen", "127.0.0.1:0"])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        for _ in 0..<5 { _ = try await client.ping() }
        let target = try await client.stats()["metrics"]?["listen"]?.stringValue ?? ""
        let dir = TempDir()
        defer { dir.remove() }
        try """
            global:
              scrape_interval: 1s
            scrape_configs:
              - job_name: ferry
                static_configs:
                  - targets: ["\(target)"]
            """.write(toFile: dir.path + "/prometheus.yml", atomically: true, encoding: .utf8)
        let port = try freeTCPPort()
        let prometheus = try Subprocess("/usr/bin/prometheus", [
            "--config.file=\(dir.path)/prometheus.yml", "--storage.tsdb.path=\(dir.path)/data",
            "--web.listen-address=127.0.0.1:\(port)",
        ], stderr: dir.path + "/prometheus.log")
        defer { prometheus.stop() }
        var up = "", pings = ""
        for _ in 0..<60 {
            try await Task.sleep(for: .milliseconds(250))
            up = (try? runCommand("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/v1/query?query=up%7Bjob%3D%22ferry%22%7D"]).out) ?? ""
            pings = (try? runCommand("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/api/v1/query?query=ferry_requests_total%7Bop%3D%22ping%22%7D"]).out) ?? ""
            if up.contains("\"1\"]") && pings.contains("\"5\"]") { break }
        }
        #expect(up.contains("\"job\":\"ferry\"") && up.contains("\"1\"]"), "up: \(up)")
        #expect(pings.contains("\"code\":\"ok\"") && pings.contains("\"5\"]"), "scraped pings: \(pings)")
    }
}
}
