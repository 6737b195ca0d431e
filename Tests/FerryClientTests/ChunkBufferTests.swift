import Testing
@testable import FerryClient

@Suite struct ChunkBufferTests {
    func bytes(_ n: Int, _ seed: UInt8) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0) &+ seed } }

    @Test func chunksAndReadsJoinInOrderWithinTheAnnouncedRoom() {
        let b = ChunkBuffer(size: 10)
        #expect(b.room == 10)
        bytes(3, 0).withUnsafeBytes { b.append($0) }
        // A read that writes fewer bytes than it may: only those are kept.
        var reads = 0
        let n = b.receive(upTo: 5) { to, count in
            reads += 1
            #expect(count == 5)
            for k in 0..<2 { to.storeBytes(of: UInt8(100 + k), toByteOffset: k, as: UInt8.self) }
            return 2
        }
        #expect(n == 2 && reads == 1 && b.filled == 5 && b.room == 5)
        // Failed reads (EOF, -errno) keep nothing.
        #expect(b.receive(upTo: 5) { _, _ in 0 } == 0)
        #expect(b.receive(upTo: 5) { _, _ in -11 } == -11)
        #expect(b.filled == 5)
        #expect(b.take() == bytes(3, 0) + [100, 101], "the room past the body is cut off")
    }

    @Test func aBodyLargerThanAnnouncedOrUnannouncedGrows() {
        let unannounced = ChunkBuffer(size: nil)
        let parts = (0..<20).map { bytes(1000 + $0, UInt8($0)) }
        for part in parts { part.withUnsafeBytes { unannounced.append($0) } }
        #expect(unannounced.take() == parts.flatMap { $0 })
        let short = ChunkBuffer(size: 4)
        bytes(3, 1).withUnsafeBytes { short.append($0) }
        _ = short.receive(upTo: 100) { to, count in
            #expect(count == 100)
            for k in 0..<count { to.storeBytes(of: UInt8(k), toByteOffset: k, as: UInt8.self) }
            return count
        }
        #expect(short.take() == bytes(3, 1) + bytes(100, 0))
    }

    @Test func anAbsurdAnnouncedSizeMakesNoMoreThanTheLargestRoom() {
        #expect(ChunkBuffer(size: -5).room == 0)
        #expect(ChunkBuffer(size: 0).take() == [])
        // Not allocated here (1 GiB would be, lazily); the bound itself is what is checked.
        #expect(ChunkBuffer.largestRoom == 1 << 30)
    }
}
