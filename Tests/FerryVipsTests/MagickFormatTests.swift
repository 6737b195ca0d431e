#if canImport(Glibc)
import Glibc
#endif
import CFerryVips
import FerryImages
import FerryProtocol
import Foundation
import Testing
@testable import FerryVips

/// Formats libvips reads only through ImageMagick's loader: written by ImageMagick at test time, each is let in by
/// its signature, named, and measured; what has no signature Ferry trusts is refused with a message that says so.
@Suite struct MagickFormatTests {
    /// A 30×20 gradient written by ImageMagick's `convert` as `format`.
    static func written(_ format: String) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-magick-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(format)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let convert = Process()
        // /usr/bin: ImageMagick's own (Debian's imagemagick, which the Makefile installs), not a stand-in on the PATH.
        convert.executableURL = URL(fileURLWithPath: "/usr/bin/convert")
        convert.arguments = ["-size", "30x20", "gradient:red-blue", "\(format):\(path)"]
        try convert.run()
        convert.waitUntilExit()
        guard convert.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func signature(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { raw in ferry_vips_magick_format(raw.baseAddress, raw.count).map { String(cString: $0) } }
    }

    /// (what ImageMagick writes, the name Ferry reports). PNM's five kinds; Radiance HDR is libvips's own loader.
    static let written: [(String, String)] = [
        ("bmp", "bmp"), ("ico", "ico"), ("psd", "psd"), ("dds", "dds"), ("ppm", "pnm"), ("pgm", "pnm"), ("pbm", "pnm"),
        ("pam", "pnm"), ("pfm", "pnm"), ("exr", "exr"), ("sgi", "sgi"), ("sun", "sun"), ("tga", "tga"), ("hdr", "hdr"),
    ]

    @Test(arguments: written) func eachIsReadWithItsNameAndSize(format: String, name: String) throws {
        let bytes = try MagickFormatTests.written(format)
        #expect(try Vips.verify(bytes, maxPixels: 1_000_000) == DecodedImage(format: name, width: 30, height: 20))
        let variant = try Vips.variant(of: bytes, ImageVariant(width: 15, height: nil, format: .png), maxPixels: 1_000_000)
        #expect(try Vips.verify(variant.bytes, maxPixels: 1_000_000) == DecodedImage(format: "png", width: 15, height: 10))
        // Upright: the gradient runs from red at the top to blue at the bottom (a TGA stored bottom-up says
        // orientation 4, which ImageMagick applied already). Grey formats have no red to find.
        guard !["pgm", "pbm"].contains(format) else { return }
        let (top, bottom) = try MagickFormatTests.redness(variant.bytes, rows: (0, 9))
        #expect(top > 100 && bottom < -100, "red minus blue: \(top) at the top, \(bottom) at the bottom")
    }

    /// Red minus blue of the pixel in column 1 of each of two rows, as ImageMagick reads the PNG.
    static func redness(_ png: [UInt8], rows: (Int, Int)) throws -> (Int, Int) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-magick-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).png").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(png).write(to: URL(fileURLWithPath: path))
        let convert = Process(), out = Pipe()
        convert.executableURL = URL(fileURLWithPath: "/usr/bin/convert")
        convert.arguments = [path, "-format", "%[fx:round(255*(p{1,\(rows.0)}.r-p{1,\(rows.0)}.b))] %[fx:round(255*(p{1,\(rows.1)}.r-p{1,\(rows.1)}.b))]", "info:"]
        convert.standardOutput = out
        try convert.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        convert.waitUntilExit()
        let numbers = text.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard numbers.count == 2 else { throw CocoaError(.fileReadCorruptFile) }
        return (numbers[0], numbers[1])
    }

    /// An uncompressed TGA starts 00 00 02 00, as a cursor file does: it is named TGA, and a cut one is not let in.
    @Test func aTGAIsNotACursorAndACutOneIsRefused() throws {
        let tga = try MagickFormatTests.written("tga")
        #expect(MagickFormatTests.signature(tga) == "tga")
        #expect(MagickFormatTests.signature(Array(tga.prefix(tga.count - 30))) == nil, "pixels missing")
        #expect(throws: ImageDecodeError.self) { try Vips.verify(Array(tga.prefix(tga.count - 30)), maxPixels: 1_000_000) }
        var cursor = try MagickFormatTests.written("ico")
        cursor[2] = 2
        #expect(MagickFormatTests.signature(cursor) == nil, "CUR: ImageMagick reads those bytes as a TGA, and fails")
    }

    /// Byte by byte: each check refuses a header one field away from a real one.
    @Test func headersOneFieldOffAreRefused() throws {
        var ico = try MagickFormatTests.written("ico")
        #expect(MagickFormatTests.signature(ico) == "ico")
        ico[4] = 0  // no image
        #expect(MagickFormatTests.signature(ico) == nil)
        ico = try MagickFormatTests.written("ico")
        ico[18] = 6  // the first image inside the directory
        ico[19] = 0
        #expect(MagickFormatTests.signature(ico) == nil)
        var dds = try MagickFormatTests.written("dds")
        dds[4] = 0  // header size 0
        #expect(MagickFormatTests.signature(dds) == nil)
        var tga = try MagickFormatTests.written("tga")
        tga[16] = 7  // no such pixel depth
        #expect(MagickFormatTests.signature(tga) == nil)
        tga = try MagickFormatTests.written("tga")
        tga[1] = 1  // a colour map on a true-colour image
        #expect(MagickFormatTests.signature(tga) == nil)
        #expect(MagickFormatTests.signature(Array("P8\n1 1\n".utf8)) == nil && MagickFormatTests.signature(Array("P6x".utf8)) == nil)
        #expect(MagickFormatTests.signature(Array("BM".utf8) + [UInt8](repeating: 0, count: 40)) == nil, "no DIB header size")
        #expect(MagickFormatTests.signature([]) == nil && MagickFormatTests.signature([0, 0, 1, 0]) == nil)
    }

    /// ImageMagick reads these too, but they carry no signature Ferry trusts (text, ImageMagick's own format):
    /// to Ferry they are bytes nothing reads.
    @Test(arguments: ["xpm", "xbm", "miff"]) func formatsWithoutATrustedSignatureAreRefused(format: String) throws {
        let bytes = try MagickFormatTests.written(format)
        #expect(MagickFormatTests.signature(bytes) == nil)
        #expect {
            try Vips.verify(bytes, maxPixels: 1_000_000)
        } throws: { error in
            guard case .unknownFormat(let message) = error as? ImageDecodeError else { return false }
            return message.contains("no format Ferry decodes")
        }
    }
}
