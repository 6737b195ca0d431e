import FerryBytes

// Secondary cache keys (RFC 9111 §4.1): a stored response with `Vary` may only be reused for a request whose
// selecting header fields match those of the request that produced it.

/// The request field names a `Vary` value nominates, lower-cased, de-duplicated and sorted; nil when it
/// contains `*` (the response can never be selected without the origin).
///
/// ```swift
/// varyFieldNames("Accept-Encoding, accept, ACCEPT")  // ["accept", "accept-encoding"]
/// varyFieldNames("Origin, *")                         // nil
/// varyFieldNames(nil)                                 // []
/// ```
public func varyFieldNames(_ vary: String?) -> [String]? {
    guard let vary else { return [] }
    var names = Set<String>()
    for member in ListSyntax.splitList(vary) {
        if member == "*" { return nil }
        names.insert(ListSyntax.lower(member))
    }
    return names.sorted()
}

/// The secondary key of `request` for a response with the given (combined) `Vary` value: one line per
/// nominated field, `name=normalised value`, or just `name` when the request lacks that field — so an absent
/// field differs from an empty one. Returns "" when there is no `Vary` (every request matches) and nil for
/// `Vary: *` (no request matches).
///
/// Normalisation (RFC 9111 §4.1 allows whitespace normalisation and combining lines): all lines of the field
/// are combined, split into list members on commas outside quoted strings, each member trimmed of spaces,
/// empty members dropped, and the members re-joined with ", ". So `1,2`, ` 1, 2 ` and two lines `1` / `2`
/// give the same key; member order and case are kept (they can be significant).
///
/// ```swift
/// variantKey(forVary: "Accept-Encoding, X-A", request: ["accept-encoding": "gzip,br"])
/// // "accept-encoding=gzip, br\nx-a"
/// ```
public func variantKey(forVary vary: String?, request: HTTPFields) -> String? {
    guard let names = varyFieldNames(vary) else { return nil }
    return names.map { name -> String in
        let lines = request.values(name)
        if lines.isEmpty { return name }
        var members = lines.flatMap { ListSyntax.splitList($0) }.map(String.init)
        if unorderedFields.contains(name) {
            // Their members' order, case and spacing carry no meaning (the weights do): "gzip, br" = "BR,gzip".
            members = members.map { m in m.lowercased().split(separator: ";").map { ListSyntax.trimOWS(String($0)) }.joined(separator: ";") }
                .sorted()
        }
        let value = members.joined(separator: ", ")
        // The key is stored with the response: a credential is kept only as a digest (equal values, equal keys).
        if credentialFields.contains(name) { return name + "#" + SHA256.hex(of: Array(value.utf8)).prefix(32) }
        return name + "=" + value
    }.joined(separator: "\n")
}

/// Request fields whose list members may be reordered, recased and respaced without changing what they ask
/// (RFC 9111 §4.1 lets a cache normalise such fields before it compares them).
let unorderedFields: Set<String> = ["accept-encoding", "accept-language"]

/// Request fields whose values are credentials: a variant key holds a digest of them, never the value.
let credentialFields: Set<String> = ["authorization", "cookie", "proxy-authorization"]

/// `variantKey(forVary:request:)` for the `Vary` lines of a response's header fields.
///
/// ```swift
/// variantKey(forVaryOf: ["Vary": "Accept"], request: ["Accept": "text/html"])  // "accept=text/html"
/// ```
public func variantKey(forVaryOf responseHeaders: HTTPFields, request: HTTPFields) -> String? {
    variantKey(forVary: responseHeaders.combined("vary"), request: request)
}

/// Whether `stored` may be selected for `request` as far as `Vary` goes (RFC 9111 §4.1): the request's
/// variant key for the stored `Vary` equals the one recorded when storing. Use it to pick the right entry
/// among several variants stored under one primary key.
///
/// ```swift
/// let first = CacheRequest(url: "http://a.test/", headers: ["Foo": "1"])
/// let s = StoredResponse(storing: 200, headers: ["Vary": "Foo"], for: first, requestTime: 0, responseTime: 0)
/// variantMatches(stored: s, request: CacheRequest(url: "http://a.test/", headers: ["foo": "1"]))  // true
/// ```
public func variantMatches(stored: StoredResponse, request: CacheRequest) -> Bool {
    guard let key = variantKey(forVaryOf: stored.headers, request: request.headers) else { return false }
    return key == (stored.varyKey ?? "")
}
