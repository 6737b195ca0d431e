import Testing
@testable import FerryImageFormat

@Suite struct NotAnImageTests {
    @Test func emptyBody() {
        #expect(sniffResult([]) == .failure(.notAnImage("empty body (0 bytes)")))
    }

    @Test func htmlErrorPage() throws {
        let page = try Fixture.bytes("page.html")
        #expect(sniffResult(page) == .failure(.notAnImage(
            "starts with \"<!DOCTYPE html>\": looks like HTML, not an image"
        )))
    }

    @Test func htmlWithoutDoctypeAfterByteOrderMarkAndBlanks() {
        let page: [UInt8] = [0xEF, 0xBB, 0xBF] + Bytes.ascii("\n  <HTML><body>oops</body></HTML>")
        #expect(sniffResult(page) == .failure(.notAnImage("starts with \"<HTML>\": looks like HTML, not an image")))
    }

    @Test func jsonBody() throws {
        let result = sniffResult(try Fixture.bytes("body.json"))
        guard case .failure(.notAnImage(let message)) = result else {
            Issue.record("expected notAnImage, got \(result)")
            return
        }
        #expect(message.hasPrefix("starts with \"{\"error\""))
        #expect(message.hasSuffix("looks like JSON, not an image"))
    }

    @Test func svgIsRefusedAsAVectorFormat() throws {
        let withProlog = sniffResult(try Fixture.bytes("vector.svg"))
        let bare = sniffResult(Bytes.ascii("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"/>"))
        for result in [withProlog, bare] {
            guard case .failure(.notAnImage(let message)) = result else {
                Issue.record("expected notAnImage, got \(result)")
                continue
            }
            #expect(message.hasSuffix("SVG is not supported: a vector format has no pixel size"))
        }
    }

    @Test func otherXMLIsNotCalledSVG() {
        let result = sniffResult(Bytes.ascii("<?xml version=\"1.0\"?><rss version=\"2.0\"/>"))
        #expect(result == .failure(.notAnImage(
            "starts with \"<?xml version=\"1.0\"?>\": looks like XML, not an image"
        )))
    }

    @Test func plainText() {
        let result = sniffResult(Bytes.ascii("Service Unavailable\n"))
        #expect(result == .failure(.notAnImage("starts with \"Service Unavailable\": looks like text, not an image")))
    }

    @Test func textThatStartsLikeASignature() {
        // "BM" and "GIF" alone are not enough: a BMP needs a known DIB header size, a GIF a known version.
        #expect(isNotAnImage(sniffResult(Bytes.ascii("BMW announced a new model today"))))
        #expect(isNotAnImage(sniffResult(Bytes.ascii("GIF90a is not a GIF version"))))
    }

    @Test func compressedBodyGetsAHint() {
        let result = sniffResult([0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(result == .failure(.notAnImage(
            "starts with 1F 8B: gzip-compressed data; decode the Content-Encoding before sniffing"
        )))
    }

    @Test func otherContainers() {
        let wave = Bytes.ascii("RIFF") + Bytes.le32(36) + Bytes.ascii("WAVEfmt ")
        #expect(sniffResult(wave) == .failure(.notAnImage(
            "a RIFF container of type 'WAVE' (audio or video), not a WebP image"
        )))
        let mp4 = Bytes.box("ftyp", Bytes.ascii("isom") + [0, 0, 2, 0] + Bytes.ascii("isomiso2mp41"))
            + Bytes.box("moov", [])
        #expect(sniffResult(mp4) == .failure(.notAnImage(
            "ISO media file with brands 'isom', 'isom', 'iso2', 'mp41': "
                + "a video or audio container, not a HEIC or AVIF image"
        )))
    }

    @Test func randomBytesNeverSniffAsAnImage() {
        // A fixed xorshift sequence: the same "random" bodies on every run.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        for _ in 0..<1000 {
            let count = Int(next() % 64)
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
            #expect(isRefusal(sniffResult(bytes)), "\(bytes)")
        }
    }
}
