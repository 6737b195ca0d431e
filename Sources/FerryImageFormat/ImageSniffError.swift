/// Why `ImageSniffer.sniff` returned no size. Each message says what was seen, in words fit for a log line
/// or an error response.
///
/// ```swift
/// do {
///     _ = try ImageSniffer.sniff(Array("<!DOCTYPE html><html>…".utf8))
/// } catch {
///     // .notAnImage("starts with \"<!DOCTYPE html>\": looks like HTML, not an image")
///     print(error)
/// }
/// ```
public enum ImageSniffError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not one of the supported formats, or claim to be one and break its rules (a zero width,
    /// a PNG whose first chunk is not IHDR, a JPEG segment of length 0…). The message names what was seen.
    case notAnImage(String)
    /// The bytes start like a supported format but end before the size is known: the body was cut short, or
    /// the caller passed too short a prefix (read more and sniff again).
    case truncated(String)
    /// The header declares more than `limit` pixels (`width * height`, or a product too large for `Int`).
    /// Reported as soon as the size is read, before anything else is looked at: a decompression bomb
    /// is refused from its header.
    case tooLarge(width: Int, height: Int, limit: Int)

    /// The message alone, without the case name.
    public var message: String {
        switch self {
        case .notAnImage(let message), .truncated(let message):
            message
        case .tooLarge(let width, let height, let limit):
            "\(width)×\(height) is more than the limit of \(limit) pixels"
        }
    }

    /// `"not an image: empty body (0 bytes)"`, `"truncated: PNG ends before its IHDR chunk (20 of 24 bytes)"`,
    /// `"too large: 20000×20000 is more than the limit of 100000000 pixels"`.
    public var description: String {
        switch self {
        case .notAnImage: "not an image: \(message)"
        case .truncated: "truncated: \(message)"
        case .tooLarge: "too large: \(message)"
        }
    }
}
