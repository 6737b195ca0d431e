#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import FerryClient

/// Bytes written to a file in pieces: every byte, in order, no call larger than the piece size, short writes and
/// interruptions carried on, an error reported.
@Suite struct FileOutputTests {
    static let bytes: [UInt8] = (0..<200_000).map { UInt8($0 % 251) }

    @Test func everyByteGoesInPiecesNoLargerThanThePieceSize() {
        var calls: [Int] = []
        var written: [UInt8] = []
        let ok = FileOutputTests.bytes.withUnsafeBytes { b in
            FileOutput.writeAll(b, pieceBytes: 65536) { p, n in
                calls.append(n)
                written.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n))
                return n
            }
        }
        #expect(ok)
        #expect(written == FileOutputTests.bytes)
        #expect(calls == [65536, 65536, 65536, 200_000 - 3 * 65536])
    }

    /// Writes `bytes` through a fake whose second call fails with `failure`, and which takes at most `takes`
    /// bytes a call: whether it succeeded, `errno` right after, the bytes written, and the calls made.
    static func writeFailingOnce(with failure: Int32, takes: Int) -> (ok: Bool, errno: Int32, written: [UInt8], calls: Int) {
        var calls = 0
        var written: [UInt8] = []
        let ok = bytes.withUnsafeBytes { b in
            FileOutput.writeAll(b, pieceBytes: 65536) { p, n in
                calls += 1
                if calls == 2 {
                    errno = failure
                    return -1
                }
                let taken = min(n, takes)
                written.append(contentsOf: UnsafeRawBufferPointer(start: p, count: taken))
                return taken
            }
        }
        let error = errno
        return (ok, error, written, calls)
    }

    @Test func aShortWriteGoesOnWhereItStoppedAndAnInterruptionIsRetried() {
        // The kernel takes a little at a time, and the second call is interrupted.
        let (ok, _, written, calls) = FileOutputTests.writeFailingOnce(with: EINTR, takes: 1000)
        #expect(ok)
        #expect(written == FileOutputTests.bytes)
        #expect(calls == 201, "200 writes of 1,000 bytes and the interrupted one")
    }

    @Test func anErrorStopsTheWritesAndSaysSo() {
        let (ok, error, written, calls) = FileOutputTests.writeFailingOnce(with: ENOSPC, takes: .max)
        #expect(!ok && error == ENOSPC)
        #expect(calls == 2 && written.count == 65536, "no write after the failed one")
    }

    @Test func aWriteThatTakesNothingFailsWithAReason() {
        errno = 0
        let ok = FileOutputTests.bytes.withUnsafeBytes { b in FileOutput.writeAll(b, pieceBytes: 65536) { _, _ in 0 } }
        let error = errno
        #expect(!ok && error == EIO, "not an older errno, nor none")
    }

    @Test func aRealFileHoldsTheBytes() throws {
        var template = Array("/tmp/ferry-file-output-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        try #require(fd >= 0)
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { close(fd); unlink(path) }
        #expect(FileOutputTests.bytes.withUnsafeBytes { FileOutput.writeAll(fd, $0) })
        var back = [UInt8](repeating: 0, count: FileOutputTests.bytes.count + 1)
        let n = back.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        #expect(n == FileOutputTests.bytes.count && Array(back[..<n]) == FileOutputTests.bytes)
        #expect(FileOutput.writeAll(fd, UnsafeRawBufferPointer(start: nil, count: 0)), "nothing to write is done")
    }
}
