import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The project's test origin (`Tests/Origin/ferry_origin.py`) on 127.0.0.1, started for one test and stopped by
/// PID. Everything it does is driven through the URL; `count(path:)` reads its per-path request counter.
final class OriginServer: @unchecked Sendable {
    let port: Int
    let scheme: String
    private let process: Subprocess
    private let dir: TempDir

    static let script: String = {
        var url = URL(fileURLWithPath: #filePath)
        url.deleteLastPathComponent()  // FerryIntegrationTests
        url.deleteLastPathComponent()  // Tests
        return url.appendingPathComponent("Origin/ferry_origin.py").path
    }()

    init(tls: (cert: String, key: String)? = nil, files: String? = nil) throws {
        dir = TempDir()
        let out = dir.path + "/origin.out"
        var args = [OriginServer.script, "--port", "0"]
        if let tls { args += ["--tls-cert", tls.cert, "--tls-key", tls.key] }
        if let files { args += ["--files", files] }
        process = try Subprocess("/usr/bin/env", ["python3"] + args, stdout: out, stderr: dir.path + "/origin.err")
        scheme = tls == nil ? "http" : "https"
        let deadline = Date().addingTimeInterval(10)
        var found: Int?
        while found == nil && Date() < deadline {
            if let text = try? String(contentsOfFile: out, encoding: .utf8), let line = text.split(separator: "\n").first,
               line.hasPrefix("PORT ") { found = Int(line.dropFirst(5)) }
            if found == nil { usleep(20_000) }
        }
        guard let found else {
            process.stop()
            throw HarnessError("the test origin did not start: \((try? String(contentsOfFile: dir.path + "/origin.err", encoding: .utf8)) ?? "")")
        }
        port = found
    }

    /// An absolute URL on this origin, e.g. `url("/r?body=x")`.
    func url(_ pathAndQuery: String) -> String { "\(scheme)://127.0.0.1:\(port)\(pathAndQuery)" }

    /// How many requests the origin has answered for a path (without query), from its own counter.
    func count(path: String) throws -> Int { try counter("path", path) }

    /// How many requests the origin has answered for exactly this path and query.
    func countExact(_ pathAndQuery: String) throws -> Int { try counter("url", pathAndQuery) }

    /// `/__count?<parameter>=<value>` of the origin.
    private func counter(_ parameter: String, _ value: String) throws -> Int {
        let (status, out, _) = try runCommand("/usr/bin/env", ["python3", "-c", """
            import json, sys, urllib.request, urllib.parse, ssl
            ctx = ssl._create_unverified_context()
            u = "\(scheme)://127.0.0.1:\(port)/__count?\(parameter)=" + urllib.parse.quote(sys.argv[1], safe="")
            print(json.load(urllib.request.urlopen(u, context=ctx))["count"])
            """, value])
        guard status == 0, let n = Int(out.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw HarnessError("cannot read the origin's counter for \(value)")
        }
        return n
    }

    func stop() {
        process.stop()
        dir.remove()
    }

    deinit { stop() }
}
