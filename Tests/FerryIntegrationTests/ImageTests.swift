import Foundation
import Testing
import FerryClient
#if canImport(Glibc)
import Glibc
#endif

/// `image.*` against a real ferryd and the project's origin serving the committed fixture images (and, made here,
/// truncated copies and a header that claims a huge size).
extension IntegrationTests {
    @Suite struct ImageTests {
        static let fixtures: String = {
            var url = URL(fileURLWithPath: #filePath)
            url.deleteLastPathComponent()
            url.deleteLastPathComponent()
            return url.appendingPathComponent("FerryImageFormatTests/Fixtures").path
        }()

        /// A daemon and an origin serving a copy of the fixtures plus some bad images.
        final class Setup: @unchecked Sendable {
            let files = TempDir()
            let origin: OriginServer
            let daemon: Daemon
            let client: FerryClient
            init(daemonArgs: [String] = [], cacheDir: String? = nil) async throws {
                let fm = FileManager.default
                for name in try fm.contentsOfDirectory(atPath: ImageTests.fixtures) {
                    try fm.copyItem(atPath: ImageTests.fixtures + "/" + name, toPath: files.path + "/" + name)
                }
                let png = try Data(contentsOf: URL(fileURLWithPath: ImageTests.fixtures + "/png-37x21.png"))
                try png.prefix(20).write(to: URL(fileURLWithPath: files.path + "/cut.png"))   // ends inside IHDR
                var bomb = png.prefix(33)                                                      // IHDR claims 30000×30000
                bomb.replaceSubrange(16..<24, with: [0, 0, 0x75, 0x30, 0, 0, 0x75, 0x30])
                try bomb.write(to: URL(fileURLWithPath: files.path + "/bomb.png"))
                origin = try OriginServer(files: files.path)
                daemon = try Daemon(daemonArgs + (cacheDir.map { ["--cache-dir", $0] } ?? []))
                client = try await FerryClient.connect(path: daemon.socket)
            }
            func url(_ name: String, _ query: String = "") -> String { origin.url("/file/\(name)\(query.isEmpty ? "" : "?" + query)") }
            func stop() {
                client.close()
                daemon.stop()
                origin.stop()
                files.remove()
            }
        }

        static func code(of body: () async throws -> Void) async -> String? {
            do { try await body() } catch let e as FerryError { return e.codeName } catch { return "\(error)" }
            return nil
        }

        /// 50 prefetches of an origin that does not answer (for a minute) must not hold the download slots a direct
        /// request needs: it is answered while they still wait.
        @Test func prefetchesThatNeverFinishLeaveSlotsForDirectRequests() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let stuck = (0..<50).map { s.url("png-37x21.png", "delay_ms=60000&n=\($0)") }
            #expect(try await s.client.prefetchImages(stuck) == 50)
            try await Task.sleep(for: .milliseconds(200))
            let image = try await s.client.image(s.url("jpeg-baseline-64x40.jpg"), timeout: .seconds(10))
            #expect(image.width == 64 && image.source == .network)
            let stats = try await s.client.stats()
            #expect(stats["image"]?["in_flight"]?.intValue == 50, "the prefetches are still waiting: \(String(describing: stats["image"]))")
        }

        @Test func formatsAndSizesComeFromTheBytesAndTheMemoryTierAnswersAgain() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let expected: [(String, String, Int, Int)] = [
                ("png-37x21.png", "png", 37, 21), ("jpeg-progressive-33x17.jpg", "jpeg", 33, 17),
                ("gif-19x11.gif", "gif", 19, 11), ("webp-lossless-29x13.webp", "webp", 29, 13),
                ("bmp-15x9.bmp", "bmp", 15, 9), ("heic-64x48.heic", "heic", 64, 48), ("avif-48x32.avif", "avif", 48, 32),
            ]
            for (name, format, w, h) in expected {
                // A misleading extension and Content-Type must not matter: the bytes decide.
                let image = try await s.client.image(s.url(name, "cc=max-age%3D600&h=Content-Type:text/plain"))
                #expect(image.format == format && image.width == w && image.height == h, "\(name)")
                #expect(image.source == .network)
                let original = try Data(contentsOf: URL(fileURLWithPath: ImageTests.fixtures + "/" + name))
                #expect(image.bytes == Array(original))
                let again = try await s.client.image(s.url(name, "cc=max-age%3D600&h=Content-Type:text/plain"))
                #expect(again.source == .memory && again.bytes == image.bytes)
            }
            #expect(try s.origin.count(path: "/file/png-37x21.png") == 1)
        }

        /// An error status is the answer as soon as its head comes: the body behind it (4 MB over 4 s here) is not
        /// downloaded for nobody, its transfer stops.
        @Test func anErrorStatusStopsItsTransferAtItsHead() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let url = s.origin.url("/slow?status=404&size=4000000&chunks=40&interval_ms=100")
            let start = ContinuousClock.now
            #expect(await Self.code { _ = try await s.client.image(url) } == "not_found")
            #expect(ContinuousClock.now - start < .seconds(3), "answered at the head")
            var left: Int?
            for _ in 0..<50 {
                left = try await s.client.stats()["fetch"]?["in_flight"]?.arrayValue?.count
                if left == 0 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(left == 0, "the transfer of the unread body stopped (\(String(describing: left)) in flight a second on)")
        }

        @Test func bodiesThatAreNotImagesAreRefusedAndNotKept() async throws {
            let s = try await Setup()
            defer { s.stop() }
            for name in ["page.html", "body.json", "cut.png", "bomb.png"] {
                #expect(await Self.code { _ = try await s.client.image(s.url(name, "cc=max-age%3D600")) } == "invalid_image", "\(name)")
            }
            #expect(await Self.code { _ = try await s.client.image(s.origin.url("/r?status=404")) } == "not_found")
            #expect(await Self.code { _ = try await s.client.image("ftp://127.0.0.1/x.png") } == "invalid_argument")
            // Not kept as an image: asking again asks the loader again (the HTTP cache may answer, the loader checks).
            #expect(await Self.code { _ = try await s.client.image(s.url("page.html", "cc=max-age%3D600")) } == "invalid_image")
            let stats = try await s.client.stats()["image"]?.objectValue
            #expect(stats?["entries"]?.intValue == 0 && stats?["invalid"]?.intValue == 5)
        }

        /// What an outside check found handed out as valid before images were decoded: cut images, and real headers
        /// followed by random bytes, HTML or zeros. Each is refused now, with a reason, and not kept.
        @Test func cutAndGarbagePaddedImagesAreRefused() async throws {
            let s = try await Setup()
            defer { s.stop() }
            func fixture(_ name: String) throws -> [UInt8] {
                Array(try Data(contentsOf: URL(fileURLWithPath: ImageTests.fixtures + "/" + name)))
            }
            let png = try fixture("png-37x21.png"), jpeg = try fixture("jpeg-baseline-64x40.jpg")
            let gif = try fixture("gif-19x11.gif"), webp = try fixture("webp-lossy-41x23.webp")
            let bmp = try fixture("bmp-15x9.bmp")
            // The end of a JPEG's first SOF segment: its size header, and nothing after.
            let sof = (2..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 }!
            let sofEnd = sof + 2 + (Int(jpeg[sof + 2]) << 8 | Int(jpeg[sof + 3]))
            var cases: [(String, [UInt8])] = [
                ("png after its header", Array(png.prefix(33))), ("png half", Array(png.prefix(png.count / 2))),
                ("png but its last byte", Array(png.dropLast())),
                ("jpeg after its size header", Array(jpeg.prefix(sofEnd))), ("jpeg without its end marker", Array(jpeg.dropLast(2))),
                ("gif of 13 bytes", Array(gif.prefix(13))), ("webp of 30 bytes", Array(webp.prefix(30))),
            ]
            var random = SystemRandomNumberGenerator()
            let noise = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let html = Array(String(repeating: "<p>not an image</p>\n", count: 50_000).utf8)
            for (format, original) in [("png", png), ("jpeg", jpeg), ("gif", gif), ("webp", webp), ("bmp", bmp)] {
                let header = Array(original.prefix(format == "png" ? 33 : format == "jpeg" ? sofEnd : 30))
                cases += [("\(format) + random", header + noise), ("\(format) + html", header + html),
                          ("\(format) + zeros", header + [UInt8](repeating: 0, count: 1 << 20))]
            }
            for (k, (name, bytes)) in cases.enumerated() {
                try Data(bytes).write(to: URL(fileURLWithPath: s.files.path + "/bad-\(k)"))
                do {
                    let image = try await s.client.image(s.url("bad-\(k)", "cc=max-age%3D600"))
                    Issue.record("\(name) was handed out as \(image.format) \(image.width)×\(image.height)")
                } catch let e as FerryError {
                    #expect(e.codeName == "invalid_image" && !e.message.isEmpty, "\(name): \(e)")
                }
            }
            let stats = try await s.client.stats()["image"]?.objectValue
            #expect(stats?["entries"]?.intValue == 0)
            #expect(stats?["invalid"]?.intValue == Int64(cases.count))
        }

        /// Variants through a real daemon: each fit's exact size; 50 clients asking one variant at once cost one
        /// download and one resize; an origin whose ETag changed gets a new variant, a 304 keeps the stored one.
        @Test func variantsAreMadeOnceAndFollowTheOriginal() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let path = s.files.path + "/poster.jpg"
            try FileManager.default.copyItem(atPath: s.files.path + "/jpeg-baseline-64x40.jpg", toPath: path)
            let url = s.url("poster.jpg", "content_etag=1&cc=max-age%3D1")
            let sizes: [(ImageFit, Int, Int)] = [(.inside, 32, 20), (.cover, 32, 32), (.contain, 32, 32), (.fill, 32, 32), (.outside, 51, 32)]
            for (fit, w, h) in sizes {
                let image = try await s.client.image(url, variant: .init(width: 32, height: 32, fit: fit, format: .png))
                #expect(image.format == "png" && image.width == w && image.height == h && image.source == .made, "\(fit)")
                #expect(image.bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]))
            }
            // 50 clients, one new variant: one resize.
            let others = try await withThrowingTaskGroup(of: FerryImage.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await s.client.image(url, variant: .init(width: 20, height: nil, format: .webp)) }
                }
                var all: [FerryImage] = []
                for try await image in group { all.append(image) }
                return all
            }
            #expect(Set(others.map(\.bytes)).count == 1 && others.allSatisfy { $0.width == 20 && $0.format == "webp" })
            var stats = try await s.client.stats()["image"]?.objectValue
            #expect(stats?["variants_made"]?.intValue == 6, "\(String(describing: stats))")
            #expect(try s.origin.count(path: "/file/poster.jpg") == 1)
            // Stale after a second: revalidated (304, same ETag), the stored variant is served, not made again.
            _ = try await s.client.evictImage(url)
            try await Task.sleep(for: .milliseconds(1100))
            let again = try await s.client.image(url, variant: .init(width: 20, height: nil, format: .webp))
            #expect(again.source == .disk && again.bytes == others[0].bytes)
            stats = try await s.client.stats()["image"]?.objectValue
            #expect(stats?["variants_made"]?.intValue == 6 && stats?["variant_store_hits"]?.intValue == 1)
            #expect(stats?["verdicts_reused"]?.intValue == 1 && stats?["decodes"]?.intValue == 1,
                    "the revalidated original's bytes decoded before: not again")
            // The origin's file changes (a new ETag): a new variant, of the new picture.
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.copyItem(atPath: s.files.path + "/png-37x21.png", toPath: path)
            _ = try await s.client.evictImage(url)
            try await Task.sleep(for: .milliseconds(1100))
            let changed = try await s.client.image(url, variant: .init(width: 20, height: nil, format: .webp))
            #expect(changed.source == .made && changed.height == 11 && changed.bytes != others[0].bytes)
            stats = try await s.client.stats()["image"]?.objectValue
            #expect(stats?["variants_made"]?.intValue == 7)
            // Decoding was counted in the memory budget while it ran, and nothing of it is left.
            #expect(try await s.client.stats()["memory"]?["accounts"]?["decoding"]?.intValue == 0)
            // Bad variant arguments are refused before anything is fetched.
            for bad: ImageVariant in [.init(width: 0, height: nil), .init(width: 9000, height: nil), .init(width: 10, height: nil, fit: .contain),
                                      .init(width: 4096, height: nil, density: 3), .init(width: nil, height: nil, quality: 101)] {
                #expect(await Self.code { _ = try await s.client.image(url, variant: bad) } == "invalid_argument", "\(bad)")
            }
        }

        /// Formats the sniffer does not know, read by libvips: SVG at its nominal size.
        @Test func vectorImagesAreAcceptedAtTheirNominalSize() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let image = try await s.client.image(s.url("vector.svg", "cc=max-age%3D600"))
            #expect(image.format == "svg" && image.width == 40 && image.height == 20)
        }

        @Test func fiftyClientsAskingForOneSlowImageMakeOneDownload() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let url = s.url("jpeg-baseline-64x40.jpg", "delay_ms=600&cc=max-age%3D600")
            let socket = s.daemon.socket
            let sources = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        let c = try await FerryClient.connect(path: socket)
                        defer { c.close() }
                        let image = try await c.image(url)
                        #expect(image.width == 64 && image.height == 40)
                        return image.source?.rawValue ?? ""
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(sources.count == 50)
            #expect(try s.origin.count(path: "/file/jpeg-baseline-64x40.jpg") == 1)
            let stats = try await s.client.stats()["image"]?.objectValue
            #expect(stats?["downloads"]?.intValue == 1)
        }

        @Test func cancellingOneWaiterLeavesTheOtherAndCancellingAllStopsTheDownload() async throws {
            let s = try await Setup()
            defer { s.stop() }
            let url = s.url("gif-19x11.gif", "delay_ms=800&cc=max-age%3D600")
            let other = try await FerryClient.connect(path: s.daemon.socket)
            defer { other.close() }
            let leaving = Task { try await s.client.image(url) }
            try await Task.sleep(for: .milliseconds(150))
            let staying = Task { try await other.image(url) }
            try await Task.sleep(for: .milliseconds(150))
            leaving.cancel()
            #expect(await Self.code { _ = try await leaving.value } != nil)
            let image = try await staying.value
            #expect(image.format == "gif")
            // Everyone leaves: the download (and its transfer) stops.
            let lone = Task { try await other.image(s.url("png-37x21.png", "delay_ms=1500")) }
            try await Task.sleep(for: .milliseconds(300))
            lone.cancel()
            _ = try? await lone.value
            try await Task.sleep(for: .milliseconds(200))
            let stats = try await other.stats()
            #expect(stats["image"]?["in_flight"]?.intValue == 0)
            #expect(stats["fetch"]?["transfers_active"]?.intValue == 0)
            #expect((stats["image"]?["cancelled"]?.intValue ?? 0) >= 2)
        }

        @Test func theMemoryBudgetHoldsWhileTwoThousandImagesPassThrough() async throws {
            let budget = 256 * 1024
            let s = try await Setup(daemonArgs: ["--image-memory-limit", "\(budget)", "--image-max-entries", "100",
                                                 "--memory-limit", "4MiB"])
            defer { s.stop() }
            let before = rssKiB(s.daemon.pid)
            for n in 0..<2000 {
                let image = try await s.client.image(s.url("webp-lossy-41x23.webp", "cc=max-age%3D600&n=\(n)"))
                #expect(image.width == 41)
            }
            let stats = try await s.client.stats()["image"]?.objectValue
            let bytes = stats?["bytes"]?.intValue ?? -1, entries = stats?["entries"]?.intValue ?? -1
            #expect(bytes > 0 && bytes <= Int64(budget), "the loader's own accounting: \(bytes) bytes")
            #expect(entries > 0 && entries <= 100)
            #expect((stats?["evictions"]?.intValue ?? 0) >= 1900)
            let growth = rssKiB(s.daemon.pid) - before
            #expect(growth < 64 * 1024, "RSS grew by \(growth) KiB while 2,000 images passed")
        }

        @Test func theDiskTierServesAfterARestartAndNoStoreImagesAreNotKept() async throws {
            let cache = TempDir()
            defer { cache.remove() }
            let url: String
            do {
                let s = try await Setup(cacheDir: cache.path)
                url = s.url("png-37x21.png", "cc=max-age%3D600")
                #expect(try await s.client.image(url).source == .network)
                _ = try await s.client.image(s.url("gif-19x11.gif", "cc=no-store"))
                #expect(try await s.client.image(s.url("gif-19x11.gif", "cc=no-store")).source == .network)
                #expect(try s.origin.count(path: "/file/gif-19x11.gif") == 2)
                s.client.close()
                s.daemon.stop()
                // Same cache directory, new daemon: the origin is still up, but must not be asked.
                let d = try Daemon(["--cache-dir", cache.path])
                defer { d.stop() }
                let c = try await FerryClient.connect(path: d.socket)
                defer { c.close() }
                let image = try await c.image(url)
                #expect(image.source == .disk && image.format == "png")
                #expect(try s.origin.count(path: "/file/png-37x21.png") == 1)
                #expect(try await c.image(url).source == .memory)
                s.origin.stop()
                s.files.remove()
            }
        }
    }
}
