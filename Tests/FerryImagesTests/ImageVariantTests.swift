import FerryProtocol
import Synchronization
import Testing
@testable import FerryImages

/// A variant store in memory that counts, and drops other versions' variants as the daemon's does.
final class CountingVariantStore: VariantStoring, @unchecked Sendable {
    private let state = Mutex<(values: [String: StoredVariant], reads: Int, keeps: Int)>(([:], 0, 0))
    /// The variants' keys (not the originals' verdicts).
    var keys: [String] { state.withLock { $0.values.keys.filter { !$0.contains("/verdict ") } } }
    var reads: Int { state.withLock { $0.reads } }
    var keeps: Int { state.withLock { $0.keeps } }

    func variant(_ key: VariantKey) async -> StoredVariant? {
        state.withLock { s in
            s.reads += 1
            return s.values[key.storeKey]
        }
    }

    func keep(_ variant: StoredVariant, _ key: VariantKey) async {
        state.withLock { s in
            s.keeps += 1
            s.values = s.values.filter { !$0.key.hasPrefix(key.originalPrefix) || $0.key.hasPrefix(key.versionPrefix) }
            s.values[key.storeKey] = variant
        }
    }
}

@Suite struct ImageVariantTests {
    let url = "http://a.test/poster.png"

    func request(_ width: Int, fit: ImageFit = .cover, density: Int = 1) -> ImageRequest {
        var r = ImageRequest(url: url)
        r.variant = ImageVariant(width: width, height: width, fit: fit, format: .webp, density: density)
        return r
    }

    func setup(delay: Duration = .zero) -> (FakeImageFetcher, CountingDecoder, CountingVariantStore, ImageLoader) {
        let fetcher = FakeImageFetcher(body: ImageLoaderTests.png)
        let decoder = CountingDecoder(variantDelay: delay)
        let store = CountingVariantStore()
        let clock = fetcher.clock
        let loader = ImageLoader(fetcher: fetcher, decoder: decoder, variantStore: store, config: ImageLoader.Config(), now: { clock.now })
        return (fetcher, decoder, store, loader)
    }

    /// 50 clients asking one variant at once: one download, one decode, one resize; the next is a memory hit.
    @Test func fiftyRequestsForOneVariantCostOneDownloadAndOneResize() async throws {
        let (fetcher, decoder, store, loader) = setup(delay: .milliseconds(50))
        let tasks = (0..<50).map { k in Task { try await loader.load(request(64), subscriber: ImageSubscriber(id: UInt64(k + 1))) } }
        await fetcher.waitStarted(1)
        try await Task.sleep(for: .milliseconds(20))
        fetcher.release(url)
        var sources: [ImageSource] = []
        for t in tasks {
            let image = try await t.value
            #expect(image.info.width == 64 && image.info.format == "webp")
            sources.append(image.source)
        }
        #expect(sources.allSatisfy { $0 == .made })
        #expect(fetcher.started == [url] && decoder.calls == 1 && decoder.variants == 1)
        #expect(store.keeps == 2, "the original's verdict and the variant")
        let again = try await loader.load(request(64), subscriber: ImageSubscriber(id: 99))
        #expect(again.source == .memory)
        // 100 at density 2 and 200 at density 1 are one variant; another size is another.
        _ = try await loader.load(request(32, density: 2), subscriber: ImageSubscriber(id: 100))
        #expect(decoder.variants == 1)
        _ = try await loader.load(request(65), subscriber: ImageSubscriber(id: 101))
        #expect(decoder.variants == 2)
        let stats = await loader.snapshot()
        #expect(stats.variantsMade == 2 && stats.variantMemoryHits == 2 && stats.downloads == 1)
    }

    /// Out of memory, a variant is found in the store while its original's validator is the same; once the origin
    /// has a new version, a new variant is made and the old version's are dropped from the store.
    @Test func variantsFollowTheOriginalsValidator() async throws {
        let (fetcher, decoder, store, loader) = setup()
        fetcher.validator = "etag \"v1\""
        func fetchAgain(_ id: UInt64, started: Int) async throws -> LoadedImage {
            _ = await loader.evict(url: url)
            let t = Task { try await loader.load(request(64), subscriber: ImageSubscriber(id: id)) }
            await fetcher.waitStarted(started)
            fetcher.release(url)
            return try await t.value
        }
        #expect(try await fetchAgain(1, started: 1).source == .made)
        let first = store.keys
        #expect(first.count == 1)
        // The original again, same validator (as a 304 would keep it): the stored variant, no resize.
        let second = try await fetchAgain(2, started: 2)
        #expect(second.source == .disk && decoder.variants == 1)
        // A new version at the origin.
        fetcher.validator = "etag \"v2\""
        #expect(try await fetchAgain(3, started: 3).source == .made)
        #expect(decoder.variants == 2)
        #expect(store.keys.count == 1 && store.keys != first, "the old version's variant was dropped")
    }

    /// Every waiter gone: the job ends and the original's download, which nobody else wanted, stops.
    @Test func cancellingEveryWaiterStopsTheJobAndTheDownload() async throws {
        let (fetcher, decoder, _, loader) = setup()
        let a = Task { try await loader.load(request(64), subscriber: ImageSubscriber(id: 1)) }
        let b = Task { try await loader.load(request(64), subscriber: ImageSubscriber(id: 2)) }
        await fetcher.waitStarted(1)
        try await Task.sleep(for: .milliseconds(20))
        await loader.cancel(ImageSubscriber(id: 1))
        #expect(fetcher.cancelled.isEmpty, "one still waits")
        await loader.cancel(ImageSubscriber(id: 2))
        await #expect(throws: ImageError.self) { try await a.value }
        await #expect(throws: ImageError.self) { try await b.value }
        for _ in 0..<200 where fetcher.cancelled.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        #expect(fetcher.cancelled == [url])
        #expect(decoder.variants == 0)
        let stats = await loader.snapshot()
        #expect(stats.inFlight == 0)
    }

    /// Every waiter gone while the variant is being made: the resize is told to stop (its thread freed), nothing
    /// is kept, and a later request makes it afresh.
    @Test func cancellingDuringTheResizeStopsIt() async throws {
        let (fetcher, decoder, store, loader) = setup(delay: .seconds(30))
        let t = Task { try await loader.load(request(64), subscriber: ImageSubscriber(id: 1)) }
        await fetcher.waitStarted(1)
        fetcher.release(url)
        for _ in 0..<400 where decoder.variants == 0 { try await Task.sleep(for: .milliseconds(5)) }
        await loader.cancel(ImageSubscriber(id: 1))
        await #expect(throws: ImageError.self) { try await t.value }
        for _ in 0..<400 where decoder.cancelledVariants == 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(decoder.cancelledVariants == 1 && store.keys.isEmpty)
        #expect(await loader.snapshot().variantFailures == 0, "a cancel is not a failure")
    }

    /// One client asking twenty variants cannot hold back another's one: with two resize slots, the other's
    /// starts among the first three made.
    @Test func aClientAskingManyVariantsDoesNotHoldBackAnothersOne() async throws {
        let (fetcher, decoder, _, loader) = setup(delay: .milliseconds(20))
        // The original first, so that every job goes straight to its resize.
        let warm = Task { try await loader.load(ImageRequest(url: url), subscriber: ImageSubscriber(id: 1000)) }
        await fetcher.waitStarted(1)
        fetcher.release(url)
        _ = try await warm.value
        func owned(_ width: Int, owner: UInt64) -> ImageRequest {
            var r = request(width)
            r.owner = owner
            return r
        }
        decoder.closeGate()
        let many = (0..<20).map { k in Task { try await loader.load(owned(100 + k, owner: 1), subscriber: ImageSubscriber(id: UInt64(k + 1))) } }
        // Both decoders busy with the first client's, and the rest of its twenty in line.
        for _ in 0..<2000 where await loader.snapshot().variantsWaiting < 18 { try await Task.sleep(for: .milliseconds(2)) }
        #expect(decoder.variants == 2)
        let one = Task { try await loader.load(owned(50, owner: 2), subscriber: ImageSubscriber(id: 500)) }
        for _ in 0..<2000 where await loader.snapshot().variantsWaiting < 19 { try await Task.sleep(for: .milliseconds(2)) }
        decoder.openGate()
        #expect(try await one.value.info.width == 50)
        let order = decoder.variantWidths
        #expect(order.firstIndex(of: 50) == 2, "begun third, right after the two running: \(order.prefix(5))")
        for t in many { _ = try await t.value }
        #expect(decoder.variants == 21)
    }

    /// The bytes of a disk hit decoded before (their verdict is in the store): no second decode. Other bytes under
    /// the same validator are decoded again.
    @Test func aDiskHitReusesTheVerdictOfTheSameBytes() async throws {
        let (fetcher, decoder, _, loader) = setup()
        fetcher.validator = "etag \"v1\""
        let plain = ImageRequest(url: url)
        func load(_ id: UInt64, started: Int, bytes: [UInt8]? = nil) async throws -> LoadedImage {
            _ = await loader.evict(url: url)
            let t = Task { try await loader.load(plain, subscriber: ImageSubscriber(id: id)) }
            await fetcher.waitStarted(started)
            fetcher.release(url, bytes: bytes)
            return try await t.value
        }
        _ = try await load(1, started: 1)
        fetcher.source = .disk
        let again = try await load(2, started: 2)
        #expect(again.info.width == 37 && decoder.calls == 1)
        #expect(await loader.snapshot().verdictsReused == 1)
        var other = ImageLoaderTests.png
        other[other.count - 1] ^= 1  // the IEND CRC: other bytes, still whole
        _ = try await load(3, started: 3, bytes: other)
        #expect(decoder.calls == 2, "other bytes under the same ETag are decoded")
    }

    /// An original nobody may keep (no-store, private): its variant is made for the request and kept nowhere.
    @Test func variantsOfAnOriginalNobodyMayKeepAreNotKept() async throws {
        let (fetcher, decoder, store, loader) = setup()
        fetcher.mayKeep = false
        let t = Task { try await loader.load(request(64), subscriber: ImageSubscriber(id: 1)) }
        await fetcher.waitStarted(1)
        fetcher.release(url)
        #expect(try await t.value.source == .made)
        #expect(store.keeps == 0 && store.reads == 0 && decoder.variants == 1, "neither variant nor verdict")
        #expect(await loader.snapshot().entries == 0)
    }

    /// `image.prefetch` with a variant: the original's download waits behind direct requests like any prefetch,
    /// then the variant is made and kept; a request for it afterwards is a memory hit.
    @Test func aPrefetchedVariantIsMadeBehindDirectRequests() async throws {
        let fetcher = FakeImageFetcher(body: ImageLoaderTests.png)
        let decoder = CountingDecoder()
        let clock = fetcher.clock
        var config = ImageLoader.Config()
        config.maxConcurrent = 1
        let loader = ImageLoader(fetcher: fetcher, decoder: decoder, variantStore: CountingVariantStore(), config: config, now: { clock.now })
        let running = Task { try await loader.load(ImageRequest(url: "http://a.test/first.png"), subscriber: ImageSubscriber(id: 1)) }
        await fetcher.waitStarted(1)
        #expect(await loader.prefetch([request(64)]) == 1)
        try await Task.sleep(for: .milliseconds(20))  // the prefetch's job reaches the queue
        let direct = Task { try await loader.load(ImageRequest(url: "http://a.test/direct.png"), subscriber: ImageSubscriber(id: 2)) }
        try await Task.sleep(for: .milliseconds(20))
        fetcher.release("http://a.test/first.png")
        _ = try await running.value
        await fetcher.waitStarted(2)
        #expect(fetcher.started.last == "http://a.test/direct.png", "the direct request before the prefetched variant's original")
        fetcher.release("http://a.test/direct.png")
        _ = try await direct.value
        await fetcher.waitStarted(3)
        #expect(fetcher.started.last == url)
        fetcher.release(url)
        for _ in 0..<200 where decoder.variants == 0 { try await Task.sleep(for: .milliseconds(2)) }
        for _ in 0..<100 where await loader.snapshot().entries < 4 { try await Task.sleep(for: .milliseconds(2)) }
        let hit = try await loader.load(request(64), subscriber: ImageSubscriber(id: 3))
        let prefetched = await loader.snapshot().prefetched
        #expect(hit.source == .memory && decoder.variants == 1 && prefetched == 1)
    }

    /// A direct request for a variant whose prefetch waits in line: the original's download moves ahead of the
    /// prefetches queued before it.
    @Test func aDirectRequestForAPrefetchedVariantMovesItsDownloadUp() async throws {
        let fetcher = FakeImageFetcher(body: ImageLoaderTests.png)
        let clock = fetcher.clock
        var config = ImageLoader.Config()
        config.maxConcurrent = 1
        let loader = ImageLoader(fetcher: fetcher, decoder: CountingDecoder(), variantStore: CountingVariantStore(), config: config, now: { clock.now })
        let running = Task { try await loader.load(ImageRequest(url: "http://a.test/first.png"), subscriber: ImageSubscriber(id: 1)) }
        await fetcher.waitStarted(1)
        #expect(await loader.prefetch([ImageRequest(url: "http://a.test/earlier.png")]) == 1)
        #expect(await loader.prefetch([request(64)]) == 1)
        try await Task.sleep(for: .milliseconds(20))  // the variant's job queues its original, behind earlier.png
        let wanted = Task { try await loader.load(request(64), subscriber: ImageSubscriber(id: 3)) }
        try await Task.sleep(for: .milliseconds(20))
        fetcher.release("http://a.test/first.png")
        _ = try await running.value
        await fetcher.waitStarted(2)
        #expect(fetcher.started.last == url, "asked for directly: ahead of the prefetch queued before it")
        // Both released in the order they started (so that a failure above does not leave the test waiting).
        fetcher.release(fetcher.started[1])
        await fetcher.waitStarted(3)
        fetcher.release(fetcher.started[2])
        #expect(try await wanted.value.source == .made)
    }
}
