import Testing
@testable import FerryBytes

/// The buffer keeps every byte written, in order, across growth; a write whose room was too short is run again
/// with more (counted), so a line is never cut; `removeAll` starts again.
@Suite struct AppendBufferTests {
    @Test func bytesSurviveGrowthInOrder() {
        var b = AppendBuffer(capacity: 16)
        var expected: [UInt8] = []
        for i in 0..<200 {
            b.append(room: 24) { c in
                c.ascii("line=")
                c.int(Int64(i))
                c.byte(UInt8(ascii: "\n"))
            }
            expected += Array("line=\(i)\n".utf8)
        }
        let count = b.count, bytes = Array(b.bytes)
        #expect(count == expected.count)
        #expect(bytes == expected)
    }

    @Test func aWriteLongerThanItsRoomIsRunAgainWithMore() {
        var b = AppendBuffer(capacity: 16)
        b.append(room: 4) { c in c.ascii("0123456789") }   // fits: the buffer has 16 free
        var runs = 0
        let long = String(repeating: "x", count: 100)
        b.append(room: 4) { c in
            runs += 1
            c.utf8(long)
        }
        #expect(runs == 4)   // room 6 free, then 22, 54 and 118 bytes: the fourth takes the 100
        let bytes = Array(b.bytes)
        #expect(bytes == Array(("0123456789" + long).utf8))
    }

    @Test func removeAllGivesBackMemoryPastItsLimit() {
        var b = AppendBuffer(capacity: 64)
        b.append(room: 10_000) { c in c.utf8(String(repeating: "y", count: 10_000)) }
        let grown = b.capacity
        #expect(grown >= 10_000)
        b.removeAll(keepingAtMost: 1 << 20)
        let kept = b.capacity
        #expect(kept == grown)                 // under the limit: kept for the next bytes
        b.removeAll(keepingAtMost: 256)
        let shrunk = b.capacity
        #expect(shrunk == 256)
        b.append(room: 8) { c in c.ascii("after") }
        let bytes = Array(b.bytes)
        #expect(bytes == Array("after".utf8))
    }

    @Test func removeAllStartsAgain() {
        var b = AppendBuffer()
        b.append(room: 8) { c in c.ascii("first") }
        let wasEmpty = b.isEmpty
        #expect(!wasEmpty)
        b.removeAll()
        let isEmpty = b.isEmpty, left = b.bytes.count
        #expect(isEmpty && left == 0)
        b.append(room: 8) { c in c.ascii("second") }
        let bytes = Array(b.bytes)
        #expect(bytes == Array("second".utf8))
    }
}
