import Foundation
import Testing
import FerryClient
#if canImport(Glibc)
import Glibc
#endif

/// A real nginx with TLS and HTTP/2 on 127.0.0.1, started for one test and stopped by PID: its files, a proxy to
/// the test origin (for a stream the upstream cuts off), and an access log that names each request's connection
/// and protocol.
final class NginxServer: @unchecked Sendable {
    let port: Int
    let dir = TempDir()
    let cert: String
    private let process: Subprocess

    static var binary: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    init(upstream: Int) throws {
        guard let nginx = NginxServer.binary else { throw HarnessError("nginx is not installed (make deps installs it)") }
        cert = dir.path + "/cert.pem"
        let key = dir.path + "/key.pem"
        let made = try runCommand("/usr/bin/env", ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                                                   "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                                                   "-addext", "subjectAltName=IP:127.0.0.1"])
        guard made.status == 0 else { throw HarnessError("openssl: \(made.err)") }
        let www = dir.path + "/www"
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        try Data(repeating: UInt8(ascii: "q"), count: 1024).write(to: URL(fileURLWithPath: www + "/small.json"))
        try Data((0..<4_000_000).map { UInt8($0 % 251) }).write(to: URL(fileURLWithPath: www + "/big.bin"))
        port = try freeTCPPort()
        let d = dir.path
        let conf = """
            worker_processes 1;
            daemon off;
            master_process off;
            pid \(d)/nginx.pid;
            error_log \(d)/error.log warn;
            events { worker_connections 1024; }
            http {
                log_format conns '$connection $server_protocol $status $request_uri';
                access_log \(d)/access.log conns;
                client_body_temp_path \(d); proxy_temp_path \(d); fastcgi_temp_path \(d); uwsgi_temp_path \(d); scgi_temp_path \(d);
                server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(cert);
                    ssl_certificate_key \(key);
                    http2_max_concurrent_streams 128;
                    root \(www);
                    location / { add_header Cache-Control "no-store"; }
                    location /up/ { proxy_pass http://127.0.0.1:\(upstream)/; proxy_buffering off; }
                }
            }
            """
        try conf.write(toFile: d + "/nginx.conf", atomically: true, encoding: .utf8)
        process = try Subprocess(nginx, ["-c", d + "/nginx.conf", "-p", d], stderr: d + "/stderr")
        for _ in 0..<500 {
            if (try? RawTCP.canConnect(port: port)) == true { return }
            if !process.isRunning { break }
            usleep(10_000)
        }
        process.stop()
        throw HarnessError("nginx did not start: \((try? String(contentsOfFile: d + "/error.log", encoding: .utf8)) ?? "")")
    }

    func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

    /// The access log's lines: (connection serial, protocol, status, URI).
    func accessLog() -> [(connection: String, proto: String, status: Int, uri: String)] {
        let text = (try? String(contentsOfFile: dir.path + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ")
            guard f.count == 4 else { return nil }
            return (String(f[0]), String(f[1]), Int(f[2]) ?? 0, String(f[3]))
        }
    }

    func stop() {
        process.stop()
        dir.remove()
    }
}

enum RawTCP {
    static func canConnect(port: Int) throws -> Bool {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(s) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// HTTP/2 tested for real (issue 11, item 6): ferryd against nginx with TLS and HTTP/2.
extension IntegrationTests {
@Suite(.enabled(if: NginxServer.binary != nil)) struct HTTP2Tests {
    /// 100 concurrent fetches from four clients go over one multiplexed connection, all HTTP/2, and large bodies
    /// arrive whole.
    @Test func aHundredConcurrentFetchesShareOneMultiplexedConnection() async throws {
        let origin = try OriginServer()
        defer { origin.stop() }
        let nginx = try NginxServer(upstream: origin.port)
        defer { nginx.stop() }
        let daemon = try Daemon(["--ca-file", nginx.cert])
        defer { daemon.stop() }
        var clients: [FerryClient] = []
        for _ in 0..<4 { clients.append(try await FerryClient.connect(path: daemon.socket)) }
        defer { for c in clients { c.close() } }
        let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<100 {
                let client = clients[n % 4]
                let path = n % 10 == 0 ? "/big.bin?n=\(n)" : "/small.json?n=\(n)"
                group.addTask { try await client.fetch(FetchRequest(nginx.url(path))).body.count }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(sizes.filter { $0 == 4_000_000 }.count == 10 && sizes.filter { $0 == 1024 }.count == 90)
        try await Task.sleep(for: .milliseconds(200))  // nginx writes its log line after the response
        let log = nginx.accessLog()
        #expect(log.count == 100 && log.allSatisfy { $0.proto == "HTTP/2.0" && $0.status == 200 }, "\(log.prefix(3))")
        #expect(Set(log.map(\.connection)).count == 1, "one connection: \(Set(log.map(\.connection)))")
    }

    /// A stream nginx resets mid-body (its upstream closed after half the body) fails that fetch alone: the
    /// client gets `unavailable` after the chunks it had, nothing is stored, and the next fetch on the same
    /// connection works.
    @Test func aStreamResetMidBodyFailsThatFetchAloneAndNothingIsStored() async throws {
        let origin = try OriginServer()
        defer { origin.stop() }
        let nginx = try NginxServer(upstream: origin.port)
        defer { nginx.stop() }
        let daemon = try Daemon(["--ca-file", nginx.cert])
        defer { daemon.stop() }
        let client = try await FerryClient.connect(path: daemon.socket)
        defer { client.close() }
        _ = try await client.fetch(FetchRequest(nginx.url("/small.json?warm")))
        var received = 0
        var failure: FerryError?
        do {
            for try await event in client.fetchStream(FetchRequest(nginx.url("/up/truncate?size=4000000&cc=max-age%3D600"))) {
                if case .chunk(let b) = event { received += b.count }
            }
        } catch let e as FerryError {
            failure = e
        }
        #expect(failure?.code == .unavailable && received <= 2_000_000, "\(String(describing: failure)) after \(received) bytes")
        let after = try await client.fetch(FetchRequest(nginx.url("/small.json?after")))
        #expect(after.status == 200 && after.body.count == 1024)
        let again = try await client.fetch(FetchRequest(nginx.url("/small.json?after2")))
        #expect(again.status == 200)
        try await Task.sleep(for: .milliseconds(200))
        let log = nginx.accessLog()
        let conns = Set(log.filter { $0.uri.hasPrefix("/small.json") }.map(\.connection))
        #expect(conns.count == 1, "the reset stream left the connection up: \(log)")
        #expect((try await client.stats()["cache"]?["disk"]?["entries"]?.intValue) == 0, "the cut body was not stored")
    }
}
}
