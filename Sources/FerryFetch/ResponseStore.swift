import FerryBytes
import FerryHTTPCache

/// The shared HTTP cache's records: stored responses (headers, times and body in one value) in a
/// `ResponseStorage`.
///
/// Layout per primary key (`GET <normalised url>`): a response without `Vary` is stored right there; a response
/// with `Vary` leaves a marker there holding the `Vary` value and a random generation, and the variant itself under
/// `<primary key> NUL <generation> NUL <variant key>`, so several variants of one URL live side by side. Deleting or
/// replacing the marker (an invalidation, a response without `Vary`) makes every variant of the old generation
/// unreachable at once; they age out of the store's LRU.
///
/// ```swift
/// let responses = ResponseStore(storage: CacheStoreResponses(store: store))
/// responses.lookup(request) { found in ... }           // found: Found(response, body, storageKey)?
/// responses.store(stored, body: bytes, key: key)
/// ```
public final class ResponseStore {
    private let storage: ResponseStorage

    public init(storage: ResponseStorage) { self.storage = storage }

    struct Found {
        var response: StoredResponse
        /// The body inside the stored record (a slice: not copied out of it).
        var body: ArraySlice<UInt8>
        /// Where it is stored (for updates after a 304).
        var storageKey: String
    }

    /// The stored response for the request's variant, if any.
    func lookup(_ request: CacheRequest, _ done: @escaping (Found?) -> Void) {
        guard let key = request.lookupKey else { return done(nil) }
        let primary = key.description
        get(primary) { [self] record in
            switch record {
            case .response(let response, let body)?:
                done(Found(response: response, body: body, storageKey: primary))
            case .varyMarker(let vary, let generation)?:
                guard let variant = variantKey(forVary: vary, request: request.headers) else { return done(nil) }
                let variantKey = ResponseStore.variantStorageKey(primary, generation, variant)
                get(variantKey) { record in
                    guard case .response(let response, let body)? = record else { return done(nil) }
                    done(Found(response: response, body: body, storageKey: variantKey))
                }
            case nil:
                done(nil)
            }
        }
    }

    /// Stores a response under its primary key (and variant). Best effort: a body over the store's value limit,
    /// or a full disk, leaves the response uncached.
    func store(_ response: StoredResponse, body: [UInt8], key: HTTPCacheKey) {
        let primary = key.description
        let vary = response.headers.combined("vary")
        if let vary, !HTTPSyntax.trimmingOWS(vary).isEmpty {
            // Join the variants already stored under the same Vary; anything else starts a new generation.
            let record = StoredRecord.encode(response, body: body)
            get(primary) { [self] existing in
                var generation = UInt64.random(in: 1...UInt64.max)
                if case .varyMarker(let old, let g)? = existing, varyFieldNames(old) == varyFieldNames(vary) {
                    generation = g
                } else {
                    put(primary, StoredRecord.encodeVaryMarker(vary, generation: generation))
                }
                put(ResponseStore.variantStorageKey(primary, generation, response.varyKey ?? ""), record)
            }
        } else {
            put(primary, StoredRecord.encode(response, body: body))
        }
    }

    /// Replaces a stored response's headers and times (after a 304), keeping its body.
    func update(_ response: StoredResponse, body: ArraySlice<UInt8>, storageKey: String) {
        put(storageKey, StoredRecord.encode(response, body: body))
    }

    /// Removes what is stored for these URLs (an unsafe method succeeded): the primary record, which makes every
    /// variant unreachable.
    func invalidate(urls: [String]) {
        for url in urls {
            guard let key = HTTPCacheKey(lookupFor: "GET", url: url) else { continue }
            storage.delete(key.description)
        }
    }

    static func variantStorageKey(_ primary: String, _ generation: UInt64, _ variant: String) -> String {
        primary + "\u{0}" + String(generation, radix: 16) + "\u{0}" + variant
    }

    private func get(_ key: String, _ done: @escaping (StoredRecord?) -> Void) {
        storage.get(key) { value in done(value.flatMap(StoredRecord.decode)) }
    }

    private func put(_ key: String, _ value: [UInt8]) { storage.put(key, value) }
}

/// The byte format of a stored record: `[u8 kind]` then, for a response, `[u16 status][i64 request time]
/// [i64 response time][str vary key][u32 header count]([str name][str value])*[body]`, for a vary marker
/// `[str vary][u64 generation]`; `str` = `[u32 length][UTF-8]`.
enum StoredRecord {
    case response(StoredResponse, ArraySlice<UInt8>)
    case varyMarker(String, generation: UInt64)

    static func encode(_ r: StoredResponse, body: [UInt8]) -> [UInt8] { encode(r, body: body[...]) }

    static func encode(_ r: StoredResponse, body: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = [1]
        put(UInt64(r.status), 2, &out)
        put(UInt64(bitPattern: r.requestTime), 8, &out)
        put(UInt64(bitPattern: r.responseTime), 8, &out)
        putString(r.varyKey ?? "", &out)
        put(UInt64(r.headers.pairs.count), 4, &out)
        for (name, value) in r.headers.pairs {
            putString(name, &out)
            putString(value, &out)
        }
        // Exactly the record's size: grown by appending, the array would keep up to twice what the memory tier
        // counts for it.
        out.reserveCapacity(out.count + body.count)
        out += body
        return out
    }

    static func encodeVaryMarker(_ vary: String, generation: UInt64) -> [UInt8] {
        var out: [UInt8] = [2]
        putString(vary, &out)
        put(generation, 8, &out)
        return out
    }

    static func decode(_ bytes: [UInt8]) -> StoredRecord? {
        var r = BigEndianReader(bytes, at: 1)
        switch bytes.first {
        case 1:
            guard let status = r.take(2), let requestTime = r.take(8), let responseTime = r.take(8), let varyKey = r.string(),
                  let count = r.take(4), count < 100_000 else { return nil }
            var pairs: [(String, String)] = []
            for _ in 0..<count {
                guard let name = r.string(), let value = r.string() else { return nil }
                pairs.append((name, value))
            }
            let body = r.rest()
            let response = StoredResponse(status: Int(status), headers: HTTPFields(pairs), requestTime: Int64(bitPattern: requestTime),
                                          responseTime: Int64(bitPattern: responseTime), varyKey: varyKey.isEmpty ? nil : varyKey,
                                          bodySize: body.count)
            return .response(response, body)
        case 2:
            guard let vary = r.string(), let generation = r.take(8) else { return nil }
            return .varyMarker(vary, generation: generation)
        default:
            return nil
        }
    }

    private static func put(_ v: UInt64, _ n: Int, _ out: inout [UInt8]) { BigEndian.append(v, bytes: n, to: &out) }

    private static func putString(_ s: String, _ out: inout [UInt8]) {
        put(UInt64(s.utf8.count), 4, &out)
        out.append(contentsOf: s.utf8)
    }
}
