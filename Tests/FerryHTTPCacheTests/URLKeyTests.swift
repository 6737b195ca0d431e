import Testing
@testable import FerryHTTPCache

@Suite struct URLKeyTests {
    @Test func lowerCasesSchemeAndHost() {
        #expect(CacheKeyURL.normalize("HTTP://Example.COM/Path/X") == "http://example.com/Path/X")
        #expect(CacheKeyURL.normalize("HtTpS://[2001:DB8::1]:8443/") == "https://[2001:db8::1]:8443/")
    }

    @Test func dropsDefaultAndEmptyPorts() {
        #expect(CacheKeyURL.normalize("http://a.test:80/x") == "http://a.test/x")
        #expect(CacheKeyURL.normalize("https://a.test:443/x") == "https://a.test/x")
        #expect(CacheKeyURL.normalize("http://a.test:/x") == "http://a.test/x")
        #expect(CacheKeyURL.normalize("http://a.test:0080/x") == "http://a.test/x")
        #expect(CacheKeyURL.normalize("http://a.test:443/x") == "http://a.test:443/x", "443 is not http's default")
        #expect(CacheKeyURL.normalize("https://a.test:80/x") == "https://a.test:80/x")
        #expect(CacheKeyURL.normalize("http://[::1]:80/") == "http://[::1]/")
    }

    @Test func emptyPathBecomesSlash() {
        #expect(CacheKeyURL.normalize("http://a.test") == "http://a.test/")
        #expect(CacheKeyURL.normalize("http://a.test?x=1") == "http://a.test/?x=1")
    }

    @Test func fragmentIsRemovedQueryIsKept() {
        #expect(CacheKeyURL.normalize("http://a.test/p?b=2&a=1#frag") == "http://a.test/p?b=2&a=1")
        #expect(CacheKeyURL.normalize("http://a.test/p#x?y") == "http://a.test/p")
        #expect(CacheKeyURL.normalize("http://a.test/p?") == "http://a.test/p?", "an empty query is kept")
        #expect(CacheKeyURL.normalize("http://a.test/p?") != CacheKeyURL.normalize("http://a.test/p"))
    }

    @Test func pathIsKeptExactly() {
        #expect(CacheKeyURL.normalize("http://a.test/%7euser/./a/../B%2F") == "http://a.test/%7euser/./a/../B%2F")
    }

    @Test(arguments: [
        "ftp://a.test/", "file:///etc/passwd", "mailto:x@a.test", "/relative", "a.test/x", "http:/a.test/",
        "http://", "http://:80/", "http://user:pw@a.test/", "http://a.test:99999/", "http://a.test:8a/",
        "http://a test/", "http://a.test/x y", "",
    ])
    func rejectsWhatCannotBeACacheKey(_ url: String) {
        #expect(CacheKeyURL.normalize(url) == nil)
    }

    @Test func origin() {
        #expect(CacheKeyURL.origin(of: "HTTPS://A.test:443/x?y") == "https://a.test")
        #expect(CacheKeyURL.origin(of: "http://a.test:8080/") == "http://a.test:8080")
    }

    @Test func lookupKeysUseGETForGETAndHEAD() {
        let get = HTTPCacheKey(lookupFor: "GET", url: "http://A.test")
        let head = HTTPCacheKey(lookupFor: "HEAD", url: "http://a.test:80/")
        #expect(get == HTTPCacheKey(method: "GET", url: "http://a.test/"))
        #expect(head == get)
        #expect(HTTPCacheKey(lookupFor: "POST", url: "http://a.test/") == nil)
        #expect(HTTPCacheKey(lookupFor: "get", url: "http://a.test/") == nil, "methods are case-sensitive")
        #expect(HTTPCacheKey(lookupFor: "GET", url: "ftp://a.test/") == nil)
        #expect(get?.description == "GET http://a.test/")
    }

    @Test func resolvesReferences() {
        let base = "http://a.test/b/c/d;p?q"
        // RFC 3986 §5.4.1 normal examples (those that stay http).
        #expect(CacheKeyURL.resolve("g", against: base) == "http://a.test/b/c/g")
        #expect(CacheKeyURL.resolve("./g", against: base) == "http://a.test/b/c/g")
        #expect(CacheKeyURL.resolve("g/", against: base) == "http://a.test/b/c/g/")
        #expect(CacheKeyURL.resolve("/g", against: base) == "http://a.test/g")
        #expect(CacheKeyURL.resolve("//g", against: base) == "http://g/")
        #expect(CacheKeyURL.resolve("?y", against: base) == "http://a.test/b/c/d;p?y")
        #expect(CacheKeyURL.resolve("g?y", against: base) == "http://a.test/b/c/g?y")
        #expect(CacheKeyURL.resolve("#s", against: base) == "http://a.test/b/c/d;p?q")
        #expect(CacheKeyURL.resolve("", against: base) == "http://a.test/b/c/d;p?q")
        #expect(CacheKeyURL.resolve(".", against: base) == "http://a.test/b/c/")
        #expect(CacheKeyURL.resolve("..", against: base) == "http://a.test/b/")
        #expect(CacheKeyURL.resolve("../g", against: base) == "http://a.test/b/g")
        #expect(CacheKeyURL.resolve("../..", against: base) == "http://a.test/")
        #expect(CacheKeyURL.resolve("../../../g", against: base) == "http://a.test/g")
        #expect(CacheKeyURL.resolve("g;x=1/../y", against: base) == "http://a.test/b/c/y")
        #expect(CacheKeyURL.resolve("HTTPS://Other.test:443/x", against: base) == "https://other.test/x")
        #expect(CacheKeyURL.resolve("mailto:x@y", against: base) == nil)
        #expect(CacheKeyURL.resolve("g", against: "ftp://a.test/") == nil)
    }
}

@Suite struct NormalizedURLsTests {
    /// The memo answers as the parser does, for URLs it keeps and URLs too long to keep, and starts over when full.
    @Test func rememberedAnswersAreTheParsersAndTheMemoStaysBounded() {
        let memo = NormalizedURLs(capacity: 3, maxURLBytes: 40)
        let urls = ["HTTP://A.test", "ftp://a.test/", "http://a.test:80/x#f", "http://u:p@a.test/", "http://a.test/" + String(repeating: "p", count: 60)]
        for round in 0..<2 {
            for url in urls {
                #expect(memo.normalize(url) == CacheKeyURL.parse(url)?.string, "round \(round): \(url)")
                #expect(memo.count <= 3)
            }
        }
        #expect(memo.normalize("HTTP://A.test") == "http://a.test/")
        #expect(memo.count >= 1)
    }
}
