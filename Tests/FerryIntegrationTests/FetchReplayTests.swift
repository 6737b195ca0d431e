import Foundation
import Testing
import FerryClient
import FerryProtocol

/// Never send a request twice that the client sent once (issue 11, item 5): when the origin closes a reused
/// connection without answering, libcurl would send the request again on a fresh one. A POST, PUT, PATCH or DELETE
/// is not replayed (it fails `unavailable`) unless the client opts in; a GET still is (it is safe).
extension IntegrationTests {
@Suite struct FetchReplayTests {
    /// The test origin's `/drop` reads the request and closes the connection without a byte of answer. A GET of
    /// `/r` first leaves a kept-alive connection for the next request to reuse.
    static func dropAfterWarming(_ s: FetchTests.Setup, _ request: FetchRequest) async throws -> (error: FerryError?, drops: Int) {
        let before = try s.origin.count(path: "/drop")
        _ = try await s.client.fetch(FetchRequest(s.origin.url("/r?body=warm&cc=no-store")))
        var failure: FerryError?
        do { _ = try await s.client.fetch(request) } catch let e as FerryError { failure = e }
        return (failure, try s.origin.count(path: "/drop") - before)
    }

    @Test func anUnsafeRequestIsNotSentTwiceUnlessTheClientSaysItMayBe() async throws {
        let s = try await FetchTests.Setup()
        defer { s.stop() }
        let url = s.origin.url("/drop")
        for method in ["PUT", "POST", "PATCH"] {
            let (error, drops) = try await Self.dropAfterWarming(s, FetchRequest(url, method: method, body: Array("x".utf8)))
            #expect(error?.code == .unavailable && drops == 1, "\(method): \(String(describing: error)), the origin got it \(drops) times")
            #expect(error?.message.contains("not sent again") == true, "\(String(describing: error))")
        }
        // Without a body there is nothing to rewind: it goes on a connection of its own.
        let (deleteError, deletes) = try await Self.dropAfterWarming(s, FetchRequest(url, method: "DELETE"))
        #expect(deleteError?.code == .unavailable && deletes == 1, "DELETE: the origin got it \(deletes) times")
        // Opted in: libcurl's retry on a fresh connection is allowed (the origin drops that one too).
        var retried = FetchRequest(url, method: "PUT", body: Array("x".utf8))
        retried.retry = true
        let (_, replays) = try await Self.dropAfterWarming(s, retried)
        #expect(replays == 2, "with retry: true the PUT was sent \(replays) times")
        let keyed = FetchRequest(url, method: "POST", headers: [HTTPHeader("Idempotency-Key", "k-1")], body: Array("x".utf8))
        let (_, keyedReplays) = try await Self.dropAfterWarming(s, keyed)
        #expect(keyedReplays == 2, "an Idempotency-Key header allows it too (\(keyedReplays))")
        // A GET is safe: replayed as before.
        let (_, gets) = try await Self.dropAfterWarming(s, FetchRequest(url, cache: .noStore))
        #expect(gets == 2)
        // And an unsafe request that gets its answer is untouched: body and method arrive once.
        let echo = try await s.client.fetch(FetchRequest(s.origin.url("/echo"), method: "PUT", body: Array("payload".utf8)))
        let seen = try JSONSerialization.jsonObject(with: Data(echo.body)) as? [String: Any]
        #expect(echo.status == 200 && seen?["body"] as? String == "payload" && seen?["method"] as? String == "PUT", "\(echo.text)")
    }
}
}
