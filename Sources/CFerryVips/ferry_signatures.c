// The formats Ferry lets ImageMagick's loader read, by their signatures.
//
// Why: libvips hands any bytes its own loaders do not know to ImageMagick, which reads almost anything (its own
// scripting formats, PostScript through Ghostscript, text, and, failing all else, TGA: a format without a magic
// number). Bytes from the web go there only when they carry the signature of one of a few binary raster formats
// that libvips reads only through ImageMagick here; each check is strict enough that another format's bytes do
// not pass for it (an uncompressed TGA starts 00 00 02 00, as a cursor file does).
// Pure: no libvips call; tested byte by byte (MagickSignatureTests).
#include "ferry_vips.h"

#include <string.h>

static unsigned le16(const unsigned char *b) { return (unsigned)b[0] | (unsigned)b[1] << 8; }
static unsigned long le32(const unsigned char *b) {
    return (unsigned long)b[0] | (unsigned long)b[1] << 8 | (unsigned long)b[2] << 16 | (unsigned long)b[3] << 24;
}

/// BMP: "BM", then a DIB header of one of the sizes Windows and OS/2 wrote.
static int is_bmp(const unsigned char *b, size_t n) {
    if (n < 18 || b[0] != 'B' || b[1] != 'M') return 0;
    unsigned long dib = le32(b + 14);
    return dib == 12 || dib == 16 || dib == 40 || dib == 52 || dib == 56 || dib == 64 || dib == 108 || dib == 124;
}

/// ICO: a 6-byte header (type 1) with the image count, then 16-byte entries whose first image starts after the
/// directory. Not CUR (type 2): ImageMagick takes those bytes for a TGA's and cannot read them.
static int is_ico(const unsigned char *b, size_t n) {
    if (n < 22 || b[0] != 0 || b[1] != 0 || b[2] != 1 || b[3] != 0) return 0;
    unsigned count = le16(b + 4);
    if (count == 0 || count > 256 || n < 6 + 16 * (size_t)count) return 0;
    const unsigned char *entry = b + 6;
    if (entry[3] != 0) return 0;  // reserved
    unsigned long size = le32(entry + 8), offset = le32(entry + 12);
    if (size == 0 || offset < 6 + 16 * (unsigned long)count || offset >= n) return 0;
    return 1;
}

/// Photoshop: "8BPS", version 1 (PSD) or 2 (PSB).
static int is_psd(const unsigned char *b, size_t n) {
    return n >= 26 && memcmp(b, "8BPS", 4) == 0 && b[4] == 0 && (b[5] == 1 || b[5] == 2);
}

/// DirectDraw Surface: "DDS " and a 124-byte header.
static int is_dds(const unsigned char *b, size_t n) { return n >= 128 && memcmp(b, "DDS ", 4) == 0 && le32(b + 4) == 124; }

/// Netpbm (P1–P7) and PFM (PF, Pf): 'P', the kind, then white space.
static int is_pnm(const unsigned char *b, size_t n) {
    if (n < 3 || b[0] != 'P') return 0;
    int kind = (b[1] >= '1' && b[1] <= '7') || b[1] == 'F' || b[1] == 'f';
    return kind && (b[2] == '\n' || b[2] == '\r' || b[2] == ' ' || b[2] == '\t');
}

/// OpenEXR: its magic number and version 2.
static int is_exr(const unsigned char *b, size_t n) {
    return n >= 8 && b[0] == 0x76 && b[1] == 0x2F && b[2] == 0x31 && b[3] == 0x01 && b[4] == 2;
}

/// SGI image: magic 474, storage 0 or 1, 1 or 2 bytes per channel, 1 to 3 dimensions.
static int is_sgi(const unsigned char *b, size_t n) {
    return n >= 512 && b[0] == 0x01 && b[1] == 0xDA && b[2] <= 1 && (b[3] == 1 || b[3] == 2) && b[4] == 0 &&
           b[5] >= 1 && b[5] <= 3;
}

/// Sun raster: its magic number.
static int is_sun(const unsigned char *b, size_t n) {
    return n >= 32 && b[0] == 0x59 && b[1] == 0xA6 && b[2] == 0x6A && b[3] == 0x95;
}

/// TGA has no magic number: its 18-byte header must be one a writer makes — a known image type, a colour map
/// exactly when the type uses one, a pixel depth TGA has, a size, and (uncompressed) the pixels all there.
static int is_tga(const unsigned char *b, size_t n) {
    if (n < 18 + 4) return 0;
    unsigned id_length = b[0], map_type = b[1], type = b[2];
    unsigned map_length = le16(b + 5), map_depth = b[7], width = le16(b + 12), height = le16(b + 14), depth = b[16];
    int mapped = type == 1 || type == 9;
    int known = mapped || type == 2 || type == 3 || type == 10 || type == 11;
    if (!known || map_type > 1 || (mapped != (map_type == 1)) || width == 0 || height == 0) return 0;
    if (depth != 8 && depth != 15 && depth != 16 && depth != 24 && depth != 32) return 0;
    if (b[17] & 0xC0) return 0;  // interleaving: never written
    if (map_type == 1 && (map_length == 0 || (map_depth != 15 && map_depth != 16 && map_depth != 24 && map_depth != 32)))
        return 0;
    if (map_type == 0 && (map_length != 0 || map_depth != 0)) return 0;
    size_t header = 18 + id_length + (size_t)map_length * ((map_depth + 7) / 8);
    if (header >= n) return 0;
    if (type <= 3 && header + (size_t)width * height * ((depth + 7) / 8) > n) return 0;
    return 1;
}

const char *ferry_vips_magick_format(const void *data, size_t size) {
    const unsigned char *b = data;
    if (!b) return NULL;
    if (is_bmp(b, size)) return "bmp";
    if (is_ico(b, size)) return "ico";
    if (is_psd(b, size)) return "psd";
    if (is_dds(b, size)) return "dds";
    if (is_pnm(b, size)) return "pnm";
    if (is_exr(b, size)) return "exr";
    if (is_sgi(b, size)) return "sgi";
    if (is_sun(b, size)) return "sun";
    if (is_tga(b, size)) return "tga";  // last: the loosest
    return NULL;
}
