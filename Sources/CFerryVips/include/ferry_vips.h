// ferry_vips: the few typed calls Ferry makes of libvips (whose own API is variadic and GObject-based, which Swift
// cannot call well). No vips or glib type crosses this header: Swift sees plain structs and byte buffers.
//
// Thread safety: every call may run on any thread once `ferry_vips_start` returned; libvips is thread-safe.
#ifndef FERRY_VIPS_H
#define FERRY_VIPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What an image is, as stored (`width`, `height` of one page) and as displayed (EXIF orientation applied).
typedef struct ferry_vips_info {
    int width;            // of one page, as stored
    int height;           // of one page, as stored
    int pages;            // frames of an animation, pages of a document; 1 otherwise
    int orientation;      // EXIF orientation 1…8 (1 when absent)
    int display_width;    // as shown: width and height swapped for orientations 5…8
    int display_height;
    int has_alpha;
    int via_magick;       // 1: read by ImageMagick's loader (one image of the file, rows already upright)
    char format[32];      // "jpeg", "png", "webp", "gif", "avif", "heic", "tiff", "svg", "pdf", "jxl", …
} ferry_vips_info;

/// Why a call failed: one of these, with libvips's message.
typedef enum ferry_vips_status {
    FERRY_VIPS_OK = 0,
    FERRY_VIPS_UNKNOWN_FORMAT = 1,  // no loader of this libvips reads these bytes
    FERRY_VIPS_TOO_LARGE = 2,       // over the pixel limit, from the header, before any decode
    FERRY_VIPS_UNDECODABLE = 3,     // truncated, corrupt, or padded with garbage: the decode failed
    FERRY_VIPS_UNSAVABLE = 4,       // the output format cannot be written by this libvips
    FERRY_VIPS_BAD_ARGUMENT = 5,
    FERRY_VIPS_CANCELLED = 6,       // `*cancel` was set while it ran: stopped between tiles
    FERRY_VIPS_REFUSED_FORMAT = 7,  // a loader reads it, but not one Ferry lets decode bytes from the web
} ferry_vips_status;

/// How a variant fills its box (sharp's and CSS object-fit's words).
typedef enum ferry_vips_fit {
    FERRY_VIPS_FIT_INSIDE = 0,   // as large as fits inside the box, aspect kept (the box's other side may be larger)
    FERRY_VIPS_FIT_COVER = 1,    // fills the box exactly, aspect kept, the overflow cropped (centre)
    FERRY_VIPS_FIT_CONTAIN = 2,  // exactly the box, the image inside it, the rest filled (transparent or white)
    FERRY_VIPS_FIT_FILL = 3,     // exactly the box, stretched
    FERRY_VIPS_FIT_OUTSIDE = 4,  // as small as covers the box, aspect kept (no crop)
} ferry_vips_fit;

typedef enum ferry_vips_format {
    FERRY_VIPS_FORMAT_ORIGINAL = 0,  // the input's format when libvips can write it, else PNG
    FERRY_VIPS_FORMAT_JPEG = 1,
    FERRY_VIPS_FORMAT_PNG = 2,
    FERRY_VIPS_FORMAT_WEBP = 3,
    FERRY_VIPS_FORMAT_AVIF = 4,
    FERRY_VIPS_FORMAT_GIF = 5,
} ferry_vips_format;

typedef struct ferry_vips_variant {
    int width;            // of the box in pixels (already times the density); 0: not bounded this way
    int height;
    ferry_vips_fit fit;
    ferry_vips_format format;
    int quality;          // 1…100; 0: the format's default
    const volatile int *cancel;  // NULL, or a flag another thread sets to stop the work between tiles
} ferry_vips_variant;

/// The format of `data` when it is one Ferry lets ImageMagick's loader read, by its signature: "bmp", "ico",
/// "psd", "dds", "pnm", "exr", "sgi", "sun" or "tga"; NULL otherwise (ferry_signatures.c). Pure: no libvips call.
const char *ferry_vips_magick_format(const void *data, size_t size);

/// Starts libvips once per process: its operation cache off (Ferry keeps what it makes, in its own budgets),
/// `threads` worker threads per operation. 0 on success. Which loaders bytes may reach is decided per call: the
/// loaders of image formats only (ferry_vips.c, `is_allowed`).
int ferry_vips_start(int threads);

/// The header only (nothing decoded): format, size, pages, orientation. For the pixel limit before a decode.
ferry_vips_status ferry_vips_header(const void *data, size_t size, ferry_vips_info *info, char *message, size_t message_size);

/// Decodes every pixel once (all frames of an animation) and fails on truncation or corruption; refuses images
/// over `max_pixels` (width × height × pages) from the header first.
ferry_vips_status ferry_vips_verify(const void *data, size_t size, int64_t max_pixels, ferry_vips_info *info,
                                    char *message, size_t message_size);

/// Makes a variant with libvips's thumbnail path (shrink-on-load, EXIF orientation applied, first frame or page),
/// encoded in `variant->format`. On success `*out` holds `*out_size` bytes to free with `ferry_vips_free`, and
/// `info` describes the output (its format field names the format written, e.g. "jpeg").
ferry_vips_status ferry_vips_make_variant(const void *data, size_t size, int64_t max_pixels,
                                          const ferry_vips_variant *variant, void **out, size_t *out_size,
                                          ferry_vips_info *info, char *message, size_t message_size);

/// A test image of `width` × `height` (a gradient, alpha when asked) encoded as `format` ("jpeg", "png", "webp",
/// "gif", "avif", "tiff", …, as libvips's savers are named without "save"); with `orientation` set as EXIF when > 1.
ferry_vips_status ferry_vips_make_test_image(int width, int height, int alpha, const char *format, int orientation,
                                             void **out, size_t *out_size, char *message, size_t message_size);

void ferry_vips_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
