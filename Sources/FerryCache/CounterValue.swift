/// The value of a counter (`cache.incr`): a signed 64-bit integer written in decimal ASCII, as Redis keeps one, so
/// that `cache.get` of a counter reads `"42"` and a value set as `"42"` can be incremented. The spelling is strict —
/// an optional `-`, then digits without leading zeros (`"0"` itself is fine), no `+`, no spaces — so that every
/// accepted value prints back as the same bytes.
///
/// ```swift
/// CounterValue.parse(Array("41".utf8))                 // 41
/// CounterValue.parse(Array("041".utf8))                // nil: not the spelling a counter is kept in
/// CounterValue.add(41, 1)                              // .value(42)
/// CounterValue.add(Int64.max, 1)                       // .overflow
/// CounterValue.bytes(-7)                               // Array("-7".utf8)
/// ```
public enum CounterValue {
    /// What adding to a counter gives.
    public enum Sum: Equatable, Sendable {
        case value(Int64)
        /// The sum does not fit a signed 64-bit integer; the counter is left as it was.
        case overflow
    }

    /// The integer `bytes` spell, or nil when they are not a counter's spelling or do not fit 64 bits.
    public static func parse(_ bytes: [UInt8]) -> Int64? {
        guard !bytes.isEmpty, bytes.count <= 20 else { return nil }
        let negative = bytes[0] == UInt8(ascii: "-")
        let digits = negative ? bytes[1...] : bytes[...]
        guard let first = digits.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return nil }
        if first == UInt8(ascii: "0") { return digits.count == 1 && !negative ? 0 : nil }
        // Accumulated as a negative number: Int64.min has no positive counterpart.
        var n: Int64 = 0
        for d in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(d) else { return nil }
            let (times10, o1) = n.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.subtractingReportingOverflow(Int64(d - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            n = next
        }
        if negative { return n }
        return n == Int64.min ? nil : -n
    }

    public static func add(_ value: Int64, _ delta: Int64) -> Sum {
        let (sum, overflow) = value.addingReportingOverflow(delta)
        return overflow ? .overflow : .value(sum)
    }

    /// The bytes a counter of `value` is kept as.
    public static func bytes(_ value: Int64) -> [UInt8] { Array(String(value).utf8) }
}
