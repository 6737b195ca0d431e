/// GIF: the 6-byte signature and version, then the logical screen descriptor.
///
/// Layout read (GIF89a specification §17, §18):
/// ```
/// 0   "GIF87a" or "GIF89a"
/// 6   logical screen width  (u16 little-endian)
/// 8   logical screen height (u16 little-endian)
/// ```
/// The logical screen is the canvas every frame is drawn on, so for an animation it is the size that matters
/// (frames are at most that large once clipped). Frame descriptors are not read.
enum GIFSniffer {
    static let signature87a: [UInt8] = Array(ascii: "GIF87a")
    static let signature89a: [UInt8] = Array(ascii: "GIF89a")

    /// Bytes needed for the width and height.
    static let headerLength = 10

    /// Whether the bytes start with a GIF signature of a known version.
    static func hasSignature(_ reader: ByteReader) -> Bool {
        reader.matches(signature87a, at: 0) || reader.matches(signature89a, at: 0)
    }

    static func sniff(_ reader: ByteReader) throws(ImageSniffError) -> ImageInfo {
        guard let width = reader.u16le(at: 6), let height = reader.u16le(at: 8) else {
            throw .truncated(
                "GIF ends before the end of its logical screen descriptor (\(reader.count) of \(headerLength) bytes)"
            )
        }
        return ImageInfo(format: .gif, width: width, height: height)
    }
}
