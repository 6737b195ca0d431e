import Testing
@testable import FerryFetch
import FerryHTTPCache

/// Authenticated calls are cached in a partition per credential (issue 11, item 3): token A's response is a hit
/// for A, never for B or for no token; `no-store` still wins; a `public` answer stays shared, as RFC 9111 says; and
/// nothing stored names a credential.
@Suite struct PartitionTests {
    static let quotes = "http://o.test/quotes"

    static func bearer(_ token: String, uid: UInt32 = 1000) -> (inout FetchSpec) -> Void {
        { spec in
            spec.headers = [("Authorization", "Bearer \(token)")]
            spec.uid = uid
        }
    }

    @Test func aTokensResponseIsAHitForThatTokenOnly() {
        let h = EngineHarness()
        h.fetch(Self.quotes, Self.bearer("token-a"))
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=600")], body: "for a")
        let again = h.fetch(Self.quotes, Self.bearer("token-a"))
        #expect(again.outcome?.cache == .hit && again.text == "for a" && h.origin.exchanges.count == 1)
        let other = h.fetch(Self.quotes, Self.bearer("token-b"))
        #expect(other.result == nil && h.origin.exchanges.count == 2, "token B asks the origin")
        h.origin.exchanges[1].respond(200, [("Cache-Control", "max-age=600")], body: "for b")
        #expect(other.text == "for b")
        let anonymous = h.fetch(Self.quotes)
        #expect(anonymous.result == nil && h.origin.exchanges.count == 3, "no token: not A's, not B's")
        anonymous.job?.cancel()
        #expect(h.fetch(Self.quotes, Self.bearer("token-a")).text == "for a" && h.fetch(Self.quotes, Self.bearer("token-b")).text == "for b")
        let otherUser = h.fetch(Self.quotes, Self.bearer("token-a", uid: 1001))
        #expect(otherUser.result == nil, "the same token from another user is another partition")
        // The credentials are nowhere in what is stored, keys included.
        for (key, value) in h.storage.records {
            #expect(!key.contains("token") && !String(decoding: value, as: UTF8.self).contains("token-a"), "\(key)")
        }
    }

    @Test func noStoreStillWinsAndAPublicAnswerIsShared() {
        let h = EngineHarness()
        h.fetch(Self.quotes, Self.bearer("a"))
        h.origin.exchanges[0].respond(200, [("Cache-Control", "no-store, max-age=600")], body: "x")
        #expect(h.storage.records.isEmpty)
        h.fetch("http://o.test/public", Self.bearer("a"))
        h.origin.exchanges[1].respond(200, [("Cache-Control", "public, max-age=600")], body: "everyone")
        #expect(h.fetch("http://o.test/public").outcome?.cache == .hit, "public: shared (RFC 9111 §3.5)")
        #expect(h.fetch("http://o.test/public", Self.bearer("b")).text == "everyone")
    }

    @Test func aPrivateResponseIsKeptForItsCredentialsAndACookieIsACredential() {
        let h = EngineHarness()
        let cookie: (inout FetchSpec) -> Void = { $0.headers = [("Cookie", "session=s1")] }
        h.fetch("http://o.test/me", cookie)
        h.origin.exchanges[0].respond(200, [("Cache-Control", "private, max-age=600")], body: "alice")
        #expect(h.fetch("http://o.test/me", cookie).outcome?.cache == .hit)
        let bob = h.fetch("http://o.test/me") { $0.headers = [("Cookie", "session=s2")] }
        #expect(bob.result == nil && h.origin.exchanges.count == 2)
        bob.job?.cancel()
        // Without credentials a private response is not stored at all (the cache is shared).
        h.fetch("http://o.test/anon")
        h.origin.exchanges[2].respond(200, [("Cache-Control", "private, max-age=600")], body: "x")
        #expect(h.fetch("http://o.test/anon").result == nil && h.origin.exchanges.count == 4)
        // A response to a cookie without public is not shared either (stricter than RFC 9111, which leaves cookies
        // to the origin): it is kept for that cookie.
        h.fetch("http://o.test/page", cookie)
        h.origin.exchanges[4].respond(200, [("Cache-Control", "max-age=600")], body: "personal")
        #expect(h.fetch("http://o.test/page").result == nil, "not for someone without the cookie")
    }

    @Test func anUnsafeRequestInvalidatesItsPartitionToo() {
        let h = EngineHarness()
        h.fetch(Self.quotes, Self.bearer("a"))
        h.origin.exchanges[0].respond(200, [("Cache-Control", "max-age=600")], body: "old")
        h.fetch(Self.quotes) { spec in
            Self.bearer("a")(&spec)
            spec.method = "POST"
            spec.body = Array("new".utf8)
        }
        h.origin.exchanges[1].respond(201)
        #expect(h.fetch(Self.quotes, Self.bearer("a")).result == nil, "the POST invalidated A's copy")
    }
}
