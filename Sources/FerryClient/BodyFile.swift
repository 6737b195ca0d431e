#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CFerryIO

/// A reply body that ferryd handed over as a descriptor (PROTOCOL.md, "bodies as descriptors"): `length` bytes
/// from `offset` of a read-only file (a value on the daemon's disk) or of a sealed memory file (a value in its
/// memory). No byte of it crossed the socket; reading it, or copying it into a file in the kernel, is the caller's
/// choice. The bytes never change while this is held, whatever happens to the key. The descriptor is closed when
/// the last reference goes.
///
/// ```swift
/// let value = try await client.cacheGet("model.bin", bodyAsFile: true)
/// if let file = value?.file { try file.copy(toPath: "/tmp/model.bin") } else { /* value.bytes */ }
/// ```
public final class BodyFile: Sendable, Equatable, CustomStringConvertible {
    /// The descriptor, owned by this object: duplicate it (`dup`) to keep it past this object's life.
    public let fd: Int32
    public let offset: Int
    public let length: Int

    init(fd: Int32, offset: Int, length: Int) {
        self.fd = fd
        self.offset = offset
        self.length = length
    }

    deinit { close(fd) }

    public static func == (a: BodyFile, b: BodyFile) -> Bool { a === b }

    public var description: String { "BodyFile(fd: \(fd), offset: \(offset), length: \(length))" }

    /// The bytes, read into memory (one copy, from the page cache or the sealed memory).
    public func bytes() throws(FerryError) -> [UInt8] {
        var failure: Int32 = 0
        let out = [UInt8](unsafeUninitializedCapacity: length) { buffer, filled in
            var got = 0
            while got < length {
                let n = pread(fd, buffer.baseAddress! + got, length - got, off_t(offset + got))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    failure = n < 0 ? errno : EIO
                    break
                }
                got += n
            }
            filled = got
        }
        guard failure == 0 else { throw BodyFile.error("reading", failure) }
        return out
    }

    /// Runs `body` on the bytes mapped into this process (read-only, populated at once): no copy at all. The mapping
    /// is valid only inside `body`. Safe because the daemon never shortens the file (a blob file is never rewritten,
    /// a memory file is sealed against shrinking): nobody else should either.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard length > 0 else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = offset - offset % page
        let span = offset - start + length
        guard let map = mmap(nil, span, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, off_t(start)), map != MAP_FAILED else {
            throw BodyFile.error("mapping", errno)
        }
        defer { munmap(map, span) }
        return try body(UnsafeRawBufferPointer(start: map + (offset - start), count: length))
    }

    /// Appends the bytes to the open file `out` at its offset, in the kernel (`copy_file_range`, else `sendfile`,
    /// else reads and writes).
    public func copy(to out: Int32) throws(FerryError) {
        let rc = ferry_copy_fd_range(fd, off_t(offset), out, length)
        guard rc == 0 else { throw BodyFile.error("copying", -rc) }
    }

    /// Writes the bytes to a new or truncated file at `path` (mode 0644 before the umask).
    public func copy(toPath path: String) throws(FerryError) {
        let out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard out >= 0 else { throw BodyFile.error("opening \(path) for", errno) }
        defer { close(out) }
        try copy(to: out)
    }

    private static func error(_ what: String, _ code: Int32) -> FerryError {
        FerryError(.unavailable, "\(what) the body ferryd handed over as a descriptor failed: \(String(cString: strerror(code)))")
    }
}
