/// Which format the leading bytes announce: the magic numbers, and nothing else.
///
/// | format | signature |
/// | --- | --- |
/// | PNG | `89 50 4E 47 0D 0A 1A 0A` |
/// | JPEG | `FF D8` |
/// | GIF | `GIF87a` or `GIF89a` |
/// | WebP | `RIFF` at 0 and `WEBP` at 8 |
/// | BMP | `BM` and a known DIB header size at 14 (or too short to have one) |
/// | HEIC / AVIF | `ftyp` at 4 (the brands tell which, or that it is a video) |
///
/// Data shorter than a signature that matches its start (at least two bytes of it) is a signature cut short:
/// the body was truncated, rather than something else.
enum Signature: Equatable {
    /// The bytes carry the signature of this sniffer's format(s).
    case png, jpeg, gif, webp, bmp, heif
    /// The data ends inside the signature of the named format.
    case cutShort(String)
    /// No known signature.
    case unknown

    static func detect(_ reader: ByteReader) -> Signature {
        if reader.matches(PNGSniffer.signature, at: 0) { return .png }
        if reader.matches(JPEGSniffer.signature, at: 0) { return .jpeg }
        if GIFSniffer.hasSignature(reader) { return .gif }
        if WebPSniffer.hasSignature(reader) { return .webp }
        if BMPSniffer.hasSignature(reader) { return .bmp }
        if HEIFSniffer.hasSignature(reader) { return .heif }

        if reader.isCutPrefix(of: PNGSniffer.signature, at: 0) { return .cutShort("PNG") }
        if reader.isCutPrefix(of: GIFSniffer.signature87a, at: 0)
            || reader.isCutPrefix(of: GIFSniffer.signature89a, at: 0)
        {
            return .cutShort("GIF")
        }
        // "RIFF" cut, or "RIFF" + size with "WEBP" cut.
        let riff = reader.matches(WebPSniffer.riff, at: 0)
        if reader.isCutPrefix(of: WebPSniffer.riff, at: 0) || (riff && reader.count <= 8)
            || (riff && reader.isCutPrefix(of: WebPSniffer.formType, at: 8, minimum: 1))
        {
            return .cutShort("RIFF (WebP)")
        }
        if reader.isCutPrefix(of: HEIFSniffer.ftyp, at: HEIFSniffer.ftypOffset) {
            return .cutShort("ISO media (HEIC/AVIF) 'ftyp'")
        }
        return .unknown
    }
}
