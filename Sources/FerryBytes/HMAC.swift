/// HMAC-SHA256 (RFC 2104, FIPS 198-1) over the project's `SHA256`: a keyed digest, so that a name derived from a
/// secret input (a credential) says nothing about it to whoever sees the name without the key. Checked against
/// RFC 4231's test vectors in the tests.
///
/// ```swift
/// HMACSHA256.hex(key: secret, message: Array("Bearer abc".utf8))   // 64 hex digits
/// ```
public enum HMACSHA256 {
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        // Keys longer than a block are hashed first; shorter ones are padded with zeros to 64 bytes.
        var block = key.count > 64 ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        var inner = SHA256()
        inner.update(block.map { $0 ^ 0x36 })
        inner.update(message)
        var outer = SHA256()
        outer.update(block.map { $0 ^ 0x5c })
        outer.update(inner.finish())
        return outer.finish()
    }

    public static func hex(key: [UInt8], message: [UInt8]) -> String { Hex.lowercase(mac(key: key, message: message)) }
}
