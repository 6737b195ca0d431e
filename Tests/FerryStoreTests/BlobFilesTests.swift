import Foundation
import Testing
@testable import FerryStore

/// Blob files are named after their content, and shared only by values whose bytes are the same: a file under a
/// value's name holding other bytes (a collision of the 64-bit sum, or a file damaged on disk) is never taken for it
/// and never replaced.
@Suite struct BlobFilesTests {
    private func files(_ root: String) -> [String] {
        (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).filter {
            (try? FileManager.default.attributesOfItem(atPath: root + "/" + $0)[.type] as? FileAttributeType) == .typeRegular
        }
    }

    @Test func equalValuesShareOneFileAndOtherValuesDoNot() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let blobs = try BlobFiles(root: dir + "/blobs")
        let value = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let name = try blobs.write(value)
        #expect(name == BlobFiles.contentName(of: value) && name.count == 32)
        #expect(try blobs.write(value) == name, "the same bytes again: the same file")
        var other = value
        other[299_999] ^= 1
        #expect(try blobs.write(other) != name)
        #expect(files(dir + "/blobs").count == 2)
        #expect(blobs.read(name, expectedSize: value.count) == value)
        #expect(BlobFiles.contentName(of: [0, 0, 0, 0]) != BlobFiles.contentName(of: [0, 0, 0, 0, 0]), "the length is in the name")
    }

    /// What a crafted collision (or a damaged file) would look like: the value's name already holds other bytes of
    /// the same length. The value gets a file of its own; the one found stays as it was.
    @Test func aFileUnderTheNameWithOtherBytesIsNeitherSharedNorReplaced() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let blobs = try BlobFiles(root: dir + "/blobs")
        let value = [UInt8](repeating: 0xAB, count: 100_000)
        let planted = [UInt8](repeating: 0xCD, count: 100_000)
        let taken = BlobFiles.contentName(of: value)
        let path = blobs.path(of: taken)
        try FileManager.default.createDirectory(atPath: String(path[..<path.lastIndex(of: "/")!]), withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(planted)))
        let name = try blobs.write(value)
        #expect(name != taken && name.count == 64, "written under a random name")
        #expect(blobs.read(name, expectedSize: value.count) == value)
        #expect(blobs.read(taken, expectedSize: planted.count) == planted, "the file found is left alone")
        #expect(!BlobFiles.holds(path, exactly: value) && BlobFiles.holds(path, exactly: planted))
        #expect(!BlobFiles.holds(path, exactly: Array(planted.dropLast())), "a length that differs")
    }
}
