
/// A short cache key's bytes held by value, beside the memory tier's slot, so a lookup compares five words where
/// they lie instead of reaching the key's own storage.
///
/// Why: a key over 15 bytes (`key:000000001234` is 16) is a String on the heap. Comparing a stored one with a
/// probe copied it (two atomic retains and releases on a line the hit had not touched yet, which a core cannot
/// overlap with its other misses): at 10,000 keys and 16 pipelined gets, 16-byte keys cost ferryd 1.44 µs of CPU a
/// get and 15-byte ones (kept inline by Swift) 1.11 (BENCHMARKS.md, issue 12). An image holds a namespace and key of
/// up to `capacity` bytes together; anything longer has no image (`none`) and is compared as before.
///
/// The encoding is one-to-one: byte 0 is the namespace's length (0 for the default namespace, however it was
/// named), byte 1 the key's, then the namespace's bytes, the key's, and zeros. So two keys with images are the same
/// key exactly when their images are equal, and a key has an image or not by its length alone.
///
/// ```swift
/// let a = try CacheKey(key: "key:000000001234")
/// a.image == CacheKey(trusted: "default", "key:000000001234").image   // true
/// a.image == CacheKey(trusted: "build", "key:000000001234").image     // false
/// KeyImage.decide(stored: a.image, probe: a.image)                    // true: no need to compare the keys
/// ```
public struct KeyImage: Equatable, Sendable {
    // Five words, not an array: an image is a plain value inside the slot (no storage of its own to reach).
    private var w0: UInt64 = 0, w1: UInt64 = 0, w2: UInt64 = 0, w3: UInt64 = 0, w4: UInt64 = 0

    /// The most namespace-and-key bytes an image holds (40 bytes less the two lengths).
    public static let capacity = 38

    /// No image: the key is too long, or its owner keeps none (a `MemoryLRU` of other keys).
    public static let none: KeyImage = {
        var i = KeyImage()
        i.w0 = .max   // a namespace length of 255 never occurs (at most `capacity`)
        return i
    }()

    public var isNone: Bool { w0 == .max }

    /// The image of a namespace (nil: the default one) and key, or `none` when they are longer than `capacity`.
    public init(namespace: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer) {
        let ns = namespace?.count ?? 0
        // An empty namespace is refused everywhere (`CacheKey.namespaceProblem`); were one made anyway, it must not
        // share the default namespace's image.
        guard ns + key.count <= KeyImage.capacity, namespace.map({ $0.count > 0 }) ?? true else {
            self = .none
            return
        }
        withUnsafeMutableBytes(of: &self) { out in
            out[0] = UInt8(ns)
            out[1] = UInt8(key.count)
            if let namespace, ns > 0 { out.baseAddress!.advanced(by: 2).copyMemory(from: namespace.baseAddress!, byteCount: ns) }
            if key.count > 0 { out.baseAddress!.advanced(by: 2 + ns).copyMemory(from: key.baseAddress!, byteCount: key.count) }
        }
    }

    private init() {}

    /// Whether a stored key and a probe are the same key, as far as their images tell: true or false, or nil when
    /// neither has an image (the caller compares the keys). One image and no other: different lengths, not the same.
    @inline(__always)
    public static func decide(stored: KeyImage, probe: KeyImage) -> Bool? {
        guard stored == probe else { return false }
        return stored.isNone ? nil : true
    }
}

extension CacheKey {
    /// This key's image (`none` when namespace and key are longer than `KeyImage.capacity`); the default namespace
    /// counts as no namespace, as `CacheKeyProbe` counts it.
    public var image: KeyImage {
        CacheKey.withBytes(namespace: namespace, key: key) { KeyImage(namespace: $0, key: $1) }
    }
}
