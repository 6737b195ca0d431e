import FerryBytes
import FerryImageFormat
import FerryProtocol

/// One download of an original, verified: the fetch, the sniffer's checks (a bomb is refused from its header, a
/// cut or padded file by its end), then one decode of every pixel — unless these very bytes, from the HTTP cache,
/// decoded before: their verdict is kept in the store beside the variants, so a disk hit costs no decode. Runs off
/// the loader's actor.
///
/// ```swift
/// let verified = await ImageVerifier(fetcher: f, decoder: d, store: s, maxPixels: 100_000_000, maxBytes: 64 << 20)
///     .download(ImageRequest(url: u))
/// if case .success(let (image, fetched)) = verified.outcome { … }
/// ```
struct ImageVerifier: Sendable {
    let fetcher: ImageFetching
    let decoder: ImageDecoding
    let store: VariantStoring?
    let maxPixels: Int
    let maxBytes: Int

    /// What one download brought, verified (or why not), and what the decode cost (nil: no decode ran).
    struct Verified: Sendable {
        var outcome: Result<(CachedImage, FetchedImage), ImageError>
        var decodeMs: Double?
        var verdictReused = false
    }

    func download(_ request: ImageRequest) async -> Verified {
        let fetched: FetchedImage
        do throws(ImageError) { fetched = try await fetcher.fetch(request, maxBytes: maxBytes) } catch {
            return Verified(outcome: .failure(error))
        }
        guard !fetched.body.isEmpty else { return Verified(outcome: .failure(.invalidImage(.notAnImage("empty body (0 bytes)")))) }
        // The sniffer knows seven formats: for those it checks size and completeness before any decode. What it
        // does not know goes to the decoder, whose header check applies the same pixel limit.
        var hint: String?
        do {
            let sniffed = try ImageSniffer.sniff(fetched.body, maxPixels: maxPixels)
            if let problem = ImageCompleteness.problem(in: fetched.body, format: sniffed.format) {
                return Verified(outcome: .failure(.invalidImage(.truncated(problem))))
            }
        } catch .notAnImage(let why) {
            hint = why
        } catch {
            return Verified(outcome: .failure(.invalidImage(error)))
        }
        let checksum = Checksum64.of(fetched.body)  // once: the verdict's key, and the validator when there is none
        let validator = fetched.validator ?? "digest " + String(checksum, radix: 16)
        let kept = fetched.mayKeep && request.cache.storesResponses ? store : nil
        let verdictKey = VariantKey.verdict(originalKey: request.key, validator: validator, count: fetched.body.count, checksum: checksum)
        if fetched.source == .disk, let known = await kept?.variant(verdictKey) {
            return Verified(outcome: .success((image(fetched, known.info, validator), fetched)), verdictReused: true)
        }
        let started = ContinuousClock.now
        let decoded: DecodedImage
        do throws(ImageDecodeError) {
            decoded = try await decoder.verify(fetched.body, maxPixels: maxPixels)
        } catch {
            let ms = (ContinuousClock.now - started).milliseconds
            if case .unknownFormat(let why) = error {
                return Verified(outcome: .failure(.invalidImage(.notAnImage(ImageVerifier.notAnImage(hint: hint, decoder: why)))), decodeMs: ms)
            }
            return Verified(outcome: .failure(.decode(error)), decodeMs: ms)
        }
        let ms = (ContinuousClock.now - started).milliseconds
        await kept?.keep(StoredVariant(bytes: [], info: decoded), verdictKey)
        return Verified(outcome: .success((image(fetched, decoded, validator), fetched)), decodeMs: ms)
    }

    /// Why bytes nothing reads are not an image. The sniffer's words say more than "unknown" when they say what
    /// the bytes are instead (HTML, JSON, text, compressed data); when they speak of its own seven formats ("TIFF
    /// is not supported", "not PNG, JPEG, …") they are not true of the daemon, which reads many more: the
    /// decoder's words then, with the bytes seen.
    static func notAnImage(hint: String?, decoder why: String) -> String {
        guard let hint else { return why }
        let aboutTheSniffer = hint.contains("not supported") || hint.contains("this module") || hint.hasPrefix("unrecognised bytes")
        guard aboutTheSniffer else { return hint }
        return hint.hasPrefix("unrecognised bytes") ? "\(hint.prefix { $0 != ":" }): \(why)" : "\(why) (\(hint.prefix { $0 != ":" }))"
    }

    private func image(_ fetched: FetchedImage, _ info: DecodedImage, _ validator: String) -> CachedImage {
        CachedImage(bytes: fetched.body, info: info, url: fetched.url, freshUntilMs: fetched.freshUntilMs, validator: validator)
    }
}
