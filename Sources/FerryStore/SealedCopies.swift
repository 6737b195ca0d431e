#if canImport(Glibc)
import Glibc
#endif
import CFerryIO

/// Sealed memory files (memfd) holding values the daemon has in memory, for handing a large value to a client as a
/// descriptor instead of through the socket (PROTOCOL.md, "bodies as descriptors"). A copy is sealed against
/// writing, growing and shrinking, so a client that holds it, or reopens it through /proc, sees the value as it was
/// handed out and can change nothing. The value's memory is kept with its copy: values are never changed in place,
/// so while a copy is kept its storage (and address) is that value's, and the next hand-out of the same value
/// reuses the copy instead of making another. Copies are bounded by bytes (least recently used go first); a value
/// larger than the bound gets a copy of its own that is not kept. Loop thread only.
///
/// ```swift
/// let copies = SealedCopies(limitBytes: 64 << 20)
/// if let fd = copies.descriptor(of: entry.value[...]) { send(fd); close(fd) }   // else send the bytes
/// ```
public final class SealedCopies {
    private struct Copy {
        /// Retained so that the address stays this value's while the copy is kept.
        let bytes: ArraySlice<UInt8>
        let address: UnsafeRawPointer?
        let fd: Int32
        var lastUse: UInt64
    }

    /// Bytes of copies kept at most (each also keeps its value's memory).
    public let limitBytes: Int
    private var copies: [Copy] = []
    public private(set) var heldBytes = 0
    private var uses: UInt64 = 0
    /// Copies made, and hand-outs that reused a kept one.
    public private(set) var made = 0
    public private(set) var reused = 0

    public init(limitBytes: Int = 64 << 20) { self.limitBytes = limitBytes }

    deinit { for c in copies { close(c.fd) } }

    /// A descriptor of a sealed copy of `bytes`, the caller's own (it closes it once sent); nil when none can be
    /// made now (out of memory or descriptors: the caller sends the bytes instead). `keep` false: bytes that will
    /// not be handed out again from the same storage (a body just downloaded) get a copy that is not kept.
    public func descriptor(of bytes: ArraySlice<UInt8>, keep: Bool = true) -> Int32? {
        uses += 1
        let address = bytes.withUnsafeBytes { UnsafeRawPointer($0.baseAddress) }
        if let i = copies.firstIndex(where: { $0.address == address && $0.bytes.count == bytes.count }) {
            copies[i].lastUse = uses
            reused += 1
            return SealedCopies.duplicate(copies[i].fd)
        }
        let fd = bytes.withUnsafeBytes { ferry_sealed_memfd("ferry-value", $0.baseAddress, $0.count) }
        guard fd >= 0 else { return nil }
        made += 1
        guard keep, bytes.count <= limitBytes else { return fd }
        while heldBytes + bytes.count > limitBytes, let oldest = copies.indices.min(by: { copies[$0].lastUse < copies[$1].lastUse }) {
            heldBytes -= copies[oldest].bytes.count
            close(copies.remove(at: oldest).fd)
        }
        guard let own = SealedCopies.duplicate(fd) else { return fd }
        copies.append(Copy(bytes: bytes, address: address, fd: own, lastUse: uses))
        heldBytes += bytes.count
        return fd
    }

    /// How many copies are kept.
    public var count: Int { copies.count }

    /// A close-on-exec duplicate; nil when the process is out of descriptors.
    static func duplicate(_ fd: Int32) -> Int32? {
        let d = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        return d >= 0 ? d : nil
    }
}
