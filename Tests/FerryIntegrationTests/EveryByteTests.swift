import Foundation
import Testing
import FerryClient
import FerryProtocol

/// Every byte an origin sends arrives (issue 11, item 4): content codings pass through when the client asked for
/// them or the daemon cannot decode them; interim 1xx responses are neither stored nor merged; Vary compares
/// Accept-Encoding and Accept-Language as RFC 9111 §4.1 allows.
extension IntegrationTests {
@Suite struct EveryByteTests {
    @Test func codingsPassThroughWhenTheClientAskedOrTheDaemonCannotDecode() async throws {
        let s = try await FetchTests.Setup()
        defer { s.stop() }
        // The daemon asked (the client did not): gzip is undone, and the headers say nothing of it.
        let plain = try await s.client.fetch(FetchRequest(s.origin.url("/gzip?size=5000&cc=max-age%3D600")))
        #expect(plain.body == (0..<5000).map { UInt8($0 % 251) } && plain.header("content-encoding") == nil)
        // The client asked for gzip itself: it gets the origin's bytes and Content-Encoding, exactly.
        let raw = try await s.client.fetch(FetchRequest(s.origin.url("/gzip?size=5000&cc=max-age%3D600"),
                                                        headers: [HTTPHeader("Accept-Encoding", "gzip")]))
        #expect(raw.header("content-encoding") == "gzip" && raw.body.starts(with: [0x1f, 0x8b]), "\(raw.headers)")
        // Stored as a variant: the next such request is a hit with the same bytes, the plain one still decoded.
        let again = try await s.client.fetch(FetchRequest(s.origin.url("/gzip?size=5000&cc=max-age%3D600"),
                                                          headers: [HTTPHeader("Accept-Encoding", "gzip")]))
        #expect(again.cacheStatus == .hit && again.body == raw.body)
        let plainAgain = try await s.client.fetch(FetchRequest(s.origin.url("/gzip?size=5000&cc=max-age%3D600")))
        #expect(plainAgain.cacheStatus == .hit && plainAgain.body == plain.body)
        // A coding nobody here knows: not a failure (libcurl's error 61), the bytes and the header as sent.
        let odd = try await s.client.fetch(FetchRequest(s.origin.url("/r?body=opaque&h=Content-Encoding:x-squeeze&cc=max-age%3D600")))
        #expect(odd.status == 200 && odd.text == "opaque" && odd.header("content-encoding") == "x-squeeze")
        let oddAgain = try await s.client.fetch(FetchRequest(s.origin.url("/r?body=opaque&h=Content-Encoding:x-squeeze&cc=max-age%3D600")))
        #expect(oddAgain.text == "opaque", "a request without Accept-Encoding may get it from the store too")
    }

    @Test func anInterimResponseIsNeverStoredNorMerged() async throws {
        let s = try await FetchTests.Setup()
        defer { s.stop() }
        let url = s.origin.url("/early?body=final&cc=max-age%3D600")
        let first = try await s.client.fetch(FetchRequest(url))
        #expect(first.status == 200 && first.text == "final")
        #expect(first.header("link") == nil && first.header("x-early") == nil, "the 103's fields are not the response's: \(first.headers)")
        let second = try await s.client.fetch(FetchRequest(url))
        #expect(second.cacheStatus == .hit && second.header("x-early") == nil && second.status == 200)
    }

    @Test func varyComparesAcceptLanguageWithoutOrderCaseOrSpaces() async throws {
        let s = try await FetchTests.Setup()
        defer { s.stop() }
        let url = s.origin.url("/r?body=hallo&cc=max-age%3D600&h=Vary:Accept-Language")
        _ = try await s.client.fetch(FetchRequest(url, headers: [HTTPHeader("Accept-Language", "de, en;q=0.5")]))
        let same = try await s.client.fetch(FetchRequest(url, headers: [HTTPHeader("Accept-Language", "EN; q=0.5,de")]))
        #expect(same.cacheStatus == .hit)
        let other = try await s.client.fetch(FetchRequest(url, headers: [HTTPHeader("Accept-Language", "fr")]))
        #expect(other.cacheStatus == .miss)
    }
}
}
