import FerryCache

/// The store with a tier shared by other machines (`remote`, `RemoteTier`): a local miss of a shared key asks it,
/// and what it answers is kept here (memory, and disk so it survives a restart) unless the key changed meanwhile;
/// a set of a shared key is written here and there, and `ifAbsent` asks the shared tier first (it decides for the
/// fleet; when it cannot say, this machine decides alone).
extension CacheStore {
    func readRemote(_ key: CacheKey, _ remote: RemoteTier, now: Int64,
                    _ done: @escaping (Result<(StoredValue, CacheSource)?, StoreError>) -> Void) {
        let ticket = mutations.begin(key, mutates: false)
        remote.read(key, now: now) { [unowned self] entry in
            let current = mutations.end(key, ticket)
            guard let entry, !entry.isExpired(now: now) else {
                own.misses += 1
                return done(.success(nil))
            }
            own.fleetHits += 1
            if current {
                remember(key, entry)
                disk.write(key, entry, ifAbsent: false, now: now, settling: false) { _ in }
            }
            done(.success((.entry(entry), .fleet)))
        }
    }

    func setShared(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool, remote: RemoteTier, now: Int64,
                   _ done: @escaping (Result<Bool, StoreError>) -> Void) {
        guard ifAbsent else {
            remote.write(key, entry, ifAbsent: false, now: now) { _ in }
            return setLocal(key, entry, ifAbsent: false, now: now, done)
        }
        remote.write(key, entry, ifAbsent: true, now: now) { [unowned self] stored in
            switch stored {
            case false?:
                done(.success(false))   // another machine's value is there: this one is not set anywhere
            case true?:
                setLocal(key, entry, ifAbsent: false, now: now, done)   // the fleet's decision: a local copy is stale
            case nil:
                setLocal(key, entry, ifAbsent: true, now: now, done)
            }
        }
    }
}
