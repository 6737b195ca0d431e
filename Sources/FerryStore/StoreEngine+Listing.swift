import FerryCache

/// A listing that does not wait for the pending sets to reach the index: on a disk so full that even the reserve's
/// room cannot take them, `cache.list` must still work (it is how a client finds what to delete), so the index's
/// rows are merged with the pending sets they do not have yet. Worker thread only.
extension StoreEngine {
    /// `.list` from the index and `pending` together: keys in byte order after `cursor`, a pending set in place of
    /// the index's row for its key, expired entries left out.
    func listWithPending(namespace: String, prefix: String, cursor: String?, limit: Int, now: Int64) -> DiskResult {
        let pendingHere = pending.filter { pendingKey, entry in
            let key = pendingKey.key
            return key.namespace == namespace && key.key.utf8.starts(with: prefix.utf8) && !entry.isExpired(now: now)
                && cursor.map { Array($0.utf8).lexicographicallyPrecedes(Array(key.key.utf8)) } ?? true
        }
        let rows: [(key: [UInt8], size: Int, expiresAt: Int64?)]
        do {
            rows = try index.list(namespace: namespace, prefix: Array(prefix.utf8), after: cursor.map { Array($0.utf8) },
                                  limit: limit + pendingHere.count + 1, now: now)
        } catch {
            return .failed(error.storeError)
        }
        var merged: [[UInt8]: ListedKey] = [:]
        for row in rows {
            merged[row.key] = ListedKey(key: String(decoding: row.key, as: UTF8.self), size: row.size, expiresAt: row.expiresAt)
        }
        for (pendingKey, entry) in pendingHere {
            let key = pendingKey.key
            merged[Array(key.key.utf8)] = ListedKey(key: key.key, size: entry.value.count, expiresAt: entry.expiresAt)
        }
        let ordered = merged.keys.sorted { $0.lexicographicallyPrecedes($1) }
        return .listed(ordered.prefix(limit).map { merged[$0]! }, more: ordered.count > limit)
    }
}
