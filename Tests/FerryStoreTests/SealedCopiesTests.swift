import Testing
@testable import FerryStore
#if canImport(Glibc)
import Glibc
#endif

/// Sealed copies of values in memory, for descriptor hand-outs: the bytes, sealed, made once per value while kept,
/// bounded by bytes.
@Suite struct SealedCopiesTests {
    static func read(_ fd: Int32, _ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { b, n in n = max(0, pread(fd, b.baseAddress, count, 0)) }
    }

    @Test func aCopyHoldsTheBytesAndCannotBeChanged() throws {
        let copies = SealedCopies(limitBytes: 1 << 20)
        let value = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let fd = try #require(copies.descriptor(of: value[...]))
        defer { close(fd) }
        #expect(Self.read(fd, 200_000) == value)
        #expect(pwrite(fd, [1], 1, 0) < 0 && errno == EPERM)
        #expect(ftruncate(fd, 10) != 0 && errno == EPERM)
        #expect(ftruncate(fd, 200_000) != 0 && errno == EPERM)
        // fcntl's sealing commands (linux/fcntl.h; Glibc's Swift module does not export them).
        let getSeals: Int32 = 1034, addSeals: Int32 = 1033, sealSeal: Int32 = 1, sealWrite: Int32 = 8
        #expect(fcntl(fd, getSeals) & (sealWrite | sealSeal) == sealWrite | sealSeal)
        #expect(fcntl(fd, addSeals, 0) != 0 && errno == EPERM, "the seals cannot be changed")
    }

    @Test func theSameValueReusesItsCopyAndAnotherValueDoesNot() throws {
        let copies = SealedCopies(limitBytes: 1 << 20)
        let a = [UInt8](repeating: 1, count: 300_000), b = [UInt8](repeating: 2, count: 300_000)
        for _ in 0..<3 { close(try #require(copies.descriptor(of: a[...]))) }
        #expect(copies.made == 1 && copies.reused == 2)
        // Equal bytes in other storage are another value as far as identity goes: a copy of their own.
        let b2 = b
        close(try #require(copies.descriptor(of: b[...])))
        close(try #require(copies.descriptor(of: b2[...])))
        #expect(copies.made == 2 && copies.reused == 3, "b2 shares b's storage (copy on write)")
        // A slice is its own value.
        let fd = try #require(copies.descriptor(of: a[1000..<2000]))
        #expect(Self.read(fd, 5000) == Array(a[1000..<2000]))
        close(fd)
        #expect(copies.made == 3)
    }

    @Test func keptCopiesStayUnderTheLimitLeastRecentlyUsedFirst() throws {
        let copies = SealedCopies(limitBytes: 1_000_000)
        let values = (0..<4).map { [UInt8](repeating: UInt8($0), count: 400_000) }
        for v in values.prefix(2) { close(try #require(copies.descriptor(of: v[...]))) }
        close(try #require(copies.descriptor(of: values[0][...])))   // 0 used last
        close(try #require(copies.descriptor(of: values[2][...])))   // evicts 1
        #expect(copies.count == 2 && copies.heldBytes == 800_000)
        close(try #require(copies.descriptor(of: values[0][...])))
        #expect(copies.reused == 2, "0 was kept")
        close(try #require(copies.descriptor(of: values[1][...])))
        #expect(copies.made == 4, "1 had to be made again")
        // Larger than the whole limit: a copy of its own, not kept.
        let huge = [UInt8](repeating: 9, count: 2_000_000)
        let fd = try #require(copies.descriptor(of: huge[...]))
        #expect(Self.read(fd, 10) == [UInt8](repeating: 9, count: 10))
        close(fd)
        #expect(copies.heldBytes <= 1_000_000)
    }
}
