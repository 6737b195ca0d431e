/// An entity tag (RFC 9110 §8.8.3), parsed leniently: `"x"`, `W/"x"`, also `w/"x"` and unquoted `x`
/// (seen in the wild; an unquoted tag is taken as strong with opaque value `x`).
///
/// ```swift
/// EntityTag("W/\"v1\"")?.isWeak               // true
/// EntityTag("v1")?.headerValue                 // "\"v1\""
/// EntityTag("\"a\"")!.weakMatches(EntityTag("W/\"a\"")!)  // true
/// ```
public struct EntityTag: Sendable, Equatable {
    /// Whether the tag is weak (`W/` prefix): `EntityTag("W/\"a\"")?.isWeak == true`.
    public let isWeak: Bool
    /// The opaque tag without quotes: `EntityTag("\"a\"")?.opaque == "a"`.
    public let opaque: String

    /// A tag from its parts.
    ///
    /// ```swift
    /// EntityTag(weak: false, opaque: "v1").headerValue  // "\"v1\""
    /// ```
    public init(weak: Bool, opaque: String) {
        self.isWeak = weak
        self.opaque = opaque
    }

    /// Parses one entity tag; nil for an empty value.
    ///
    /// ```swift
    /// EntityTag(" \"abc\" ")?.opaque  // "abc"
    /// ```
    public init?(_ value: String) {
        var s = Substring(ListSyntax.trimOWS(value))
        var weak = false
        if s.hasPrefix("W/") || s.hasPrefix("w/") {
            weak = true
            s = s.dropFirst(2)
        }
        if s.utf8.count >= 2, s.hasPrefix("\""), s.hasSuffix("\"") {
            s = s.dropFirst().dropLast()
        }
        guard !s.isEmpty || value.utf8.contains(ListSyntax.quote) else { return nil }
        isWeak = weak
        opaque = String(s)
    }

    /// The canonical field value: `"opaque"` or `W/"opaque"`.
    ///
    /// ```swift
    /// EntityTag("w/\"a\"")?.headerValue  // "W/\"a\""
    /// ```
    public var headerValue: String { (isWeak ? "W/" : "") + "\"" + opaque + "\"" }

    /// Strong comparison (RFC 9110 §8.8.3.2): both strong and the same opaque tag.
    ///
    /// ```swift
    /// EntityTag("\"a\"")!.strongMatches(EntityTag("W/\"a\"")!)  // false
    /// ```
    public func strongMatches(_ other: EntityTag) -> Bool { !isWeak && !other.isWeak && opaque == other.opaque }

    /// Weak comparison: the same opaque tag, weakness ignored.
    ///
    /// ```swift
    /// EntityTag("\"a\"")!.weakMatches(EntityTag("W/\"a\"")!)  // true
    /// ```
    public func weakMatches(_ other: EntityTag) -> Bool { opaque == other.opaque }

    /// The tags of an `If-None-Match` / `If-Match` value; nil for `*` (any).
    ///
    /// ```swift
    /// EntityTag.list("\"a\", W/\"b\"")?.count  // 2
    /// EntityTag.list("*")                    // nil
    /// ```
    public static func list(_ value: String) -> [EntityTag]? {
        let members = ListSyntax.splitList(value)
        if members.contains("*") { return nil }
        return members.compactMap { EntityTag(String($0)) }
    }
}
