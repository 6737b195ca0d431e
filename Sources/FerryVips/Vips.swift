import CFerryVips
import FerryImages
import FerryProtocol

/// libvips for the process: started once (its operation cache off, one thread per operation; bytes reach the
/// loaders of image formats only), and the typed calls of the C shim `ferry_vips.h` with Swift errors. Blocking: call from a
/// `WorkerPool` thread, never from the loop thread or an actor.
///
/// ```swift
/// try Vips.start()
/// let facts = try Vips.verify(bytes, maxPixels: 100_000_000)   // every pixel decoded once
/// facts.format   // "png"
/// ```
public enum Vips {
    private static let started: Result<Void, ImageDecodeError> = {
        // One thread per operation: Ferry runs several operations at once on its pool, which is what bounds them.
        ferry_vips_start(1) == 0 ? .success(()) : .failure(.unavailable("libvips did not start"))
    }()

    /// Starts libvips (once; later calls return the first outcome).
    public static func start() throws(ImageDecodeError) { try started.get() }

    /// `header`, `verify` and `variant` of a whole array (a file read, a test image).
    public static func header(_ bytes: [UInt8]) throws(ImageDecodeError) -> DecodedImage { try header(bytes[...]) }
    public static func verify(_ bytes: [UInt8], maxPixels: Int) throws(ImageDecodeError) -> DecodedImage {
        try verify(bytes[...], maxPixels: maxPixels)
    }
    public static func variant(of bytes: [UInt8], _ variant: ImageVariant, maxPixels: Int,
                               cancel: CancelFlag? = nil) throws(ImageDecodeError) -> StoredVariant {
        try self.variant(of: bytes[...], variant, maxPixels: maxPixels, cancel: cancel)
    }

    /// The header only: format, stored size, pages, orientation. No pixel decoded.
    public static func header(_ bytes: ArraySlice<UInt8>) throws(ImageDecodeError) -> DecodedImage {
        try start()
        var info = ferry_vips_info()
        var message = [CChar](repeating: 0, count: 512)
        let status = bytes.withUnsafeBytes { ferry_vips_header($0.baseAddress, $0.count, &info, &message, message.count) }
        try check(status, info: info, limit: 0, message)
        return decoded(info)
    }

    /// Decodes every pixel once; refuses images over `maxPixels` from the header first.
    public static func verify(_ bytes: ArraySlice<UInt8>, maxPixels: Int) throws(ImageDecodeError) -> DecodedImage {
        try start()
        var info = ferry_vips_info()
        var message = [CChar](repeating: 0, count: 512)
        let status = bytes.withUnsafeBytes {
            ferry_vips_verify($0.baseAddress, $0.count, Int64(maxPixels), &info, &message, message.count)
        }
        try check(status, info: info, limit: maxPixels, message)
        return decoded(info)
    }

    /// Makes `variant` of `bytes` with libvips's thumbnail path (shrink-on-load, EXIF orientation applied, first
    /// frame or page); refuses originals over `maxPixels` from the header first.
    public static func variant(of bytes: ArraySlice<UInt8>, _ variant: ImageVariant, maxPixels: Int,
                               cancel: CancelFlag? = nil) throws(ImageDecodeError) -> StoredVariant {
        try start()
        var spec = ferry_vips_variant(width: Int32(variant.boxWidth), height: Int32(variant.boxHeight), fit: fit(variant.fit),
                                      format: format(variant.format), quality: Int32(variant.quality ?? 0),
                                      cancel: cancel.map { UnsafePointer($0.flag) })
        var out: UnsafeMutableRawPointer?
        var size = 0
        var info = ferry_vips_info()
        var message = [CChar](repeating: 0, count: 512)
        let status = bytes.withUnsafeBytes {
            ferry_vips_make_variant($0.baseAddress, $0.count, Int64(maxPixels), &spec, &out, &size, &info, &message, message.count)
        }
        defer { ferry_vips_free(out) }
        try check(status, info: info, limit: maxPixels, message)
        return StoredVariant(bytes: Array(UnsafeRawBufferPointer(start: out, count: size)), info: decoded(info))
    }

    static func fit(_ fit: ImageFit) -> ferry_vips_fit {
        switch fit {
        case .inside: FERRY_VIPS_FIT_INSIDE
        case .cover: FERRY_VIPS_FIT_COVER
        case .contain: FERRY_VIPS_FIT_CONTAIN
        case .fill: FERRY_VIPS_FIT_FILL
        case .outside: FERRY_VIPS_FIT_OUTSIDE
        }
    }

    static func format(_ format: ImageOutputFormat) -> ferry_vips_format {
        switch format {
        case .original: FERRY_VIPS_FORMAT_ORIGINAL
        case .jpeg: FERRY_VIPS_FORMAT_JPEG
        case .png: FERRY_VIPS_FORMAT_PNG
        case .webp: FERRY_VIPS_FORMAT_WEBP
        case .avif: FERRY_VIPS_FORMAT_AVIF
        }
    }

    /// A test image (a gradient; orientation > 1 written as EXIF, JPEG only) encoded as `format`: "jpeg", "png",
    /// "webp", "gif", "avif", "heic", "tiff".
    public static func testImage(width: Int, height: Int, alpha: Bool = false, format: String,
                                 orientation: Int = 1) throws(ImageDecodeError) -> [UInt8] {
        try start()
        var out: UnsafeMutableRawPointer?
        var size = 0
        var message = [CChar](repeating: 0, count: 512)
        let status = ferry_vips_make_test_image(Int32(width), Int32(height), alpha ? 1 : 0, format, Int32(orientation),
                                                &out, &size, &message, message.count)
        try check(status, info: ferry_vips_info(), limit: 0, message)
        defer { ferry_vips_free(out) }
        return Array(UnsafeRawBufferPointer(start: out, count: size))
    }

    /// About what decoding an image with this header holds at once, for the daemon's memory budget: the formats
    /// libvips reads in strips (JPEG, PNG, TIFF, PNM) a band of 256 rows; the others (WebP, HEIF, GIF, SVG, PDF,
    /// JPEG XL, JPEG 2000, ImageMagick's) the whole picture; 4 bytes a pixel, one frame at a time.
    ///
    /// `Vips.workingBytes(of: DecodedImage(format: "webp", width: 500, height: 600)) == 1_200_000`
    public static func workingBytes(of image: DecodedImage) -> Int {
        let inStrips = ["jpeg", "png", "tiff", "pnm"].contains(image.format)
        return image.width * (inStrips ? min(image.height, 256) : image.height) * 4
    }

    static func decoded(_ info: ferry_vips_info) -> DecodedImage {
        DecodedImage(format: string(info.format), width: Int(info.display_width), height: Int(info.display_height),
                     orientation: Int(info.orientation), pages: Int(info.pages))
    }

    static func check(_ status: ferry_vips_status, info: ferry_vips_info, limit: Int, _ message: [CChar]) throws(ImageDecodeError) {
        let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch status {
        case FERRY_VIPS_OK: return
        case FERRY_VIPS_UNKNOWN_FORMAT: throw .unknownFormat(text)
        case FERRY_VIPS_REFUSED_FORMAT: throw .refusedFormat(text)
        case FERRY_VIPS_TOO_LARGE:
            throw .tooLarge(width: Int(info.width), height: Int(info.height), pages: Int(info.pages), limit: limit)
        case FERRY_VIPS_UNDECODABLE: throw .undecodable(text)
        case FERRY_VIPS_CANCELLED: throw .cancelled
        default: throw .unavailable(text)
        }
    }

    /// A fixed-size C string field of a struct (a tuple of CChar, as Swift imports it).
    static func string<T>(_ field: T) -> String {
        withUnsafeBytes(of: field) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

/// A flag one thread sets and libvips, working on another, reads between tiles (`ferry_vips_variant.cancel`): set,
/// the work stops. An `Int32` at a fixed address, written once; a stale read costs one more tile.
public final class CancelFlag: @unchecked Sendable {
    let flag = UnsafeMutablePointer<Int32>.allocate(capacity: 1)

    public init() { flag.initialize(to: 0) }
    deinit { flag.deallocate() }

    public func set() { flag.pointee = 1 }
    public var isSet: Bool { flag.pointee != 0 }
}
