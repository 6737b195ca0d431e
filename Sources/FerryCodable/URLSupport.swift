import FerryClient
import FoundationEssentials

/// What URLSession users reach for: `URL` and `Data` in and out, and errors that read as sentences.
///
/// ```swift
/// let (data, response) = try await client.data(from: URL(string: "https://api.example.com/quotes")!)
/// let r = try await client.fetch(url, method: "POST", body: jsonData)
/// catch { print(error.localizedDescription) }   // "ferryd: unavailable: Could not resolve host: …"
/// ```
extension FerryClient {
    /// `url` through ferryd and its shared HTTP cache.
    public func fetch(_ url: URL, method: String = "GET", headers: [HTTPHeader] = [], body: Data? = nil,
                      cache: FetchRequest.CacheMode? = nil) async throws -> FetchResponse {
        try await fetch(FetchRequest(url.absoluteString, method: method, headers: headers, body: body.map { Array($0) } ?? [], cache: cache))
    }

    /// As `URLSession.data(from:)`: the body and the response. Any HTTP status is a response, as there.
    public func data(from url: URL) async throws -> (Data, FetchResponse) {
        let response = try await fetch(url)
        return (Data(response.body), response)
    }
}

extension WireError: LocalizedError {
    /// "ferryd: not_found: no entry \"k\"", not Foundation's "The operation could not be completed. (… error 1.)".
    public var errorDescription: String? { "ferryd: \(codeName): \(message)" }
}
