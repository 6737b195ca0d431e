import FerryCache

/// A tier shared with other machines, beside the disk (`CacheStore.remote`; Redis in the daemon: `L2Values`), for
/// the namespaces it `shares`. The store consults it after a local miss and keeps what it answers (memory and disk);
/// it tells it of every change to a shared key, which it writes behind the reply and announces to the fleet. What
/// another machine changed comes back as `CacheStore.dropLocal` / `clearLocal`. Never an error: a tier that is
/// down answers nil and writes nothing. Loop thread only.
///
/// ```swift
/// store.remote = L2Values(redis: client, prefix: "ferry:v1:", namespaces: ["builds"])
/// store.get(CacheKey(trusted: "builds", "abc"), now: now) { … }   // memory, disk, then Redis
/// ```
public protocol RemoteTier: AnyObject {
    func shares(_ key: CacheKey) -> Bool
    func shares(namespace: String) -> Bool
    /// The live entry, or nil (absent, down, too slow).
    func read(_ key: CacheKey, now: Int64, _ done: @escaping (CacheEntry?) -> Void)
    /// `ifAbsent`: stores only when no live entry exists there; `done(nil)` when the tier could not say.
    func write(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool, now: Int64, _ done: @escaping (Bool?) -> Void)
    func removed(_ key: CacheKey)
    func retimed(_ key: CacheKey, expiresAt: Int64?, now: Int64)
    func cleared(namespace: String, now: Int64)
}
