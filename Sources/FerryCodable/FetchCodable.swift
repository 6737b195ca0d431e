import FerryClient
import FoundationEssentials

/// Decoding and encoding JSON bodies the way the REST APIs Ferry's users talk to write them: snake_case keys.
///
/// ```swift
/// struct Character: Decodable { var name: String; var firstAppearance: String }   // "first_appearance"
/// let c = try await client.fetch(RickAndMorty.character(1)).decode(Character.self)
/// let req = try FetchRequest.json("https://api.example.com/search", method: "POST", body: Query(text: "wisdom"))
/// ```
extension FetchResponse {
    /// The body decoded as `T`, snake_case keys mapped to camelCase (pass another decoder to change that).
    public func decode<T: Decodable>(_ type: T.Type, using decoder: JSONDecoder = .snakeCase) throws -> T {
        try decoder.decode(T.self, from: Data(body))
    }
}

extension FetchRequest {
    /// A request whose body is `value` as JSON (snake_case keys) with `Content-Type: application/json`.
    public static func json<T: Encodable>(_ url: String, method: String = "POST", headers: [HTTPHeader] = [], body value: T,
                                          using encoder: JSONEncoder = .snakeCase) throws -> FetchRequest {
        var all = headers
        if !all.contains(where: { $0.name.lowercased() == "content-type" }) { all.append(HTTPHeader("Content-Type", "application/json")) }
        return FetchRequest(url, method: method, headers: all, body: Array(try encoder.encode(value)))
    }
}

extension JSONDecoder {
    /// A decoder with `.convertFromSnakeCase`.
    public static var snakeCase: JSONDecoder {
        let d = JSONDecoder()
        d.keyDecodingStrategy = .convertFromSnakeCase
        return d
    }
}

extension JSONEncoder {
    /// An encoder with `.convertToSnakeCase` and sorted keys (stable bodies, so identical requests look identical).
    public static var snakeCase: JSONEncoder {
        let e = JSONEncoder()
        e.keyEncodingStrategy = .convertToSnakeCase
        e.outputFormatting = .sortedKeys
        return e
    }
}
