#if canImport(Glibc)
import Glibc
#endif
import FerryBytes
import FerryCache

/// The engine's writes: a value put (inline or as a blob file), a finished file adopted as a value, and the room
/// both make under the disk budget (expired rows first, then the least recently used). Worker thread only, inside
/// the batch's transaction.
extension StoreEngine {
    func put(_ key: CacheKey, _ entry: CacheEntry, now: Int64, outcome: inout BatchOutcome) throws {
        let cost = StoreEngine.cost(key, size: entry.value.count)
        guard cost <= config.diskBudget else {
            throw StoreError.overDiskBudget("a value of \(entry.value.count) bytes does not fit the disk budget of \(config.diskBudget)")
        }
        let old = try makeRoom(for: key, cost: cost, now: now, outcome: &outcome)
        // One pass over the value for both its checksum and, for a blob, the name its file is looked for under.
        let sum = entry.value.withUnsafeBytes { StripedChecksum.of($0) }
        var row = DiskRow(size: entry.value.count, createdAt: entry.createdAt, expiresAt: entry.expiresAt, inline: nil, blob: nil,
                          sum: .striped(Int64(bitPattern: sum)))
        if entry.value.count <= config.inlineThreshold { row.inline = entry.value } else { row.blob = try blobs.write(entry.value, sum: sum) }
        try index.put(key, row, accessedAt: now)
        if let old { forget(key, size: old.size, blob: old.blob) }
        diskBytes += cost
        diskEntries += 1
    }

    /// Takes a finished file (a fetched body spooled in the store's directory) as the value of `key`, without
    /// copying it: it is renamed into the blob files. A file larger than `maxAdoptedBytes` is refused. The file is
    /// gone from its path afterwards in every case (renamed, or removed on failure).
    func adopt(_ key: CacheKey, _ file: AdoptedFile, outcome: inout BatchOutcome) throws {
        defer { unlink(file.path) }  // a no-op once renamed
        let cost = StoreEngine.cost(key, size: file.size)
        guard file.size <= config.maxAdoptedBytes else {
            throw StoreError.overDiskBudget("a value of \(file.size) bytes is over half the disk budget of \(config.diskBudget)")
        }
        guard let checksum = file.checksum ?? BlobFiles.checksum(ofFileAt: file.path, size: file.size) else {
            throw StoreError.io("\(file.path) is not the \(file.size) bytes it was said to be")
        }
        let old = try makeRoom(for: key, cost: cost, now: file.createdAt, outcome: &outcome)
        let hash = try blobs.adopt(file.path)
        adoptedInTransaction.append(hash)
        try index.put(key, DiskRow(size: file.size, createdAt: file.createdAt, expiresAt: file.expiresAt, inline: nil,
                                   blob: hash, sum: .striped(checksum)), accessedAt: file.createdAt)
        if let old { forget(key, size: old.size, blob: old.blob) }
        diskBytes += cost
        diskEntries += 1
    }

    /// Keeps the disk tier under its budget on the write path (expired rows first, then the least recently used)
    /// for a new row of `cost` replacing `key`'s; returns the row it replaces.
    private func makeRoom(for key: CacheKey, cost: Int, now: Int64, outcome: inout BatchOutcome) throws -> (size: Int, blob: String?)? {
        let old = try index.replaced(key)
        let oldCost = old.map { StoreEngine.cost(key, size: $0.size) } ?? 0
        if diskBytes - oldCost + cost > config.diskBudget {
            let target = Int(Double(config.diskBudget) * config.diskLowWatermark) - cost
            outcome.expirations += try removeExpired(now: now, limit: 10_000)
            if diskBytes - oldCost + cost > config.diskBudget {
                outcome.evictions += try evict(downTo: max(0, target), sparing: key)
            }
        }
        return old
    }

    /// Deletes up to `limit` expired rows, oldest expiry first; returns how many.
    func removeExpired(now: Int64, limit: Int) throws(SQLiteError) -> Int {
        let expired = try index.select(where: "expires_at IS NOT NULL AND expires_at<=?", { s throws(SQLiteError) in try s.bind(1, now) }, orderBy: "expires_at", limit: limit)
        var removed = 0
        for (key, row) in expired {
            guard try index.delete(key) != nil else { continue }
            forget(key, row)
            removed += 1
        }
        return removed
    }

    private func evict(downTo target: Int, sparing: CacheKey) throws -> Int {
        var evicted = 0
        while diskBytes > target {
            let victims = try index.select(where: "1", { _ throws(SQLiteError) in }, limit: 256)
            var progressed = false
            for (key, row) in victims where key != sparing {
                guard diskBytes > target else { break }
                if try index.delete(key) != nil {
                    forget(key, row)
                    evicted += 1
                    progressed = true
                }
            }
            if !progressed { break }
        }
        return evicted
    }

    /// Drops a damaged entry's row and, once nothing points at it, its blob file.
    func removeDamaged(_ key: CacheKey) {
        guard let old = try? index.delete(key) else { return }
        diskBytes -= StoreEngine.cost(key, size: old.size)
        diskEntries -= 1
        if let hash = old.blob { removeIfUnused(hash) }
    }

    /// Removes a blob file once no row points at it and no reply is reading it.
    func removeIfUnused(_ hash: String) {
        guard !pins.isPinned(hash), (try? index.isBlobReferenced(hash)) == false else { return }
        blobs.remove(hash)
    }

    /// Accounts for a row that is gone; its blob file goes after the commit if nothing else points at it.
    func forget(_ key: CacheKey, _ row: DiskRow) { forget(key, size: row.size, blob: row.blob) }

    func forget(_ key: CacheKey, size: Int, blob: String?) {
        diskBytes -= StoreEngine.cost(key, size: size)
        diskEntries -= 1
        if let hash = blob { maybeUnreferenced.append(hash) }
    }
}

/// A finished file handed to the store as a value (`CacheStore.adopt`): where it is, how long, and its
/// `StripedChecksum` when the writer could compute it as it wrote (nil: the worker reads the file once to compute it).
public struct AdoptedFile: Sendable {
    public var path: String
    public var size: Int
    public var checksum: Int64?
    public var createdAt: Int64
    public var expiresAt: Int64?

    public init(path: String, size: Int, checksum: Int64?, createdAt: Int64, expiresAt: Int64? = nil) {
        self.path = path
        self.size = size
        self.checksum = checksum
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}
