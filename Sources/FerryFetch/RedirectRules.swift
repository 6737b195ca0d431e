import FerryHTTPCache

/// How a followed redirect changes the request (RFC 9110 §15.4, with the Fetch standard's and curl's choices):
/// 303 turns anything but HEAD into a GET without a body; 301 and 302 turn a POST into a GET (every browser and curl
/// do); 307 and 308 keep method and body. Leaving the origin drops the credentials the client meant for the first
/// one (`Authorization`, `Cookie`, `Proxy-Authorization`).
///
/// ```swift
/// RedirectRules.apply(status: 303, from: "http://a.test/form", to: "http://a.test/done", spec: &spec)
/// spec.method   // "GET", spec.body == []
/// ```
enum RedirectRules {
    static func apply(status: Int, from: String, to: String, spec: inout FetchSpec) {
        let becomesGet = (status == 303 && spec.method != "HEAD") || ((status == 301 || status == 302) && spec.method == "POST")
        if becomesGet {
            spec.method = "GET"
            spec.body = []
            let bodyFields: Set<String> = ["content-type", "content-length", "content-encoding", "content-language", "content-location"]
            spec.headers.removeAll { bodyFields.contains($0.0.lowercased()) }
        }
        if CacheKeyURL.origin(of: from) != CacheKeyURL.origin(of: to) {
            let credentials: Set<String> = ["authorization", "cookie", "proxy-authorization"]
            spec.headers.removeAll { credentials.contains($0.0.lowercased()) }
        }
    }
}
