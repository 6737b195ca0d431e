import Testing
@testable import FerryFetch

/// The unread part of a body streaming to its one reader: pieces filled to the piece size, a whole piece handed over
/// itself, read pieces let go, and what is unread taken out in order when the reader falls behind.
@Suite struct StreamWindowTests {
    static func bytes(_ range: Range<Int>) -> [UInt8] { range.map { UInt8($0 % 251) } }

    static func append(_ window: inout StreamWindow, _ range: Range<Int>) {
        bytes(range).withUnsafeBytes { window.append($0) }
    }

    /// Ten rounds of: one piece appended `ahead` pieces past the reader, then the reader's next whole piece read
    /// (and checked). The addresses of the pieces read.
    static func readAlong(_ window: inout StreamWindow, pieceBytes p: Int, ahead: Int) -> Set<UnsafePointer<UInt8>?> {
        var addresses = Set<UnsafePointer<UInt8>?>()
        for k in 0..<10 {
            append(&window, (k + ahead) * p..<(k + ahead + 1) * p)
            let piece = window.read(at: k * p, max: p)
            #expect(piece == bytes(k * p..<(k + 1) * p))
            addresses.insert(piece.withUnsafeBufferPointer { $0.baseAddress })
        }
        return addresses
    }

    @Test func piecesFillToTheirSizeAndAWholePieceIsHandedOverItself() {
        var window = StreamWindow(start: 0, pieceBytes: 4, first: [0, 1])
        StreamWindowTests.append(&window, 2..<11)
        #expect(window.end == 11 && window.heldBytes == 11 && window.unreadBytes == 11)
        let first = window.read(at: 0, max: 100)
        #expect(first == [0, 1, 2, 3], "never past the end of one piece")
        #expect(window.read(at: 4, max: 2) == [4, 5], "less than asked for when the piece is larger")
        #expect(window.start == 4 && window.heldBytes == 7, "the first piece went at the read past it")
        #expect(window.read(at: 6, max: 100) == [6, 7])
        #expect(window.start == 4 && window.heldBytes == 7 && window.unreadBytes == 3)
        #expect(window.read(at: 8, max: 100) == [8, 9, 10], "the last piece, still filling, copied")
        #expect(window.start == 8 && window.unreadBytes == 0)
        // All read: the next bytes start a piece of their own, and the reader takes whole pieces again.
        StreamWindowTests.append(&window, 11..<19)
        #expect(window.start == 11 && window.heldBytes == 8)
        #expect(window.read(at: 11, max: 100) == [11, 12, 13, 14])
        #expect(window.read(at: 15, max: 100) == [15, 16, 17, 18])
        #expect(window.start == 15, "only the piece being read is held")
    }

    /// A whole piece handed over is the reader's: the window, filling its next piece, never writes into it.
    @Test func aPieceHandedOverIsNotChangedByTheBytesAfterIt() {
        var window = StreamWindow(start: 0, pieceBytes: 8)
        StreamWindowTests.append(&window, 0..<8)
        var piece = window.read(at: 0, max: 8)
        StreamWindowTests.append(&window, 8..<20)
        #expect(piece == StreamWindowTests.bytes(0..<8))
        piece.withUnsafeMutableBytes { $0[0] = 99 }   // the reader's copy on write, not the window's bytes
        #expect(window.read(at: 8, max: 8) == StreamWindowTests.bytes(8..<16))
    }

    /// Pieces let go are filled again (no new memory a piece), and one the reader still holds keeps its bytes.
    /// Pieces of 64 bytes: the allocator rounds a piece's capacity up, and a spare may be at most twice the piece
    /// size (8-byte pieces were sometimes given three times their size, and not kept).
    @Test func piecesLetGoAreReusedAndAHeldOneIsNeverWritten() {
        let p = 64
        // A reader that lets each piece go before the next is appended: every piece after the first is a spare,
        // in the same memory (a spare that took new memory, a second reference kept while it was emptied, would
        // show a second address: the first piece still alive beside it).
        var fast = StreamWindow(start: 0, pieceBytes: p)
        #expect(StreamWindowTests.readAlong(&fast, pieceBytes: p, ahead: 0).count == 1, "one piece's memory, filled ten times")
        #expect(fast.piecesReused == 9)

        // A reader one piece behind lets each piece go as it reads the next: three pieces' memory in turn.
        var behind = StreamWindow(start: 0, pieceBytes: p)
        StreamWindowTests.append(&behind, 0..<p)
        #expect(StreamWindowTests.readAlong(&behind, pieceBytes: p, ahead: 1).count == 3,
                "the piece read, the one after it, and the spare: no new memory after the first three")
        #expect(behind.piecesReused == 8)

        // A reader that holds the first piece while the window lets it go and fills three more.
        var window = StreamWindow(start: 0, pieceBytes: p)
        StreamWindowTests.append(&window, 0..<2 * p)
        let held = window.read(at: 0, max: p)          // the first piece itself
        _ = window.read(at: p, max: p)                 // reading past it lets the window's reference go
        StreamWindowTests.append(&window, 2 * p..<5 * p)
        #expect(held == StreamWindowTests.bytes(0..<p), "a piece the reader holds keeps its bytes")
        #expect(window.piecesReused == 2, "both pieces let go were spares; the held one's with memory of its own")
        let heldAt = held.withUnsafeBufferPointer { $0.baseAddress }
        for offset in stride(from: 2 * p, to: 5 * p, by: p) {
            let piece = window.read(at: offset, max: p)
            #expect(piece == StreamWindowTests.bytes(offset..<offset + p))
            #expect(piece.withUnsafeBufferPointer { $0.baseAddress } != heldAt, "never the held piece's memory")
        }
        #expect(held == StreamWindowTests.bytes(0..<p))
    }

    @Test func whatIsUnreadIsTakenOutInOrderFromWhereTheReaderIs() {
        var window = StreamWindow(start: 100, pieceBytes: 4)
        StreamWindowTests.append(&window, 100..<111)
        #expect(window.read(at: 100, max: 3) == [100 % 251, 101, 102].map { UInt8($0) })
        let unread = window.takeUnread()
        #expect(unread.start == 103)
        #expect(unread.pieces.flatMap { $0 } == StreamWindowTests.bytes(103..<111))
        #expect(window.heldBytes == 0 && window.start == 111 && window.unreadBytes == 0)
    }

    @Test func nothingReadYetIsAllUnread() {
        var window = StreamWindow(start: 0, pieceBytes: 3, first: [0, 1, 2, 3])
        #expect(window.unreadBytes == 4)
        let unread = window.takeUnread()
        #expect(unread.start == 0 && unread.pieces == [[0, 1, 2, 3]], "a first piece larger than the size is kept whole")
    }
}
