import FerryImages
import FerryProtocol
import Synchronization
import Testing
@testable import FerryVips

/// Counts what a decoder says it holds, and the most at once.
final class CountingMemory: DecodeMemory, Sendable {
    let state = Mutex<(now: Int, most: Int, taken: [Int])>((0, 0, []))
    func taking(_ bytes: Int) {
        state.withLock { s in
            s.now += bytes
            s.most = max(s.most, s.now)
            s.taken.append(bytes)
        }
    }
    func giving(_ bytes: Int) { state.withLock { $0.now -= bytes } }
}

@Suite struct VipsDecoderTests {
    /// Strips for what libvips reads in strips, the whole picture for the rest.
    @Test func workingBytesFollowHowTheFormatDecodes() {
        #expect(Vips.workingBytes(of: DecodedImage(format: "webp", width: 500, height: 600)) == 1_200_000)
        #expect(Vips.workingBytes(of: DecodedImage(format: "jpeg", width: 500, height: 600)) == 500 * 256 * 4)
        #expect(Vips.workingBytes(of: DecodedImage(format: "png", width: 500, height: 100)) == 200_000)
    }

    /// Each decode and resize is counted while it runs and given back after, failures too.
    @Test func decodesAndResizesAreCountedWhileTheyRun() async throws {
        let pool = WorkerPool(threads: 2, name: "test-decoder")
        defer { pool.stop() }
        let memory = CountingMemory()
        let decoder = VipsDecoder(pool: pool, memory: memory)
        let webp = try Vips.testImage(width: 300, height: 600, format: "webp")
        let jpeg = try Vips.testImage(width: 300, height: 600, format: "jpeg")
        _ = try await decoder.verify(webp[...], maxPixels: 1_000_000)
        _ = try await decoder.verify(jpeg[...], maxPixels: 1_000_000)
        _ = try await decoder.variant(of: webp[...], ImageVariant(width: 30, height: nil), maxPixels: 1_000_000)
        await #expect(throws: ImageDecodeError.self) { try await decoder.verify(jpeg.prefix(jpeg.count / 2), maxPixels: 1_000_000) }
        let s = memory.state.withLock { $0 }
        #expect(s.taken == [720_000, 307_200, 720_000, 307_200])
        #expect(s.now == 0, "every byte taken was given back")
        #expect(s.most >= 720_000)
    }
}
