import FerryHTTPCache
import FerryImageFormat
import FerryProtocol

/// The parsers that read what clients and origins send, each as a fuzz target: any input must be refused with an
/// error or accepted, never trap, and what is accepted must hold the parser's own promises (checked here with
/// `precondition`, which the fuzzer reports as a crash).
///
/// ```swift
/// FuzzTarget.json.run(bytes)   // parses; an accepted document written back parses to the same value
/// ```
enum FuzzTarget: String, CaseIterable {
    case frames, json, http, image

    func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .frames: FuzzTarget.frames(bytes)
        case .json: FuzzTarget.json(bytes)
        case .http: FuzzTarget.http(bytes)
        case .image: FuzzTarget.image(bytes)
        }
    }

    /// The daemon's read path: frames out of a byte stream fed in uneven pieces, each envelope parsed.
    private static func frames(_ bytes: UnsafeRawBufferPointer) {
        let decoder = FrameDecoder(maxFrameBytes: 1 << 20, maxJSONBytes: 1 << 18)
        var at = 0
        var piece = 1
        while at < bytes.count {
            let n = min(piece, bytes.count - at)
            decoder.append(UnsafeRawBufferPointer(rebasing: bytes[at..<(at + n)]))
            at += n
            piece = piece % 7 + 1
            do {
                while let frame = try decoder.next() {
                    precondition(frame.json.count <= 1 << 18, "a frame over the JSON limit came out")
                    if let envelope = try? RequestEnvelope.parse(frame.json, maxNesting: 32) {
                        precondition(envelope.id >= 1 && envelope.id <= RequestEnvelope.maxID)
                    }
                }
            } catch {
                return  // a framing error ends the stream, as it closes a connection
            }
        }
    }

    /// The JSON codec: whatever parses is written back and parses to the same value. And the fast path's scan of
    /// an envelope (`HotEnvelope`) accepts only what the general parser reads the same way.
    private static func json(_ bytes: UnsafeRawBufferPointer) {
        if let hot = HotEnvelope.scan(bytes) {
            guard let parsed = try? RequestEnvelope.parse(bytes, maxNesting: 32) else {
                preconditionFailure("the hot scan accepted an envelope the parser refuses")
            }
            let rebuilt = hot.requestEnvelope(bytes)
            precondition(rebuilt.id == parsed.id && rebuilt.op == parsed.op && parsed.timeoutMs == nil && !parsed.more,
                         "the hot scan read another id or op")
            precondition(Set(rebuilt.args.keys) == Set(parsed.args.keys)
                         && rebuilt.args.keys.allSatisfy { rebuilt.args[$0] == parsed.args[$0] }, "the hot scan read other arguments")
        }
        guard let value = try? JSONParser.parse(bytes, maxDepth: 32) else { return }
        var out: [UInt8] = []
        JSONWriter.write(value, to: &out)
        guard let again = try? JSONParser.parse(out, maxDepth: 32) else { preconditionFailure("written JSON does not parse") }
        precondition(again == value, "a round trip changed the value")
    }

    /// The HTTP cache's parsers on a response header block of the input's lines (`Name: value`).
    private static func http(_ bytes: UnsafeRawBufferPointer) {
        var pairs: [(String, String)] = []
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true).prefix(64) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            pairs.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
        }
        let headers = HTTPFields(pairs)
        let cc = CacheControl(responseHeaders: headers)
        _ = cc.noStore
        for (_, value) in pairs { _ = HTTPDate.parse(value, now: 1_800_000_000) }
        let request = CacheRequest(method: "GET", url: "https://a.test/x", headers: HTTPFields(), mode: .default)
        let stored = StoredResponse(status: 200, headers: headers, requestTime: 1_800_000_000, responseTime: 1_800_000_001)
        _ = storageVerdict(request: request, status: 200, responseHeaders: headers)
        let lifetime = freshnessLifetime(response: stored)
        precondition(lifetime >= 0, "a negative freshness lifetime")
        _ = evaluate(request: request, stored: stored, now: 1_800_000_100)
    }

    /// The image sniffers: an accepted image has a format and a size within the pixel limit.
    private static func image(_ bytes: UnsafeRawBufferPointer) {
        guard let info = try? ImageSniffer.sniff(bytes, maxPixels: 100_000_000) else { return }
        precondition(info.width > 0 && info.height > 0, "an image without a size")
        precondition(info.width * info.height <= 100_000_000, "an image over the pixel limit")
    }
}
