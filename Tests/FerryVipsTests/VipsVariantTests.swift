import FerryImages
import FerryProtocol
import Testing
@testable import FerryVips

/// Variants of every input format to every output format, with the exact size each fit gives, checked by decoding
/// the output.
@Suite struct VipsVariantTests {
    static let inputs = ["jpeg", "png", "webp", "gif", "avif", "heic", "tiff"]

    /// A 300×200 original in a 100×100 box.
    static let expected: [(ImageFit, Int, Int)] = [(.inside, 100, 67), (.cover, 100, 100), (.contain, 100, 100), (.fill, 100, 100), (.outside, 150, 100)]

    @Test(arguments: inputs) func everyFitToEveryFormat(input: String) throws {
        let original = try Vips.testImage(width: 300, height: 200, alpha: input == "png", format: input)
        for format in ImageOutputFormat.allCases {
            for (fit, width, height) in Self.expected {
                let made = try Vips.variant(of: original, ImageVariant(width: 100, height: 100, fit: fit, format: format), maxPixels: 1_000_000)
                let decoded = try Vips.verify(made.bytes, maxPixels: 1_000_000)
                let name = format == .original ? (["tiff"].contains(input) ? "png" : input) : format.rawValue
                #expect(decoded.format == name && decoded.width == width && decoded.height == height,
                        "\(input) → \(format) \(fit): \(decoded)")
                #expect(made.info.width == width && made.info.height == height && made.info.format == name)
            }
        }
    }

    /// A JPEG stored 300×200 with EXIF orientation 6 displays as 200×300: its variants are upright and sized by
    /// what is displayed.
    @Test func variantsAreMadeUpright() throws {
        let original = try Vips.testImage(width: 300, height: 200, format: "jpeg", orientation: 6)
        let inside = try Vips.variant(of: original, ImageVariant(width: 100, height: 100), maxPixels: 1_000_000)
        #expect(try Vips.verify(inside.bytes, maxPixels: 1_000_000) == DecodedImage(format: "jpeg", width: 67, height: 100))
        let outside = try Vips.variant(of: original, ImageVariant(width: 100, height: 100, fit: .outside), maxPixels: 1_000_000)
        #expect(outside.info.width == 100 && outside.info.height == 150)
    }

    @Test func oneSideOrNoneAndTheDensity() throws {
        let original = try Vips.testImage(width: 300, height: 200, format: "png")
        let wide = try Vips.variant(of: original, ImageVariant(width: 60, height: nil), maxPixels: 1_000_000)
        #expect(wide.info.width == 60 && wide.info.height == 40)
        let tall = try Vips.variant(of: original, ImageVariant(width: nil, height: 50, density: 2), maxPixels: 1_000_000)
        #expect(tall.info.width == 150 && tall.info.height == 100)
        let converted = try Vips.variant(of: original, ImageVariant(width: nil, height: nil, format: .webp), maxPixels: 1_000_000)
        #expect(try Vips.verify(converted.bytes, maxPixels: 1_000_000) == DecodedImage(format: "webp", width: 300, height: 200))
    }

    /// SVG is rendered at the size asked, not scaled from a small bitmap.
    @Test func vectorsAreRenderedAtTheSizeAsked() throws {
        let svg = Array("<svg xmlns='http://www.w3.org/2000/svg' width='40' height='10'><rect width='40' height='10' fill='red'/></svg>".utf8)
        let made = try Vips.variant(of: svg, ImageVariant(width: 400, height: nil, format: .png), maxPixels: 1_000_000)
        #expect(try Vips.verify(made.bytes, maxPixels: 1_000_000) == DecodedImage(format: "png", width: 400, height: 100))
    }

    /// A set flag stops a resize between tiles: a large variant of a large original ends `.cancelled`.
    @Test func aCancelledResizeStops() throws {
        let original = try Vips.testImage(width: 6000, height: 4000, format: "jpeg")
        let flag = CancelFlag()
        flag.set()
        #expect(throws: ImageDecodeError.cancelled) {
            try Vips.variant(of: original, ImageVariant(width: 5000, height: 3000, fit: .fill, format: .png), maxPixels: 100_000_000,
                             cancel: flag)
        }
        let made = try Vips.variant(of: original, ImageVariant(width: 60, height: nil), maxPixels: 100_000_000, cancel: CancelFlag())
        #expect(made.info.width == 60, "an unset flag changes nothing")
    }

    @Test func aCorruptOriginalMakesNoVariant() throws {
        let original = try Vips.testImage(width: 300, height: 200, format: "jpeg")
        #expect {
            try Vips.variant(of: Array(original.prefix(original.count / 2)), ImageVariant(width: 50, height: 50), maxPixels: 1_000_000)
        } throws: { error in
            guard case .undecodable = error as? ImageDecodeError else { return false }
            return true
        }
    }
}
