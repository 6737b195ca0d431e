/// Recognises an image from its bytes and reads its width and height from the header, without decoding.
///
/// The format comes only from the leading bytes (magic numbers), never from a file name or a `Content-Type`.
/// Supported: PNG, JPEG, GIF, WebP, BMP, HEIC and AVIF (see `ImageFormat`). Everything is read with bounds
/// checks and every loop advances through the data, so hostile input can neither crash nor hang the sniffer;
/// the work is proportional to the header, or to the data in the worst case (a JPEG made of fill bytes).
///
/// How much data is needed: PNG 24 bytes, GIF 10, WebP 30, BMP 26; JPEG up to the end of its SOF header
/// (after any EXIF/ICC segments, so sometimes tens of KB); HEIC/AVIF up to the end of the `meta` box (usually
/// within the first KB). With less, the result is `.truncated`: read more and sniff again.
///
/// ```swift
/// let info = try ImageSniffer.sniff(body)          // [UInt8], ArraySlice, Data… or UnsafeRawBufferPointer
/// print(info.format, info.width, info.height)      // jpeg 4032 3024
///
/// do {
///     _ = try ImageSniffer.sniff(body, maxPixels: 50_000_000)
/// } catch .tooLarge(let width, let height, _) {
///     // refuse the decompression bomb before decoding anything
/// } catch {
///     print(error)  // "not an image: starts with \"<!DOCTYPE html>\": looks like HTML, not an image"
/// }
/// ```
public enum ImageSniffer {
    /// The default pixel limit of `sniff`: 100 million pixels (10,000 × 10,000), about 400 MB decoded as RGBA.
    public static let defaultMaxPixels = 100_000_000

    /// Sniffs an array of bytes.
    ///
    /// - Parameters:
    ///   - bytes: the body, or a prefix of it (see the type's documentation for how much is needed).
    ///   - maxPixels: the most `width * height` accepted; above it (or on overflow) `.tooLarge` is thrown as soon
    ///     as the size is read.
    /// - Throws: `.notAnImage` (with what the bytes look like), `.truncated`, `.tooLarge`.
    ///
    /// `try ImageSniffer.sniff(gifBytes)` → `ImageInfo(format: .gif, width: 19, height: 11)`
    public static func sniff(
        _ bytes: [UInt8], maxPixels: Int = defaultMaxPixels
    ) throws(ImageSniffError) -> ImageInfo {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(ImageSniffError) -> ImageInfo in try sniff(raw, maxPixels: maxPixels) }
        }.get()
    }

    /// Sniffs any contiguous-or-not collection of bytes (`ArraySlice<UInt8>`, Foundation's `Data`…), without
    /// copying when its storage is contiguous.
    ///
    /// `try ImageSniffer.sniff(body[..<4096])` sniffs the first 4 KB of an array.
    public static func sniff<Bytes: RandomAccessCollection>(
        _ bytes: Bytes, maxPixels: Int = defaultMaxPixels
    ) throws(ImageSniffError) -> ImageInfo where Bytes.Element == UInt8 {
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(ImageSniffError) -> ImageInfo in
                try sniff(UnsafeRawBufferPointer(buffer), maxPixels: maxPixels)
            }
        }
        if let contiguous {
            return try contiguous.get()
        }
        return try sniff(Array(bytes), maxPixels: maxPixels)
    }

    /// Sniffs raw memory, e.g. a buffer a network library lends. The bytes are only read during the call.
    ///
    /// `try bytes.withUnsafeBytes { try ImageSniffer.sniff($0) }`
    public static func sniff(
        _ bytes: UnsafeRawBufferPointer, maxPixels: Int = defaultMaxPixels
    ) throws(ImageSniffError) -> ImageInfo {
        let reader = ByteReader(bytes)
        let info: ImageInfo
        switch Signature.detect(reader) {
        case .png: info = try PNGSniffer.sniff(reader)
        case .jpeg: info = try JPEGSniffer.sniff(reader)
        case .gif: info = try GIFSniffer.sniff(reader)
        case .webp: info = try WebPSniffer.sniff(reader)
        case .bmp: info = try BMPSniffer.sniff(reader)
        case .heif: info = try HEIFSniffer.sniff(reader)
        case .cutShort(let name):
            throw .truncated("data ends inside the \(name) signature, after \(reader.count) bytes")
        case .unknown:
            throw .notAnImage(NotAnImageHint.describe(reader))
        }
        try check(info, maxPixels: maxPixels)
        return info
    }

    /// The checks every format shares, done as soon as a header gave its size: no zero side, and the pixel limit.
    static func check(_ info: ImageInfo, maxPixels: Int) throws(ImageSniffError) {
        guard info.width > 0, info.height > 0 else {
            throw .notAnImage(
                "\(info.format.name) header says \(info.width)×\(info.height): an image without pixels is not valid"
            )
        }
        let (pixels, overflow) = info.width.multipliedReportingOverflow(by: info.height)
        if overflow || pixels > maxPixels {
            throw .tooLarge(width: info.width, height: info.height, limit: maxPixels)
        }
    }
}
