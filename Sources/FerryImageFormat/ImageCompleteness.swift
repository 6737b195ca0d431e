/// Whether a file ends where its format says it ends. Decoders stop once they have the pixels, so a PNG without
/// its `IEND` chunk or a GIF without its trailer byte decodes — yet it was cut in transit, and what follows the cut
/// (a later frame, a checksum) is lost. And a WebP or BMP header followed by zeros decodes as a grey or black
/// picture: the container's declared size is what shows the rest is padding. JPEG and HEIF are left to the
/// decoder, whose own checks see their ends.
///
/// ```swift
/// ImageCompleteness.problem(in: png, format: .png)                 // nil: chunks run on to IEND
/// ImageCompleteness.problem(in: Array(png.dropLast()), format: .png)
/// // "PNG ends inside its IEND chunk (587 of 588 bytes)"
/// ```
public enum ImageCompleteness {
    public static func problem(in bytes: [UInt8], format: ImageFormat) -> String? {
        bytes.withUnsafeBytes { problem(in: $0, format: format) }
    }

    /// The same for a slice (an image kept inside a larger buffer, as the HTTP cache's record holds it).
    public static func problem(in bytes: ArraySlice<UInt8>, format: ImageFormat) -> String? {
        bytes.withUnsafeBytes { problem(in: $0, format: format) }
    }

    static func problem(in bytes: UnsafeRawBufferPointer, format: ImageFormat) -> String? {
        switch format {
        case .png: pngProblem(bytes)
        case .gif: gifProblem(bytes)
        case .webp: webpProblem(bytes)
        case .bmp: bmpProblem(bytes)
        default: nil
        }
    }

    /// Walks the chunks from the signature: each is length (4), type (4), data, CRC (4), until `IEND`.
    private static func pngProblem(_ bytes: UnsafeRawBufferPointer) -> String? {
        var at = 8
        while at + 8 <= bytes.count {
            let length = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            let type = String(decoding: bytes[(at + 4)..<(at + 8)], as: UTF8.self)
            let end = at + 12 + length
            guard end <= bytes.count else {
                return "PNG ends inside its \(type) chunk (\(bytes.count) of \(end) bytes)"
            }
            if type == "IEND" { return nil }
            at = end
        }
        return "PNG ends before its IEND chunk (\(bytes.count) bytes)"
    }

    /// A GIF ends with the trailer byte 0x3B; encoders may pad after it with zeros.
    private static func gifProblem(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let last = bytes.lastIndex(where: { $0 != 0 }), bytes[last] == 0x3B else {
            return "GIF ends without its trailer byte (\(bytes.count) bytes)"
        }
        return nil
    }

    /// A WebP is one RIFF chunk: its size field (little-endian, at 4) counts every byte after the first 8.
    private static func webpProblem(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count >= 12 else { return "WebP ends inside its RIFF header (\(bytes.count) bytes)" }
        let declared = littleEndian(bytes, at: 4) + 8
        if bytes.count < declared { return "WebP ends before its RIFF container does (\(bytes.count) of \(declared) bytes)" }
        if bytes.count > declared + 1 {
            return "WebP has \(bytes.count - declared) bytes after its RIFF container's end (\(declared) bytes): padded with something else"
        }
        return nil
    }

    /// A BMP's file header declares its size (at 2); 0 there means unknown, and writers may pad to 4 bytes.
    private static func bmpProblem(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count >= 6 else { return "BMP ends inside its file header (\(bytes.count) bytes)" }
        let declared = littleEndian(bytes, at: 2)
        guard declared > 0 else { return nil }
        if bytes.count < declared { return "BMP ends before its declared size (\(bytes.count) of \(declared) bytes)" }
        if bytes.count > declared + 3 {
            return "BMP has \(bytes.count - declared) bytes after its declared size (\(declared) bytes): padded with something else"
        }
        return nil
    }

    private static func littleEndian(_ bytes: UnsafeRawBufferPointer, at i: Int) -> Int {
        Int(bytes[i]) | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2]) << 16 | Int(bytes[i + 3]) << 24
    }
}
