import FerryClient
import FoundationEssentials

// A module of its own so that the `ferry` CLI, which links the Swift runtime statically for start-up time, does
// not pull in Foundation: apps add `import FerryCodable` next to `import FerryClient`.

/// Storing `Codable` values as JSON, with snake_case keys, the way the REST APIs Ferry's users talk to write them.
///
/// ```swift
/// struct Episode: Codable { var airDate: String; var writtenBy: String }
/// try await client.cacheSetJSON("ep-101", episode, ttl: .seconds(600))
/// let ep: Episode? = try await client.cacheGetJSON("ep-101", as: Episode.self)
/// ```
extension FerryClient {
    @discardableResult
    public func cacheSetJSON<T: Encodable>(_ key: String, _ value: T, namespace: String? = nil, ttl: Duration? = nil,
                                           ifAbsent: Bool = false) async throws -> Bool {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(value)
        return try await cacheSet(key, Array(data), namespace: namespace, ttl: ttl, ifAbsent: ifAbsent)
    }

    /// The decoded value, or nil when the key is absent. A value that is not valid JSON for `T` throws the
    /// decoder's error.
    public func cacheGetJSON<T: Decodable>(_ key: String, as type: T.Type, namespace: String? = nil) async throws -> T? {
        guard let cached = try await cacheGet(key, namespace: namespace) else { return nil }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(T.self, from: Data(cached.bytes))
    }
}
