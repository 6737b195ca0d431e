import Testing
@testable import FerryImageFormat

@Suite struct HostileInputTests {
    @Test func pngBombIsRefusedFromItsHeader() {
        #expect(throws: ImageSniffError.tooLarge(width: 20000, height: 20000, limit: 100_000_000)) {
            try ImageSniffer.sniff(Bytes.png(width: 20000, height: 20000))
        }
        #expect(sniffResult(Bytes.png(width: 10000, height: 10000)) == .success(
            ImageInfo(format: .png, width: 10000, height: 10000)
        ), "exactly the limit is accepted")
    }

    @Test func pixelCountOverflowIsTooLarge() {
        let result = sniffResult(Bytes.png(width: .max, height: .max), maxPixels: .max)
        #expect(result == .failure(.tooLarge(width: 4_294_967_295, height: 4_294_967_295, limit: .max)))
    }

    @Test func pngWithZeroWidthOrAnotherFirstChunk() {
        #expect(isNotAnImage(sniffResult(Bytes.png(width: 0, height: 21))))
        #expect(sniffResult(Bytes.png(width: 1, height: 1, chunk: "CgBI")) == .failure(.notAnImage(
            "PNG's first chunk is 'CgBI', not IHDR as the PNG specification requires"
        )))
    }

    @Test func jpegZeroLengthSegmentIsAnError() {
        let bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x00, 0xFF, 0xC0, 0, 11, 8, 0, 10, 0, 10, 3]
        #expect(sniffResult(bytes) == .failure(.notAnImage(
            "JPEG segment FF E1 at offset 2 declares length 0; the minimum is 2"
        )))
        #expect(isNotAnImage(sniffResult([0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x01, 0xFF, 0xC0])))
    }

    @Test func jpegEndlessFillBytesEndWithTheData() {
        let bytes: [UInt8] = [0xFF, 0xD8] + [UInt8](repeating: 0xFF, count: 1_000_000)
        guard case .failure(.truncated) = sniffResult(bytes) else {
            Issue.record("expected truncated")
            return
        }
    }

    @Test func jpegManyEmptySegmentsEndWithTheData() {
        var bytes: [UInt8] = [0xFF, 0xD8]
        for _ in 0..<100_000 { bytes += [0xFF, 0xFE, 0x00, 0x02] }  // empty COM segments
        guard case .failure(.truncated) = sniffResult(bytes) else {
            Issue.record("expected truncated")
            return
        }
    }

    @Test func jpegFillBytesRestartMarkersAndTablesAreWalked() {
        let bytes: [UInt8] = [
            0xFF, 0xD8, 0xFF, 0xFF, 0xFF, 0xE0, 0x00, 0x02,  // fill bytes, empty APP0
            0xFF, 0xD0,  // RST0: no length
            0xFF, 0xC4, 0x00, 0x06, 0xFF, 0xC0, 0xFF, 0xC0,  // DHT whose data looks like SOF0: skipped
            0xFF, 0xC2, 0x00, 0x0B, 0x08, 0x00, 0x11, 0x00, 0x21, 0x01, 0x01, 0x11, 0x00,  // SOF2 33×17
        ]
        #expect(sniffResult(bytes) == .success(ImageInfo(format: .jpeg, width: 33, height: 17)))
    }

    @Test func jpegWithoutFrameHeader() {
        #expect(isNotAnImage(sniffResult([0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02])), "scan before SOF")
        #expect(isNotAnImage(sniffResult([0xFF, 0xD8, 0xFF, 0xD9])), "EOI before SOF")
        #expect(isNotAnImage(sniffResult([0xFF, 0xD8, 0x12, 0x34])), "no marker after SOI")
        #expect(isNotAnImage(sniffResult([0xFF, 0xD8, 0xFF, 0xC0, 0, 11, 8, 0, 0, 0, 9, 1])), "height 0 (DNL)")
    }

    @Test func webpWithABogusFirstChunk() throws {
        var bytes = try Fixture.bytes("webp-lossy-41x23.webp")
        bytes.replaceSubrange(12..<16, with: Bytes.ascii("JUNK"))
        #expect(sniffResult(bytes) == .failure(.notAnImage(
            "WebP's first chunk is 'JUNK'; a WebP starts with 'VP8 ', 'VP8L' or 'VP8X'"
        )))
    }

    @Test func webpWithBrokenChunkHeaders() throws {
        var lossy = try Fixture.bytes("webp-lossy-41x23.webp")
        lossy[24] = 0x00  // start code 9D 01 2A broken
        #expect(isNotAnImage(sniffResult(lossy)))
        var lossless = try Fixture.bytes("webp-lossless-29x13.webp")
        lossless[20] = 0x2E  // signature 2F broken
        #expect(isNotAnImage(sniffResult(lossless)))
        var extended = try Fixture.bytes("webp-alpha-31x17.webp")
        extended.replaceSubrange(16..<20, with: Bytes.le32(2))  // VP8X chunk too small for a canvas size
        #expect(isNotAnImage(sniffResult(extended)))
    }

    @Test func bmpNegativeHeightIsTopDown() {
        let topDown = Bytes.bmp(width: 15, height: -9)
        #expect(sniffResult(topDown) == .success(ImageInfo(format: .bmp, width: 15, height: 9)))
        #expect(sniffResult(Bytes.bmp(width: 15, height: .min)) == .failure(
            .tooLarge(width: 15, height: 2_147_483_648, limit: 100_000_000)
        ))
    }

    @Test func bmpNegativeWidthOrUnknownHeader() {
        #expect(sniffResult(Bytes.bmp(width: -15, height: 9)) == .failure(.notAnImage(
            "BMP's DIB header says width -15: a width cannot be negative"
        )))
        #expect(isNotAnImage(sniffResult(Bytes.bmp(width: 15, height: 9, headerSize: 41))))
    }

    // HEIF files made by hand: ftyp + meta (FullBox) / iprp / ipco / ispe, with or without pitm/ipma.

    private static let avifFtyp = Bytes.box("ftyp", Bytes.ascii("mif1") + [0, 0, 0, 0] + Bytes.ascii("mif1avifmiaf"))

    @Test func heifPrimaryItemChoosesItsExtent() {
        let ipma = [1, 0, 0, 1] + Bytes.be32(2)  // version 1 (u32 item IDs), flags 1 (15-bit indices), 2 entries
            + Bytes.be32(3) + [1, 0x80, 0x02]  // item 3: property 2
            + Bytes.be32(7) + [2, 0x80, 0x00, 0x00, 0x03]  // item 7: no property, property 3
        let file = Self.avifFtyp + Bytes.box("meta", [0, 0, 0, 0]
            + Bytes.box("pitm", [0, 0, 0, 0, 0, 7])
            + Bytes.box("iprp", Bytes.box("ipco", Bytes.ispe(16, 12) + Bytes.ispe(640, 480) + Bytes.ispe(64, 48))
                + Bytes.box("ipma", ipma)))
        #expect(sniffResult(file) == .success(ImageInfo(format: .avif, width: 64, height: 48)))
    }

    @Test func heifWithoutPrimaryItemUsesTheLargestExtent() {
        let file = Self.avifFtyp + Bytes.box("meta", [0, 0, 0, 0]
            + Bytes.box("iprp", Bytes.box("ipco", Bytes.ispe(16, 12) + Bytes.ispe(640, 480) + Bytes.ispe(64, 48))))
        #expect(sniffResult(file) == .success(ImageInfo(format: .avif, width: 640, height: 480)))
    }

    @Test func heifLargeSizeAndToTheEndBoxes() {
        let file = Bytes.box("ftyp", Bytes.ascii("heic") + [0, 0, 0, 0])
            + Bytes.be32(1) + Bytes.ascii("free") + Bytes.be32(0) + Bytes.be32(20) + [0, 0, 0, 0]  // 64-bit size
            + Bytes.box("meta", [0, 0, 0, 0] + Bytes.box("iprp", Bytes.box("ipco", Bytes.ispe(33, 44))))
            + Bytes.be32(0) + Bytes.ascii("mdat") + [1, 2, 3]  // size 0: to the end
        #expect(sniffResult(file) == .success(ImageInfo(format: .heic, width: 33, height: 44)))
    }

    @Test func heifBrokenOrIncompleteBoxes() {
        let noExtent = Self.avifFtyp + Bytes.box("meta", [0, 0, 0, 0]
            + Bytes.box("iprp", Bytes.box("ipco", Bytes.box("pixi", [0, 0, 0, 0, 1, 8]))))
        #expect(sniffResult(noExtent) == .failure(.notAnImage(
            "AVIF has no 'ispe' (image spatial extents) property: its size is unknown"
        )))
        let overrun = Self.avifFtyp + Bytes.box("meta", [0, 0, 0, 0] + Bytes.be32(200) + Bytes.ascii("iprp"))
        #expect(isNotAnImage(sniffResult(overrun)), "child box larger than its parent")
        let hugeMdat = Self.avifFtyp + Bytes.be32(1) + Bytes.ascii("mdat") + [UInt8](repeating: 0xFF, count: 8)
        #expect(isRefusal(sniffResult(hugeMdat)), "a 2^64-byte box before meta")
        let ipmaBomb = Self.avifFtyp + Bytes.box("meta", [0, 0, 0, 0]
            + Bytes.box("pitm", [0, 0, 0, 0, 0, 7])
            + Bytes.box("iprp", Bytes.box("ipco", Bytes.ispe(16, 12))
                + Bytes.box("ipma", [0, 0, 0, 0] + Bytes.be32(0xFFFF_FFFF) + [0, 1, 0])))
        #expect(isNotAnImage(sniffResult(ipmaBomb)), "4 billion ipma entries in a 20-byte box")
    }

    /// Bytes of every fixture overwritten at fixed pseudo-random places, some also cut: whatever the sniffer
    /// makes of them, it returns.
    @Test(arguments: Fixture.all)
    func mutatedFixturesNeverCrashOrHang(_ fixture: Fixture) throws {
        let original = try fixture.bytes()
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        func next() -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % 1_000_003)
        }
        for _ in 0..<2000 {
            var bytes = original
            for _ in 0...(next() % 4) {
                bytes[next() % bytes.count] = [0x00, 0xFF, UInt8(next() % 256)][next() % 3]
            }
            if next() % 4 == 0 { bytes.removeLast(next() % bytes.count) }
            if case .success(let info) = sniffResult(bytes) {
                #expect(info.width > 0 && info.height > 0 && info.pixels <= ImageSniffer.defaultMaxPixels)
            }
        }
    }
}
