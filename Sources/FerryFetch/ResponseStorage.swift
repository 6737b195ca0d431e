import FerryCache
import FerryLoop
import FerryStore

/// Where the HTTP cache keeps its records: keys and byte values, reads answered through a callback (at once from
/// memory, later from disk). `CacheStoreResponses` is the daemon's; the engine's tests keep records in a dictionary.
/// Loop thread only.
///
/// ```swift
/// storage.put("GET https://a.test/x", record)
/// storage.get("GET https://a.test/x") { value in … }   // the record, or nil
/// ```
public protocol ResponseStorage: AnyObject {
    func get(_ key: String, _ done: @escaping ([UInt8]?) -> Void)
    func put(_ key: String, _ value: [UInt8])
    func delete(_ key: String)
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

    public func delete(_ key: String) {
        store.delete(CacheKey(trusted: CacheStoreResponses.namespace, key), now: WallClock.nowMs()) { _ in }
    }
}
