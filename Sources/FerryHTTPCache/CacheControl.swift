/// The directives of every `Cache-Control` field line of a request or a response (RFC 9111 §5.2).
///
/// Parsing rules and the choices made where the RFC leaves room:
/// - All field lines are parsed (each on its own, so an unterminated quote cannot swallow the next line) and
///   their directives concatenated in order. Names are case-insensitive; commas and `max-age` text inside
///   quoted strings are never mistaken for directives; empty list members are skipped.
/// - Arguments may be tokens or quoted strings (`max-age="60"` is 60). `max-age =60`, `max-age= 60`,
///   `max-age='60'`, `max-age=60.0`, `max-age=-1`, `max-age=60a` are invalid.
/// - Duplicated numeric directives: the first occurrence wins (RFC 9111 §4.2.1 allows "first" or "stale"),
///   so `max-age=60, max-age=0` is 60 and `max-age=0, max-age=60` is 0.
/// - An invalid `max-age` or `s-maxage` counts as 0 (the response is stale at once, RFC 9111 §4.2.1's
///   conservative reading; for a request, `max-age=0` asks for revalidation). An invalid `max-stale`,
///   `min-fresh`, `stale-while-revalidate` or `stale-if-error` is ignored (it grants or demands nothing).
/// - Values beyond 2^31 clamp to 2^31 (RFC 9111 §1.2.2); leading zeros are fine.
/// - `no-cache` / `private` with a list of field names are "qualified"; an empty or unparsable list, or any
///   unqualified occurrence, makes them unqualified (the stricter meaning).
/// - Unknown directives are kept in `directives` and otherwise ignored.
///
/// ```swift
/// let cc = CacheControl(responseHeaders: ["Cache-Control": "public, max-age=\"600\", private=\"Set-Cookie\""])
/// cc.maxAge         // 600
/// cc.isPublic       // true
/// cc.privateFields  // ["set-cookie"]
/// cc.isPrivate      // false (qualified)
/// ```
public struct CacheControl: Sendable, Equatable {
    /// Every directive, in order, including unknown and malformed ones:
    /// `CacheControl("a, b=1").directives.map(\.name) == ["a", "b"]`.
    public let directives: [Directive]

    /// Value used by `maxStale` for a `max-stale` without argument: any staleness is acceptable.
    /// `CacheControl("max-stale").maxStale == CacheControl.unlimited`
    public static let unlimited = Int64.max

    /// `max-age`: first occurrence; an invalid value counts as 0. `CacheControl("max-age=5a").maxAge == 0`
    public let maxAge: Int64?
    /// `s-maxage`: first occurrence; an invalid value counts as 0. `CacheControl("s-maxage=7").sMaxAge == 7`
    public let sMaxAge: Int64?
    /// Request `max-stale`: `unlimited` without argument, nil when absent or invalid.
    /// `CacheControl("max-stale=9").maxStale == 9`
    public let maxStale: Int64?
    /// Request `min-fresh`: nil when absent or invalid. `CacheControl("min-fresh=x").minFresh == nil`
    public let minFresh: Int64?
    /// `stale-while-revalidate` (RFC 5861 §3): nil when absent or invalid.
    /// `CacheControl("stale-while-revalidate=30").staleWhileRevalidate == 30`
    public let staleWhileRevalidate: Int64?
    /// `stale-if-error` (RFC 5861 §4), in a response or a request: nil when absent or invalid.
    /// `CacheControl("stale-if-error=60").staleIfError == 60`
    public let staleIfError: Int64?
    /// `no-store` anywhere, with or without (meaningless) argument. `CacheControl("No-Store").noStore == true`
    public let noStore: Bool
    /// Unqualified `no-cache`: a stored response must be validated before each reuse.
    /// `CacheControl("no-cache").noCache == true`, `CacheControl("no-cache=\"a\"").noCache == false`
    public let noCache: Bool
    /// Field names of qualified `no-cache="a, b"` (lower-case): they must not be reused without validation;
    /// this module strips them from stored responses. `CacheControl("no-cache=\"A, b\"").noCacheFields == ["a", "b"]`
    public let noCacheFields: [String]
    /// Unqualified `private`: a shared cache must not store the response. `CacheControl("private").isPrivate == true`
    public let isPrivate: Bool
    /// Field names of qualified `private="a, b"` (lower-case): a shared cache must not store those fields.
    /// `CacheControl("private=\"Set-Cookie\"").privateFields == ["set-cookie"]`
    public let privateFields: [String]
    /// `public`: `CacheControl("public").isPublic == true`
    public let isPublic: Bool
    /// `must-revalidate`: `CacheControl("must-revalidate").mustRevalidate == true`
    public let mustRevalidate: Bool
    /// `proxy-revalidate` (applies to shared caches such as this one):
    /// `CacheControl("proxy-revalidate").proxyRevalidate == true`
    public let proxyRevalidate: Bool
    /// `must-understand` (RFC 9111 §5.2.2.3): `CacheControl("must-understand, no-store").mustUnderstand == true`
    public let mustUnderstand: Bool
    /// `no-transform`: `CacheControl("no-transform").noTransform == true`
    public let noTransform: Bool
    /// `immutable` (RFC 8246). Parsed for callers; it does not change any decision of this module.
    /// `CacheControl("max-age=9, immutable").immutable == true`
    public let immutable: Bool
    /// Request `only-if-cached`: `CacheControl("only-if-cached").onlyIfCached == true`
    public let onlyIfCached: Bool

    /// Parses one field value.
    ///
    /// ```swift
    /// CacheControl("max-age=60, max-age=0").maxAge  // 60
    /// ```
    public init(_ value: String) {
        self.init(directives: CacheControl.parseDirectives(value))
    }

    /// Parses several field lines, in order.
    ///
    /// ```swift
    /// CacheControl(fieldValues: ["max-age=60", "s-maxage=5"]).sMaxAge  // 5
    /// ```
    public init(fieldValues: [String]) {
        self.init(directives: fieldValues.flatMap(CacheControl.parseDirectives))
    }

    /// The directives of a response. `Pragma` is ignored in responses (RFC 9111 §5.4 deprecates it).
    ///
    /// ```swift
    /// CacheControl(responseHeaders: ["Cache-Control": "no-store"]).noStore  // true
    /// ```
    public init(responseHeaders: HTTPFields) {
        self.init(fieldValues: responseHeaders.values("cache-control"))
    }

    /// The directives of a request. When the request has no `Cache-Control` line at all, `Pragma: no-cache`
    /// counts as `Cache-Control: no-cache` (RFC 9111 §5.4, for HTTP/1.0 clients).
    ///
    /// ```swift
    /// CacheControl(requestHeaders: ["Pragma": "no-cache"]).noCache                              // true
    /// CacheControl(requestHeaders: ["Pragma": "no-cache", "Cache-Control": "max-age=5"]).noCache  // false
    /// ```
    public init(requestHeaders: HTTPFields) {
        let lines = requestHeaders.values("cache-control")
        var directives = lines.flatMap(CacheControl.parseDirectives)
        if lines.isEmpty,
            requestHeaders.listMembers("pragma").contains(where: { ListSyntax.equalsIgnoringCase($0, "no-cache") })
        {
            directives.append(Directive(name: "no-cache"))
        }
        self.init(directives: directives)
    }

    /// Builds the typed view of a directive list.
    ///
    /// ```swift
    /// CacheControl(directives: [.init(name: "public")]).isPublic  // true
    /// ```
    public init(directives: [Directive]) {
        self.directives = directives
        func first(_ name: String) -> Directive? { directives.first { $0.name == name } }
        func has(_ name: String) -> Bool { directives.contains { $0.name == name } }
        // Number or nil when invalid; nil for absent is handled by the caller through `first`.
        func seconds(_ d: Directive) -> Int64? {
            guard d.isWellFormed, let arg = d.argument else { return nil }
            return ListSyntax.deltaSeconds(arg)
        }

        maxAge = first("max-age").map { seconds($0) ?? 0 }
        sMaxAge = first("s-maxage").map { seconds($0) ?? 0 }
        if let d = first("max-stale") {
            maxStale = d.argument == nil && d.isWellFormed ? CacheControl.unlimited : seconds(d)
        } else {
            maxStale = nil
        }
        minFresh = first("min-fresh").flatMap(seconds)
        staleWhileRevalidate = first("stale-while-revalidate").flatMap(seconds)
        staleIfError = first("stale-if-error").flatMap(seconds)

        // Qualified forms: any occurrence without a usable field list makes the directive unqualified.
        func qualified(_ name: String) -> (unqualified: Bool, fields: [String]) {
            var unqualified = false
            var fields: [String] = []
            for d in directives where d.name == name {
                let names = d.isWellFormed ? CacheControl.fieldNames(d.argument) : []
                if names.isEmpty { unqualified = true } else { fields.append(contentsOf: names) }
            }
            return (unqualified, fields)
        }
        let nc = qualified("no-cache")
        noCache = nc.unqualified
        noCacheFields = nc.fields
        let pv = qualified("private")
        isPrivate = pv.unqualified
        privateFields = pv.fields

        noStore = has("no-store")
        isPublic = has("public")
        mustRevalidate = has("must-revalidate")
        proxyRevalidate = has("proxy-revalidate")
        mustUnderstand = has("must-understand")
        noTransform = has("no-transform")
        immutable = has("immutable")
        onlyIfCached = has("only-if-cached")
    }

    /// Whether a directive named `name` (any case) is present, known or not.
    ///
    /// ```swift
    /// CacheControl("community=\"UCI\"").contains("Community")  // true
    /// ```
    public func contains(_ name: String) -> Bool {
        let n = ListSyntax.lower(name)
        return directives.contains { $0.name == n }
    }

    /// The argument of the first directive named `name`, if it has one.
    ///
    /// ```swift
    /// CacheControl("ext=\"a, b\"").argument("ext")  // "a, b"
    /// ```
    public func argument(_ name: String) -> String? {
        let n = ListSyntax.lower(name)
        return directives.first { $0.name == n }?.argument
    }
}
