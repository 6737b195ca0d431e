import FerryCache
import FerryLoop
import FerryStore

/// Where the HTTP cache keeps its records: keys and byte values, reads answered through a callback (at once from
/// memory, later from disk), and large bodies apart from their records, taken from their spool file and served as
/// the store's file. `CacheStoreResponses` is the daemon's; the engine's tests keep records in a dictionary. Loop
/// thread only.
///
/// ```swift
/// storage.put("GET https://a.test/x", record)
/// storage.get("GET https://a.test/x") { value in … }   // the record, or nil
/// storage.putBody(bodyKey, spool) { stored in … }      // a complete spooled body
/// storage.getBody(bodyKey) { body in … }               // .stored(blob), or nil
/// ```
public protocol ResponseStorage: AnyObject {
    func get(_ key: String, _ done: @escaping ([UInt8]?) -> Void)
    func put(_ key: String, _ value: [UInt8])
    func delete(_ key: String)
    /// Keeps a spooled body (its file is taken over: renamed, or removed when not kept); `done(false)` when it
    /// was not kept.
    func putBody(_ key: String, file: SpooledFile, _ done: @escaping (Bool) -> Void)
    /// A body kept by `putBody`, as something to read in pieces; nil when it is gone.
    func getBody(_ key: String, _ done: @escaping (FetchBody?) -> Void)
    /// `get` for inspection (`ResponseCatalog`): leaves recency and hit counters as they were.
    func peek(_ key: String, _ done: @escaping ([UInt8]?) -> Void)
    /// Up to `limit` keys starting with `prefix`, in byte order after `after`, with their stored sizes; `more` when
    /// others follow.
    func list(prefix: String, after: String?, limit: Int, _ done: @escaping (Result<StoredKeys, StoreError>) -> Void)
}

/// A page of `ResponseStorage.list`.
public struct StoredKeys: Sendable, Equatable {
    public var keys: [(key: String, size: Int)]
    public var more: Bool

    public init(keys: [(key: String, size: Int)], more: Bool) {
        self.keys = keys
        self.more = more
    }

    public static func == (a: StoredKeys, b: StoredKeys) -> Bool {
        a.more == b.more && a.keys.map(\.key) == b.keys.map(\.key) && a.keys.map(\.size) == b.keys.map(\.size)
    }
}

/// A body file handed over by a spool (`BodySpool.takeFile`, `takePartialFile`): in the spool directory, on the
/// store's file system.
public struct SpooledFile: Sendable {
    public var path: String
    public var size: Int
    public var checksum: Int64?

    public init(path: String, size: Int, checksum: Int64?) {
        self.path = path
        self.size = size
        self.checksum = checksum
    }
}

/// `ResponseStorage` in the project's storage engine, under a namespace no client can name (`cache.*` namespaces
/// may not contain `:`), so responses share the memory and disk budgets, survive restarts, and large bodies become
/// content-addressed blob files.
public final class CacheStoreResponses: ResponseStorage {
    public static let namespace = "fetch:v1"
    private let store: CacheStore

    public init(store: CacheStore) { self.store = store }

    public func get(_ key: String, _ done: @escaping ([UInt8]?) -> Void) {
        store.get(CacheKey(trusted: CacheStoreResponses.namespace, key), now: WallClock.nowMs()) { result in
            guard case .success(let found?) = result else { return done(nil) }
            done(found.0.value)
        }
    }

    /// Best effort: a body over the store's value limit, or a full disk, leaves the response uncached.
    public func put(_ key: String, _ value: [UInt8]) {
        store.set(CacheKey(trusted: CacheStoreResponses.namespace, key), value: value, ttlMs: nil, ifAbsent: false,
                  now: WallClock.nowMs()) { _ in }
    }

    public func putBody(_ key: String, file: SpooledFile, _ done: @escaping (Bool) -> Void) {
        let now = WallClock.nowMs()
        store.adopt(CacheKey(trusted: CacheStoreResponses.namespace, key),
                    AdoptedFile(path: file.path, size: file.size, checksum: file.checksum, createdAt: now)) { result in
            if case .success(true) = result { done(true) } else { done(false) }
        }
    }

    /// Bodies up to `wholeUpTo` come back whole (and join the memory tier, whose hits then cost no disk read);
    /// larger ones as the store's file, read in pieces as the client takes them.
    public static let wholeUpTo = 16 * 1024 * 1024

    public func getBody(_ key: String, _ done: @escaping (FetchBody?) -> Void) {
        store.read(CacheKey(trusted: CacheStoreResponses.namespace, key), now: WallClock.nowMs(),
                   streamAbove: CacheStoreResponses.wholeUpTo) { result in
            switch result {
            case .success((.blob(let blob), _)?): done(.stored(blob))
            case .success((.entry(let entry), _)?): done(.bytes(entry.value[...]))
            default: done(nil)
            }
        }
    }

    public func peek(_ key: String, _ done: @escaping ([UInt8]?) -> Void) {
        store.peek(CacheKey(trusted: CacheStoreResponses.namespace, key), now: WallClock.nowMs()) { result in
            done((try? result.get())??.value)
        }
    }

    public func list(prefix: String, after: String?, limit: Int, _ done: @escaping (Result<StoredKeys, StoreError>) -> Void) {
        store.list(namespace: CacheStoreResponses.namespace, prefix: prefix, cursor: after, limit: limit, now: WallClock.nowMs()) { result in
            done(result.map { StoredKeys(keys: $0.keys.map { ($0.key, $0.size) }, more: $0.more) })
        }
    }

    public func delete(_ key: String) {
        store.delete(CacheKey(trusted: CacheStoreResponses.namespace, key), now: WallClock.nowMs()) { _ in }
    }
}
