/// What `ImageSniffer.sniff` found: the format and the stored size in pixels.
///
/// The size is the one in the file's header, as stored: an EXIF orientation (JPEG) or an `irot` rotation
/// (HEIC/AVIF) that turns the picture by 90° on display is not applied, and for HEIC/AVIF it is the size
/// of the decoded image before any `clap` crop. It is what decoding costs, which is what a pixel limit is for.
///
/// ```swift
/// let info = try ImageSniffer.sniff(pngBytes)
/// info.format   // .png
/// info.width    // 37
/// info.height   // 21
/// info.pixels   // 777
/// ```
public struct ImageInfo: Sendable, Equatable, CustomStringConvertible {
    /// The format, recognised from the bytes.
    public var format: ImageFormat
    /// Width in pixels, at least 1.
    public var width: Int
    /// Height in pixels, at least 1 (a top-down BMP's negative height is reported as its absolute value).
    public var height: Int

    /// `width * height`. Values returned by `ImageSniffer.sniff` never overflow here: they were checked against
    /// its `maxPixels`.
    public var pixels: Int { width * height }

    /// `ImageInfo(format: .gif, width: 19, height: 11).pixels == 209`
    public init(format: ImageFormat, width: Int, height: Int) {
        self.format = format
        self.width = width
        self.height = height
    }

    /// `"png 37×21"`
    public var description: String { "\(format.rawValue) \(width)×\(height)" }
}
