import Testing
import FerryBytes
@testable import FerryStore

/// Blob names come from libcrypto's SHA-256; they must be the digests the project's own SHA-256 gives (and FIPS
/// 180-4's test vector), at every length around the block boundaries.
@Suite struct BlobHashTests {
    @Test func theSameDigestAsThePureSHA256AtEveryLength() {
        #expect(BlobHash.hex(of: Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(BlobHash.hex(of: []) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var rng = SystemRandomNumberGenerator()
        for n in [1, 55, 56, 63, 64, 65, 119, 128, 1000, 70_000] {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(BlobHash.hex(of: bytes) == SHA256.hex(of: bytes), "\(n) bytes")
        }
    }
}
