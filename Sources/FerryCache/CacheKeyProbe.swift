#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A cache key read where it lies — a request's bytes — for looking a value up without making the key's Strings.
/// Why: a `CacheKey` of a 16-byte key is a heap allocation (Swift keeps up to 15 bytes inline) and a dozen
/// retains and releases as it is passed down to the memory tier; on a memory hit that was a sixth of the
/// daemon's instructions (callgrind, issue 12). The probe hashes as the key would (`digest` equals
/// `CacheKey.digest` for the same bytes) and compares bytes with a stored key where it lies (`matches`).
///
/// Valid only while the bytes are (the fast path's: the request's frame, during its `answerHot`).
///
/// ```swift
/// let bytes = Array("user:1".utf8)
/// bytes.withUnsafeBytes { key in
///     let probe = CacheKeyProbe(namespace: nil, key: key)!     // nil: refused as CacheKey(...) refuses it
///     probe.digest == CacheKey(trusted: "default", "user:1").digest   // true
///     lru.get(hash: probe.digest, image: probe.image, where: probe.matches)   // an LRU made with hashOf: { $0.digest }
/// }
/// ```
public struct CacheKeyProbe {
    /// Nil for the default namespace (named or not).
    public let namespace: UnsafeRawBufferPointer?
    public let key: UnsafeRawBufferPointer

    /// A probe of a key `CacheKey(namespace:key:)` would accept, or nil (the caller's general path answers with
    /// the error). `namespace` nil: the default one.
    public init?(namespace: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer) {
        guard key.count > 0, key.count <= CacheKey.maxKeyBytes, Self.isUTF8(key) else { return nil }
        if let namespace {
            guard CacheKey.namespaceProblem(bytes: namespace) == nil else { return nil }
            self.namespace = CacheKey.isDefault(namespace) ? nil : namespace
        } else {
            self.namespace = nil
        }
        self.key = key
        digest = CacheKey.digest(namespace: self.namespace, key: key)
    }

    /// A probe of bytes a probe was made of before, with that probe's digest (`ReadBatch`: a request read ahead,
    /// handled later): not checked or hashed again. The default namespace, named, is still counted as none.
    public init(accepted namespace: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer, digest: Int) {
        self.namespace = namespace.flatMap { CacheKey.isDefault($0) ? nil : $0 }
        self.key = key
        self.digest = digest
    }

    /// The same as `CacheKey.digest` for the same key: one function hashes both (`CacheKey.digest(namespace:key:)`).
    public let digest: Int

    /// The key's image, as `CacheKey.image` makes it for the same key.
    public var image: KeyImage { KeyImage(namespace: namespace, key: key) }

    /// Whether `stored` is this key, byte for byte (as `CacheKey.==`).
    public func matches(_ stored: borrowing CacheKey) -> Bool {
        Self.equal(stored.key, key) && Self.equal(stored.namespace, namespace ?? CacheKey.defaultNamespaceBytes)
    }

    /// The key as a `CacheKey` (for a path that needs one: a miss, a store).
    public var cacheKey: CacheKey {
        CacheKey(trusted: namespace.map { String(decoding: $0, as: UTF8.self) } ?? CacheKey.defaultNamespace,
                 String(decoding: key, as: UTF8.self), digest: digest)
    }

    static func equal(_ s: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard s.utf8.count == bytes.count else { return false }
        let fast = s.utf8.withContiguousStorageIfAvailable { stored -> Bool in
            stored.count == 0 || same(UnsafeRawBufferPointer(stored), bytes)
        }
        return fast ?? s.utf8.elementsEqual(bytes)
    }

    static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
        return memcmp(pa, pb, a.count) == 0
    }

    /// A String made of these bytes keeps them as they are (invalid UTF-8 would be repaired, and then it would
    /// not be the same key).
    static func isUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = bytes.count
        // ASCII eight bytes at a time (the usual key), then any UTF-8 through the standard library's check.
        while n - i >= 8 && bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 { i += 8 }
        while i < n && bytes[i] < 0x80 { i += 1 }
        if i == n { return true }
        return String(validating: UnsafeRawBufferPointer(rebasing: bytes[i...]).assumingMemoryBound(to: UInt8.self), as: UTF8.self) != nil
    }
}
