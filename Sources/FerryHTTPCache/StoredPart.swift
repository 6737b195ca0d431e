// Stored parts of a representation (RFC 9111 §3.3–3.4): what a cache keeps of a 206 (or of a download that ended
// early), which requests it answers, and how a new part combines with the one stored.

/// Bytes `range` of a representation of `total` bytes, kept with the headers of the whole.
///
/// A part is stored as a 206 record: the whole's header fields with `Content-Range` and the part's
/// `Content-Length` (`record`). Records of an older layout (a 200 whose body is shorter than its
/// `Content-Length`: the start of an interrupted download) read as the part from byte 0.
///
/// ```swift
/// let part = StoredPart(whole: response, range: 4..<10, total: 10)
/// part.record.headers.first("content-range")   // "bytes 4-9/10"
/// StoredPart(record: part.record, bodySize: 6)?.range   // 4..<10
/// ```
public struct StoredPart: Sendable, Equatable {
    /// The response as a whole: status 200, `Content-Length: total`, no `Content-Range`.
    public var whole: StoredResponse
    public var range: Range<Int>
    public var total: Int

    public init(whole: StoredResponse, range: Range<Int>, total: Int) {
        self.whole = whole
        self.range = range
        self.total = total
    }

    /// The part a stored record holds (its body `bodySize` bytes), or nil when the record is not one.
    public init?(record: StoredResponse, bodySize: Int) {
        switch record.status {
        case 206:
            guard let cr = record.headers.first("content-range").flatMap(contentRange), let total = cr.total,
                  cr.last - cr.first + 1 == bodySize else { return nil }
            var whole = record
            whole.status = 200
            whole.headers = record.headers.removingAll("content-range").replacingAll("content-length", with: String(total))
            whole.bodySize = total
            self.init(whole: whole, range: cr.first..<(cr.last + 1), total: total)
        case 200:
            guard let total = record.headers.first("content-length").flatMap({ Int($0) }), bodySize > 0, bodySize < total
            else { return nil }
            var whole = record
            whole.bodySize = total
            self.init(whole: whole, range: 0..<bodySize, total: total)
        default:
            return nil
        }
    }

    /// The 206 record to store.
    public var record: StoredResponse {
        var r = whole
        r.status = 206
        r.headers = partialContentHeaders(whole.headers, range: range, size: total)
        r.bodySize = range.count
        return r
    }

    /// The validator parts must share to be combined (`ifRangeValidator`): nil for none.
    public var validator: String? { ifRangeValidator(whole.headers) }
}

/// What to keep when a new part of a URL arrives and another is stored.
public enum PartMerge: Sendable, Equatable {
    /// The new part replaces the stored one.
    case replace
    /// The stored part already holds the new one's bytes: it stays, with the new part's header fields.
    case refresh
    /// The two touch or overlap and share a validator: one part of `range` holds both (the whole when it is
    /// `0..<total`).
    case combine(Range<Int>)
}

/// RFC 9111 §3.4: parts combine only when both carry the same strong validator (`ifRangeValidator`: a strong
/// entity-tag, else `Last-Modified`) and the same length; the combined part takes the new part's header fields.
/// Parts that cannot combine: the new one wins, unless the stored one starts at 0 and the new one does not (a
/// start is what a plain GET resumes from).
///
/// ```swift
/// mergeParts(stored: bytes0to4, new: bytes5to9)   // .combine(0..<10)
/// ```
public func mergeParts(stored: StoredPart, new: StoredPart) -> PartMerge {
    guard let validator = new.validator, validator == stored.validator, new.total == stored.total else { return .replace }
    let s = stored.range, n = new.range
    if n.lowerBound <= s.lowerBound && n.upperBound >= s.upperBound { return .replace }
    if s.lowerBound <= n.lowerBound && s.upperBound >= n.upperBound { return .refresh }
    if n.lowerBound <= s.upperBound && s.lowerBound <= n.upperBound {
        return .combine(min(s.lowerBound, n.lowerBound)..<max(s.upperBound, n.upperBound))
    }
    return s.lowerBound == 0 ? .refresh : .replace
}
