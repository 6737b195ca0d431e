/// The body of a call's `chunk` events, gathered in place: room for the whole body made once, when the first chunk
/// says its `size` (PROTOCOL.md §5), filled by copies of the chunks or by reads straight from the socket
/// (`receive`), handed to the call as one array (`take`).
///
/// ```swift
/// let body = ChunkBuffer(size: 10_000_000)
/// body.append(firstChunk)
/// _ = body.receive(upTo: 262_144) { to, count in recv(fd, to, count, 0) }   // straight from the socket
/// let bytes = body.take()   // the body so far, never the room past it
/// ```
///
/// A class: an array held in the waiter's enum was copied whole at every chunk (the dictionary's copy and the one
/// being appended to), quadratic in the body's size. Only the connection's reader thread fills it.
final class ChunkBuffer: @unchecked Sendable {
    /// `bytes[..<filled]` is the body so far; past it is room no one has written, never read and cut off by `take`.
    /// Why room that is counted but not written: an array's spare capacity cannot be written in place, and zeroing
    /// 10 MB of it first costs about what the copy it replaces did.
    private var bytes: [UInt8]
    private(set) var filled = 0

    /// The largest room made up front for an announced size; a larger body grows past it as it comes.
    static let largestRoom = 1 << 30

    init(size: Int64?) {
        bytes = ChunkBuffer.room(Int(min(max(0, size ?? 0), Int64(ChunkBuffer.largestRoom))))
    }

    /// The room left before the buffer has to grow.
    var room: Int { bytes.count - filled }

    func append(_ chunk: UnsafeRawBufferPointer) {
        guard chunk.count > 0 else { return }
        makeRoom(chunk.count)
        bytes.withUnsafeMutableBytes { all in
            (all.baseAddress! + filled).copyMemory(from: chunk.baseAddress!, byteCount: chunk.count)
        }
        filled += chunk.count
    }

    /// Lets `read` write up to `count` bytes right after the body (making room first) and keeps what it says it
    /// wrote; returns its result unchanged (0 or less: nothing kept, e.g. EOF or `-errno`).
    func receive(upTo count: Int, _ read: (UnsafeMutableRawPointer, Int) -> Int) -> Int {
        makeRoom(count)
        let n = bytes.withUnsafeMutableBytes { all in read(all.baseAddress! + filled, count) }
        if n > 0 { filled += min(n, count) }
        return n
    }

    /// The body, handed over once: the room past it is cut off (no copy).
    func take() -> [UInt8] {
        bytes.removeLast(bytes.count - filled)
        defer { (bytes, filled) = ([], 0) }
        return bytes
    }

    /// Grows the room to hold `count` more bytes: doubled, the body so far copied once.
    private func makeRoom(_ count: Int) {
        guard room < count else { return }
        var larger = ChunkBuffer.room(max(filled + count, 2 * bytes.count))
        larger.withUnsafeMutableBytes { to in
            bytes.withUnsafeBytes { from in to.baseAddress!.copyMemory(from: from.baseAddress!, byteCount: filled) }
        }
        bytes = larger
    }

    /// `count` bytes of room, not written first.
    private static func room(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }
}
