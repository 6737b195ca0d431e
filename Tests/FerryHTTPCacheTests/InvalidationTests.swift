import Testing
@testable import FerryHTTPCache

@Suite struct InvalidationTests {
    let url = "http://a.test/items/list"

    @Test(arguments: ["POST", "PUT", "DELETE", "PATCH", "M-SEARCH"])
    func unsafeMethodsInvalidateTheRequestURL(_ method: String) {
        #expect(invalidatedURLs(requestMethod: method, requestURL: url, responseStatus: 200, responseHeaders: [:]) == [url])
    }

    @Test(arguments: ["GET", "HEAD", "OPTIONS", "TRACE"])
    func safeMethodsInvalidateNothing(_ method: String) {
        #expect(invalidatedURLs(requestMethod: method, requestURL: url, responseStatus: 200, responseHeaders: ["Location": "/x"]).isEmpty)
    }

    @Test func errorAndInterimStatusesInvalidateNothing() {
        for status in [100, 400, 404, 500, 503] {
            #expect(invalidatedURLs(requestMethod: "POST", requestURL: url, responseStatus: status, responseHeaders: [:]).isEmpty, "\(status)")
        }
        #expect(invalidatedURLs(requestMethod: "POST", requestURL: url, responseStatus: 303, responseHeaders: [:]) == [url])
    }

    @Test func locationAndContentLocationSameOriginOnly() {
        let h: HTTPFields = ["Location": "/items/7", "Content-Location": "https://a.test/items/8"]
        #expect(invalidatedURLs(requestMethod: "POST", requestURL: url, responseStatus: 201, responseHeaders: h)
            == [url, "http://a.test/items/7"], "https is another origin")
        let other: HTTPFields = ["Location": "http://b.test/x", "Content-Location": "http://a.test:8080/x"]
        #expect(invalidatedURLs(requestMethod: "PUT", requestURL: url, responseStatus: 200, responseHeaders: other) == [url])
        let explicitPort: HTTPFields = ["Location": "HTTP://A.TEST:80/y#f"]
        #expect(invalidatedURLs(requestMethod: "PUT", requestURL: url, responseStatus: 200, responseHeaders: explicitPort)
            == [url, "http://a.test/y"])
    }

    @Test func relativeReferencesAreResolved() {
        let h: HTTPFields = ["Location": "../new?id=1", "Content-Location": "sibling"]
        #expect(invalidatedURLs(requestMethod: "POST", requestURL: url, responseStatus: 201, responseHeaders: h)
            == [url, "http://a.test/new?id=1", "http://a.test/items/sibling"])
    }

    @Test func duplicatesAreRemovedAndTheRequestURLIsNormalised() {
        let h: HTTPFields = ["Location": "list", "Content-Location": "/items/list"]
        #expect(invalidatedURLs(requestMethod: "DELETE", requestURL: "HTTP://A.test:80/items/list#x", responseStatus: 204, responseHeaders: h)
            == [url])
        #expect(invalidatedURLs(requestMethod: "POST", requestURL: "ftp://a.test/", responseStatus: 200, responseHeaders: [:]).isEmpty)
    }
}
