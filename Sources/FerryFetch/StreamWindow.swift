/// The unread part of a body that streams through memory to its one reader (`BodySpool.streamThrough`): the bytes
/// in pieces of `pieceBytes` (one reply frame's body each), every piece the reader has read past let go at its next
/// read. A read of a whole full piece from its start hands over the piece itself, no copy (the reply frame keeps
/// it until written); any other read copies. Pure: no I/O, tested alone (`StreamWindowTests`).
///
/// Why pieces rather than one growing array: letting read bytes go from the front of one array moves the rest
/// each time, a second copy of the body.
///
/// A piece let go whose memory nothing else holds (the reply frame that carried it is written) is kept, emptied,
/// for the bytes after it (`spares`). Why: a new piece of a quarter MiB was memory the allocator had just handed
/// back to the kernel, so every byte appended first faulted its page in and had it cleared (perf: page faults
/// ~8 % of ferryd streaming a gibibyte, beside the append's copy at 11 %). A piece the reader still holds is never
/// written: emptying a shared array gives the window new memory and leaves the reader's bytes as they are.
///
/// ```swift
/// var window = StreamWindow(start: 0, pieceBytes: 4, first: [1, 2])
/// window.append(bytes)                   // bytes = [3, 4, 5]: pieces [1, 2, 3, 4] and [5]
/// window.read(at: 0, max: 4)             // [1, 2, 3, 4]: the first piece itself
/// window.read(at: 4, max: 4)             // [5], a copy (its piece is still filling); the first piece goes
/// ```
struct StreamWindow {
    /// The body offset of the first byte held.
    private(set) var start: Int
    let pieceBytes: Int
    private var pieces: [[UInt8]] = []
    /// Emptied pieces of `pieceBytes` capacity, at most `maxSpares`, used before new memory.
    private var spares: [[UInt8]] = []
    static let maxSpares = 2
    /// Pieces started in a spare rather than new memory (tests).
    private(set) var piecesReused = 0
    /// Bytes held, read or not.
    private(set) var heldBytes = 0
    /// How far the reader has read (a body offset).
    private var readEnd: Int

    /// The body offset after the last byte held.
    var end: Int { start + heldBytes }
    /// Bytes held that the reader has not read yet.
    var unreadBytes: Int { end - max(readEnd, start) }

    /// Starts at body offset `start` with the bytes of `first` (a body's start, kept in memory so far).
    init(start: Int, pieceBytes: Int, first: [UInt8] = []) {
        precondition(pieceBytes > 0, "pieces hold at least a byte")
        self.start = start
        self.pieceBytes = pieceBytes
        readEnd = start
        if !first.isEmpty {
            pieces = [first]
            heldBytes = first.count
        }
    }

    /// Adds bytes at the end: the last piece is filled up to `pieceBytes`, then new pieces are started. When the
    /// reader has read everything held, it is all let go first, so that the new bytes start a piece of their own
    /// (the reader's next read then takes whole pieces again, rather than the rest of one it caught up with).
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if heldBytes > 0 && readEnd >= end {
            start = end
            heldBytes = 0
            while let piece = pieces.popLast() { keepSpare(piece) }
        }
        var rest = bytes[...]
        while !rest.isEmpty {
            if pieces.isEmpty || pieces[pieces.count - 1].count >= pieceBytes {
                if let spare = spares.popLast() {
                    pieces.append(spare)
                    piecesReused += 1
                } else {
                    var piece: [UInt8] = []
                    piece.reserveCapacity(pieceBytes)
                    pieces.append(piece)
                }
            }
            let take = min(pieceBytes - pieces[pieces.count - 1].count, rest.count)
            pieces[pieces.count - 1].append(contentsOf: UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            rest = rest.dropFirst(take)
            heldBytes += take
        }
    }

    /// Up to `max` bytes from `offset` (at least `start`, at most `end`), never past the end of one piece. The
    /// pieces wholly before `offset` are let go first: the one reader has them.
    mutating func read(at offset: Int, max: Int) -> [UInt8] {
        precondition(offset >= start && offset <= end, "a read inside the window")
        // By count, not by the piece: a binding of the piece would be a second reference to it, and the spare made
        // of it then new memory (an unoptimised build keeps such references to the end of the scope).
        while let count = pieces.first?.count, start + count <= offset {
            start += count
            heldBytes -= count
            keepSpare(pieces.removeFirst())
        }
        guard let piece = pieces.first, max > 0 else { return [] }
        let from = offset - start
        let take = min(max, piece.count - from)
        readEnd = Swift.max(readEnd, offset + take)
        if from == 0 && take == piece.count && piece.count == pieceBytes { return piece }
        return Array(piece[from..<from + take])
    }

    /// Keeps a piece let go for the bytes to come, emptied, when there is room among the spares and its capacity
    /// is the piece size's (a larger first piece, grown by doubling, is let go: the spares hold at most
    /// `maxSpares` pieces' memory beyond the window). Emptied in place only if nothing else holds it (else the
    /// array takes new memory of the same capacity, and the holder keeps the bytes).
    private mutating func keepSpare(_ piece: consuming [UInt8]) {
        guard spares.count < StreamWindow.maxSpares, piece.capacity >= pieceBytes, piece.capacity < 2 * pieceBytes
        else { return }
        piece.removeAll(keepingCapacity: true)
        spares.append(piece)
    }

    /// Takes every unread byte out (the window is then empty, at `end`): where they start, and the pieces.
    mutating func takeUnread() -> (start: Int, pieces: [[UInt8]]) {
        let from = Swift.max(readEnd, start)
        var out: [[UInt8]] = []
        var pieceStart = start
        for piece in pieces {
            let pieceEnd = pieceStart + piece.count
            if pieceEnd > from { out.append(pieceStart >= from ? piece : Array(piece[(from - pieceStart)...])) }
            pieceStart = pieceEnd
        }
        start = end
        heldBytes = 0
        readEnd = start
        pieces = []
        return (from, out)
    }
}
