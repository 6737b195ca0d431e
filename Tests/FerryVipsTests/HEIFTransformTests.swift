import FerryImages
import FerryProtocol
import Testing
@testable import FerryVips

/// HEIF's transformative properties: `clap` (a clean aperture: the picture cropped) and `irot` (turned by 90° steps)
/// belong to the size a HEIC is displayed at. libvips writes neither, so the test adds them to a HEIC it wrote
/// (`HEIFEdit`) and checks the size reported and the variant made.
@Suite struct HEIFTransformTests {
    static func heic(width: Int, height: Int) throws -> [UInt8] { try Vips.testImage(width: width, height: height, format: "heic") }

    @Test func irotTurnsTheDisplayedSizeAndTheVariant() throws {
        let turned = try HEIFEdit.adding(HEIFEdit.irot(quarterTurns: 1), to: HEIFTransformTests.heic(width: 300, height: 200))
        #expect(try Vips.verify(turned, maxPixels: 1_000_000) == DecodedImage(format: "heic", width: 200, height: 300))
        let variant = try Vips.variant(of: turned, ImageVariant(width: 100, height: nil, format: .png), maxPixels: 1_000_000)
        #expect(variant.info.width == 100 && variant.info.height == 150)
    }

    /// The corpus case: a clean aperture of 123 columns out of 124 is 123 wide, not 124.
    @Test func clapCropsTheDisplayedSizeAndTheVariant() throws {
        let cropped = try HEIFEdit.adding(HEIFEdit.clap(width: 123, height: 100), to: HEIFTransformTests.heic(width: 124, height: 120))
        #expect(try Vips.verify(cropped, maxPixels: 1_000_000) == DecodedImage(format: "heic", width: 123, height: 100))
        let variant = try Vips.variant(of: cropped, ImageVariant(width: nil, height: nil, format: .png), maxPixels: 1_000_000)
        #expect(variant.info.width == 123 && variant.info.height == 100)
    }

    @Test func theEditIsWhatItSays() throws {
        let plain = try HEIFTransformTests.heic(width: 40, height: 30)
        #expect(try Vips.verify(plain, maxPixels: 1_000_000) == DecodedImage(format: "heic", width: 40, height: 30))
        let edited = try HEIFEdit.adding(HEIFEdit.irot(quarterTurns: 0), to: plain)
        #expect(edited.count == plain.count + 9 + 1, "one 9-byte property and one association byte")
        #expect(try Vips.verify(edited, maxPixels: 1_000_000) == DecodedImage(format: "heic", width: 40, height: 30))
    }
}

/// Adds one property to the primary item of a HEIF file: appended to `ipco`, associated last in `ipma` (so it
/// applies after those there), every enclosing box's size grown, and `iloc`'s file offsets of data after `meta`
/// moved by the bytes added. Enough ISOBMFF for files libvips writes; a test tool, not a parser for the web.
enum HEIFEdit {
    struct Malformed: Error {}

    static func irot(quarterTurns: UInt8) -> [UInt8] { box("irot", [quarterTurns & 3]) }

    /// A clean aperture of `width` × `height`, centred (offsets 0/1).
    static func clap(width: UInt32, height: UInt32) -> [UInt8] {
        box("clap", [width, 1, height, 1, 0, 1, 0, 1].flatMap(be32))
    }

    static func adding(_ property: [UInt8], to file: [UInt8]) throws -> [UInt8] {
        guard let meta = child("meta", in: file, 0..<file.count) else { throw Malformed() }
        let inside = (meta.lowerBound + 12)..<meta.upperBound  // a full box: version and flags first
        guard let pitm = child("pitm", in: file, inside), let iloc = child("iloc", in: file, inside),
              let iprp = child("iprp", in: file, inside), let ipco = child("ipco", in: file, (iprp.lowerBound + 8)..<iprp.upperBound),
              let ipma = child("ipma", in: file, (iprp.lowerBound + 8)..<iprp.upperBound), ipco.upperBound <= ipma.lowerBound
        else { throw Malformed() }
        let primary = Int(u(file, pitm.lowerBound + 12, 2))
        let index = children(in: file, (ipco.lowerBound + 8)..<ipco.upperBound).count + 1
        // The primary item's entry in ipma gains the association.
        let version = file[ipma.lowerBound + 8], wide = file[ipma.lowerBound + 11] & 1 == 1
        var at = ipma.lowerBound + 16
        var insertAt: Int?
        for _ in 0..<u(file, ipma.lowerBound + 12, 4) {
            let id = Int(u(file, at, version < 1 ? 2 : 4))
            at += version < 1 ? 2 : 4
            let countAt = at
            let count = Int(file[at])
            at += 1 + count * (wide ? 2 : 1)
            if id == primary { insertAt = countAt }
        }
        guard let countAt = insertAt, index < 128, !wide else { throw Malformed() }
        let association: [UInt8] = [UInt8(index)]
        let ipmaEnd = countAt + 1 + Int(file[countAt])
        var out = file
        out.insert(contentsOf: association, at: ipmaEnd)
        out[countAt] += 1
        out.insert(contentsOf: property, at: ipco.upperBound)
        let added = property.count + association.count
        grow(&out, at: ipco.lowerBound, by: property.count)
        grow(&out, at: ipma.lowerBound + property.count, by: association.count)
        grow(&out, at: iprp.lowerBound, by: added)
        grow(&out, at: meta.lowerBound, by: added)
        try moveOffsets(&out, iloc: iloc, after: meta.upperBound, by: added)
        return out
    }

    /// iloc's extents that are file offsets (construction method 0) past `after` move by `delta`.
    private static func moveOffsets(_ b: inout [UInt8], iloc: Range<Int>, after: Int, by delta: Int) throws {
        let version = b[iloc.lowerBound + 8]
        var at = iloc.lowerBound + 12
        let offsetSize = Int(b[at] >> 4), lengthSize = Int(b[at] & 15), baseSize = Int(b[at + 1] >> 4)
        let indexSize = version >= 1 ? Int(b[at + 1] & 15) : 0
        at += 2
        let countSize = version < 2 ? 2 : 4
        let items = Int(u(b, at, countSize))
        at += countSize
        for _ in 0..<items {
            at += version < 2 ? 2 : 4  // item ID
            var method = 0
            if version >= 1 { method = Int(u(b, at, 2) & 15); at += 2 }
            at += 2  // data reference index
            let base = Int(u(b, at, baseSize))
            if method == 0 && baseSize > 0 && base >= after { put(&b, at, baseSize, UInt64(base + delta)) }
            at += baseSize
            let extents = Int(u(b, at, 2))
            at += 2
            for _ in 0..<extents {
                at += indexSize
                let offset = Int(u(b, at, offsetSize))
                if method == 0 && base == 0 && offset >= after { put(&b, at, offsetSize, UInt64(offset + delta)) }
                at += offsetSize + lengthSize
            }
        }
        guard at <= iloc.upperBound else { throw Malformed() }
    }

    private static func children(in b: [UInt8], _ range: Range<Int>) -> [(type: String, range: Range<Int>)] {
        var out: [(String, Range<Int>)] = []
        var at = range.lowerBound
        while at + 8 <= range.upperBound {
            let size = Int(u(b, at, 4))
            guard size >= 8, at + size <= range.upperBound else { break }
            out.append((String(decoding: b[(at + 4)..<(at + 8)], as: UTF8.self), at..<(at + size)))
            at += size
        }
        return out
    }

    private static func child(_ type: String, in b: [UInt8], _ range: Range<Int>) -> Range<Int>? {
        children(in: b, range).first { $0.type == type }?.range
    }

    private static func grow(_ b: inout [UInt8], at box: Int, by n: Int) { put(&b, box, 4, u(b, box, 4) + UInt64(n)) }

    private static func u(_ b: [UInt8], _ at: Int, _ size: Int) -> UInt64 {
        (0..<size).reduce(0) { $0 << 8 | UInt64(b[at + $1]) }
    }

    private static func put(_ b: inout [UInt8], _ at: Int, _ size: Int, _ value: UInt64) {
        for k in 0..<size { b[at + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(size - 1 - k))) }
    }

    private static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 255), UInt8(v >> 8 & 255), UInt8(v & 255)] }

    private static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(UInt32(8 + payload.count)) + Array(type.utf8) + payload
    }
}
