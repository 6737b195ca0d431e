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
    /// The body decoded as `T`, snake_case keys mapped to camelCase (pass another decoder to change that). The
    /// status is checked first: a response outside 200…299 throws `HTTPStatusError` with the status and the body,
    /// instead of a decoding error about an error page's JSON.
    public func decode<T: Decodable>(_ type: T.Type, using decoder: JSONDecoder = .snakeCase) throws -> T {
        guard isSuccess else { throw HTTPStatusError(self) }
        return try decoder.decode(T.self, from: Data(body))
    }

    /// The body as `Data`.
    public var data: Data { Data(body) }
}

/// A response whose status is not a success (outside 200…299), where the caller wanted its decoded body
/// (`FetchResponse.decode`): the status, the URL and the body (an API's error message is usually there).
///
/// ```swift
/// do { _ = try await client.fetch(Quotes.random).decode(Quote.self) }
/// catch let e as HTTPStatusError where e.status == 401 { relogin() }
/// ```
public struct HTTPStatusError: Error, LocalizedError, Sendable {
    public var status: Int
    public var url: String
    public var body: [UInt8]
    public var response: FetchResponse

    public init(_ response: FetchResponse) {
        self.response = response
        status = response.status
        url = response.url
        body = response.body
    }

    /// "HTTP 404 from https://…: {"error":"no such quote"}" (the body's first 200 characters, when it is text).
    public var errorDescription: String? {
        var text = "HTTP \(status) from \(url)"
        if let body = String(validating: body.prefix(200), as: UTF8.self), !body.isEmpty { text += ": " + body }
        return text
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

/// An endpoint whose body is a value sent as JSON (snake_case keys), encoded when the request is made: an
/// encoding failure is thrown by `fetch`, before anything is sent. `Content-Type: application/json` is added
/// unless `headers` name one.
///
/// ```swift
/// enum Search: JSONEndpoint {
///     case quotes(Query)
///     var baseURL: String { "https://api.example.com" }
///     var path: String { "/search" }
///     var method: String { "POST" }
///     var jsonBody: Query? { if case .quotes(let q) = self { q } else { nil } }
/// }
/// let found = try await client.fetch(Search.quotes(Query(text: "courage"))).decode([Quote].self)
/// ```
public protocol JSONEndpoint: Endpoint {
    associatedtype JSONBody: Encodable
    var jsonBody: JSONBody? { get }
}

extension JSONEndpoint {
    public func makeBody() throws -> [UInt8] {
        guard let jsonBody else { return body }
        return Array(try JSONEncoder.snakeCase.encode(jsonBody))
    }

    public func makeRequest() throws -> FetchRequest {
        var all = headers
        if jsonBody != nil, !all.contains(where: { $0.name.lowercased() == "content-type" }) {
            all.append(HTTPHeader("Content-Type", "application/json"))
        }
        return FetchRequest(url, method: method, headers: all, body: try makeBody(), cache: cache)
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
