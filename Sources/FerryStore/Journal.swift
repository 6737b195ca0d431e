#if canImport(Glibc)
import Glibc
#endif
import FerryBytes
import FerryCache

/// One journaled set: its sequence number orders it against everything else the store did.
struct JournalRecord: Sendable {
    let seq: UInt64
    let key: CacheKey
    let entry: CacheEntry
    /// Where the memory tier put the entry when the set was made (`MemoryLRU.lastSet`): with it `JournalKeeping.keep`
    /// finds the entry again without a lookup (loop thread only; never written).
    var memorySlot = SlotHint.none

    /// A record of nothing, to swap a record out of an array with (`DiskTier.writeBufferedSets`): its Strings are
    /// empty and its value the shared empty array, so copies of it count no references.
    static let empty = JournalRecord(seq: 0, key: CacheKey(trusted: "", ""), entry: CacheEntry(value: [], createdAt: 0, expiresAt: nil))

    /// What the record adds to the disk tier's accounting once it is in the index.
    var cost: Int { StoreEngine.cost(key, size: entry.value.count) }
}

/// The write-ahead journal of small sets, as files `journal.<generation>` in the cache directory.
///
/// The loop thread appends each iteration's sets in one `write` and acknowledges them then: in the kernel, so they
/// survive the process being killed (as Redis's AOF does before its fsync). The disk worker applies them to the
/// SQLite index in large batches and records the highest sequence number applied (`applied_seq`) in the same
/// transaction; at start-up only records above it are replayed, so a record the index already holds — or that a
/// later delete or transactional set superseded — is never applied twice. The loop starts a new generation at each
/// apply a sweep asks for (`StoreConfig.applyIntervalMs`) and every 32 MiB; the worker deletes a sealed file once
/// everything in it is applied.
///
/// Record: `[u32 payload length][u64 checksum of the payload][payload]`, payload = seq, namespace, key, times, value.
/// The checksum is `StripedChecksum` (four words at a time). Journals written before it used `Checksum64` (a word
/// at a time: a fifth of the loop's time for 64 KiB sets) and before that FNV-1a (a byte at a time: a third), which
/// the reader still accepts, so an upgrade replays them. A record cut short or matching no checksum ends the file's
/// replay: it was never acknowledged. So does one whose sequence number is not above the one before it: the old
/// records of a retired file written over again (`JournalSpares`).
enum Journal {
    static let prefix = "journal."

    /// Sequence and generation numbers a daemon can reach (2^62: a billion sets a second for a century), so that
    /// one read from a damaged file can be refused before `+ 1` traps on it.
    static func isValidNumber(_ n: UInt64) -> Bool { n >= 1 && n < 1 << 62 }

    static func path(_ directory: String, generation: UInt64) -> String { "\(directory)/\(prefix)\(generation)" }

    /// Has a journal file's written records reach the disk (`fdatasync`), by path, from the worker thread (the
    /// loop's descriptor stays the loop's), and its directory too: a spare taken as a new generation is renamed
    /// and written over at the same size, and only the directory's sync makes that name survive a power loss. A
    /// file that is gone (nothing was written to that generation) has nothing to sync. False when a sync failed
    /// (the caller applies to the index instead, whose checkpoint syncs).
    @discardableResult
    static func sync(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return errno == ENOENT }
        let synced = fdatasync(fd) == 0
        close(fd)
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        let dirFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirFD >= 0 else { return false }
        defer { close(dirFD) }
        return synced && fsync(dirFD) == 0
    }

    /// The journal files of a directory, oldest generation first.
    static func files(in directory: String) -> [(generation: UInt64, path: String)] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var out: [(generation: UInt64, path: String)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard name.hasPrefix(prefix), let generation = UInt64(name.dropFirst(prefix.count)) else { continue }
            out.append((generation, path(directory, generation: generation)))
        }
        return out.sorted { $0.generation < $1.generation }
    }

    /// Every complete record of a file, in order (an unreadable file has none).
    static func read(_ path: String) -> [JournalRecord] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            data += chunk[..<n]
        }
        var records: [JournalRecord] = []
        var reader = Reader(bytes: data)
        // A file written over (`JournalSpares`) ends where a record's sequence number stops growing: past the new
        // records lie the old ones, whole and with good checksums.
        while let record = reader.nextRecord(), records.last.map({ record.seq > $0.seq }) ?? true { records.append(record) }
        return records
    }

    /// Appends one record to `out`: its fields before the value written by a `ByteCursor` into room of their exact
    /// size and appended in one piece, then the value. This runs on the loop thread for every small set, where
    /// eleven appends (each checking the array's uniqueness and capacity) cost ~1,100 instructions (callgrind).
    static func encode(seq: UInt64, _ key: CacheKey, _ entry: CacheEntry, into out: inout [UInt8]) {
        let start = out.count
        let namespaceBytes = key.namespace.utf8.count, keyBytes = key.key.utf8.count
        let headBytes = 12 + 8 + 2 + namespaceBytes + 4 + keyBytes + 8 + 1 + 8 + 4
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: headBytes) { room in
            var head = ByteCursor(room)
            _ = head.reserve(12)  // length and checksum, filled in below
            head.bigEndian(seq, bytes: 8)
            head.bigEndian(UInt64(namespaceBytes), bytes: 2)
            head.utf8(key.namespace)
            head.bigEndian(UInt64(keyBytes), bytes: 4)
            head.utf8(key.key)
            head.bigEndian(UInt64(bitPattern: entry.createdAt), bytes: 8)
            head.byte(entry.expiresAt == nil ? 0 : 1)
            head.bigEndian(UInt64(bitPattern: entry.expiresAt ?? 0), bytes: 8)
            head.bigEndian(UInt64(entry.value.count), bytes: 4)
            precondition(!head.overflowed && head.count == headBytes, "Journal.encode: the head's size")
            out.append(contentsOf: head.written)
        }
        out.append(contentsOf: entry.value)
        let length = UInt64(out.count - start - 12)
        let sum = out.withUnsafeBytes { checksum(UnsafeRawBufferPointer(rebasing: $0[(start + 12)...])) }
        BigEndian.store(length, bytes: 4, into: &out, at: start)
        BigEndian.store(sum, bytes: 8, into: &out, at: start + 4)
    }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 { StripedChecksum.of(bytes) }

    /// The checksums of journals written before `checksum` (read, never written).
    static func checksum64(_ bytes: UnsafeRawBufferPointer) -> UInt64 { Checksum64.of(bytes) }

    static func fnv1a(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        return h
    }

    /// Reads records from a byte array; nil at the end or at the first damaged record.
    struct Reader {
        private var fields: BigEndianReader

        init(bytes: [UInt8]) { fields = BigEndianReader(bytes) }

        var at: Int { fields.at }

        mutating func take(_ n: Int) -> UInt64? { fields.take(n) }

        mutating func slice(_ n: Int) -> [UInt8]? { fields.slice(n).map(Array.init) }

        mutating func nextRecord() -> JournalRecord? {
            guard let length = take(4), let sum = take(8), let payload = slice(Int(length)),
                  payload.withUnsafeBytes({ Journal.checksum($0) == sum || Journal.checksum64($0) == sum || Journal.fnv1a($0) == sum }) else { return nil }
            var p = Reader(bytes: payload)
            guard let seq = p.take(8), let nsLen = p.take(2), let ns = p.slice(Int(nsLen)), let kLen = p.take(4),
                  let k = p.slice(Int(kLen)), let created = p.take(8), let hasExpiry = p.take(1), let expires = p.take(8),
                  let vLen = p.take(4), let value = p.slice(Int(vLen)), p.at == payload.count else { return nil }
            let key = CacheKey(trusted: String(decoding: ns, as: UTF8.self), String(decoding: k, as: UTF8.self))
            return JournalRecord(seq: seq, key: key, entry: CacheEntry(value: value, createdAt: Int64(bitPattern: created),
                                                                        expiresAt: hasExpiry == 1 ? Int64(bitPattern: expires) : nil))
        }
    }
}
