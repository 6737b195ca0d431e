// Validation of stored responses (RFC 9111 §4.3): the conditional request, and what a 304 or a HEAD
// response changes in the store.

/// The conditional header fields to validate `stored` with (RFC 9111 §4.3.1): `If-None-Match` with its
/// `ETag` (quoted if the origin sent it unquoted), and `If-Modified-Since` with its `Last-Modified`, sent
/// exactly as received when it is a valid date. `Date` is never used in place of `Last-Modified`
/// (RFC 9110 §13.1.3 only allows `Last-Modified`). Empty when the response has no validator.
///
/// ```swift
/// let s = StoredResponse(status: 200, headers: ["ETag": "\"v1\""], requestTime: 0, responseTime: 0)
/// conditionalHeaders(for: s)  // ["If-None-Match": "\"v1\""]
/// ```
public func conditionalHeaders(for stored: StoredResponse) -> HTTPFields {
    var h = HTTPFields()
    if let etagLine = stored.headers.first("etag"), let tag = EntityTag(etagLine) {
        h.append("If-None-Match", tag.headerValue)
    }
    if let lm = stored.headers.first("last-modified"), HTTPDate.parse(lm) != nil {
        h.append("If-Modified-Since", ListSyntax.trimOWS(lm))
    }
    return h
}

/// Fields a 304 (or a HEAD response) must not change in a stored response (RFC 9111 §3.2):
/// `Content-Length` (it describes the stored content) and `Content-Range` (automatically processed; allowed
/// to be excluded), besides the hop-by-hop fields that are never stored.
///
/// ```swift
/// fieldsNotUpdatedBy304.contains("content-length")  // true
/// ```
public let fieldsNotUpdatedBy304: Set<String> = ["content-length", "content-range"]

/// The stored header fields updated with those of a 304 (RFC 9111 §3.2, §4.3.4): every field present in the
/// 304 replaces all stored lines of that name (at the position of the first one, else appended), except
/// hop-by-hop fields of the 304 (and those its `Connection` lists), the fields its qualified `private` /
/// `no-cache` name, `fieldsNotUpdatedBy304`, and the names in `keepingStored` (lower-case; e.g. pass
/// `["content-encoding"]` if the daemon stores decoded bodies). Stored fields absent from the 304 are kept,
/// except those a qualified `private` / `no-cache` of the merged `Cache-Control` names.
///
/// ```swift
/// updatedHeaders(stored: ["Cache-Control": "max-age=1", "Content-Length": "5", "X": "a"],
///                notModified: ["Cache-Control": "max-age=60", "Content-Length": "0"])
/// // ["Cache-Control": "max-age=60", "Content-Length": "5", "X": "a"]
/// ```
public func updatedHeaders(stored: HTTPFields, notModified: HTTPFields, keepingStored: Set<String> = []) -> HTTPFields {
    let incoming = headersToStore(response: notModified).removingAll(names: fieldsNotUpdatedBy304.union(keepingStored))
    var replaced = Set<String>()
    var order: [String] = []
    for field in incoming {
        let n = ListSyntax.lower(field.name)
        if !replaced.contains(n) {
            replaced.insert(n)
            order.append(n)
        }
    }
    var out = HTTPFields()
    var emitted = Set<String>()
    for field in stored {
        let n = ListSyntax.lower(field.name)
        if replaced.contains(n) {
            if emitted.insert(n).inserted {
                for f in incoming where ListSyntax.equalsIgnoringCase(f.name, n) { out.append(f.name, f.value) }
            }
        } else {
            out.append(field.name, field.value)
        }
    }
    for n in order where !emitted.contains(n) {
        for f in incoming where ListSyntax.equalsIgnoringCase(f.name, n) { out.append(f.name, f.value) }
    }
    // A qualified private / no-cache in the merged Cache-Control also covers fields kept from the old response.
    return headersToStore(response: out)
}

extension StoredResponse {
    /// This response freshened by a 304 received for a request sent at `requestTime` (RFC 9111 §4.3.4):
    /// headers merged with `updatedHeaders`, times replaced by those of the validation exchange. Because the
    /// age is now computed from the new exchange, a 304 without `Date` gets one (`responseTime`, RFC 9110
    /// §6.6.1) and a stored `Age` the 304 does not repeat is dropped (it described the old message).
    /// `varyKey` is kept: if the 304 changes `Vary`, `variantMatches` fails and the next request refetches.
    ///
    /// ```swift
    /// let fresh = stale.updating(withNotModified: ["Cache-Control": "max-age=60"],
    ///                            requestTime: 500, responseTime: 501)
    /// ```
    public func updating(
        withNotModified notModified: HTTPFields, requestTime: Int64, responseTime: Int64,
        keepingStored: Set<String> = []
    ) -> StoredResponse {
        var incoming = notModified
        if incoming.first("date").flatMap({ HTTPDate.parse($0) }) == nil {
            incoming = incoming.replacingAll("Date", with: HTTPDate.format(responseTime))
        }
        var merged = updatedHeaders(stored: headers, notModified: incoming, keepingStored: keepingStored)
        if !notModified.contains("age") { merged.removeAll("age") }
        var copy = self
        copy.headers = merged
        copy.requestTime = requestTime
        copy.responseTime = responseTime
        return copy
    }
}

/// Which stored responses (indices into `stored`, all for the same primary key) a 304 freshens
/// (RFC 9111 §4.3.4):
/// 1. if the 304 has a strong `ETag`: every stored response with that strong `ETag` (possibly none);
/// 2. else if it has a weak `ETag` or a `Last-Modified`: the most recently received stored response whose
///    `ETag` matches weakly / whose `Last-Modified` is the same date;
/// 3. else (no validator at all): the only stored response, if there is exactly one. The RFC only allows
///    this when that response has no validator either; this module also allows it when the stored response
///    has validators, because the cache built the conditional request from them and origins that omit the
///    validators from a 304 are common — otherwise the 304 would be unusable.
///
/// ```swift
/// selectForUpdate(stored: [a, b], notModified: ["ETag": "\"b\""])  // [1] if b has ETag "b"
/// ```
public func selectForUpdate(stored: [StoredResponse], notModified: HTTPFields) -> [Int] {
    let tag = notModified.first("etag").flatMap(EntityTag.init)
    let lm = notModified.first("last-modified").flatMap { HTTPDate.parse($0) }
    if let tag, !tag.isWeak {
        return stored.indices.filter { i in
            stored[i].headers.first("etag").flatMap(EntityTag.init).map { $0.strongMatches(tag) } ?? false
        }
    }
    if tag != nil || lm != nil {
        let matching = stored.indices.filter { i in
            let h = stored[i].headers
            if let tag, let mine = h.first("etag").flatMap(EntityTag.init), mine.weakMatches(tag) { return true }
            if tag == nil, let lm, let mine = h.first("last-modified").flatMap({ HTTPDate.parse($0) }), mine == lm {
                return true
            }
            return false
        }
        guard let newest = matching.max(by: { stored[$0].responseTime < stored[$1].responseTime }) else { return [] }
        return [newest]
    }
    return stored.count == 1 ? [0] : []
}

/// What a response to a HEAD request does to a stored GET response for the same URL (RFC 9111 §4.3.5).
///
/// ```swift
/// if case .update(let headers) = headUpdate(stored: s, headStatus: 200, headHeaders: head) { s.headers = headers }
/// ```
public enum HeadUpdate: Sendable, Equatable {
    /// Replace the stored headers by these (merged as for a 304).
    case update(HTTPFields)
    /// The stored response no longer describes the resource: treat it as stale (dropping it is simplest).
    case invalidate
    /// Nothing to do (the HEAD response was not a 200).
    case none
}

/// The effect of a 200 response to a HEAD request on `stored` (RFC 9111 §4.3.5): when every validator the
/// HEAD response carries (`ETag`, `Last-Modified`) matches the stored one and its `Content-Length`, if any,
/// equals the stored one (or `bodySize`), the stored headers are updated; otherwise the stored response is
/// invalidated. Other statuses change nothing.
///
/// ```swift
/// headUpdate(stored: s, headStatus: 200, headHeaders: ["ETag": "\"v1\"", "Cache-Control": "max-age=600"])
/// // .update(...) when s has ETag "v1"
/// ```
public func headUpdate(stored: StoredResponse, headStatus: Int, headHeaders: HTTPFields) -> HeadUpdate {
    guard headStatus == 200 else { return .none }
    if let etag = headHeaders.first("etag") {
        guard let mine = stored.headers.first("etag"), let a = EntityTag(etag), let b = EntityTag(mine),
            a == b
        else { return .invalidate }
    }
    if let lm = headHeaders.first("last-modified") {
        guard let mine = stored.headers.first("last-modified"), let a = HTTPDate.parse(lm), HTTPDate.parse(mine) == a
        else { return .invalidate }
    }
    if let length = headHeaders.first("content-length") {
        let storedLength =
            stored.headers.first("content-length").map { ListSyntax.trimOWS($0) } ?? String(stored.bodySize)
        guard ListSyntax.trimOWS(length) == storedLength else { return .invalidate }
    }
    return .update(updatedHeaders(stored: stored.headers, notModified: headHeaders))
}
