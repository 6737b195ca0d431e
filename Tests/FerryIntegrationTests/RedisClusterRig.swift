import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A Redis Cluster of three masters and a replica each, on loopback, made the way an operator makes one
/// (`redis-cli --cluster create … --cluster-replicas 1`); every server stopped by PID. `cluster-node-timeout` is
/// one second, so a master that dies is failed over in a few.
final class RedisClusterRig {
    let dir = TempDir()
    private(set) var ports: [Int] = []
    private var servers: [Int: Subprocess] = [:]

    init(nodes: Int = 6) throws {
        for _ in 0..<nodes {
            let port = try freeTCPPort(), bus = try freeTCPPort()
            let nodeDir = dir.path + "/\(port)"
            try FileManager.default.createDirectory(atPath: nodeDir, withIntermediateDirectories: true)
            servers[port] = try Subprocess("/usr/bin/redis-server", [
                "--bind", "127.0.0.1", "--port", String(port), "--cluster-enabled", "yes", "--cluster-port", String(bus),
                "--cluster-config-file", nodeDir + "/nodes.conf", "--cluster-node-timeout", "1000", "--save", "",
                "--appendonly", "no", "--repl-diskless-sync-delay", "0", "--dir", nodeDir, "--logfile", nodeDir + "/redis.log"])
            ports.append(port)
        }
        for port in ports { try waitFor("redis on \(port)") { (try? cli(port, ["PING"]))?.contains("PONG") == true } }
        let created = try runCommand("/usr/bin/redis-cli", ["--cluster", "create"] + ports.map { "127.0.0.1:\($0)" }
                                     + ["--cluster-replicas", nodes >= 6 ? "1" : "0", "--cluster-yes"])
        guard created.status == 0 else { throw HarnessError("redis-cli --cluster create failed: \(created.out) \(created.err)") }
        try waitUntilHealthy()
        // Replicas in sync before a test begins (a first sync forks its master, which stalls it a moment).
        if nodes >= 6 {
            try waitFor("the replicas in sync") {
                try masters().allSatisfy { (try? cli($0, ["INFO", "replication"]))?.contains("state=online") == true }
            }
        }
    }

    func cli(_ port: Int, _ args: [String]) throws -> String {
        try runCommand("/usr/bin/redis-cli", ["-p", String(port)] + args).out
    }

    /// Every live node says `cluster_state:ok`.
    func waitUntilHealthy(timeout: Double = 20) throws {
        try waitFor("the cluster to be ok", timeout: timeout) {
            ports.filter { servers[$0] != nil }.allSatisfy { (try? cli($0, ["CLUSTER", "INFO"]))?.contains("cluster_state:ok") == true }
        }
    }

    /// The masters' ports now, as the cluster says.
    func masters() throws -> [Int] {
        let live = ports.filter { servers[$0] != nil }
        return try cli(live[0], ["CLUSTER", "NODES"]).split(whereSeparator: \.isNewline).compactMap { line in
            let f = line.split(separator: " ")
            guard f.count > 2, f[2].contains("master"), !f[2].contains("fail"),
                  let addr = f[1].split(separator: "@").first, let port = Int(addr.split(separator: ":").last ?? "") else { return nil }
            return port
        }.sorted()
    }

    /// The master holding `key` (its slot's owner).
    func master(holding key: String) throws -> Int? {
        try masters().first { (try? cli($0, ["--scan"]))?.split(whereSeparator: \.isNewline).contains(Substring(key)) == true }
    }

    /// The replica of a master, from its replication info.
    func replica(of master: Int) throws -> Int? {
        let info = try cli(master, ["INFO", "replication"])
        guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("slave0:") }),
              let field = line.split(separator: ",").first(where: { $0.hasPrefix("port=") }) else { return nil }
        return Int(field.dropFirst(5))
    }

    func kill(_ port: Int) {
        servers[port]?.stop(signal: SIGKILL)
        servers[port] = nil
    }

    func stop() {
        for (_, server) in servers { server.stop(signal: SIGKILL) }
        servers = [:]
    }

    deinit {
        stop()
        dir.remove()
    }

    private func waitFor(_ what: String, timeout: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return }
            usleep(50_000)
        }
        throw HarnessError("timed out waiting for \(what)")
    }
}
