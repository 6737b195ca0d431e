#if canImport(Glibc)
import Glibc
#endif
import FerryProtocol

/// Which cache operation a cache mode sends.
enum CacheOp: String {
    case set = "cache.set"
    case get = "cache.get"
}

/// The `cache.set` / `cache.get` request frames of the cache modes, written by hand into a reused buffer through
/// `FrameEncoder` (as `PingFrames` does for `ping`), and the checks applied to every reply.
///
/// Keys follow redis-benchmark's `key:__rand_int__` with `-r N`: `key:` and a 12-digit, zero-padded number drawn
/// uniformly from `0 ..< N`, so both servers see the same key strings, the same key space and the same value size.
/// Values are `valueBytes` bytes of `x`, as redis-benchmark's `-d` fills them; with `--distinct`, every set's first
/// eight bytes are its connection's `stamp` plus its request id, so no two sets carry the same bytes (a store that
/// shares equal values, as ferryd's blob files do, then writes every one).
struct CacheFrames {
    let op: CacheOp
    let value: [UInt8]
    /// Set per connection with `--distinct` (connection number << 40); nil: every value the same bytes.
    var stamp: UInt64?

    init(op: CacheOp, valueBytes: Int) {
        self.op = op
        value = [UInt8](repeating: UInt8(ascii: "x"), count: valueBytes)
    }

    /// `{"id":N,"op":"cache.set","args":{"key":"key:000000001234"}}` with the value as body, or the same `cache.get`
    /// without a body. The bytes are what `JSONWriter` would produce for the same envelope.
    @inline(__always)
    func append(id: UInt64, key: Int, to out: inout [UInt8]) {
        let write: (inout [UInt8]) -> Void = { json in
            JSONWriter.appendASCII(#"{"id":"#, to: &json)
            JSONWriter.writeInt(Int64(id), to: &json)
            switch op {
            case .set: JSONWriter.appendASCII(#","op":"cache.set","args":{"key":"key:"#, to: &json)
            case .get: JSONWriter.appendASCII(#","op":"cache.get","args":{"key":"key:"#, to: &json)
            }
            CacheFrames.appendDigits(key, width: 12, to: &json)
            JSONWriter.appendASCII(#""}}"#, to: &json)
        }
        if op == .set {
            value.withUnsafeBytes { FrameEncoder.append(to: &out, body: $0, writeJSON: write) }
            if let stamp { CacheFrames.stamp(stamp + id, bodyEndingAt: out.count, valueBytes: value.count, in: &out) }
        } else {
            FrameEncoder.append(to: &out, writeJSON: write)
        }
    }

    /// Writes `n` over the first (up to) eight bytes of the value that ends at `end` in `out`.
    static func stamp(_ n: UInt64, bodyEndingAt end: Int, valueBytes: Int, in out: inout [UInt8]) {
        for i in 0..<min(8, valueBytes) { out[end - valueBytes + i] = UInt8(truncatingIfNeeded: n >> UInt64(8 * i)) }
    }

    /// The size of one request frame (header, envelope and body).
    var requestBytes: Int {
        var out: [UInt8] = []
        append(id: PingFrames.firstID, key: 0, to: &out)
        return out.count
    }

    /// `n` as exactly `width` decimal digits, zero-padded (redis-benchmark's `%012llu`).
    @inline(__always)
    static func appendDigits(_ n: Int, width: Int, to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width))
        var m = n
        var at = start + width - 1
        while m > 0 && at >= start {
            out[at] = UInt8(ascii: "0") + UInt8(m % 10)
            m /= 10
            at -= 1
        }
    }

    /// Checks one reply and returns its request id. Every reply is fully parsed (JSONParser + ReplyEnvelope), as a
    /// real client would: a set must answer `{"stored":true}`; a get must answer `size` = the value size with
    /// exactly the stored bytes as body (a benchmark that skipped this would count `not_found` as a fast hit).
    func check(_ frame: FrameView) throws(BenchError) -> UInt64 {
        let parsed: JSONValue
        do {
            parsed = try JSONParser.parse(frame.json, maxDepth: 32)
        } catch {
            throw BenchError("ferryd sent invalid JSON: \(error)")
        }
        switch ReplyEnvelope.parse(parsed) {
        case .result(let id, let result)?:
            switch op {
            case .set:
                guard result["stored"]?.boolValue == true else { break }
                return id
            case .get:
                guard result["size"]?.intValue == Int64(value.count), frame.body.count == value.count,
                      value.isEmpty || value.withUnsafeBytes({ memcmp($0.baseAddress!, frame.body.baseAddress!, $0.count) == 0 }) else { break }
                return id
            }
        case .error(let id, let e)?:
            throw BenchError("\(op.rawValue) \(id) failed: \(e.codeName): \(e.message)")
        default:
            break
        }
        throw BenchError("unexpected reply to \(op.rawValue): \(String(decoding: frame.json, as: UTF8.self)) "
                         + "with a \(frame.body.count)-byte body")
    }
}

/// xorshift64*: a fast, seedable generator for key numbers, so drawing a key costs the client next to nothing.
struct KeyPicker {
    private var state: UInt64
    let keySpace: Int

    init(seed: UInt64, keySpace: Int) {
        state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        self.keySpace = keySpace
    }

    @inline(__always)
    mutating func next() -> Int {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return Int(((state &* 0x2545_F491_4F6C_DD1D) >> 11) % UInt64(keySpace))
    }
}
