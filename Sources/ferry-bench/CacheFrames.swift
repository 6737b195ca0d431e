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

    /// Checks one reply and returns its request id. Every reply is read as FerryClient reads it
    /// (`ReplyEnvelope.parse` of the bytes: a result in the server's order has its prefix matched and its result
    /// object parsed; anything else is parsed whole): a set must answer `{"stored":true}`; a get must answer
    /// `size` = the value size with exactly the stored bytes as body (a benchmark that skipped this would count
    /// `not_found` as a fast hit). Parsing the whole envelope into a tree first, as this did, cost the client more
    /// than FerryClient pays, and at 50 × 16 the client's core was the one that ran out (BENCHMARKS.md).
    func check(_ frame: FrameView) throws(BenchError) -> UInt64 {
        if let id = checkByHand(frame) { return id }
        switch ReplyEnvelope.parse(frame.json, maxDepth: 32) {
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
        case .event?, nil:
            break
        }
        throw BenchError("unexpected reply to \(op.rawValue): \(String(decoding: frame.json, as: UTF8.self)) "
                         + "with a \(frame.body.count)-byte body")
    }
}

extension CacheFrames {
    private static let stored = Array(#"{"stored":true}"#.utf8)
    private static let size = Array(#"{"size":"#.utf8)

    /// `check` by hand, as the Redis side checks RESP (`RedisConnection.takeReply`: `$100\r\n`, then the bytes):
    /// the id of a reply in the server's order (`ReplyEnvelope.resultInServerOrder`) that says what it must — a set
    /// `{"stored":true}`, a get a result whose `size` is the value's, with the value's bytes as body — or nil, and
    /// `check` reads it as FerryClient would and says what is wrong. Why: reading every reply into a dictionary made
    /// the client's core the one that ran out at 50 × 16 (the Redis side's check costs it about half as much), so the
    /// row measured the client.
    func checkByHand(_ frame: FrameView) -> UInt64? {
        guard let (id, range) = ReplyEnvelope.resultInServerOrder(frame.json) else { return nil }
        let result = UnsafeRawBufferPointer(rebasing: frame.json[range])
        switch op {
        case .set:
            return result.elementsEqual(Self.stored) ? id : nil
        case .get:
            guard result.starts(with: Self.size), result[result.count - 1] == UInt8(ascii: "}") else { return nil }
            var at = Self.size.count
            var size = 0
            while at < result.count, result[at] >= UInt8(ascii: "0"), result[at] <= UInt8(ascii: "9"), size < 1 << 40 {
                size = size * 10 + Int(result[at] &- UInt8(ascii: "0"))
                at += 1
            }
            guard at < result.count, result[at] == UInt8(ascii: ",") || result[at] == UInt8(ascii: "}"), size == value.count,
                  frame.body.count == size,
                  size == 0 || value.withUnsafeBytes({ memcmp($0.baseAddress!, frame.body.baseAddress!, size) == 0 }) else { return nil }
            return id
        }
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
