/// Words for bytes that carry no supported image signature, saying what they look like instead: what an
/// origin sends in place of a picture is usually an HTML error page, a JSON error, or an image in a format
/// this module does not read.
///
/// Examples of messages:
/// - `empty body (0 bytes)`
/// - `starts with "<!DOCTYPE html>": looks like HTML, not an image`
/// - `starts with "<svg xmlns=…": SVG is not supported: a vector format has no pixel size`
/// - `starts with "{"error":"not found",…": looks like JSON, not an image`
/// - `starts with 1F 8B: gzip-compressed data; decode the Content-Encoding before sniffing`
/// - `a RIFF container of type 'WAVE' (audio or video), not a WebP image`
/// - `unrecognised bytes 00 11 22 33 44 55 66 77: not PNG, JPEG, GIF, WebP, BMP, HEIC or AVIF`
enum NotAnImageHint {
    /// How far into the data to look for the first non-blank byte, and for `<svg` after `<?xml`.
    static let scanLimit = 4096

    static func describe(_ reader: ByteReader) -> String {
        if reader.count == 0 { return "empty body (0 bytes)" }

        // Binary formats first, on the raw bytes.
        let binary: [(signature: [UInt8], hint: String)] = [
            ([0x1F, 0x8B], "gzip-compressed data; decode the Content-Encoding before sniffing"),
            ([0x28, 0xB5, 0x2F, 0xFD], "zstd-compressed data; decode the Content-Encoding before sniffing"),
            (Array(ascii: "%PDF-"), "a PDF document, not an image"),
            ([0x50, 0x4B, 0x03, 0x04], "a ZIP archive, not an image"),
            ([0x49, 0x49, 0x2A, 0x00], "TIFF is not supported"),
            ([0x4D, 0x4D, 0x00, 0x2A], "TIFF is not supported"),
            ([0xFF, 0x0A], "JPEG XL is not supported"),
            ([0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20], "JPEG XL is not supported"),
            ([0x00, 0x00, 0x01, 0x00], "ICO is not supported"),
            (Array(ascii: "8BPS"), "a Photoshop document, not an image this module reads"),
        ]
        for (signature, hint) in binary where reader.matches(signature, at: 0) {
            let seen = signature.allSatisfy { (0x21..<0x7F).contains($0) }
                ? "\"\(String(decoding: signature, as: UTF8.self))\"" : hexBytes(reader, count: signature.count)
            return "starts with \(seen): \(hint)"
        }
        if reader.matches(WebPSniffer.riff, at: 0), let form = reader.fourCC(at: 8) {
            return "a RIFF container of type '\(form)' (audio or video), not a WebP image"
        }

        // Text: skip a UTF-8 byte order mark and blank space.
        var start = reader.matches([0xEF, 0xBB, 0xBF], at: 0) ? 3 : 0
        while start < min(reader.count, scanLimit), let byte = reader.u8(at: start), isBlank(byte) {
            start += 1
        }
        if start == reader.count {
            return "only blank text (\(reader.count) bytes), not an image"
        }
        let seen = snippet(reader, from: start)
        if startsWith(reader, "<!doctype html", at: start) || startsWith(reader, "<html", at: start) {
            return "starts with \"\(seen)\": looks like HTML, not an image"
        }
        if startsWith(reader, "<svg", at: start)
            || (startsWith(reader, "<?xml", at: start) && contains(reader, "<svg", from: start))
        {
            return "starts with \"\(seen)\": SVG is not supported: a vector format has no pixel size"
        }
        if startsWith(reader, "<?xml", at: start) {
            return "starts with \"\(seen)\": looks like XML, not an image"
        }
        if startsWith(reader, "<", at: start) {
            return "starts with \"\(seen)\": looks like HTML or XML markup, not an image"
        }
        if startsWith(reader, "{", at: start) || startsWith(reader, "[", at: start) {
            return "starts with \"\(seen)\": looks like JSON, not an image"
        }
        if looksLikeText(reader, from: start) {
            return "starts with \"\(seen)\": looks like text, not an image"
        }
        return "unrecognised bytes \(hexBytes(reader, count: 8)): not PNG, JPEG, GIF, WebP, BMP, HEIC or AVIF"
    }

    private static func isBlank(_ byte: Int) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Case-insensitive ASCII prefix test; `prefix` is lower-case.
    private static func startsWith(_ reader: ByteReader, _ prefix: String, at offset: Int) -> Bool {
        var position = offset
        for expected in prefix.utf8 {
            guard let byte = reader.u8(at: position) else { return false }
            let lowered = (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
            guard lowered == Int(expected) else { return false }
            position += 1
        }
        return true
    }

    /// Whether `needle` (lower-case ASCII) occurs within `scanLimit` bytes from `offset`.
    private static func contains(_ reader: ByteReader, _ needle: String, from offset: Int) -> Bool {
        let end = min(reader.count, offset + scanLimit)
        for position in offset..<end where startsWith(reader, needle, at: position) {
            return true
        }
        return false
    }

    /// Whether the first bytes (up to 64) are printable ASCII, blanks or UTF-8 sequences' bytes (>= 0x80).
    private static func looksLikeText(_ reader: ByteReader, from offset: Int) -> Bool {
        let end = min(reader.count, offset + 64)
        for position in offset..<end {
            guard let byte = reader.u8(at: position) else { return false }
            if !(isBlank(byte) || (0x20..<0x7F).contains(byte) || byte >= 0x80) { return false }
        }
        return true
    }

    /// Up to 24 printable characters from `offset`, to the first `>` (a markup tag) or line end; other bytes
    /// become `?`, and `…` marks a cut.
    static func snippet(_ reader: ByteReader, from offset: Int) -> String {
        var text = ""
        var position = offset
        while position < reader.count, let byte = reader.u8(at: position) {
            if byte == 0x0A || byte == 0x0D { break }
            if position - offset == 24 { return text + "…" }
            text.append((0x20..<0x7F).contains(byte) ? Character(Unicode.Scalar(UInt8(byte))) : "?")
            position += 1
            if byte == 0x3E { break }  // ">"
        }
        return text
    }

    /// The first `count` bytes (or fewer) as upper-case hex pairs: `"1F 8B"`.
    static func hexBytes(_ reader: ByteReader, count: Int) -> String {
        var pairs: [String] = []
        for offset in 0..<min(count, reader.count) {
            if let byte = reader.u8(at: offset) { pairs.append(JPEGSniffer.hex(byte)) }
        }
        return pairs.joined(separator: " ")
    }
}
