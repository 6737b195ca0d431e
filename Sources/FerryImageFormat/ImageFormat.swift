/// An image format that `ImageSniffer` recognises from its leading bytes (never from a file name or a
/// `Content-Type`, which an origin can get wrong).
///
/// The raw value is a short lower-case token, fit for logs, metrics labels and cache metadata:
///
/// ```swift
/// let info = try ImageSniffer.sniff(body)
/// info.format            // .webp
/// info.format.rawValue   // "webp"
/// info.format.mimeType   // "image/webp"
/// info.format.name       // "WebP"
/// ImageFormat(rawValue: "avif") == .avif   // true
/// ```
public enum ImageFormat: String, Sendable, CaseIterable {
    /// Portable Network Graphics: signature `89 50 4E 47 0D 0A 1A 0A`, size in the IHDR chunk.
    case png
    /// JPEG/JFIF/EXIF: `FF D8`, size in the first SOFn frame header.
    case jpeg
    /// GIF87a / GIF89a: size of the logical screen (the canvas, for an animation).
    case gif
    /// WebP (`RIFF` … `WEBP`): lossy `VP8 `, lossless `VP8L` or extended `VP8X` (canvas size).
    case webp
    /// Windows/OS2 bitmap: `BM`, size in the DIB header.
    case bmp
    /// HEIF with HEVC (or a generic HEIF brand): ISO base media file, size from the `ispe` property.
    case heic
    /// AVIF (HEIF with AV1): ISO base media file with an `avif`/`avis` brand, size from the `ispe` property.
    case avif

    /// The registered media type: `ImageFormat.heic.mimeType == "image/heic"`.
    public var mimeType: String {
        switch self {
        case .png: "image/png"
        case .jpeg: "image/jpeg"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .bmp: "image/bmp"
        case .heic: "image/heic"
        case .avif: "image/avif"
        }
    }

    /// The usual file name extension, without dot: `ImageFormat.jpeg.fileExtension == "jpg"`.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        default: rawValue
        }
    }

    /// The name people write, for messages: `ImageFormat.webp.name == "WebP"`.
    public var name: String {
        switch self {
        case .png: "PNG"
        case .jpeg: "JPEG"
        case .gif: "GIF"
        case .webp: "WebP"
        case .bmp: "BMP"
        case .heic: "HEIC"
        case .avif: "AVIF"
        }
    }
}
