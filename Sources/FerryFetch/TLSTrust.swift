/// Whose certificates a request trusts over TLS: the daemon's (the system store, plus `--ca-file`), none at all
/// (`insecure`: curl's `-k`), or the client's own CA certificates in PEM (curl's `--cacert`, sent as text: the
/// daemon reads no file a client names). A request that trusts anything but the daemon's store does not share the
/// HTTP cache: what it gets was vouched for by the client only, so it is neither stored nor coalesced with other
/// clients' requests (it runs as `no-store`), and libcurl does not reuse its connections for requests of another
/// trust (its connection cache compares the TLS settings).
///
/// ```swift
/// var spec = FetchSpec(url: "https://dev.local/api")
/// spec.tls = .pem(Array(caPEM.utf8))   // spec.cacheMode becomes .noStore where the arguments are read
/// ```
public enum TLSTrust: Sendable, Equatable {
    case system
    case insecure
    case pem([UInt8])

    /// The largest PEM accepted: a bundle of a few hundred certificates.
    public static let maxPEMBytes = 1 << 20
}
