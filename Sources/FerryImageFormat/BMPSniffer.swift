/// BMP: the 14-byte file header (`BM`), then a DIB header whose size says which layout follows.
///
/// Layout read:
/// ```
/// 0   "BM"
/// 14  DIB header size (u32 little-endian)
///     12 (BITMAPCOREHEADER, OS/2 1.x and Windows 2.x):
/// 18    width  (u16 little-endian)
/// 20    height (u16 little-endian)
///     16, 64 (OS/2 2.x), 40 (BITMAPINFOHEADER), 52, 56, 108 (V4), 124 (V5):
/// 18    width  (i32 little-endian, must be positive)
/// 22    height (i32 little-endian; negative means rows are stored top-down, the size is its absolute value)
/// ```
/// Any other DIB header size is not a BMP this module knows. `BM` alone is a weak signature (plain text can
/// start with it), so `ImageSniffer` only sends bytes here whose DIB header size is one of the above, or
/// that are too short to have one.
enum BMPSniffer {
    static let signature: [UInt8] = Array(ascii: "BM")

    /// DIB header sizes with a known layout.
    static let knownHeaderSizes: Set<Int> = [12, 16, 40, 52, 56, 64, 108, 124]

    /// Offset of the DIB header size.
    static let dibHeaderOffset = 14

    /// Whether the bytes start with `BM` and either end before the DIB header size or have a known one.
    static func hasSignature(_ reader: ByteReader) -> Bool {
        guard reader.matches(signature, at: 0) else { return false }
        guard let size = reader.u32le(at: dibHeaderOffset) else { return true }
        return knownHeaderSizes.contains(size)
    }

    static func sniff(_ reader: ByteReader) throws(ImageSniffError) -> ImageInfo {
        guard let headerSize = reader.u32le(at: dibHeaderOffset) else {
            throw .truncated("BMP ends before its DIB header (\(reader.count) of 18 bytes)")
        }
        guard knownHeaderSizes.contains(headerSize) else {
            throw .notAnImage("BMP's DIB header size \(headerSize) is not one of \(knownHeaderSizes.sorted())")
        }
        if headerSize == 12 {
            guard let width = reader.u16le(at: 18), let height = reader.u16le(at: 20) else {
                throw .truncated("BMP ends inside its BITMAPCOREHEADER (\(reader.count) of 22 bytes)")
            }
            return ImageInfo(format: .bmp, width: width, height: height)
        }
        guard let width = reader.i32le(at: 18), let signedHeight = reader.i32le(at: 22) else {
            throw .truncated("BMP ends inside its \(headerSize)-byte DIB header (\(reader.count) of 26 bytes)")
        }
        guard width >= 0 else {
            throw .notAnImage("BMP's DIB header says width \(width): a width cannot be negative")
        }
        // Int32.min's magnitude fits in Int on 64-bit platforms; on 32-bit ones it becomes Int.max (too large).
        let height = Int(exactly: signedHeight.magnitude) ?? Int.max
        return ImageInfo(format: .bmp, width: width, height: height)
    }
}
