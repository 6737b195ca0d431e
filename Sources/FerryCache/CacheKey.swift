import FerryBytes

/// A cache entry's identity: a namespace and a key, both compared byte for byte.
///
/// It carries its `digest`, a hash of its bytes made once, when it is made: a set hashed its key three or four times
/// on its way (the memory tier's index, its dirty mark, the mutation tracker's dictionary), each a SipHash over the
/// key's bytes, an eighth of a `cache.set`'s instructions (callgrind, issue 12). The memory tier indexes keys by it,
/// and `hash(into:)` hashes it instead of the bytes.
///
/// ```swift
/// let k = try CacheKey(namespace: "build", key: "artefact/42")
/// ```
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
    public let namespace: String
    public let key: String
    /// The hash of the key's bytes (`CacheKey.digest(namespace:key:)`), the same for equal keys in one process;
    /// `CacheKeyProbe.digest` is the same for the same bytes.
    public let digest: Int

    public static let maxKeyBytes = 1024
    public static let maxNamespaceBytes = 128
    public static let defaultNamespace = "default"
    /// `defaultNamespace`'s bytes, in the program's constant data (a probe compares with them).
    static var defaultNamespaceBytes: UnsafeRawBufferPointer {
        let name: StaticString = "default"
        return UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
    }

    /// Why a key or namespace is refused, as a message for `invalid_argument`.
    public struct Invalid: Error, Sendable, Equatable {
        public let message: String
    }

    public init(namespace: String = CacheKey.defaultNamespace, key: String) throws(Invalid) {
        if let problem = CacheKey.keyProblem(key) { throw Invalid(message: problem) }
        if let problem = CacheKey.namespaceProblem(namespace) { throw Invalid(message: problem) }
        self.namespace = namespace
        self.key = key
        digest = CacheKey.digest(namespace: namespace, key: key)
    }

    /// For rows read back from the store, which were validated when written.
    public init(trusted namespace: String, _ key: String) {
        self.namespace = namespace
        self.key = key
        digest = CacheKey.digest(namespace: namespace, key: key)
    }

    /// A key whose digest was made from its bytes already (`CacheKeyProbe.cacheKey`: a set's key, hashed where the
    /// request lies; hashing the Strings again was ~400 instructions a set).
    init(trusted namespace: String, _ key: String, digest: Int) {
        self.namespace = namespace
        self.key = key
        self.digest = digest
    }

    /// The digest of these parts: their bytes, as `digest(namespace:key:)` over bytes hashes them (the one rule
    /// the probe of a request's bytes uses too, so both give the same digest for the same key).
    static func digest(namespace: String, key: String) -> Int {
        withBytes(namespace: namespace, key: key) { digest(namespace: $0, key: $1) }
    }

    /// `body` of the parts' bytes as a probe holds them: the namespace nil when it is the default one. Why here:
    /// `digest` and `image` both start so, and a native String (every key's) hands out its bytes where they lie,
    /// where `withUTF8` on a copy in a `var` retained and released it (~250 instructions an image, callgrind).
    @inline(__always)
    static func withBytes<R>(namespace: String, key: String,
                             _ body: (UnsafeRawBufferPointer?, UnsafeRawBufferPointer) -> R) -> R {
        func parts(_ ns: UnsafeBufferPointer<UInt8>, _ k: UnsafeBufferPointer<UInt8>) -> R {
            let ns = UnsafeRawBufferPointer(ns)
            return body(isDefault(ns) ? nil : ns, UnsafeRawBufferPointer(k))
        }
        let fast = key.utf8.withContiguousStorageIfAvailable { k in
            namespace.utf8.withContiguousStorageIfAvailable { ns in parts(ns, k) }
        }
        if let fast, let fast { return fast }
        var key = key, namespace = namespace   // bridged or shared Strings: made contiguous
        return key.withUTF8 { k in namespace.withUTF8 { ns in parts(ns, k) } }
    }

    /// Whether a namespace's bytes are the default namespace's (a probe's test too).
    @inline(__always)
    static func isDefault(_ ns: UnsafeRawBufferPointer) -> Bool {
        CacheKeyProbe.same(ns, defaultNamespaceBytes)
    }

    /// The bytes are hashed, as they are compared (a String's own hash works through its Unicode form: several
    /// times the cost). The default namespace (`nil`), the common one, is not hashed: keys compare both parts, so
    /// this changes which keys share a bucket, never which are equal, and spares one of two SipHash rounds. Each
    /// part is followed by its length (two keys split another way differ), through a seeded `Hasher` (so keys a
    /// client chooses cannot be made to collide).
    static func digest(namespace: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer) -> Int {
        var h = Hasher()
        if let namespace {
            h.combine(bytes: namespace)
            h.combine(namespace.count)
        }
        h.combine(bytes: key)
        h.combine(key.count)
        return h.finalize()
    }

    public static func keyProblem(_ key: String) -> String? {
        let n = key.utf8.count
        if n == 0 { return "\"key\" must not be empty" }
        if n > maxKeyBytes { return "\"key\" is \(n) bytes; at most \(maxKeyBytes) are allowed" }
        return nil
    }

    public static func namespaceProblem(_ ns: String) -> String? {
        var ns = ns
        return ns.withUTF8 { namespaceProblem(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// `namespaceProblem` of a namespace's bytes (a request's, where they lie: `CacheKeyProbe`).
    public static func namespaceProblem(bytes ns: UnsafeRawBufferPointer) -> String? {
        let n = ns.count
        if n == 0 || n > maxNamespaceBytes { return "\"namespace\" must be 1 to \(maxNamespaceBytes) bytes" }
        for b in ns {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                continue
            default:
                return "\"namespace\" may hold only A-Z a-z 0-9 . _ -"
            }
        }
        return nil
    }

    // Byte-wise identity: Swift's String == would merge canonically equivalent keys. Inlined: the memory tier
    // compares a probe with the stored key where it lies, without copying (retaining) it for a call.
    @inlinable @inline(__always)
    public static func == (a: CacheKey, b: CacheKey) -> Bool {
        UTF8Bytes.equal(a.key, b.key) && UTF8Bytes.equal(a.namespace, b.namespace)
    }

    /// The digest alone: equal keys have equal bytes, so equal digests.
    public func hash(into h: inout Hasher) { h.combine(digest) }

    /// What an entry costs in the memory budget besides its value: its key and a fixed bookkeeping overhead.
    public var overheadBytes: Int { namespace.utf8.count + key.utf8.count + 96 }

    public var description: String { "\(namespace)/\(key)" }
}
