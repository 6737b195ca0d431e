/// A growable byte buffer with separate read and write positions, so a network reader can receive straight into
/// its free space and a decoder can consume from the front without shifting bytes on every frame.
///
/// ```swift
/// let buf = ByteBuffer()
/// let space = buf.writableSpace(minimum: 4096)   // hand to read(2)
/// buf.didWrite(n)
/// buf.readable                                    // the bytes not yet consumed
/// buf.consume(8)
/// ```
public final class ByteBuffer {
    private var storage: UnsafeMutableRawPointer
    private(set) public var capacity: Int
    private var readIndex = 0
    private var writeIndex = 0

    public init(capacity: Int = 16 * 1024) {
        self.capacity = max(capacity, 64)
        storage = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { storage.deallocate() }

    public var readableCount: Int { writeIndex - readIndex }

    /// The unconsumed bytes; valid until the next call that writes or consumes.
    public var readable: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage + readIndex, count: writeIndex - readIndex)
    }

    /// Free space of at least `minimum` bytes at the end; moves unread bytes to the front or grows as needed.
    public func writableSpace(minimum: Int) -> UnsafeMutableRawBufferPointer {
        if capacity - writeIndex < minimum {
            let unread = readableCount
            if readIndex > 0 && capacity - unread >= minimum {
                storage.copyMemory(from: storage + readIndex, byteCount: unread)
            } else {
                var newCapacity = capacity
                while newCapacity - unread < minimum { newCapacity *= 2 }
                let bigger = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
                bigger.copyMemory(from: storage + readIndex, byteCount: unread)
                storage.deallocate()
                storage = bigger
                capacity = newCapacity
            }
            readIndex = 0
            writeIndex = unread
        }
        return UnsafeMutableRawBufferPointer(start: storage + writeIndex, count: capacity - writeIndex)
    }

    /// Marks `count` bytes of the space returned by `writableSpace` as written.
    public func didWrite(_ count: Int) {
        precondition(count >= 0 && writeIndex + count <= capacity)
        writeIndex += count
    }

    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        let space = writableSpace(minimum: bytes.count)
        space.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        didWrite(bytes.count)
    }

    public func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    public func consume(_ count: Int) {
        precondition(count >= 0 && count <= readableCount)
        readIndex += count
        if readIndex == writeIndex {
            readIndex = 0
            writeIndex = 0
        }
    }

    /// Drops all content and, when the buffer grew large for one big frame, returns to `shrinkTo` bytes.
    public func reset(shrinkTo: Int = 64 * 1024) {
        readIndex = 0
        writeIndex = 0
        if capacity > shrinkTo * 4 {
            storage.deallocate()
            capacity = shrinkTo
            storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        }
    }
}
