import Testing
@testable import FerryFetch

/// The unread part of a body streaming to its one reader: pieces filled to the piece size, a whole piece handed over
/// itself, read pieces let go, and what is unread taken out in order when the reader falls behind.
@Suite struct StreamWindowTests {
    static func bytes(_ range: Range<Int>) -> [UInt8] { range.map { UInt8($0 % 251) } }

    static func append(_ window: inout StreamWindow, _ range: Range<Int>) {
        bytes(range).withUnsafeBytes { window.append($0) }
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
