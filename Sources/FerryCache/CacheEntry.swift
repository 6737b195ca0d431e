/// A cached value with its times (milliseconds since the Unix epoch).
public struct CacheEntry: Sendable, Equatable {
    public var value: [UInt8]
    public var createdAt: Int64
    public var expiresAt: Int64?

    public init(value: [UInt8], createdAt: Int64, expiresAt: Int64?) {
        self.value = value
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    /// Expired entries are never returned: an entry is live strictly before its expiry time.
    public func isExpired(now: Int64) -> Bool {
        guard let expiresAt else { return false }
        return now >= expiresAt
    }

    /// The largest TTL accepted: ten years, in milliseconds.
    public static let maxTTLms: Int64 = 315_360_000_000
}
