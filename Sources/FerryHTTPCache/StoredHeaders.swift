// Which received header fields go into the store (RFC 9111 §3.1).

/// Fields that describe one connection or one proxy hop rather than the response, never stored:
/// the connection-specific fields of RFC 9110 §7.6.1 (`Connection`, `Proxy-Connection`, `Keep-Alive`, `TE`,
/// `Transfer-Encoding`, `Upgrade`) and the proxy-specific fields RFC 9111 §3.1 forbids storing
/// (`Proxy-Authenticate`, `Proxy-Authentication-Info`, `Proxy-Authorization`).
///
/// ```swift
/// hopByHopFieldNames.contains("transfer-encoding")  // true
/// ```
public let hopByHopFieldNames: Set<String> = [
    "connection", "proxy-connection", "keep-alive", "te", "transfer-encoding", "upgrade",
    "proxy-authenticate", "proxy-authentication-info", "proxy-authorization",
]

/// The lower-cased names of the fields `headers` makes hop-by-hop: `hopByHopFieldNames` plus every name
/// listed in its `Connection` lines (RFC 9110 §7.6.1).
///
/// ```swift
/// connectionSpecificFieldNames(["Connection": "close, X-Trace"]).contains("x-trace")  // true
/// ```
public func connectionSpecificFieldNames(_ headers: HTTPFields) -> Set<String> {
    var names = hopByHopFieldNames
    for member in headers.listMembers("connection") where ListSyntax.isToken(member) {
        names.insert(ListSyntax.lower(member))
    }
    return names
}

/// The header fields to store for a response, in their received order, without:
/// - hop-by-hop fields and the fields named in `Connection` (`connectionSpecificFieldNames`);
/// - the fields named by a qualified `private="..."` (a shared cache must not store them, RFC 9111 §5.2.2.7);
/// - the fields named by a qualified `no-cache="..."`: they may not be reused without revalidation
///   (§5.2.2.4), and dropping them lets the rest of the response be reused without one.
/// `Age`, `Date` and everything else are kept (including `Set-Cookie`, which the origin controls with the
/// directives above). When `receivedAt` is given and the response has no `Date`, one is appended
/// (RFC 9110 §6.6.1: a recipient with a clock that caches a response without `Date` adds it).
///
/// ```swift
/// headersToStore(response: ["Cache-Control": "no-cache=\"X-A\", max-age=60", "X-A": "1", "Keep-Alive": "5"])
/// // ["Cache-Control": "no-cache=\"X-A\", max-age=60"]
/// ```
public func headersToStore(response: HTTPFields, receivedAt: Int64? = nil) -> HTTPFields {
    let cc = CacheControl(responseHeaders: response)
    var drop = connectionSpecificFieldNames(response)
    drop.formUnion(cc.privateFields)
    drop.formUnion(cc.noCacheFields)
    var stored = response.removingAll(names: drop)
    if let receivedAt, !stored.contains("date") {
        stored.append("Date", HTTPDate.format(receivedAt))
    }
    return stored
}
