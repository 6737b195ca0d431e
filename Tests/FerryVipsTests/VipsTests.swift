#if canImport(Glibc)
import Glibc
#endif
import FerryImages
import FerryProtocol
import Foundation
import Testing
@testable import FerryVips

/// libvips through the shim, on images it makes itself: every format it writes here decodes with its size; cuts,
/// garbage and zeros after a real header do not; EXIF orientation turns the displayed size.
@Suite struct VipsTests {
    static let formats = ["jpeg", "png", "webp", "gif", "avif", "heic", "tiff"]

    @Test(arguments: formats) func anImageDecodesWithItsFormatAndSize(format: String) throws {
        let bytes = try Vips.testImage(width: 30, height: 20, format: format)
        let decoded = try Vips.verify(bytes, maxPixels: 1_000_000)
        #expect(decoded == DecodedImage(format: format, width: 30, height: 20))
    }

    /// Cuts at a geometric series of lengths and one byte short of the end; what libvips still decodes one byte
    /// short (PNG without its IEND, GIF without its trailer) is the sniffer's `ImageCompleteness` to refuse.
    @Test(arguments: formats) func cutImagesDoNotDecode(format: String) throws {
        let bytes = try Vips.testImage(width: 64, height: 48, format: format)
        var cut = 13
        while cut < bytes.count - 1 {
            #expect(throws: ImageDecodeError.self, "\(format) cut at \(cut) of \(bytes.count)") {
                try Vips.verify(Array(bytes.prefix(cut)), maxPixels: 1_000_000)
            }
            cut = cut * 2
        }
        if format != "png" && format != "gif" {
            #expect(throws: ImageDecodeError.self, "\(format) one byte short") { try Vips.verify(Array(bytes.dropLast()), maxPixels: 1_000_000) }
        }
    }

    @Test(arguments: formats) func aRealHeaderFollowedByGarbageOrZerosDoesNotDecode(format: String) throws {
        let bytes = try Vips.testImage(width: 64, height: 48, format: format)
        var generator = SplitMix(seed: 7)
        let header = Array(bytes.prefix(min(64, bytes.count / 2)))
        let random = header + (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let zeros = header + [UInt8](repeating: 0, count: 1 << 20)
        let html = header + Array(String(repeating: "<p>not an image</p>", count: 2000).utf8)
        for (name, input) in [("random", random), ("zeros", zeros), ("html", html)] {
            #expect(throws: ImageDecodeError.self, "\(format) header + \(name)") { try Vips.verify(input, maxPixels: 1_000_000) }
        }
    }

    /// EXIF orientation 6 (rotate 90° clockwise to display) and 8: a stored 30×20 shows as 20×30.
    @Test(arguments: [1, 3, 6, 8]) func orientationTurnsTheDisplayedSize(orientation: Int) throws {
        let bytes = try Vips.testImage(width: 30, height: 20, format: "jpeg", orientation: orientation)
        let decoded = try Vips.verify(bytes, maxPixels: 1_000_000)
        #expect(decoded.orientation == orientation)
        let turned = orientation >= 5
        #expect(decoded.width == (turned ? 20 : 30) && decoded.height == (turned ? 30 : 20))
    }

    @Test func thePixelLimitIsCheckedFromTheHeader() throws {
        let bytes = try Vips.testImage(width: 300, height: 200, format: "png")
        #expect(throws: ImageDecodeError.tooLarge(width: 300, height: 200, pages: 1, limit: 59_999)) {
            try Vips.verify(bytes, maxPixels: 59_999)
        }
        #expect(try Vips.verify(bytes, maxPixels: 60_000).width == 300)
    }

    @Test func svgIsReadAtItsNominalSize() throws {
        let svg = Array("<svg xmlns='http://www.w3.org/2000/svg' width='40' height='10'><rect width='40' height='10' fill='red'/></svg>".utf8)
        #expect(try Vips.verify(svg, maxPixels: 1_000_000) == DecodedImage(format: "svg", width: 40, height: 10))
    }

    @Test func whatNoLoaderReadsIsAnUnknownFormat() {
        for input in [Array("<!DOCTYPE html><html><body>hi</body></html>".utf8), [UInt8](repeating: 0, count: 4096), [1, 2, 3]] {
            #expect {
                try Vips.verify(input, maxPixels: 1_000_000)
            } throws: { error in
                guard case .unknownFormat = error as? ImageDecodeError else { return false }
                return true
            }
        }
    }
}

/// A small deterministic generator for test bytes.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Formats beyond the sniffer's seven, and what must not reach a loader.
@Suite struct VipsFormatTests {
    @Test func bmpThroughImageMagicksLoaderIsLetInByItsSignature() throws {
        var url = URL(fileURLWithPath: #filePath)
        url.deleteLastPathComponent()
        url.deleteLastPathComponent()
        let bmp = Array(try Data(contentsOf: url.appendingPathComponent("FerryImageFormatTests/Fixtures/bmp-15x9.bmp")))
        #expect(try Vips.verify(bmp, maxPixels: 1_000_000) == DecodedImage(format: "bmp", width: 15, height: 9))
    }

    /// An animated GIF (made by ImageMagick: three 20×10 frames) is verified frame by frame and reports its frames;
    /// its GIF variant keeps them (AnimatedVariantTests), its PNG variant is the first frame.
    @Test func anAnimatedGIFHasItsFrames() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-anim-\(getpid()).gif").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let convert = Process()
        // /usr/bin: ImageMagick's own (Debian's imagemagick, which the Makefile installs), not a stand-in on the PATH.
        convert.executableURL = URL(fileURLWithPath: "/usr/bin/convert")
        convert.arguments = ["-size", "20x10", "xc:red", "xc:green", "xc:blue", "-loop", "0", path]
        try convert.run()
        convert.waitUntilExit()
        #expect(convert.terminationStatus == 0)
        let gif = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(try Vips.verify(gif, maxPixels: 1_000_000) == DecodedImage(format: "gif", width: 20, height: 10, pages: 3))
        #expect(throws: ImageDecodeError.tooLarge(width: 20, height: 10, pages: 3, limit: 599)) { try Vips.verify(gif, maxPixels: 599) }
        let made = try Vips.variant(of: gif, ImageVariant(width: 10, height: nil), maxPixels: 1_000_000)
        #expect(try Vips.verify(made.bytes, maxPixels: 1_000_000) == DecodedImage(format: "gif", width: 10, height: 5, pages: 3))
        let still = try Vips.variant(of: gif, ImageVariant(width: 10, height: nil, format: .png), maxPixels: 1_000_000)
        #expect(try Vips.verify(still.bytes, maxPixels: 1_000_000) == DecodedImage(format: "png", width: 10, height: 5, pages: 1))
    }

    /// libvips reads CSV and matrix text files as images; bytes from the web never reach those loaders.
    @Test func dataFileLoadersAreNotOffered() {
        let matrix = Array("2 2\n1 2\n3 4\n".utf8)
        #expect {
            try Vips.verify(matrix, maxPixels: 1_000_000)
        } throws: { error in
            switch error as? ImageDecodeError {
            case .unknownFormat?, .refusedFormat?: return true
            default: return false
            }
        }
    }
}
