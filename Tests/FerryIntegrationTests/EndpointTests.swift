import FerryClient
import FerryCodable
import Foundation
import Testing

/// Endpoints whose bodies are made when the request is (and may fail then, before anything is sent).
extension IntegrationTests {
@Suite struct EndpointTests {
    struct Query: Encodable { var searchText: String; var limit: Double }

    enum Search: JSONEndpoint {
        case quotes(Query)
        case plain
        var baseURL: String { origin }
        var path: String { "/echo" }
        var method: String { if case .plain = self { "GET" } else { "POST" } }
        var queryItems: [(String, String)] { [("cc", "no-store")] }
        var jsonBody: Query? { if case .quotes(let q) = self { q } else { nil } }
        nonisolated(unsafe) static var originURL = ""
        var origin: String { Search.originURL }
    }

    @Test func aJSONEndpointEncodesWhenTheRequestIsMadeAndAFailureSendsNothing() async throws {
        let rig = try await FetchRig()
        defer { rig.stop() }
        Search.originURL = rig.origin.url("")
        let seen = try await rig.client.fetch(Search.quotes(Query(searchText: "courage", limit: 3)))
        let echo = try #require(try JSONSerialization.jsonObject(with: seen.data) as? [String: Any])
        #expect(echo["method"] as? String == "POST")
        #expect(echo["body"] as? String == #"{"limit":3,"search_text":"courage"}"#, "snake_case, sorted")
        let headers = (echo["headers"] as? [[String]]) ?? []
        #expect(headers.contains(["Content-Type", "application/json"]))
        // A value JSON cannot hold: the encoding fails in fetch, and the origin sees nothing.
        let before = try rig.origin.count(path: "/echo")
        await #expect(throws: EncodingError.self) {
            _ = try await rig.client.fetch(Search.quotes(Query(searchText: "x", limit: .infinity)))
        }
        #expect(try rig.origin.count(path: "/echo") == before)
        #expect(try await rig.client.fetch(Search.plain).status == 200)
    }
}
}
