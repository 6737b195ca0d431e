/// A box of the ISO base media file format (ISO/IEC 14496-12 §4.2), the container of HEIC and AVIF.
///
/// Header layout:
/// ```
/// size (u32 BE) | type (FourCC) | [largesize (u64 BE), when size == 1] | content…
/// ```
/// `size` counts the whole box, header included; `size == 0` means "to the end of the enclosing box" (of the
/// file, at top level). A `uuid` box has a 16-byte extended type after this header; it is only ever skipped
/// here, which needs no more than its size.
struct ISOBox {
    var type: FourCC
    /// Offset of the box's first byte.
    var start: Int
    /// Offset of the first byte after the header.
    var contentStart: Int
    /// Offset just past the box, as declared (it may lie beyond the data when the data is cut).
    var end: Int

    /// Reads the header of the box that starts at `offset` inside a parent ending at `parentEnd`.
    ///
    /// - Returns nil when the data ends before the header does (the caller decides whether that is truncation).
    /// - Throws `.notAnImage` for a size smaller than the header or a box that runs past `parentEnd`.
    ///   At top level pass the data's count as `parentEnd` and `topLevel: true`: a top-level box that runs past
    ///   the data is then cut, not broken, and its `end` is kept as declared for the caller to judge.
    static func header(
        in reader: ByteReader, at offset: Int, parentEnd: Int, topLevel: Bool = false
    ) throws(ImageSniffError) -> ISOBox? {
        guard let size32 = reader.u32be(at: offset), let type = reader.fourCC(at: offset + 4) else { return nil }
        var headerLength = 8
        var size = size32
        if size32 == 1 {
            guard let largeSize = reader.u64be(at: offset + 8) else { return nil }
            headerLength = 16
            size = largeSize
        } else if size32 == 0 {
            size = parentEnd - offset
        }
        guard size >= headerLength else {
            throw .notAnImage("ISO box '\(type)' at offset \(offset) declares size \(size), less than its header")
        }
        // `size` may be Int.max (a u64 beyond Int): compare without adding.
        if size > parentEnd - offset && !topLevel {
            throw .notAnImage("ISO box '\(type)' at offset \(offset) (size \(size)) runs past the box that holds it")
        }
        let end = size > Int.max - offset ? Int.max : offset + size
        return ISOBox(type: type, start: offset, contentStart: offset + headerLength, end: end)
    }

    /// The boxes laid end to end in `range`, which must lie inside the data (the caller checked its parent is
    /// complete). Any box that runs past the range is a broken file: `.notAnImage`.
    ///
    /// Each box takes at least 8 bytes, so the loop ends within `range.count / 8` steps.
    static func children(
        in reader: ByteReader, _ range: Range<Int>, of parent: FourCC
    ) throws(ImageSniffError) -> [ISOBox] {
        var boxes: [ISOBox] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            guard range.upperBound - offset >= 8,
                let box = try header(in: reader, at: offset, parentEnd: range.upperBound)
            else {
                throw .notAnImage("ISO box '\(parent)' ends inside the header of a child box at offset \(offset)")
            }
            boxes.append(box)
            offset = box.end
        }
        return boxes
    }

    /// The content of a FullBox (a box with a 1-byte version and 3 bytes of flags before its fields).
    struct FullBoxFields {
        var version: Int
        var flags: Int
        /// Offset of the first field after version and flags.
        var fieldsStart: Int
    }

    /// Version and flags of this box read as a FullBox; `.notAnImage` when the box is too small for them.
    func fullBox(in reader: ByteReader) throws(ImageSniffError) -> FullBoxFields {
        guard end - contentStart >= 4, let version = reader.u8(at: contentStart),
            let flags = reader.u32be(at: contentStart)
        else {
            throw .notAnImage("ISO box '\(type)' at offset \(start) is too small for its version and flags")
        }
        return FullBoxFields(version: version, flags: flags & 0xFF_FFFF, fieldsStart: contentStart + 4)
    }
}
