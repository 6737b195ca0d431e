#if canImport(Glibc)
import Glibc
#endif
import FerryCache

/// The write-ahead journal of small sets: a set is acknowledged once its record is in this file (one `write` per
/// batch: in the kernel, so it survives the process being killed, like a committed SQLite transaction with
/// `synchronous=NORMAL`), and applied to the SQLite index later, in large batches. At start-up the records are
/// replayed into the index and the file is emptied.
///
/// Record: `[u32 payload length][u64 FNV-1a of the payload][payload]`, payload = namespace, key, times, value. A
/// record cut short or not matching its checksum ends the replay: it was never acknowledged.
final class Journal {
    let path: String
    private let fd: Int32
    private(set) var size: Int

    init(path: String) throws(StoreError) {
        self.path = path
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BlobFiles.failure("open \(path)") }
        size = Int(lseek(fd, 0, SEEK_END))
    }

    deinit { close(fd) }

    /// Appends the records in one write; on failure the file is cut back, so no torn record stays in front of
    /// later ones.
    func append(_ records: [(CacheKey, CacheEntry)]) throws(StoreError) {
        var buffer: [UInt8] = []
        for (key, entry) in records { Journal.encode(key, entry, into: &buffer) }
        var off = 0
        while off < buffer.count {
            let n = buffer.withUnsafeBytes { pwrite(fd, $0.baseAddress! + off, buffer.count - off, off_t(size + off)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let error = BlobFiles.failure("write \(path)")
                _ = ftruncate(fd, off_t(size))
                throw error
            }
            off += n
        }
        size += buffer.count
    }

    /// Every complete record, in order.
    func readAll() -> [(CacheKey, CacheEntry)] {
        guard size > 0 else { return [] }
        var data = [UInt8](repeating: 0, count: size)
        var got = 0
        while got < size {
            let n = data.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, size - got, off_t(got)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            got += n
        }
        var records: [(CacheKey, CacheEntry)] = []
        var reader = Reader(bytes: Array(data[..<got]))
        while let record = reader.nextRecord() { records.append(record) }
        return records
    }

    /// Empties the file once its records are in the index.
    func truncate() {
        if ftruncate(fd, 0) == 0 { size = 0 }
    }

    static func encode(_ key: CacheKey, _ entry: CacheEntry, into out: inout [UInt8]) {
        var payload: [UInt8] = []
        let ns = Array(key.namespace.utf8), k = Array(key.key.utf8)
        put(UInt64(ns.count), bytes: 2, &payload)
        payload += ns
        put(UInt64(k.count), bytes: 4, &payload)
        payload += k
        put(UInt64(bitPattern: entry.createdAt), bytes: 8, &payload)
        payload.append(entry.expiresAt == nil ? 0 : 1)
        put(UInt64(bitPattern: entry.expiresAt ?? 0), bytes: 8, &payload)
        put(UInt64(entry.value.count), bytes: 4, &payload)
        payload += entry.value
        put(UInt64(payload.count), bytes: 4, &out)
        put(fnv1a(payload), bytes: 8, &out)
        out += payload
    }

    static func put(_ v: UInt64, bytes: Int, _ out: inout [UInt8]) {
        for i in (0..<bytes).reversed() { out.append(UInt8(truncatingIfNeeded: v >> UInt64(8 * i))) }
    }

    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        return h
    }

    /// Reads records from a byte array; nil at the end or at the first damaged record.
    struct Reader {
        let bytes: [UInt8]
        var at = 0

        mutating func take(_ n: Int) -> UInt64? {
            guard n >= 0, at + n <= bytes.count else { return nil }
            var v: UInt64 = 0
            for i in 0..<n { v = v << 8 | UInt64(bytes[at + i]) }
            at += n
            return v
        }

        mutating func slice(_ n: Int) -> [UInt8]? {
            guard n >= 0, at + n <= bytes.count else { return nil }
            defer { at += n }
            return Array(bytes[at..<(at + n)])
        }

        mutating func nextRecord() -> (CacheKey, CacheEntry)? {
            guard let length = take(4), let sum = take(8), let payload = slice(Int(length)),
                  Journal.fnv1a(payload) == sum else { return nil }
            var p = Reader(bytes: payload)
            guard let nsLen = p.take(2), let ns = p.slice(Int(nsLen)), let kLen = p.take(4), let k = p.slice(Int(kLen)),
                  let created = p.take(8), let hasExpiry = p.take(1), let expires = p.take(8),
                  let vLen = p.take(4), let value = p.slice(Int(vLen)), p.at == payload.count else { return nil }
            let key = CacheKey(trusted: String(decoding: ns, as: UTF8.self), String(decoding: k, as: UTF8.self))
            return (key, CacheEntry(value: value, createdAt: Int64(bitPattern: created),
                                    expiresAt: hasExpiry == 1 ? Int64(bitPattern: expires) : nil))
        }
    }
}
