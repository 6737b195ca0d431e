import Testing
@testable import FerryFetch
import FerryHTTPCache
import FerryProtocol
@testable import FerryServer

/// The fetch reply written straight into the output (`FetchOperation.writeResult`) is byte for byte the result
/// object the general path builds and `JSONWriter` writes.
@Suite struct FetchResultTests {
    static var outcomes: [FetchOutcome] { [
        FetchOutcome(status: 200, headers: ["Content-Type": "application/json", "Age": "7"], body: .empty,
                     url: "http://a.test/q.json", redirects: 0, cache: .hit, ageSeconds: 7, totalMs: 0, origin: nil, servedAtSeconds: 0),
        FetchOutcome(status: 404, headers: HTTPFields([]), body: .empty, url: "https://b.test/", redirects: 3, cache: .miss,
                     ageSeconds: 0, totalMs: 1234, origin: OriginTiming(dnsMs: 0.5, connectMs: 1, tlsMs: 12.25, firstByteMs: 30.125, totalMs: 31),
                     servedAtSeconds: 0),
        FetchOutcome(status: 200, headers: HTTPFields([("X-Odd", "q\"uo\\te\u{1}\ttab é 漢"), ("set-cookie", "a=1"), ("set-cookie", "b=2")]),
                     body: .empty, url: "http://a.test/p?q=\"x\"", redirects: 1, cache: .revalidated, ageSeconds: 1 << 31,
                     totalMs: -1, origin: OriginTiming(), servedAtSeconds: 0),
    ] }

    @Test(arguments: 0..<3)
    func writtenDirectlyAsTheTreeIsWritten(_ k: Int) {
        let o = Self.outcomes[k]
        var direct: [UInt8] = [7]
        FetchOperation.writeResult(o, to: &direct)
        var tree: [UInt8] = [7]
        JSONWriter.write(FetchOperation.result(o), to: &tree)
        #expect(direct == tree, "\(String(decoding: direct, as: UTF8.self))\n\(String(decoding: tree, as: UTF8.self))")
    }
}
