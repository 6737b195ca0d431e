/// A growable run of bytes written through a `ByteCursor`: each `append` reserves the room it may need and writes
/// into it with pointer stores, then the bytes go out whole (`bytes`) and the buffer starts again (`removeAll`),
/// keeping its memory.
///
/// Why not an array: an `[UInt8]` grows by `append(contentsOf:)`, and each call checks the array's uniqueness and
/// capacity and takes a generic path (~60 instructions for a few bytes, `ByteCursor`'s note); the access log wrote a
/// line in ~20 such appends and spent more on them than on the request it described (perf, issue 12). An array has
/// no way to write into its spare capacity either, which is what a cursor needs.
///
/// ```swift
/// var log = AppendBuffer()
/// log.append(room: 32) { c in c.ascii("op=ping status=ok\n") }
/// log.count                        // 18
/// log.bytes                        // the line, valid until the next append or removeAll
/// log.removeAll()                  // empty again, its memory kept
/// ```
public struct AppendBuffer: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    /// Bytes of memory held.
    public private(set) var capacity: Int
    /// Bytes written so far.
    public private(set) var count = 0

    public init(capacity: Int = 4096) {
        self.capacity = max(16, capacity)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    public var isEmpty: Bool { count == 0 }

    /// The bytes written, valid until the next `append` or `removeAll`.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Runs `write` with a cursor over at least `room` free bytes and keeps what it wrote. A write that overflowed
    /// the room (the caller's bound was short) is run again with twice the room, so nothing is ever cut: `write`
    /// must write the same bytes each time it runs.
    public mutating func append(room: Int, _ write: (inout ByteCursor) -> Void) {
        var room = max(room, 1)
        while true {
            reserve(room)
            var cursor = ByteCursor(UnsafeMutableBufferPointer(start: base + count, count: capacity - count))
            write(&cursor)
            if !cursor.overflowed {
                count += cursor.count
                return
            }
            room = (capacity - count) * 2
        }
    }

    /// Empty again; the memory stays for the next bytes, down to `limit` bytes when it grew past them.
    public mutating func removeAll(keepingAtMost limit: Int = .max) {
        count = 0
        guard capacity > limit else { return }
        base.deallocate()
        capacity = max(16, limit)
        base = .allocate(capacity: capacity)
    }

    /// At least `room` free bytes after `count`, the memory doubled as often as that takes.
    private mutating func reserve(_ room: Int) {
        guard capacity - count < room else { return }
        var grown = capacity * 2
        while grown - count < room { grown *= 2 }
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        moved.initialize(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = grown
    }
}
