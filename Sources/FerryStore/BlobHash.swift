import CCrypto
import FerryBytes

/// The name of a blob file: the SHA-256 of its content, in hex. Collision resistance is the point — a value must
/// never take the file of another client's value — and speed is the other: libcrypto hashes with the CPU's SHA
/// instructions (the pure `FerryBytes.SHA256`, which gives the same digest, stays for the small digests of the
/// pure cores).
///
/// ```swift
/// BlobHash.hex(of: Array("abc".utf8))   // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// ```
enum BlobHash {
    /// Nil only if libcrypto fails (it cannot allocate its context).
    static func hex(of bytes: [UInt8]) -> String? {
        var digest = [UInt8](repeating: 0, count: 32)
        let ok = bytes.withUnsafeBytes { b in digest.withUnsafeMutableBufferPointer { ferry_sha256(b.baseAddress, b.count, $0.baseAddress) } }
        return ok == 1 ? Hex.lowercase(digest) : nil
    }
}
