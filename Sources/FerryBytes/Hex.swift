/// Bytes as lowercase hexadecimal, two digits a byte: the form of every digest Ferry names things by (blob files,
/// credential partitions, variant keys).
///
/// ```swift
/// Hex.lowercase([0x0f, 0xa0])   // "0fa0"
/// ```
public enum Hex {
    public static func lowercase(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
