#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FerryCache

/// Puts keys in the index's order (`StoreEngine.indexOrder`: namespace, then key, byte-wise, as SQLite keeps the
/// rows) without touching a `String` in the comparisons.
///
/// Why: the disk worker applies each batch of journaled sets in that order, so that consecutive rows land in the same
/// B-tree pages. Sorting the keys themselves compared two pairs of Strings per step and moved keys that retain their
/// storage: under 50 connections of sets the sort was 17 % of the daemon's instructions, more than SQLite's own
/// work (callgrind, issue 12). Here each key is read once into a record of plain words (the first 8 bytes of its
/// namespace and 16 of its key, big-endian and zero-padded, and where its bytes lie in one shared buffer); records
/// are compared by those words, and by `memcmp` over the buffer only where the words cannot tell.
///
/// Zero padding keeps the order exact: where two padded words first differ, either both bytes are real, or the
/// shorter side has run out there (its bytes so far equal the other's, so it is a prefix and comes first, as its
/// padding byte 0 says). Equal words prove nothing on their own (`"a"` and `"a\0"`), so equal words fall through to
/// the bytes.
///
/// ```swift
/// let keys = [try CacheKey(namespace: "default", key: "b"), try CacheKey(namespace: "default", key: "a")]
/// IndexOrder.positions(of: keys)   // [1, 0]: "a" first
/// ```
enum IndexOrder {
    /// One key's words and where its bytes lie in the shared buffer.
    struct Record {
        var namespaceWord: UInt64
        var keyWord0: UInt64
        var keyWord1: UInt64
        // Plain `Int`s: a replay sorts every key left in the journals, and 32-bit offsets would trap past 2 GiB.
        var namespaceStart: Int
        var namespaceCount: Int
        var keyStart: Int
        var keyCount: Int
        /// The key's position in the array given.
        var position: Int
    }

    /// The positions of `keys` in the index's order: `keys[positions[0]]` comes first. Keys are distinct.
    static func positions(of keys: [CacheKey]) -> [Int] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(keys.count * 32)
        var records: [Record] = []
        records.reserveCapacity(keys.count)
        for (i, key) in keys.enumerated() {
            let namespaceStart = bytes.count
            bytes.append(contentsOf: key.namespace.utf8)
            let keyStart = bytes.count
            bytes.append(contentsOf: key.key.utf8)
            records.append(Record(namespaceWord: 0, keyWord0: 0, keyWord1: 0,
                                  namespaceStart: namespaceStart, namespaceCount: keyStart - namespaceStart,
                                  keyStart: keyStart, keyCount: bytes.count - keyStart, position: i))
        }
        bytes.withUnsafeBytes { all in
            for i in records.indices {
                let r = records[i]
                records[i].namespaceWord = word(all, start: r.namespaceStart, count: r.namespaceCount, skip: 0)
                records[i].keyWord0 = word(all, start: r.keyStart, count: r.keyCount, skip: 0)
                records[i].keyWord1 = word(all, start: r.keyStart, count: r.keyCount, skip: 8)
            }
            let base = all.baseAddress
            records.sort { precedes($0, $1, base) }
        }
        return records.map(\.position)
    }

    /// Whether `a` comes before `b`; `base` is the shared buffer.
    @inline(__always)
    static func precedes(_ a: Record, _ b: Record, _ base: UnsafeRawPointer?) -> Bool {
        if a.namespaceWord != b.namespaceWord { return a.namespaceWord < b.namespaceWord }
        // Equal words and equal lengths within the word: the same namespace, without reading the bytes.
        let sameNamespace = a.namespaceCount == b.namespaceCount && a.namespaceCount <= 8
        if !sameNamespace {
            let c = compare(base, a.namespaceStart, a.namespaceCount, b.namespaceStart, b.namespaceCount)
            if c != 0 { return c < 0 }
        }
        if a.keyWord0 != b.keyWord0 { return a.keyWord0 < b.keyWord0 }
        if a.keyWord1 != b.keyWord1 { return a.keyWord1 < b.keyWord1 }
        return compare(base, a.keyStart, a.keyCount, b.keyStart, b.keyCount) < 0
    }

    /// Byte-wise comparison of two runs of the shared buffer (a prefix comes first).
    static func compare(_ base: UnsafeRawPointer?, _ aStart: Int, _ aCount: Int, _ bStart: Int, _ bCount: Int) -> Int {
        let n = min(aCount, bCount)
        if n > 0, let base {
            let c = memcmp(base + aStart, base + bStart, n)
            if c != 0 { return Int(c) }
        }
        return aCount - bCount
    }

    /// Bytes `skip ..< skip + 8` of a run as a big-endian word, zero past the run's end.
    static func word(_ all: UnsafeRawBufferPointer, start: Int, count: Int, skip: Int) -> UInt64 {
        var w: UInt64 = 0
        for i in 0..<8 {
            let at = skip + i
            w = w << 8 | (at < count ? UInt64(all[start + at]) : 0)
        }
        return w
    }
}
