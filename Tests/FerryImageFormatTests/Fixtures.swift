import Foundation
import Testing
@testable import FerryImageFormat

/// A committed fixture image (see Fixtures/make_fixtures.sh for how each was made) and what it must sniff as.
struct Fixture: Sendable, CustomStringConvertible {
    var file: String
    var format: ImageFormat
    var width: Int
    var height: Int

    var expected: ImageInfo { ImageInfo(format: format, width: width, height: height) }
    var description: String { file }

    /// Every image fixture: one or more per format, each at its own non-square size.
    static let all: [Fixture] = [
        Fixture(file: "png-37x21.png", format: .png, width: 37, height: 21),
        Fixture(file: "jpeg-baseline-64x40.jpg", format: .jpeg, width: 64, height: 40),
        Fixture(file: "jpeg-progressive-33x17.jpg", format: .jpeg, width: 33, height: 17),
        Fixture(file: "jpeg-exif-45x27.jpg", format: .jpeg, width: 45, height: 27),
        Fixture(file: "gif-19x11.gif", format: .gif, width: 19, height: 11),
        Fixture(file: "webp-lossy-41x23.webp", format: .webp, width: 41, height: 23),
        Fixture(file: "webp-lossless-29x13.webp", format: .webp, width: 29, height: 13),
        Fixture(file: "webp-alpha-31x17.webp", format: .webp, width: 31, height: 17),
        Fixture(file: "bmp-15x9.bmp", format: .bmp, width: 15, height: 9),
        Fixture(file: "bmp-core-13x7.bmp", format: .bmp, width: 13, height: 7),
        Fixture(file: "bmp-v5-11x5.bmp", format: .bmp, width: 11, height: 5),
        Fixture(file: "bmp-topdown-17x7.bmp", format: .bmp, width: 17, height: 7),
        Fixture(file: "heic-64x48.heic", format: .heic, width: 64, height: 48),
        Fixture(file: "heic-thumb-64x48.heic", format: .heic, width: 64, height: 48),
        Fixture(file: "avif-48x32.avif", format: .avif, width: 48, height: 32),
        Fixture(file: "avif-alpha-27x19.avif", format: .avif, width: 27, height: 19),
    ]

    /// The bytes of a file in Fixtures/ (images, and the non-image bodies page.html, body.json, vector.svg).
    static func bytes(_ file: String) throws -> [UInt8] {
        let directory = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        return [UInt8](try Data(contentsOf: directory.appendingPathComponent(file)))
    }

    func bytes() throws -> [UInt8] { try Fixture.bytes(file) }
}

/// `ImageSniffer.sniff` as a value, to compare outcomes with `#expect(… == …)`.
func sniffResult(
    _ bytes: [UInt8], maxPixels: Int = ImageSniffer.defaultMaxPixels
) -> Result<ImageInfo, ImageSniffError> {
    Result { () throws(ImageSniffError) -> ImageInfo in try ImageSniffer.sniff(bytes, maxPixels: maxPixels) }
}

/// Whether the outcome is `.notAnImage` or `.truncated`: what any cut or broken input must give.
func isRefusal(_ result: Result<ImageInfo, ImageSniffError>) -> Bool {
    switch result {
    case .failure(.notAnImage), .failure(.truncated): true
    default: false
    }
}

/// Whether the outcome is `.notAnImage`.
func isNotAnImage(_ result: Result<ImageInfo, ImageSniffError>) -> Bool {
    if case .failure(.notAnImage) = result { return true }
    return false
}

/// Byte builders for hand-made headers.
enum Bytes {
    static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func le32(_ value: UInt32) -> [UInt8] { be32(value).reversed() }

    static func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A PNG signature and IHDR chunk (CRC not computed: the sniffer does not check it).
    static func png(width: UInt32, height: UInt32, chunk: String = "IHDR") -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be32(13) + ascii(chunk) + be32(width) + be32(height)
            + [8, 6, 0, 0, 0] + [0, 0, 0, 0]
    }

    /// A BMP file header and BITMAPINFOHEADER start with the given signed width and height.
    static func bmp(width: Int32, height: Int32, headerSize: UInt32 = 40) -> [UInt8] {
        ascii("BM") + le32(70) + [0, 0, 0, 0] + le32(54) + le32(headerSize)
            + le32(UInt32(bitPattern: width)) + le32(UInt32(bitPattern: height)) + [1, 0, 24, 0]
    }

    /// An ISO box with a 32-bit size.
    static func box(_ type: String, _ content: [UInt8]) -> [UInt8] {
        be32(UInt32(content.count + 8)) + ascii(type) + content
    }

    /// An `ispe` property: version/flags, width, height.
    static func ispe(_ width: UInt32, _ height: UInt32) -> [UInt8] {
        box("ispe", [0, 0, 0, 0] + be32(width) + be32(height))
    }
}
