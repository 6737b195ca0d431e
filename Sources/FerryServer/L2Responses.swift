import FerryFetch
import FerryStore
import FerryLoop
import FerryRedis

/// The HTTP cache's storage with Redis behind it, shared by every ferryd of a fleet (`--l2`): reads go to this
/// machine's store first, then to Redis, and a Redis hit fills the local store; writes go to the local store and,
/// for what `SharedTier` lets out, to Redis behind the reply (a bounded number in flight; more are dropped and
/// counted), with the time to live the response is still worth. Redis down or slow never fails a request: its
/// answer is then a miss, within the client's timeout. Loop thread only.
///
/// ```swift
/// let storage = L2Responses(local: CacheStoreResponses(store: store), redis: client, prefix: "ferry:v1:")
/// ResponseStore(storage: storage)
/// ```
final class L2Responses: ResponseStorage {
    private let local: ResponseStorage
    let redis: RedisClient
    /// Every key in Redis starts with it: a fleet's name and the format's version (`--l2-prefix`).
    let prefix: String
    let maxValueBytes: Int
    private(set) var counters = L2Counters()
    private var writesInFlight = 0
    static let maxWritesInFlight = 1000

    init(local: ResponseStorage, redis: RedisClient, prefix: String, maxValueBytes: Int = 1 << 20) {
        self.local = local
        self.redis = redis
        self.prefix = prefix
        self.maxValueBytes = maxValueBytes
    }

    private func redisKey(_ key: String) -> [UInt8] { Array((prefix + key).utf8) }

    func get(_ key: String, _ done: @escaping ([UInt8]?) -> Void) {
        local.get(key) { [self] value in
            if let value { return done(value) }
            guard SharedTier.isShareable(key: key), redis.isConnected else { return done(nil) }
            redis.send([Array("GET".utf8), redisKey(key)]) { [self] reply in
                switch reply {
                case .string(let bytes):
                    counters.hits += 1
                    local.put(key, bytes)   // this machine keeps it too
                    done(bytes)
                case .nil:
                    counters.misses += 1
                    done(nil)
                default:
                    counters.unavailable += 1
                    done(nil)
                }
            }
        }
    }

    func put(_ key: String, _ value: [UInt8]) {
        local.put(key, value)
        guard value.count <= maxValueBytes, redis.isConnected,
              let ttl = SharedTier.lifetimeMs(key: key, record: value, now: WallClock.nowMs() / 1000) else { return }
        guard writesInFlight < L2Responses.maxWritesInFlight else {
            counters.dropped += 1
            return
        }
        writesInFlight += 1
        redis.send([Array("SET".utf8), redisKey(key), value, Array("PX".utf8), Array(String(ttl).utf8)]) { [self] reply in
            writesInFlight -= 1
            if case .status = reply { counters.writes += 1 } else { counters.unavailable += 1 }
        }
    }

    func delete(_ key: String) {
        local.delete(key)
        guard SharedTier.isShareable(key: key), redis.isConnected else { return }
        redis.send([Array("DEL".utf8), redisKey(key)]) { _ in }
    }

    func putBody(_ key: String, file: SpooledFile, _ done: @escaping (Bool) -> Void) { local.putBody(key, file: file, done) }
    func getBody(_ key: String, _ done: @escaping (FetchBody?) -> Void) { local.getBody(key, done) }
    func peek(_ key: String, _ done: @escaping ([UInt8]?) -> Void) { local.peek(key, done) }
    func list(prefix: String, after: String?, limit: Int, _ done: @escaping (Result<StoredKeys, StoreError>) -> Void) {
        local.list(prefix: prefix, after: after, limit: limit, done)
    }
}

/// What the second tier did, for `stats`' `l2`.
struct L2Counters {
    var hits: UInt64 = 0
    var misses: UInt64 = 0
    var writes: UInt64 = 0
    /// Writes not sent: too many in flight.
    var dropped: UInt64 = 0
    /// Reads and writes Redis did not answer (down, timed out).
    var unavailable: UInt64 = 0
}
