#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes bytes to a descriptor that is not a ferryd socket (a file, a pipe, a terminal): every byte, in `write`
/// calls of at most `pieceBytes` (a short write goes on from where it stopped, `EINTR` is retried).
///
/// Why pieces: a download's chunks are a quarter MiB, and written whole to a file on ext4 (Linux 6.18) they cost the
/// writer far more than the same bytes written a little at a time: a gibibyte from `ferry fetch -o FILE` took
/// 1.8–2.2 s with 256 KiB writes (1.2–1.9 s of system time, nearly all of it the copy into the page cache), and
/// 1.0–1.25 s with writes of 16, 32, 64 or 128 KiB (0.43–0.76 s), alternating in the same rounds; `curl -o`, which
/// writes 16 KiB at a time, 1.14–1.26 s. 64 KiB is well under where it turns (between 128 and 256 KiB here) and
/// still few calls.
///
/// ```swift
/// guard FileOutput.writeAll(fd, bytes) else { throw failure(errno) }   // errno says why
/// ```
public enum FileOutput {
    public static let pieceBytes = 64 * 1024

    /// Writes all of `bytes` to `fd`; false on an error, with `errno` set.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        writeAll(bytes, pieceBytes: pieceBytes) { write(fd, $0, $1) }
    }

    /// The same through `write` (a pointer and a count in, the bytes written or -1 with `errno` out): the loop
    /// alone, tested with a fake.
    static func writeAll(_ bytes: UnsafeRawBufferPointer, pieceBytes: Int,
                         write: (UnsafeRawPointer, Int) -> Int) -> Bool {
        precondition(pieceBytes > 0, "pieces of at least a byte")
        guard let base = bytes.baseAddress else { return true }
        var off = 0
        while off < bytes.count {
            let n = write(base + off, min(pieceBytes, bytes.count - off))
            if n < 0 && errno == EINTR { continue }
            if n == 0 { errno = EIO }   // nothing written and no error: say so, not an older errno
            if n <= 0 { return false }
            off += n
        }
        return true
    }
}
