/// JPEG: SOI (`FF D8`), then marker segments walked one by one up to the first frame header (SOFn).
///
/// Walking the segments by their lengths, rather than scanning for `FF C0`, is what makes EXIF safe: an APP1
/// segment can hold a whole JPEG thumbnail with a SOF of its own, which a scan would find first.
///
/// Rules (ITU T.81 §B.1.1):
/// - A marker is `FF` followed by a code; any number of `FF` fill bytes may come before the code.
/// - Standalone markers have no length: TEM (`01`), RST0–RST7 (`D0`–`D7`) and SOI (`D8`).
/// - Every other segment starts with a big-endian u16 length that counts itself (so at least 2), then its data.
/// - SOFn is `C0`–`CF` except `C4` (DHT), `C8` (JPG, reserved) and `CC` (DAC). Its data is the sample
///   precision (1 byte), the height (u16 BE), the width (u16 BE), then the components.
///
/// ```
/// FF D8 | FF E0 len "JFIF"… | FF E1 len "Exif"… (may hold a thumbnail) | FF DB len … | FF C0 len P H H W W …
/// ```
/// Errors: a scan (SOS) or the end (EOI) before any SOF, a segment length below 2, a byte other than `FF`
/// where a marker must be, and a height of 0 (a DNL marker would give it after the first scan; not supported)
/// are `.notAnImage`. Bytes ending first are `.truncated`. Every step moves forward by at least one byte,
/// so runs of fill bytes or tiny segments end with the data: no input can make the walk loop.
enum JPEGSniffer {
    static let signature: [UInt8] = [0xFF, 0xD8]

    static func sniff(_ reader: ByteReader) throws(ImageSniffError) -> ImageInfo {
        var position = signature.count
        // The segment skipped last, for the message when the data ends inside it.
        var skipped: (code: Int, offset: Int, end: Int)? = nil
        while true {
            guard let first = reader.u8(at: position) else {
                if let skipped, skipped.end > reader.count {
                    throw .truncated(
                        "JPEG ends inside segment FF \(hex(skipped.code)) at offset \(skipped.offset) (it runs to "
                            + "byte \(skipped.end), the data has \(reader.count)), before its frame header (SOF)"
                    )
                }
                throw .truncated("JPEG ends before its frame header (SOF), after \(reader.count) bytes")
            }
            guard first == 0xFF else {
                throw .notAnImage(
                    "JPEG has byte \(hex(first)) at offset \(position) where a marker (FF xx) must start"
                )
            }
            // Skip fill bytes: the code is the first byte after the run of FF.
            var codeOffset = position + 1
            while reader.u8(at: codeOffset) == 0xFF {
                codeOffset += 1
            }
            guard let code = reader.u8(at: codeOffset) else {
                throw .truncated("JPEG ends inside a marker at offset \(position), before its frame header (SOF)")
            }
            let segmentStart = codeOffset + 1
            switch code {
            case 0x01, 0xD0...0xD8:
                position = segmentStart
                continue
            case 0x00:
                throw .notAnImage("JPEG has FF 00 at offset \(codeOffset - 1) where a marker must be")
            case 0xD9:
                throw .notAnImage("JPEG reaches its end (EOI) at offset \(codeOffset - 1) without a frame header (SOF)")
            case 0xDA:
                throw .notAnImage("JPEG starts a scan (SOS) at offset \(codeOffset - 1) before any frame header (SOF)")
            default:
                break
            }
            guard let length = reader.u16be(at: segmentStart) else {
                throw .truncated("JPEG ends inside the length of segment FF \(hex(code)) at offset \(codeOffset - 1)")
            }
            guard length >= 2 else {
                throw .notAnImage(
                    "JPEG segment FF \(hex(code)) at offset \(codeOffset - 1) declares length \(length); "
                        + "the minimum is 2"
                )
            }
            if isStartOfFrame(code) {
                return try frameSize(reader, segmentStart: segmentStart, length: length, code: code)
            }
            position = segmentStart + length
            skipped = (code, codeOffset - 1, position)
        }
    }

    /// SOF0–SOF15 except DHT (C4), JPG (C8) and DAC (CC).
    static func isStartOfFrame(_ code: Int) -> Bool {
        (0xC0...0xCF).contains(code) && code != 0xC4 && code != 0xC8 && code != 0xCC
    }

    private static func frameSize(
        _ reader: ByteReader, segmentStart: Int, length: Int, code: Int
    ) throws(ImageSniffError) -> ImageInfo {
        // Length (2) + precision (1) + height (2) + width (2) + component count (1).
        guard length >= 8 else {
            throw .notAnImage("JPEG frame header FF \(hex(code)) is \(length) bytes long, too short for a size")
        }
        guard let height = reader.u16be(at: segmentStart + 3), let width = reader.u16be(at: segmentStart + 5) else {
            throw .truncated("JPEG ends inside its frame header FF \(hex(code)) at offset \(segmentStart - 2)")
        }
        if height == 0 {
            throw .notAnImage("JPEG frame header gives height 0 (to be set by a DNL marker): not supported")
        }
        return ImageInfo(format: .jpeg, width: width, height: height)
    }

    /// Two upper-case hex digits: `hex(0xE1) == "E1"`.
    static func hex(_ byte: Int) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[(byte >> 4) & 0xF], digits[byte & 0xF]])
    }
}
