import Foundation
import Testing
@testable import FerryImageFormat

@Suite struct ImageCompletenessTests {
    static func fixture(_ name: String) -> [UInt8] {
        var url = URL(fileURLWithPath: #filePath)
        url.deleteLastPathComponent()
        return Array(try! Data(contentsOf: url.appendingPathComponent("Fixtures/\(name)")))
    }

    /// Every cut of a PNG is found, down to its last byte; the whole file and the file with bytes after IEND pass.
    @Test func aPNGIsCompleteOnlyWithItsIENDChunk() {
        let png = Self.fixture("png-37x21.png")
        #expect(ImageCompleteness.problem(in: png, format: .png) == nil)
        #expect(ImageCompleteness.problem(in: png + [0, 0, 0], format: .png) == nil)
        for cut in 8..<png.count {
            #expect(ImageCompleteness.problem(in: Array(png.prefix(cut)), format: .png) != nil, "cut at \(cut)")
        }
        #expect(ImageCompleteness.problem(in: Array(png.dropLast()), format: .png)
            == "PNG ends inside its IEND chunk (\(png.count - 1) of \(png.count) bytes)")
    }

    @Test func aGIFIsCompleteOnlyWithItsTrailer() {
        let gif = Self.fixture("gif-19x11.gif")
        #expect(ImageCompleteness.problem(in: gif, format: .gif) == nil)
        #expect(ImageCompleteness.problem(in: gif + [0, 0], format: .gif) == nil, "zero padding after the trailer")
        #expect(ImageCompleteness.problem(in: Array(gif.dropLast()), format: .gif) != nil)
        #expect(ImageCompleteness.problem(in: Array(gif.prefix(13)), format: .gif) != nil)
    }

    /// WebP and BMP declare their size: fewer bytes are a cut, more are padding (a header followed by zeros
    /// decodes as a grey or black picture, and only the size shows it).
    @Test(arguments: ["webp-lossy-41x23.webp", "webp-alpha-31x17.webp", "bmp-15x9.bmp", "bmp-v5-11x5.bmp"])
    func webpAndBMPEndWhereTheyDeclare(name: String) {
        let bytes = Self.fixture(name)
        let format: ImageFormat = name.hasPrefix("webp") ? .webp : .bmp
        #expect(ImageCompleteness.problem(in: bytes, format: format) == nil)
        #expect(ImageCompleteness.problem(in: Array(bytes.dropLast(4)), format: format) != nil)
        #expect(ImageCompleteness.problem(in: Array(bytes.prefix(30)) + [UInt8](repeating: 0, count: 4096), format: format) != nil)
        #expect(ImageCompleteness.problem(in: bytes + [UInt8](repeating: 0, count: 64), format: format)?.contains("padded") == true)
    }

    @Test func otherFormatsAreTheDecodersToCheck() {
        let jpeg = Self.fixture("jpeg-baseline-64x40.jpg")
        #expect(ImageCompleteness.problem(in: Array(jpeg.prefix(100)), format: .jpeg) == nil)
    }
}
