import FerryBytes
import FerryHTTPCache

/// The byte format of a stored record: `[u8 kind]` then, for a response, `[u16 status][i64 request time]
/// [i64 response time][str vary key][u32 header count]([str name][str value])*` and either the body itself (kind 1)
/// or, for a body stored apart (kind 3, a large body spooled to a file), `[str body key][u64 size]`; for a vary
/// marker (kind 2) `[str vary][u64 generation]`. `str` = `[u32 length][UTF-8]`.
///
/// ```swift
/// let record = StoredRecord.encode(response, body: bytes)
/// StoredRecord.decode(record)   // .response(response, .inline(bytes))
/// ```
enum StoredRecord {
    enum Body: Equatable {
        case inline(ArraySlice<UInt8>)
        /// Under another key of the same storage (`ResponseStorage.getBody`).
        case apart(key: String, size: Int)
    }

    case response(StoredResponse, Body)
    case varyMarker(String, generation: UInt64)

    static func encode(_ r: StoredResponse, body: [UInt8]) -> [UInt8] { encode(r, body: body[...]) }

    static func encode(_ r: StoredResponse, body: ArraySlice<UInt8>) -> [UInt8] {
        var out = head(r, kind: 1)
        // Exactly the record's size: grown by appending, the array would keep up to twice what the memory tier
        // counts for it.
        out.reserveCapacity(out.count + body.count)
        out += body
        return out
    }

    static func encode(_ r: StoredResponse, bodyKey: String, size: Int) -> [UInt8] {
        var out = head(r, kind: 3)
        putString(bodyKey, &out)
        put(UInt64(size), 8, &out)
        return out
    }

    static func encode(_ r: StoredResponse, body: Body) -> [UInt8] {
        switch body {
        case .inline(let bytes): return encode(r, body: bytes)
        case .apart(let key, let size): return encode(r, bodyKey: key, size: size)
        }
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
        case 1, 3:
            guard let status = r.take(2), let requestTime = r.take(8), let responseTime = r.take(8), let varyKey = r.string(),
                  let count = r.take(4), count < 100_000 else { return nil }
            var pairs: [(String, String)] = []
            for _ in 0..<count {
                guard let name = r.string(), let value = r.string() else { return nil }
                pairs.append((name, value))
            }
            let body: Body
            if bytes.first == 1 {
                body = .inline(r.rest())
            } else {
                guard let key = r.string(), let size = r.take(8), size < UInt64(Int.max), r.rest().isEmpty else { return nil }
                body = .apart(key: key, size: Int(size))
            }
            let size: Int
            switch body {
            case .inline(let b): size = b.count
            case .apart(_, let n): size = n
            }
            let response = StoredResponse(status: Int(status), headers: HTTPFields(pairs), requestTime: Int64(bitPattern: requestTime),
                                          responseTime: Int64(bitPattern: responseTime), varyKey: varyKey.isEmpty ? nil : varyKey,
                                          bodySize: size)
            return .response(response, body)
        case 2:
            guard let vary = r.string(), let generation = r.take(8) else { return nil }
            return .varyMarker(vary, generation: generation)
        default:
            return nil
        }
    }

    private static func head(_ r: StoredResponse, kind: UInt8) -> [UInt8] {
        var out: [UInt8] = [kind]
        put(UInt64(r.status), 2, &out)
        put(UInt64(bitPattern: r.requestTime), 8, &out)
        put(UInt64(bitPattern: r.responseTime), 8, &out)
        putString(r.varyKey ?? "", &out)
        put(UInt64(r.headers.pairs.count), 4, &out)
        for (name, value) in r.headers.pairs {
            putString(name, &out)
            putString(value, &out)
        }
        return out
    }

    private static func put(_ v: UInt64, _ n: Int, _ out: inout [UInt8]) { BigEndian.append(v, bytes: n, to: &out) }

    private static func putString(_ s: String, _ out: inout [UInt8]) {
        put(UInt64(s.utf8.count), 4, &out)
        out.append(contentsOf: s.utf8)
    }
}
