/// HEIC and AVIF: HEIF image files in the ISO base media file format (ISO/IEC 23008-12).
///
/// 1. The first box must be `ftyp`. Its brands decide the format: `avif`/`avis` (major or compatible) → AVIF;
///    `heic`, `heix`, `heim`, `heis`, `hevc`, `hevx` → HEIC; otherwise the generic HEIF brands `mif1`, `msf1`
///    or `miaf` alone → HEIC too (a HEIF image whose codec the brands do not name). The major brand is
///    looked at first, so `heic` + compatible `avif` is HEIC. Other brands (`isom`, `mp42`, `qt  `…) are
///    video or audio files: `.notAnImage`.
/// 2. Top-level boxes are skipped by size up to `meta`, which must be entirely in the data (it is usually a
///    few hundred bytes right after `ftyp`; writers that put it after `mdat` need the whole file).
/// 3. In `meta` (a FullBox): `pitm` names the primary item; `iprp` holds `ipco` (the property boxes, numbered
///    from 1) and `ipma` (which properties belong to which item). The size is the `ispe` (image spatial
///    extents: u32 BE width and height after version/flags) associated with the primary item.
///
/// Why not simply "the largest `ispe`": a HEIC is often a grid. libheif's x265 output for a 64×48 picture is a
/// 64×64 coded tile plus a 64×48 `grid` item (the primary), so the largest `ispe` is the tile's, and wrong.
/// Only when the file names no primary item, or has no `ipma` entry with an `ispe` for it, is the largest
/// `ispe` used (thumbnails are smaller than the image they stand for). No `ispe` at all is `.notAnImage`.
enum HEIFSniffer {
    /// Offset of the box type `ftyp` in the first box.
    static let ftypOffset = 4
    static let ftyp: [UInt8] = Array(ascii: "ftyp")

    static let avifBrands: Set<FourCC> = ["avif", "avis"]
    static let heicBrands: Set<FourCC> = ["heic", "heix", "heim", "heis", "hevc", "hevx"]
    static let genericHEIFBrands: Set<FourCC> = ["mif1", "msf1", "miaf"]

    /// Whether the first box is `ftyp` (any ISO base media file: the brands are judged by `sniff`).
    static func hasSignature(_ reader: ByteReader) -> Bool {
        reader.matches(ftyp, at: ftypOffset)
    }

    static func sniff(_ reader: ByteReader) throws(ImageSniffError) -> ImageInfo {
        let format = try brandFormat(reader)
        let name = format.name
        let meta = try topLevelMeta(reader, name: name)
        let (width, height) = try primarySize(reader, meta: meta, name: name)
        return ImageInfo(format: format, width: width, height: height)
    }

    /// HEIC or AVIF from the `ftyp` brands.
    static func brandFormat(_ reader: ByteReader) throws(ImageSniffError) -> ImageFormat {
        guard let box = try ISOBox.header(in: reader, at: 0, parentEnd: reader.count, topLevel: true) else {
            throw .truncated("ISO media file ends inside its 'ftyp' box header (\(reader.count) bytes)")
        }
        guard box.end - box.start >= 16 else {
            throw .notAnImage("ISO media file's 'ftyp' box is \(box.end - box.start) bytes, too small for a brand")
        }
        guard box.end <= reader.count, let major = reader.fourCC(at: box.contentStart) else {
            throw .truncated("ISO media file ends inside its 'ftyp' box (\(reader.count) of \(box.end) bytes)")
        }
        var compatible: [FourCC] = []
        var offset = box.contentStart + 8  // after the major brand and the minor version
        while box.end - offset >= 4, let brand = reader.fourCC(at: offset) {
            compatible.append(brand)
            offset += 4
        }
        if avifBrands.contains(major) { return .avif }
        if heicBrands.contains(major) { return .heic }
        if compatible.contains(where: avifBrands.contains) { return .avif }
        if compatible.contains(where: heicBrands.contains) { return .heic }
        if genericHEIFBrands.contains(major) || compatible.contains(where: genericHEIFBrands.contains) { return .heic }
        let brands = ([major] + compatible).map { "'\($0)'" }.joined(separator: ", ")
        throw .notAnImage(
            "ISO media file with brands \(brands): a video or audio container, not a HEIC or AVIF image"
        )
    }

    /// The top-level `meta` box, complete in the data.
    static func topLevelMeta(_ reader: ByteReader, name: String) throws(ImageSniffError) -> ISOBox {
        var offset = 0
        // Each box is at least 8 bytes long, so this ends within count / 8 steps.
        while offset < reader.count {
            guard let box = try ISOBox.header(in: reader, at: offset, parentEnd: reader.count, topLevel: true) else {
                break
            }
            if box.type == "meta" {
                guard box.end <= reader.count else {
                    throw .truncated("\(name) ends inside its 'meta' box (\(reader.count) of \(box.end) bytes)")
                }
                return box
            }
            offset = box.end
        }
        throw .truncated("\(name) ends before its 'meta' box, after \(reader.count) bytes")
    }

    /// Width and height of the primary item (see the type's documentation for the fallback).
    static func primarySize(_ reader: ByteReader, meta: ISOBox, name: String) throws(ImageSniffError) -> (Int, Int) {
        // ISO `meta` is a FullBox; QuickTime's is a plain box. Tell them apart by where `hdlr` (always first) is.
        var childrenStart = meta.contentStart
        if reader.fourCC(at: meta.contentStart + 4) != "hdlr" {
            childrenStart = try meta.fullBox(in: reader).fieldsStart
        }
        let metaChildren = try ISOBox.children(in: reader, childrenStart..<meta.end, of: "meta")
        guard let iprp = metaChildren.first(where: { $0.type == "iprp" }) else {
            throw .notAnImage("\(name) has no 'iprp' box: no item properties, so no size")
        }
        let iprpChildren = try ISOBox.children(in: reader, iprp.contentStart..<iprp.end, of: "iprp")
        guard let ipco = iprpChildren.first(where: { $0.type == "ipco" }) else {
            throw .notAnImage("\(name) has no 'ipco' box: no item properties, so no size")
        }
        let properties = try ISOBox.children(in: reader, ipco.contentStart..<ipco.end, of: "ipco")

        // Every ispe, by its 1-based property index.
        var extents: [Int: (width: Int, height: Int)] = [:]
        for (index, box) in properties.enumerated() where box.type == "ispe" {
            let fields = try box.fullBox(in: reader).fieldsStart
            guard box.end - fields >= 8, let width = reader.u32be(at: fields), let height = reader.u32be(at: fields + 4)
            else {
                throw .notAnImage("\(name)'s 'ispe' box at offset \(box.start) is too small for a width and height")
            }
            extents[index + 1] = (width, height)
        }
        guard !extents.isEmpty else {
            throw .notAnImage("\(name) has no 'ispe' (image spatial extents) property: its size is unknown")
        }

        if let pitm = metaChildren.first(where: { $0.type == "pitm" }) {
            let primary = try primaryItem(reader, pitm: pitm, name: name)
            for ipma in iprpChildren where ipma.type == "ipma" {
                let indices = try propertyIndices(reader, ipma: ipma, item: primary, name: name)
                if let extent = indices.lazy.compactMap({ extents[$0] }).first {
                    return extent
                }
            }
        }
        // No primary, or no ispe for it: the largest (overflow-safe: compare products as full-width values).
        let largest = extents.values.max { lhs, rhs in
            lhs.width.multipliedFullWidth(by: lhs.height) < rhs.width.multipliedFullWidth(by: rhs.height)
        }
        return largest ?? (0, 0)
    }

    /// The item ID in `pitm` (u16 for version 0, u32 otherwise).
    static func primaryItem(_ reader: ByteReader, pitm: ISOBox, name: String) throws(ImageSniffError) -> Int {
        let fields = try pitm.fullBox(in: reader)
        let width = fields.version == 0 ? 2 : 4
        guard pitm.end - fields.fieldsStart >= width,
            let item = width == 2 ? reader.u16be(at: fields.fieldsStart) : reader.u32be(at: fields.fieldsStart)
        else {
            throw .notAnImage("\(name)'s 'pitm' box is too small for an item ID")
        }
        return item
    }

    /// The property indices that `ipma` associates with `item` (empty when it has no entry for it).
    ///
    /// Layout: FullBox; entry_count (u32); per entry: item_ID (u16 for version 0, u32 otherwise),
    /// association_count (u8), then that many associations: 1 byte (essential bit + 7-bit index), or 2 bytes
    /// (essential bit + 15-bit index) when flags bit 0 is set. Index 0 means "no property".
    static func propertyIndices(
        _ reader: ByteReader, ipma: ISOBox, item: Int, name: String
    ) throws(ImageSniffError) -> [Int] {
        let fields = try ipma.fullBox(in: reader)
        let itemIDSize = fields.version == 0 ? 2 : 4
        let wide = fields.flags & 1 == 1
        let broken = ImageSniffError.notAnImage("\(name)'s 'ipma' box at offset \(ipma.start) runs past its end")
        var offset = fields.fieldsStart
        func read(_ size: Int) throws(ImageSniffError) -> Int {
            guard ipma.end - offset >= size else { throw broken }
            let value: Int? =
                switch size {
                case 1: reader.u8(at: offset)
                case 2: reader.u16be(at: offset)
                default: reader.u32be(at: offset)
                }
            guard let value else { throw broken }
            offset += size
            return value
        }
        let entryCount = try read(4)
        // Every entry consumes at least 3 bytes, so a huge count fails on the box's end, not by looping.
        for _ in 0..<entryCount {
            let entryItem = try read(itemIDSize)
            let associationCount = try read(1)
            var indices: [Int] = []
            for _ in 0..<associationCount {
                let association = try read(wide ? 2 : 1)
                let index = association & (wide ? 0x7FFF : 0x7F)
                if index != 0 { indices.append(index) }
            }
            if entryItem == item { return indices }
        }
        return []
    }
}
