// Targeted cache-control fields (RFC 9213): `CDN-Cache-Control` and fields like it, which a cache that targets
// them obeys instead of `Cache-Control` and `Expires`.

/// The fields a response may address to this cache, in precedence order (`--cache-control-targets`), and how a
/// stored response keeps both views: the policy it is cached under, and the fields its clients see.
///
/// A response is stored with `Cache-Control` set to the first target field present and valid, `Expires` left out
/// of the policy, and the origin's own `Cache-Control` and `Expires` kept under reserved names, which
/// `clientView` puts back before the response is served: the cache follows the targeted field, the client sees
/// what the origin sent (RFC 9213 §2.2 asks the first, and nothing asks the cache to rewrite the second).
///
/// ```swift
/// let targets = TargetedCacheControl(fields: ["Ferry-Cache-Control", "CDN-Cache-Control"])
/// let policy = targets.policyView(["Cache-Control": "no-store", "CDN-Cache-Control": "max-age=600"])
/// policy.first("cache-control")                               // "max-age=600"
/// TargetedCacheControl.clientView(policy).first("cache-control")   // "no-store"
/// ```
public struct TargetedCacheControl: Sendable, Equatable {
    /// Lower-cased field names, first wins.
    public let fields: [String]

    public init(fields: [String]) { self.fields = fields.map { $0.lowercased() } }

    /// `Ferry-Cache-Control`, this cache's own: the default target list.
    public static let ferry = TargetedCacheControl(fields: ["Ferry-Cache-Control"])

    static let savedCacheControl = "ferry-origin-cache-control"
    static let savedExpires = "ferry-origin-expires"
    /// Present when the policy view replaced the fields (its value names the target field that decided).
    static let marker = "ferry-targeted"

    /// The fields to decide and store by. Without a target field present, the fields as they are (minus any
    /// reserved name an origin might send).
    public func policyView(_ headers: HTTPFields) -> HTTPFields {
        let reserved: Set<String> = [TargetedCacheControl.savedCacheControl, TargetedCacheControl.savedExpires, TargetedCacheControl.marker]
        var out = headers.removingAll(names: reserved)
        guard let target = fields.first(where: { name in out.values(name).contains { !$0.isEmpty } }),
              let value = out.combined(target), isValidDirectiveList(value) else { return out }
        let cacheControl = out.values("cache-control"), expires = out.values("expires")
        out = out.removingAll(names: ["cache-control", "expires"])
        for v in cacheControl { out.append(TargetedCacheControl.savedCacheControl, v) }
        for v in expires { out.append(TargetedCacheControl.savedExpires, v) }
        out.append(TargetedCacheControl.marker, target)
        out.append("Cache-Control", value)
        return out
    }

    /// What a client is served: the origin's `Cache-Control` and `Expires` back in place of the policy's.
    public static func clientView(_ headers: HTTPFields) -> HTTPFields {
        guard headers.contains(marker) else { return headers }
        var out = headers.removingAll(names: ["cache-control", "expires", savedCacheControl, savedExpires, marker])
        for v in headers.values(savedCacheControl) { out.append("Cache-Control", v) }
        for v in headers.values(savedExpires) { out.append("Expires", v) }
        return out
    }

    /// RFC 9213 fields are Structured Field Dictionaries: `token[=value]` members. One that does not parse is
    /// ignored as a whole (§2.1), and `Cache-Control` then applies.
    func isValidDirectiveList(_ value: String) -> Bool {
        let members = ListSyntax.splitList(value)
        guard !members.isEmpty else { return false }
        return members.allSatisfy { member in
            let name = member.split(separator: "=", maxSplits: 1).first.map { ListSyntax.trimOWS(String($0)) } ?? ""
            return !name.isEmpty && HTTPSyntax.isToken(name)
        }
    }
}
