import FerryBytes
import FerryImageFormat
import FerryProtocol
import Foundation
import Synchronization
import Testing
@testable import FerryImages

/// Wall-clock time the test moves by hand.
final class ManualClock: Sendable {
    private let ms = Mutex<Int64>(1_800_000_000_000)
    var now: Int64 { ms.withLock { $0 } }
    func advance(ms delta: Int64) { ms.withLock { $0 += delta } }
}

/// A fetcher the test drives: each fetch waits until the test releases its URL (or the fetch is cancelled).
final class FakeImageFetcher: ImageFetching, @unchecked Sendable {
    private struct State {
        var waiting: [String: [CheckedContinuation<Result<FetchedImage, ImageError>, Never>]] = [:]
        var started: [String] = []
        var cancelled: [String] = []
    }
    private let state = Mutex(State())
    let body: [UInt8]
    let clock: ManualClock
    var mayKeep = true
    /// The ETag (or Last-Modified) the fetches report; nil: none (the loader digests the body).
    var validator: String?
    /// Where the fetches say the bytes came from (`.disk`: the HTTP cache).
    var source = ImageSource.network

    init(body: [UInt8], clock: ManualClock = ManualClock()) {
        self.body = body
        self.clock = clock
    }

    func fetch(_ request: ImageRequest, maxBytes: Int) async throws(ImageError) -> FetchedImage {
        state.withLock { $0.started.append(request.url) }
        let url = request.url
        let outcome: Result<FetchedImage, ImageError> = await withTaskCancellationHandler {
            await withCheckedContinuation { c in
                let cancelledAlready = state.withLock { s -> Bool in
                    if s.cancelled.contains(url) { return true }
                    s.waiting[url, default: []].append(c)
                    return false
                }
                if cancelledAlready { c.resume(returning: .failure(.cancelled)) }
            }
        } onCancel: {
            let waiting = state.withLock { s -> [CheckedContinuation<Result<FetchedImage, ImageError>, Never>] in
                s.cancelled.append(url)
                return s.waiting.removeValue(forKey: url) ?? []
            }
            for c in waiting { c.resume(returning: .failure(.cancelled)) }
        }
        return try outcome.get()
    }

    /// Lets the fetches of `url` finish with `body` (or `bytes`).
    func release(_ url: String, bytes: [UInt8]? = nil) {
        let waiting = state.withLock { $0.waiting.removeValue(forKey: url) ?? [] }
        let image = FetchedImage(body: (bytes ?? body)[...], url: url, source: source, freshUntilMs: clock.now + 60_000, mayKeep: mayKeep,
                                 validator: validator)
        for c in waiting { c.resume(returning: .success(image)) }
    }

    var started: [String] { state.withLock { $0.started } }
    var cancelled: [String] { state.withLock { $0.cancelled } }

    /// Waits (briefly) until `n` fetches have started.
    func waitStarted(_ n: Int) async {
        for _ in 0..<500 where started.count < n { try? await Task.sleep(for: .milliseconds(2)) }
    }
}

/// A decoder that counts its calls and answers from the sniffer (or with the failure the test sets), so the
/// loader's rules are tested without libvips (FerryVipsTests test the real one).
final class CountingDecoder: ImageDecoding, @unchecked Sendable {
    private let state = Mutex<(calls: Int, failure: ImageDecodeError?, variants: Int, cancelled: Int, widths: [Int])>((0, nil, 0, 0, []))
    var calls: Int { state.withLock { $0.calls } }
    /// Variants made.
    var variants: Int { state.withLock { $0.variants } }
    func fail(with error: ImageDecodeError?) { state.withLock { $0.failure = error } }
    /// How long making a variant takes (so that requests arriving meanwhile can join it).
    let variantDelay: Duration

    init(variantDelay: Duration = .zero) { self.variantDelay = variantDelay }

    /// While closed, variants wait before they begin their work (each already counted as begun).
    private let gate = Mutex(true)
    func closeGate() { gate.withLock { $0 = false } }
    func openGate() { gate.withLock { $0 = true } }

    /// The box widths of the variants, in the order they were begun.
    var variantWidths: [Int] { state.withLock { $0.widths } }

    /// Variants whose caller went away while they were being made.
    var cancelledVariants: Int { state.withLock { $0.cancelled } }

    /// A variant's bytes name the variant and the original they were made of.
    func variant(of bytes: ArraySlice<UInt8>, _ variant: ImageVariant, maxPixels: Int) async throws(ImageDecodeError) -> StoredVariant {
        state.withLock {
            $0.variants += 1
            $0.widths.append(variant.boxWidth)
        }
        while !gate.withLock({ $0 }) && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
        try? await Task.sleep(for: variantDelay)
        if Task.isCancelled {
            state.withLock { $0.cancelled += 1 }
            throw .cancelled
        }
        return StoredVariant(bytes: Array("\(variant.keyPart) of \(Checksum64.of(bytes))".utf8),
                             info: DecodedImage(format: "webp", width: variant.boxWidth, height: max(1, variant.boxHeight)))
    }

    func verify(_ bytes: ArraySlice<UInt8>, maxPixels: Int) async throws(ImageDecodeError) -> DecodedImage {
        let failure = state.withLock { s -> ImageDecodeError? in
            s.calls += 1
            return s.failure
        }
        if let failure { throw failure }
        guard let info = try? ImageSniffer.sniff(bytes, maxPixels: maxPixels) else { throw .unknownFormat("not sniffed") }
        return DecodedImage(format: info.format.rawValue, width: info.width, height: info.height)
    }
}

@Suite struct ImageLoaderTests {
    static let png: [UInt8] = {
        var url = URL(fileURLWithPath: #filePath)
        url.deleteLastPathComponent()
        url.deleteLastPathComponent()
        return Array(try! Data(contentsOf: url.appendingPathComponent("FerryImageFormatTests/Fixtures/png-37x21.png")))
    }()

    func loader(_ fetcher: FakeImageFetcher, concurrent: Int = 6, decoder: any ImageDecoding = CountingDecoder()) -> ImageLoader {
        var config = ImageLoader.Config()
        config.maxConcurrent = concurrent
        let clock = fetcher.clock
        return ImageLoader(fetcher: fetcher, decoder: decoder, config: config, now: { clock.now })
    }

    /// One load of `url`, the fetcher answering once `started` fetches began: the outcome, success or failure.
    func loadReleased(_ l: ImageLoader, _ fetcher: FakeImageFetcher, _ url: String, id: UInt64,
                      started: Int = 1) async -> Result<LoadedImage, ImageError> {
        let t = Task { () async -> Result<LoadedImage, ImageError> in
            do throws(ImageError) { return .success(try await l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: id))) } catch {
                return .failure(error)
            }
        }
        await fetcher.waitStarted(started)
        fetcher.release(url)
        return await t.value
    }

    @Test func aMemoryEntryPastItsFreshnessIsNotServed() async throws {
        let fetcher = FakeImageFetcher(body: Self.png)
        let l = loader(fetcher)
        let url = "http://a.test/fresh.png"
        async let first = l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 1))
        await fetcher.waitStarted(1)
        fetcher.release(url)
        _ = try await first
        #expect(try await l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 2)).source == .memory)
        fetcher.clock.advance(ms: 60_001)
        async let later = l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 3))
        await fetcher.waitStarted(2)
        fetcher.release(url)
        #expect(try await later.source == .network, "stale: downloaded again (the fetch path revalidates)")
        #expect(fetcher.started == [url, url])
    }

    @Test func concurrentRequestsShareOneDownloadAndTheMemoryTierAnswersAfter() async throws {
        let fetcher = FakeImageFetcher(body: Self.png)
        let decoder = CountingDecoder()
        let l = loader(fetcher, decoder: decoder)
        let url = "http://a.test/p.png"
        async let a = l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 1))
        async let b = l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 2))
        await fetcher.waitStarted(1)
        try await Task.sleep(for: .milliseconds(20))
        fetcher.release(url)
        let (x, y) = try await (a, b)
        #expect(x.info.width == 37 && y.info.height == 21 && x.source == .network)
        #expect(fetcher.started == [url], "one download for both")
        let again = try await l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 3))
        #expect(again.source == .memory)
        let stats = await l.snapshot()
        #expect(stats.downloads == 1 && stats.coalesced == 1 && stats.memoryHits == 1 && stats.entries == 1)
        #expect(decoder.calls == 1 && stats.decodes == 1, "decoded once for both, and not again for the memory hit")
    }

    @Test func cancellingOneSubscriberLeavesTheOtherAndTheLastOneStopsTheDownload() async throws {
        let fetcher = FakeImageFetcher(body: Self.png)
        let l = loader(fetcher)
        let url = "http://a.test/c.png"
        let first = Task { try await l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 1)) }
        let second = Task { try await l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 2)) }
        await fetcher.waitStarted(1)
        try await Task.sleep(for: .milliseconds(20))
        await l.cancel(ImageSubscriber(id: 1))
        await #expect(throws: ImageError.self) { try await first.value }
        #expect(fetcher.cancelled.isEmpty, "another subscriber still waits")
        fetcher.release(url)
        #expect(try await second.value.info.format == "png")

        let lone = Task { try await l.load(ImageRequest(url: "http://a.test/gone.png"), subscriber: ImageSubscriber(id: 3)) }
        await fetcher.waitStarted(2)
        await l.cancel(ImageSubscriber(id: 3))
        await #expect(throws: ImageError.self) { try await lone.value }
        for _ in 0..<100 where fetcher.cancelled.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
        #expect(fetcher.cancelled == ["http://a.test/gone.png"])
        #expect(await l.snapshot().inFlight == 0)
    }

    @Test func downloadsWaitForASlotAndPrefetchesYieldToDirectRequests() async throws {
        let fetcher = FakeImageFetcher(body: Self.png)
        let l = loader(fetcher, concurrent: 1)
        let running = Task { try await l.load(ImageRequest(url: "http://a.test/1.png"), subscriber: ImageSubscriber(id: 1)) }
        await fetcher.waitStarted(1)
        #expect(await l.prefetch([ImageRequest(url: "http://a.test/pre.png")]) == 1)
        let direct = Task { try await l.load(ImageRequest(url: "http://a.test/2.png"), subscriber: ImageSubscriber(id: 2)) }
        try await Task.sleep(for: .milliseconds(30))
        #expect(fetcher.started == ["http://a.test/1.png"], "one slot: the others wait")
        #expect(await l.snapshot().queued == 2)
        fetcher.release("http://a.test/1.png")
        _ = try await running.value
        await fetcher.waitStarted(2)
        #expect(fetcher.started.last == "http://a.test/2.png", "the direct request goes before the prefetch")
        fetcher.release("http://a.test/2.png")
        _ = try await direct.value
        await fetcher.waitStarted(3)
        #expect(fetcher.started.last == "http://a.test/pre.png")
        fetcher.release("http://a.test/pre.png")
        for _ in 0..<100 where await l.snapshot().entries < 3 { try await Task.sleep(for: .milliseconds(2)) }
        #expect(await l.snapshot().entries == 3, "the prefetch warmed the memory tier")
    }

    @Test func prefetchesOfOriginsThatNeverAnswerCannotHoldTheSlotsOfDirectRequests() async throws {
        let fetcher = FakeImageFetcher(body: Self.png)
        let l = loader(fetcher, concurrent: 6)
        let stuck = (0..<50).map { ImageRequest(url: "http://black.hole/\($0).png") }
        #expect(await l.prefetch(stuck) == 50)
        await fetcher.waitStarted(2)
        try await Task.sleep(for: .milliseconds(20))
        #expect(fetcher.started.count == 2, "a minority of the six slots: \(fetcher.started.count)")
        let direct = Task { try await l.load(ImageRequest(url: "http://a.test/now.png"), subscriber: ImageSubscriber(id: 1)) }
        await fetcher.waitStarted(3)
        #expect(fetcher.started.last == "http://a.test/now.png", "started at once, ahead of 48 waiting prefetches")
        fetcher.release("http://a.test/now.png")
        #expect(try await direct.value.source == .network)
        // Asking directly for a running prefetch frees its prefetch slot for the next one.
        let joined = Task { try await l.load(ImageRequest(url: "http://black.hole/0.png"), subscriber: ImageSubscriber(id: 2)) }
        await fetcher.waitStarted(4)
        #expect(fetcher.started.count == 4 && fetcher.started.last?.hasPrefix("http://black.hole/") == true)
        joined.cancel()
    }

    /// One client asking for six images from origins that never answer holds half the six slots; another client's
    /// request starts at once (issue 10, item 5).
    @Test func oneClientHoldsAtMostHalfTheDownloadSlots() async throws {
        let fetcher = FakeImageFetcher(body: Self.png)
        let l = loader(fetcher, concurrent: 6)
        var hog: [Task<LoadedImage, any Error>] = []
        for n in 0..<6 {
            var r = ImageRequest(url: "http://black.hole/\(n).png")
            r.owner = 1
            hog.append(Task { try await l.load(r, subscriber: ImageSubscriber(id: UInt64(10 + n))) })
        }
        await fetcher.waitStarted(3)
        try await Task.sleep(for: .milliseconds(20))
        let queued = await l.snapshot().queued
        #expect(fetcher.started.count == 3 && queued == 3, "the hog holds its share: \(fetcher.started)")
        var fair = ImageRequest(url: "http://a.test/mine.png")
        fair.owner = 2
        let mine = Task { try await l.load(fair, subscriber: ImageSubscriber(id: 1)) }
        await fetcher.waitStarted(4)
        #expect(fetcher.started.last == "http://a.test/mine.png", "started at once, ahead of the hog's three waiting")
        fetcher.release("http://a.test/mine.png")
        #expect(try await mine.value.source == .network)
        for t in hog { t.cancel() }
    }

    @Test func notAnImageIsAnErrorAndNotKept() async throws {
        let fetcher = FakeImageFetcher(body: Array("<!DOCTYPE html><p>hi".utf8))
        let l = loader(fetcher)
        let url = "http://a.test/page"
        let t = Task { try await l.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 1)) }
        await fetcher.waitStarted(1)
        fetcher.release(url)
        do {
            _ = try await t.value
            Issue.record("an HTML page was accepted as an image")
        } catch let e as ImageError {
            guard case .invalidImage = e else { Issue.record("invalid_image expected, got \(e)"); return }
        }
        #expect(await l.snapshot().entries == 0)
    }

    /// What does not decode is refused with the decoder's reason, counted, and not kept: the next request
    /// downloads and decodes again.
    @Test func anImageThatDoesNotDecodeIsRefusedAndNotKept() async throws {
        let fetcher = FakeImageFetcher(body: Self.png)
        let decoder = CountingDecoder()
        decoder.fail(with: .undecodable("IDAT: invalid stored block lengths"))
        let l = loader(fetcher, decoder: decoder)
        let url = "http://a.test/corrupt.png"
        guard case .failure(.decode(.undecodable(let why))) = await loadReleased(l, fetcher, url, id: 1) else {
            Issue.record("an image that does not decode was not refused as undecodable")
            return
        }
        #expect(why.contains("IDAT"))
        let stats = await l.snapshot()
        #expect(stats.entries == 0 && stats.invalid == 1 && stats.decodes == 1 && stats.decodeFailures == 1)
        decoder.fail(with: nil)
        #expect(try await loadReleased(l, fetcher, url, id: 2, started: 2).get().source == .network)
        #expect(decoder.calls == 2)
    }

    /// A PNG cut by its last byte has every pixel (decoders accept it); its missing IEND refuses it before any decode.
    @Test func aPNGWithoutItsEndIsRefusedBeforeDecoding() async throws {
        let fetcher = FakeImageFetcher(body: Array(Self.png.dropLast()))
        let decoder = CountingDecoder()
        let l = loader(fetcher, decoder: decoder)
        guard case .failure(.invalidImage(.truncated)) = await loadReleased(l, fetcher, "http://a.test/cut.png", id: 1) else {
            Issue.record("a cut PNG was not refused as truncated")
            return
        }
        #expect(decoder.calls == 0)
    }

    /// Bytes the sniffer does not know go to the decoder, which may read them (TIFF, SVG, …).
    @Test func formatsTheSnifferDoesNotKnowAreTheDecodersToJudge() async throws {
        let fetcher = FakeImageFetcher(body: Array("<svg xmlns='http://www.w3.org/2000/svg' width='8' height='4'/>".utf8))
        let l = loader(fetcher, decoder: SVGDecoder())
        let image = try await loadReleased(l, fetcher, "http://a.test/v.svg", id: 1).get()
        #expect(image.info == DecodedImage(format: "svg", width: 8, height: 4))
    }

    @Test func theMemoryTierKeepsItsByteBudgetEntryCountAndSizeRule() {
        var cache = ImageMemoryCache(budget: 10_000, maxEntries: 3)
        func image(_ size: Int) -> CachedImage {
            CachedImage(bytes: [UInt8](repeating: 1, count: size)[...], info: .init(format: "png", width: 1, height: 1),
                        url: "u", freshUntilMs: 1_000)
        }
        #expect(cache.insert(image(100), for: "a") == .stored)
        #expect(cache.insert(image(100), for: "b") == .stored)
        #expect(cache.insert(image(100), for: "c") == .stored)
        _ = cache.image(for: "a", nowMs: 0)  // a is now the most recent
        #expect(cache.insert(image(100), for: "d") == .stored)
        #expect(cache.count == 3 && cache.image(for: "b", nowMs: 0) == nil, "the entry count evicts the least recent")
        #expect(cache.insert(image(2000), for: "big") == .oversized, "over a tenth of the budget: not kept")
        #expect(cache.image(for: "big", nowMs: 0) == nil)
        #expect(cache.image(for: "a", nowMs: 1_000) == nil, "stale: dropped")
        #expect(cache.bytes <= 10_000)
    }
}

/// A decoder that reads only SVG (by its first bytes) and says it is 8×4.
struct SVGDecoder: ImageDecoding {
    func verify(_ bytes: ArraySlice<UInt8>, maxPixels: Int) async throws(ImageDecodeError) -> DecodedImage {
        guard bytes.starts(with: Array("<svg".utf8)) else { throw .unknownFormat("not svg") }
        return DecodedImage(format: "svg", width: 8, height: 4)
    }

    func variant(of bytes: ArraySlice<UInt8>, _ variant: ImageVariant, maxPixels: Int) async throws(ImageDecodeError) -> StoredVariant {
        throw .unavailable("no variants here")
    }
}

/// What a client is told about bytes no decoder reads.
@Suite struct NotAnImageMessageTests {
    static let decoder = "no format Ferry decodes"

    @Test func theSniffersWordsStayWhenTheySayWhatTheBytesAre() {
        let html = ImageVerifier.notAnImage(hint: ImageSnifferHint.of("<!DOCTYPE html><p>404"), decoder: Self.decoder)
        #expect(html.contains("looks like HTML"))
        #expect(ImageVerifier.notAnImage(hint: nil, decoder: Self.decoder) == Self.decoder)
    }

    /// "TIFF is not supported" or "not PNG, JPEG, …" are the sniffer's own limits, not the daemon's.
    @Test func theSniffersWordsAboutItsOwnFormatsGive() {
        let unknown = ImageVerifier.notAnImage(hint: ImageSnifferHint.of([0x0A, 5, 1, 8, 0, 0, 0, 0, 9, 9]), decoder: Self.decoder)
        #expect(unknown == "unrecognised bytes 0A 05 01 08 00 00 00 00: \(Self.decoder)")
        let ico = ImageVerifier.notAnImage(hint: ImageSnifferHint.of([0, 0, 1, 0, 0, 0, 0, 0, 0, 0]), decoder: Self.decoder)
        #expect(ico.hasPrefix(Self.decoder) && !ico.contains("not supported"), "\(ico)")
    }

    @Test func anEmptyBodyIsNotAnImage() async {
        struct EmptyBody: ImageFetching {
            func fetch(_ request: ImageRequest, maxBytes: Int) async throws(ImageError) -> FetchedImage {
                FetchedImage(body: [][...], url: request.url, source: .network, freshUntilMs: 0, mayKeep: true)
            }
        }
        let decoder = CountingDecoder()
        let verifier = ImageVerifier(fetcher: EmptyBody(), decoder: decoder, store: nil, maxPixels: 1_000_000, maxBytes: 1 << 20)
        guard case .failure(.invalidImage(.notAnImage(let why))) = await verifier.download(ImageRequest(url: "http://o.test/empty")).outcome else {
            Issue.record("refused as not an image"); return
        }
        #expect(why.contains("empty") && decoder.calls == 0, "not the decoder's business")
    }
}

/// The sniffer's hint for bytes that are not one of its seven formats.
enum ImageSnifferHint {
    static func of(_ text: String) -> String? { of(Array(text.utf8)) }
    static func of(_ bytes: [UInt8]) -> String? {
        do { _ = try ImageSniffer.sniff(bytes) } catch .notAnImage(let why) { return why } catch { return nil }
        return nil
    }
}
