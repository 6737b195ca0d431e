import FerryClient
import FerryCodable
import Foundation
import Testing

/// What URLSession users reach for: URL and Data, `decode` that checks the status, errors that read as sentences.
extension IntegrationTests {
@Suite struct SwiftClientHabitsTests {
    struct Quote: Decodable { var quoteText: String }

    @Test func urlDataDecodeAndReadableErrors() async throws {
        let rig = try await FetchRig()
        defer { rig.stop() }
        let url = try #require(URL(string: rig.origin.url("/r?size=5&cc=max-age%3D60")))
        let (data, response) = try await rig.client.data(from: url)
        #expect(data == Data([0, 1, 2, 3, 4]) && response.status == 200)
        let echoed = try await rig.client.fetch(try #require(URL(string: rig.origin.url("/echo?cc=no-store"))), method: "POST",
                                                body: Data("hello".utf8))
        #expect(try JSONSerialization.jsonObject(with: echoed.data) as? [String: Any] != nil)
        #expect(echoed.text.contains("\"body\": \"hello\"") || echoed.text.contains("\"body\":\"hello\""), "\(echoed.text.prefix(200))")

        // decode checks the status first: an error page is an HTTPStatusError with the status and the body.
        let missing = try await rig.client.fetch(FetchRequest(rig.origin.url("/r?status=404&body=no%20such%20quote")))
        #expect {
            _ = try missing.decode(Quote.self)
        } throws: { error in
            guard let e = error as? HTTPStatusError else { return false }
            return e.status == 404 && e.localizedDescription.contains("HTTP 404") && e.localizedDescription.contains("no such quote")
        }
        let ok = try await rig.client.fetch(FetchRequest(rig.origin.url("/r?body=%7B%22quote_text%22%3A%22hi%22%7D&cc=no-store")))
        #expect(try ok.decode(Quote.self).quoteText == "hi")

        // A FerryError reads as a sentence, not "The operation could not be completed. (… error 1.)".
        do {
            _ = try await rig.client.cacheGet("")
            Issue.record("an empty key is refused")
        } catch {
            #expect(error.localizedDescription.hasPrefix("ferryd: invalid_argument:"), "\(error.localizedDescription)")
        }
    }
}
}
