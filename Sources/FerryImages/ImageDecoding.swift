import FerryProtocol

/// Decodes images for the loader: the daemon implements it with libvips on a bounded pool of threads
/// (`VipsDecoder`, FerryVips), tests with a counting fake. Runs off the loader's actor and off the loop thread.
///
/// ```swift
/// let decoded = try await decoder.verify(bytes, maxPixels: 100_000_000)
/// decoded.format        // "jpeg"
/// decoded.width         // as displayed: an EXIF orientation of 6 turns a stored 300×200 into 200×300
/// decoded.orientation   // 6
/// ```
public protocol ImageDecoding: Sendable {
    /// Decodes every pixel once (every frame of an animation) and says what the image is as displayed; throws
    /// `.undecodable` for truncated, corrupt or garbage-padded bytes and `.tooLarge` over `maxPixels`, from the
    /// header, before decoding. A cancelled caller stops waiting; the decode it started finishes on its thread.
    func verify(_ bytes: ArraySlice<UInt8>, maxPixels: Int) async throws(ImageDecodeError) -> DecodedImage

    /// Makes `variant` of an original that verified (shrink-on-load, orientation applied, first frame or page).
    /// Cancelling the calling task stops the work where the decoder can (libvips: between tiles), freeing its
    /// thread, and throws `.cancelled`.
    func variant(of bytes: ArraySlice<UInt8>, _ variant: ImageVariant, maxPixels: Int) async throws(ImageDecodeError) -> StoredVariant
}

/// What decoding an image found: its format and its size as displayed.
///
/// ```swift
/// DecodedImage(format: "jpeg", width: 200, height: 300, orientation: 6, pages: 1).description   // "jpeg 200×300"
/// ```
public struct DecodedImage: Sendable, Equatable, CustomStringConvertible {
    /// libvips's name of the format: "jpeg", "png", "gif", "webp", "avif", "heic", "tiff", "svg", "pdf", "jxl", …
    public var format: String
    /// Width as displayed: EXIF orientation applied (HEIF `irot` and `clap` are applied by the decoder itself).
    public var width: Int
    public var height: Int
    /// EXIF orientation, 1…8 (1 when the file has none): what a viewer applies to the stored pixels.
    public var orientation: Int
    /// Frames of an animation, pages of a document; 1 otherwise.
    public var pages: Int

    public init(format: String, width: Int, height: Int, orientation: Int = 1, pages: Int = 1) {
        self.format = format
        self.width = width
        self.height = height
        self.orientation = orientation
        self.pages = pages
    }

    public var description: String { "\(format) \(width)×\(height)" }
}

/// Why an image did not decode.
public enum ImageDecodeError: Error, Sendable, Equatable {
    /// No decoder of this daemon reads these bytes.
    case unknownFormat(String)
    /// A loader of this daemon's library reads it, but not one that may read bytes from the web (a data file: CSV,
    /// a matrix, libvips's own format). The message names it.
    case refusedFormat(String)
    /// Over the pixel limit (width × height × pages), from the header.
    case tooLarge(width: Int, height: Int, pages: Int, limit: Int)
    /// Truncated, corrupt or padded with garbage: the decode failed. The message is the decoder's.
    case undecodable(String)
    /// The decoder could not run (its pool stopped, a variant's format cannot be written).
    case unavailable(String)
    /// The caller went away while it ran, and the work stopped.
    case cancelled
}

/// Where a decoder counts the memory its work takes while it runs (the daemon's memory budget, account
/// `decoding`): `taking` before a decode or resize, `giving` the same bytes back after. Called from the decoders'
/// threads.
///
/// ```swift
/// memory.taking(1_200_000); defer { memory.giving(1_200_000) }   // a 500×600 WebP decoded whole
/// ```
public protocol DecodeMemory: Sendable {
    func taking(_ bytes: Int)
    func giving(_ bytes: Int)
}

