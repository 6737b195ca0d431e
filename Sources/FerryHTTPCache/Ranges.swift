// Byte ranges of a stored response (RFC 9110 §14): what a request's `Range` and `If-Range` ask of a complete
// stored body, and the headers of the partial answer.

/// What to serve from a stored complete response of `size` bytes for a request that may carry `Range`.
///
/// ```swift
/// rangeAnswer(request: ["Range": "bytes=100-"], stored: response, size: 1000)   // .part(100..<1000)
/// ```
public enum RangeAnswer: Sendable, Equatable {
    /// The whole response (no range, several ranges, a syntax the daemon does not serve, a validator that no
    /// longer matches `If-Range`, or a stored status other than 200).
    case whole
    /// One range: a 206 with `Content-Range`.
    case part(Range<Int>)
    /// A 416 with `Content-Range: bytes */size`.
    case unsatisfiable
}

/// The answer for one `bytes=` range (`first-last`, `first-`, `-suffix`), honouring `If-Range`: a strong
/// entity-tag that equals the stored one, or an HTTP-date equal to the stored `Last-Modified` (§13.1.5); anything
/// else asks for the whole response. Several ranges get the whole response too (allowed: §14.2).
public func rangeAnswer(request: HTTPFields, stored: StoredResponse, size: Int) -> RangeAnswer {
    guard stored.status == 200, let value = request.first("range") else { return .whole }
    if let condition = request.first("if-range").map(ListSyntax.trimOWS), !ifRangeMatches(condition, stored: stored) {
        return .whole
    }
    guard let spec = parseSingleByteRange(value) else { return .whole }
    switch spec {
    case .from(let first, let last):
        guard first < size else { return .unsatisfiable }
        return .part(first..<(min(last ?? size - 1, size - 1) + 1))
    case .suffix(let n):
        guard n > 0, size > 0 else { return .unsatisfiable }
        return .part(max(0, size - n)..<size)
    }
}

/// The headers of a 206 for `range` of a body of `size` bytes, from the headers it is served with.
public func partialContentHeaders(_ headers: HTTPFields, range: Range<Int>, size: Int) -> HTTPFields {
    headers.replacingAll("content-length", with: String(range.count))
        .removingAll("content-range")
        .appending("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)")
}

/// The headers of a 416 for a body of `size` bytes.
public func unsatisfiableRangeHeaders(size: Int) -> HTTPFields {
    HTTPFields([("Content-Range", "bytes */\(size)"), ("Content-Length", "0")])
}

/// A `Content-Range: bytes first-last/total` (RFC 9110 §14.4); `total` nil for `*`. Nil for another unit, an
/// unsatisfied range (`bytes */n`) or bad syntax.
///
/// ```swift
/// contentRange("bytes 100-199/1000")   // (100, 199, 1000)
/// ```
public func contentRange(_ value: String) -> (first: Int, last: Int, total: Int?)? {
    let v = ListSyntax.trimOWS(value)
    guard v.lowercased().hasPrefix("bytes ") else { return nil }
    let rest = v.dropFirst(6)
    guard let dash = rest.firstIndex(of: "-"), let slash = rest.firstIndex(of: "/"), dash < slash,
          let first = Int(ListSyntax.trimOWS(String(rest[..<dash]))),
          let last = Int(ListSyntax.trimOWS(String(rest[rest.index(after: dash)..<slash]))), last >= first else { return nil }
    let totalText = ListSyntax.trimOWS(String(rest[rest.index(after: slash)...]))
    if totalText == "*" { return (first, last, nil) }
    guard let total = Int(totalText), total > last else { return nil }
    return (first, last, total)
}

/// The validator a download of this response can be resumed under (`If-Range`, §13.1.5): a strong `ETag`, else
/// `Last-Modified` when it has no `ETag`; nil when it has neither, or only a weak tag (which `If-Range` never
/// matches).
public func ifRangeValidator(_ headers: HTTPFields) -> String? {
    if let etag = headers.first("etag") { return EntityTag(etag).map { !$0.isWeak } == true ? etag : nil }
    return headers.first("last-modified")
}

enum ByteRangeSpec: Equatable {
    case from(Int, last: Int?)
    case suffix(Int)
}

/// One `bytes=` range, or nil (another unit, several ranges, or bad syntax).
func parseSingleByteRange(_ value: String) -> ByteRangeSpec? {
    let v = ListSyntax.trimOWS(value)
    guard v.lowercased().hasPrefix("bytes="), !v.contains(",") else { return nil }
    let spec = ListSyntax.trimOWS(String(v.dropFirst(6)))
    guard let dash = spec.firstIndex(of: "-") else { return nil }
    let a = ListSyntax.trimOWS(String(spec[..<dash])), b = ListSyntax.trimOWS(String(spec[spec.index(after: dash)...]))
    func number(_ s: String) -> Int? { s.isEmpty || s.count > 18 || !s.allSatisfy(\.isASCII) ? nil : Int(s) }
    if a.isEmpty { return number(b).map(ByteRangeSpec.suffix) }
    guard let first = number(a) else { return nil }
    if b.isEmpty { return .from(first, last: nil) }
    guard let last = number(b), last >= first else { return nil }
    return .from(first, last: last)
}

private func ifRangeMatches(_ condition: String, stored: StoredResponse) -> Bool {
    if condition.hasPrefix("\"") || condition.hasPrefix("W/") {
        guard let asked = EntityTag(condition), let etag = stored.headers.first("etag").flatMap(EntityTag.init) else { return false }
        return asked.strongMatches(etag)
    }
    guard let date = HTTPDate.parse(condition), let lm = stored.headers.first("last-modified").flatMap({ HTTPDate.parse($0) }) else {
        return false
    }
    return date == lm
}
