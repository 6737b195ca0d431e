import Testing
@testable import FerryImageFormat

@Suite struct FixtureTests {
    @Test(arguments: Fixture.all)
    func formatAndExactSize(_ fixture: Fixture) throws {
        let bytes = try fixture.bytes()
        let info = try ImageSniffer.sniff(bytes)
        #expect(info == fixture.expected)
        #expect(info.pixels == fixture.width * fixture.height)
    }

    @Test(arguments: Fixture.all)
    func everyOverloadAgrees(_ fixture: Fixture) throws {
        let bytes = try fixture.bytes()
        #expect(try ImageSniffer.sniff(bytes[...]) == fixture.expected, "ArraySlice")
        #expect(try bytes.withUnsafeBytes { try ImageSniffer.sniff($0) } == fixture.expected, "UnsafeRawBufferPointer")
        #expect(try ImageSniffer.sniff(AnyRandomAccessCollection(bytes)) == fixture.expected, "non-contiguous")
    }

    /// Every prefix, from empty to the whole file: an error (`.truncated` or `.notAnImage`) until the header is
    /// complete, the exact answer from then on. Never a crash, never a wrong size, never `.tooLarge`.
    @Test(arguments: Fixture.all)
    func everyPrefixIsRefusedOrRight(_ fixture: Fixture) throws {
        let bytes = try fixture.bytes()
        var headerEnd: Int?
        for length in 0...bytes.count {
            let result = sniffResult(Array(bytes[..<length]))
            if case .success(let info) = result {
                #expect(info == fixture.expected, "prefix of \(length) bytes")
                if headerEnd == nil { headerEnd = length }
            } else {
                #expect(headerEnd == nil, "prefix of \(length) bytes fails after \(headerEnd ?? 0) succeeded")
                #expect(isRefusal(result), "prefix of \(length) bytes: \(result)")
            }
        }
        let end = try #require(headerEnd, "the whole file sniffs")
        #expect(end >= 10, "no format has its size in fewer than 10 bytes")
        #expect(sniffResult([]) == .failure(.notAnImage("empty body (0 bytes)")))
    }

    @Test(arguments: Fixture.all)
    func pixelLimitIsInclusive(_ fixture: Fixture) throws {
        let bytes = try fixture.bytes()
        let pixels = fixture.width * fixture.height
        #expect(sniffResult(bytes, maxPixels: pixels) == .success(fixture.expected))
        #expect(
            sniffResult(bytes, maxPixels: pixels - 1)
                == .failure(.tooLarge(width: fixture.width, height: fixture.height, limit: pixels - 1))
        )
    }

    @Test func exifThumbnailIsNotMistakenForTheImage() throws {
        // The EXIF segment holds a 24×16 JPEG with its own SOF marker before the real one.
        let bytes = try Fixture.bytes("jpeg-exif-45x27.jpg")
        let sof0 = bytes.indices.dropLast().filter { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC0 }
        #expect(sof0.count == 2, "fixture has the thumbnail's SOF0 and the image's")
        #expect(try ImageSniffer.sniff(bytes) == ImageInfo(format: .jpeg, width: 45, height: 27))
    }

    @Test func heicGridUsesThePrimaryItemNotTheLargestExtent() throws {
        // libheif stores 64×48 as a 64×64 coded tile plus a 64×48 grid item, the primary one.
        let bytes = try Fixture.bytes("heic-64x48.heic")
        #expect(try ImageSniffer.sniff(bytes) == ImageInfo(format: .heic, width: 64, height: 48))
        let thumbnail = try Fixture.bytes("heic-thumb-64x48.heic")
        #expect(try ImageSniffer.sniff(thumbnail) == ImageInfo(format: .heic, width: 64, height: 48))
    }

    @Test func topDownBMPStoresANegativeHeight() throws {
        let bytes = try Fixture.bytes("bmp-topdown-17x7.bmp")
        #expect(Int32(bitPattern: UInt32(bytes[22]) | UInt32(bytes[23]) << 8 | UInt32(bytes[24]) << 16
            | UInt32(bytes[25]) << 24) == -7)
        #expect(try ImageSniffer.sniff(bytes) == ImageInfo(format: .bmp, width: 17, height: 7))
    }

    @Test func formatNames() {
        #expect(ImageFormat.allCases.count == 7)
        #expect(ImageFormat.jpeg.mimeType == "image/jpeg")
        #expect(ImageFormat.jpeg.fileExtension == "jpg")
        #expect(ImageFormat.avif.mimeType == "image/avif")
        #expect(ImageFormat.webp.name == "WebP")
        #expect(ImageInfo(format: .png, width: 37, height: 21).description == "png 37×21")
    }
}
