/// PNG: the 8-byte signature, then the IHDR chunk, which the specification requires to come first.
///
/// Layout read (PNG 3rd edition §5.2, §11.2.1):
/// ```
/// 0   89 50 4E 47 0D 0A 1A 0A   signature
/// 8   00 00 00 0D               IHDR data length, always 13
/// 12  49 48 44 52               "IHDR"
/// 16  width  (u32 big-endian)
/// 20  height (u32 big-endian)
/// ```
/// The 24 bytes up to the height are all that is needed; the rest of IHDR (bit depth, colour type…) and its
/// CRC are not checked. A file whose first chunk is not IHDR (Apple's `CgBI` PNGs included) is refused.
enum PNGSniffer {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Bytes needed for the width and height.
    static let headerLength = 24

    static func sniff(_ reader: ByteReader) throws(ImageSniffError) -> ImageInfo {
        guard let length = reader.u32be(at: 8), let type = reader.fourCC(at: 12) else {
            throw .truncated("PNG ends before its IHDR chunk (\(reader.count) of \(headerLength) bytes)")
        }
        guard type == "IHDR" else {
            throw .notAnImage("PNG's first chunk is '\(type)', not IHDR as the PNG specification requires")
        }
        guard length == 13 else {
            throw .notAnImage("PNG's IHDR chunk declares \(length) bytes of data instead of 13")
        }
        guard let width = reader.u32be(at: 16), let height = reader.u32be(at: 20) else {
            throw .truncated("PNG ends inside its IHDR chunk (\(reader.count) of \(headerLength) bytes)")
        }
        return ImageInfo(format: .png, width: width, height: height)
    }
}
