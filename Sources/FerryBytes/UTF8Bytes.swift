#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte-wise equality of two strings' UTF-8, eight bytes at a time: cache keys and JSON member names compare by
/// their bytes (RFC 8259; "é" and "e\u{301}" are different keys), and this runs on every key comparison of the hot
/// path, where the generic `utf8.elementsEqual` walks the views one index at a time.
///
/// ```swift
/// UTF8Bytes.equal("é", "e\u{301}")   // false, though Swift's == says true
/// ```
public enum UTF8Bytes {
    @inlinable @inline(__always)
    public static func equal(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        // Borrowing the storage (no copy of the String, so no retain); non-contiguous strings take the slow path.
        let fast = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y -> Bool in
                equal(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y))
            }
        }
        return (fast ?? nil) ?? a.utf8.elementsEqual(b.utf8)
    }

    /// Two byte ranges compared eight bytes at a time (a JSON envelope's known prefix, a member name in place).
    ///
    /// ```swift
    /// let a = Array(#"{"id":"#.utf8), b = Array(#"{"id":7"#.utf8)
    /// a.withUnsafeBytes { x in b.withUnsafeBytes { y in UTF8Bytes.equal(x, UnsafeRawBufferPointer(rebasing: y[..<6])) } }   // true
    /// ```
    @inlinable @inline(__always)
    public static func equal(_ x: UnsafeRawBufferPointer, _ y: UnsafeRawBufferPointer) -> Bool {
        let n = x.count
        guard n == y.count else { return false }
        guard n > 0, let rx = x.baseAddress, let ry = y.baseAddress else { return true }
        var i = 0
        while i + 8 <= n {
            if rx.loadUnaligned(fromByteOffset: i, as: UInt64.self) != ry.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
                return false
            }
            i += 8
        }
        while i < n {
            if x[i] != y[i] { return false }
            i += 1
        }
        return true
    }

    /// The strings' UTF-8 compared byte-wise, as `memcmp` and then the lengths (SQLite's order for TEXT and BLOB
    /// keys): negative when `a` comes first, 0 when equal, positive when `b` does. Why not
    /// `a.utf8.lexicographicallyPrecedes(b.utf8)`: it walks both views an index at a time, and sorting the keys of
    /// one journal apply with it was a twelfth of the daemon's instructions under a flood of sets (callgrind).
    ///
    /// ```swift
    /// UTF8Bytes.compare("key:2", "key:10") > 0   // true: '2' > '1'
    /// UTF8Bytes.compare("ab", "abc") < 0          // true: a prefix comes first
    /// ```
    @inlinable
    public static func compare(_ a: String, _ b: String) -> Int {
        let fast = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y -> Int in
                let n = min(x.count, y.count)
                if n > 0, let px = x.baseAddress, let py = y.baseAddress {
                    let c = memcmp(px, py, n)
                    if c != 0 { return Int(c) }
                }
                return x.count - y.count
            }
        }
        if let fast = fast ?? nil { return fast }
        if a.utf8.elementsEqual(b.utf8) { return 0 }
        return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
    }
}
