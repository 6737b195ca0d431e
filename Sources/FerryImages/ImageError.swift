import FerryImageFormat
import FerryProtocol

/// The image loader's failures; each has one protocol code (`ImageError.wireError`, at the operation edge).
///
/// ```swift
/// do { _ = try await loader.load(request, subscriber: s) }
/// catch .invalidImage(let why) { … }   // not an image, truncated, or over the pixel limit (from the header)
/// catch .decode(let why) { … }         // does not decode: truncated, corrupt, padded with garbage
/// ```
public enum ImageError: Error, Sendable {
    /// The body is not an image, is cut before its size, or is over the pixel limit: `invalid_image`.
    case invalidImage(ImageSniffError)
    /// The bytes did not decode (`invalid_image`), or the decoder could not run (`unavailable`).
    case decode(ImageDecodeError)
    /// The fetch failed (its own protocol error travels on).
    case fetch(WireError)
    /// The origin answered with an error status: `not_found` for 404 and 410, `unavailable` otherwise.
    case httpStatus(Int, url: String)
    case cancelled
}
