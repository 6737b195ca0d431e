import Glibc
import FerryArgs
import FerryCache
import FerryHTTPCache
import FerryProtocol
import FerryRedis
import FerryServer
import FerryStore

/// The `--l2*` options: Redis (one server or a cluster) as the second tier a fleet of ferryd shares (issue 16),
/// its URL with credentials, and the fleet's partition key.
extension DaemonOptions {
    /// The `--l2*` settings, each read through `value` (which notes the option being read, for an error's location).
    static func applyL2(_ value: (String) -> String?, to config: inout ServerConfig) throws(UsageError) {
        if let url = value("l2") {
            let target = try redisTarget(url)
            config.l2 = target.endpoint
            config.l2Setup = target.setup
            config.l2Cluster = target.cluster
        }
        if let prefix = value("l2-prefix") {
            // Braces would change which part of a key is its Redis Cluster hash tag.
            guard !prefix.contains("{"), !prefix.contains("}") else { throw UsageError("--l2-prefix may not contain { or } (got \"\(prefix)\")") }
            config.l2Prefix = prefix
        }
        if let v = value("l2-lease") {
            let ms = try parseDurationMs(v)
            guard ms >= 100 else { throw UsageError("--l2-lease must be at least 100ms") }
            config.l2LeaseMs = ms
        }
        if let list = value("l2-namespaces") {
            let names = list.split(separator: ",").map { String($0.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }.filter { !$0.isEmpty }
            for name in names where CacheKey.namespaceProblem(name) != nil {
                throw UsageError("--l2-namespaces: \(CacheKey.namespaceProblem(name)!) (\"\(name)\")")
            }
            config.l2Namespaces = Set(names)
        }
        if let v = value("l2-idle-ttl") {
            let ms = try parseDurationMs(v)
            guard ms >= 1000 else { throw UsageError("--l2-idle-ttl must be at least 1s") }
            config.l2IdleTtlMs = ms
        }
        if let path = value("l2-partition-secret") { config.l2PartitionSecret = try partitionSecret(path) }
        if let v = value("l2-max-value") { config.l2MaxValueBytes = try size(v, "--l2-max-value") }
        if let v = value("l2-timeout") {
            let ms = try parseDurationMs(v)
            guard ms >= 1 else { throw UsageError("--l2-timeout must be at least 1ms") }
            config.l2TimeoutMs = ms
        }
    }

    /// `--l2-partition-secret FILE`: the key every machine of the fleet partitions credentialed responses with. Only
    /// its owner may read it (a key others can read would let them name a partition).
    static func partitionSecret(_ path: String) throws(UsageError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UsageError("--l2-partition-secret \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { throw UsageError("--l2-partition-secret \(path): not a regular file") }
        guard st.st_uid == getuid(), st.st_mode & 0o077 == 0 else {
            throw UsageError("--l2-partition-secret \(path): must be yours and readable by you alone (chmod 600)")
        }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
        guard n >= 32 else { throw UsageError("--l2-partition-secret \(path): at least 32 bytes of key (e.g. head -c 32 /dev/urandom)") }
        return Array(bytes[..<n])
    }

    /// The URL with its password shown as `***` (for `--print-config`).
    static func maskingPassword(_ url: String) -> String {
        guard let schemeEnd = url.firstIndex(of: ":"), url[schemeEnd...].hasPrefix("://"), let at = url.lastIndex(of: "@") else { return url }
        let authority = url.index(schemeEnd, offsetBy: 3)
        guard at > authority, let colon = url[authority..<at].firstIndex(of: ":") else { return url }
        return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
    }

    /// `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]` (port 6379), `redis+unix://[[USER]:PASSWORD@]/PATH[?db=DB]` or
    /// `redis-cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT…]`: where Redis is (a cluster's seed nodes, the
    /// first as `endpoint`), and the `AUTH` and `SELECT` every connection begins with.
    static func redisTarget(_ url: String) throws(UsageError) -> (endpoint: RedisEndpoint, setup: [[String]], cluster: [RedisEndpoint]) {
        func fail(_ why: String) -> UsageError {
            UsageError("--l2 \(url): \(why) (redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], redis+unix://[[USER]:PASSWORD@]/PATH[?db=DB] or redis-cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT…])")
        }
        let unix = url.hasPrefix("redis+unix://") || url.hasPrefix("unix://")
        let cluster = url.hasPrefix("redis-cluster://")
        guard unix || cluster || url.hasPrefix("redis://") else { throw fail("not a Redis URL") }
        var rest = Substring(url.drop { $0 != ":" }.dropFirst(3))
        var setup: [[String]] = []
        // Credentials: everything before the last "@" of the authority part.
        if let at = rest.lastIndex(of: "@"), unix || !rest[..<at].contains("/") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = userinfo.firstIndex(of: ":") {
                let user = String(userinfo[..<colon]), password = String(userinfo[userinfo.index(after: colon)...]).removingPercentEncoding()
                guard !password.isEmpty else { throw fail("an empty password") }
                setup.append(user.isEmpty ? ["AUTH", password] : ["AUTH", user, password])
            } else if !userinfo.isEmpty {
                throw fail("a user without a password")
            }
        }
        func hostAndPort(_ authority: Substring) throws(UsageError) -> RedisEndpoint {
            var host = authority, port = 6379
            if let colon = authority.lastIndex(of: ":") {
                host = authority[..<colon]
                guard let p = Int(authority[authority.index(after: colon)...]), (1...65535).contains(p) else { throw fail("a bad port") }
                port = p
            }
            guard !host.isEmpty else { throw fail("no host") }
            return .tcp(host: String(host), port: port)
        }
        var db: Int?
        let endpoint: RedisEndpoint
        var seeds: [RedisEndpoint] = []
        if unix {
            var path = rest
            if let q = rest.firstIndex(of: "?") {
                path = rest[..<q]
                let query = rest[rest.index(after: q)...]
                guard query.hasPrefix("db="), let n = Int(query.dropFirst(3)), n >= 0 else { throw fail("the only parameter is db=N") }
                db = n
            }
            guard path.hasPrefix("/") else { throw fail("the socket's path must be absolute") }
            endpoint = .unix(path: String(path))
        } else {
            var authority = rest
            if let slash = rest.firstIndex(of: "/") {
                authority = rest[..<slash]
                let number = rest[rest.index(after: slash)...]
                if !number.isEmpty {
                    guard let n = Int(number), n >= 0 else { throw fail("the database is a number") }
                    db = n
                }
            }
            if cluster {
                guard db ?? 0 == 0 else { throw fail("a cluster has only database 0") }
                for node in authority.split(separator: ",", omittingEmptySubsequences: false) { seeds.append(try hostAndPort(node)) }
            }
            endpoint = cluster ? seeds[0] : try hostAndPort(authority)
        }
        if let db, db != 0 { setup.append(["SELECT", String(db)]) }
        return (endpoint, setup, seeds)
    }
}
