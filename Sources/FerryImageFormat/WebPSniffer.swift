/// WebP: a RIFF container of form type `WEBP` whose first chunk says which kind of file it is.
///
/// Layout read (RFC 9649, "WebP Image Format"):
/// ```
/// 0   "RIFF", file size - 8 (u32 LE), "WEBP"
/// 12  first chunk: FourCC, data size (u32 LE), data from offset 20
///
/// "VP8 " (simple lossy): a VP8 key frame (RFC 6386 §9.1)
/// 20  frame tag, 3 bytes (bit 0 of the first: 0 = key frame)
/// 23  start code 9D 01 2A
/// 26  width  (u16 LE, low 14 bits; the top 2 bits are a scale hint)
/// 28  height (u16 LE, low 14 bits)
///
/// "VP8L" (simple lossless)
/// 20  signature 2F
/// 21  u32 LE: bits 0–13 width - 1, bits 14–27 height - 1, bit 28 alpha hint, bits 29–31 version (0)
///
/// "VP8X" (extended: alpha, animation, ICC, EXIF, XMP)
/// 20  flags (1 byte), reserved (3 bytes)
/// 24  canvas width - 1  (u24 LE)
/// 27  canvas height - 1 (u24 LE)
/// ```
/// The RIFF size is not checked against the data (a cut body declares more than it has). Any other first
/// chunk is `.notAnImage`.
enum WebPSniffer {
    static let riff: [UInt8] = Array(ascii: "RIFF")
    static let formType: [UInt8] = Array(ascii: "WEBP")

    /// Whether the bytes are a RIFF container of form type WEBP.
    static func hasSignature(_ reader: ByteReader) -> Bool {
        reader.matches(riff, at: 0) && reader.matches(formType, at: 8)
    }

    static func sniff(_ reader: ByteReader) throws(ImageSniffError) -> ImageInfo {
        guard let chunk = reader.fourCC(at: 12), let chunkSize = reader.u32le(at: 16) else {
            throw .truncated("WebP ends before its first chunk header (\(reader.count) of 20 bytes)")
        }
        switch chunk {
        case "VP8 ":
            try requireSize(chunkSize, atLeast: 10, chunk: chunk)
            guard let tag = reader.u8(at: 20), reader.has(3, at: 23),
                let width = reader.u16le(at: 26), let height = reader.u16le(at: 28)
            else {
                throw .truncated("WebP ends inside its VP8 frame header (\(reader.count) of 30 bytes)")
            }
            guard tag & 1 == 0 else {
                throw .notAnImage("WebP's VP8 frame is not a key frame (frame tag \(JPEGSniffer.hex(tag)))")
            }
            guard reader.matches([0x9D, 0x01, 0x2A], at: 23) else {
                throw .notAnImage("WebP's VP8 frame lacks the start code 9D 01 2A")
            }
            return ImageInfo(format: .webp, width: width & 0x3FFF, height: height & 0x3FFF)
        case "VP8L":
            try requireSize(chunkSize, atLeast: 5, chunk: chunk)
            guard let signature = reader.u8(at: 20), let bits = reader.u32le(at: 21) else {
                throw .truncated("WebP ends inside its VP8L header (\(reader.count) of 25 bytes)")
            }
            guard signature == 0x2F else {
                throw .notAnImage("WebP's VP8L chunk starts with \(JPEGSniffer.hex(signature)) instead of 2F")
            }
            guard bits >> 29 == 0 else {
                throw .notAnImage("WebP's VP8L header has version \(bits >> 29); only version 0 exists")
            }
            return ImageInfo(format: .webp, width: (bits & 0x3FFF) + 1, height: ((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            try requireSize(chunkSize, atLeast: 10, chunk: chunk)
            guard let widthMinusOne = reader.u24le(at: 24), let heightMinusOne = reader.u24le(at: 27) else {
                throw .truncated("WebP ends inside its VP8X header (\(reader.count) of 30 bytes)")
            }
            return ImageInfo(format: .webp, width: widthMinusOne + 1, height: heightMinusOne + 1)
        default:
            throw .notAnImage("WebP's first chunk is '\(chunk)'; a WebP starts with 'VP8 ', 'VP8L' or 'VP8X'")
        }
    }

    private static func requireSize(_ size: Int, atLeast minimum: Int, chunk: FourCC) throws(ImageSniffError) {
        guard size >= minimum else {
            throw .notAnImage("WebP's '\(chunk)' chunk declares \(size) bytes, too few for its header (\(minimum))")
        }
    }
}
