// ferry_vips: the typed calls of ferry_vips.h over libvips's variadic API. Every function validates its arguments
// before calling libvips, and unrefs every image it made on every path.
#include "ferry_vips.h"
#include "ferry_frames.h"

#include <string.h>
#include <vips/vips.h>

// libvips keeps one error buffer for the process; the lock keeps one call's read-and-clear whole. Another thread's
// message can still land between a failure and its read: messages are for people, status codes for decisions.
static GMutex error_lock;

static void take_error(char *message, size_t message_size, const char *fallback) {
    g_mutex_lock(&error_lock);
    const char *text = vips_error_buffer();
    if (message && message_size > 0) {
        const char *use = (text && text[0]) ? text : fallback;
        size_t n = strlen(use);
        // Only the first line: libvips stacks one line per layer, the first says what failed.
        const char *newline = memchr(use, '\n', n);
        if (newline && newline != use) n = (size_t)(newline - use);
        if (n >= message_size) n = message_size - 1;
        memcpy(message, use, n);
        message[n] = 0;
    }
    vips_error_clear();
    g_mutex_unlock(&error_lock);
}

static void set_message(char *message, size_t message_size, const char *text) {
    if (!message || message_size == 0) return;
    g_strlcpy(message, text, message_size);
}

/// libvips's warnings (a tile that did not decode, a profile ignored) would go to the daemon's stderr one line
/// each, at the rate bad images come; the failure they lead to is reported through the status and message.
static void drop_log(const gchar *domain, GLogLevelFlags level, const gchar *text, gpointer data) {
    (void)domain, (void)level, (void)text, (void)data;
}

int ferry_vips_start(int threads) {
    if (VIPS_INIT("ferryd")) return -1;
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO, drop_log, NULL);
    // Ferry stores what it makes under its own budgets: a second, unbounded cache inside libvips would hold
    // decoded images outside them.
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_cache_set_max_files(0);
    vips_concurrency_set(threads > 0 ? threads : 1);
    return 0;
}

void ferry_vips_free(void *p) { g_free(p); }

/// The format's short name from the loader's type name (`VipsForeignLoadJpegBuffer` → "jpeg"); HEIF files are
/// "avif" or "heic" by their compression.
static void format_of(const char *loader, VipsImage *image, char *out, size_t out_size) {
    static const char *known[][2] = {
        {"jpeg", "jpeg"}, {"png", "png"}, {"webp", "webp"}, {"gif", "gif"}, {"tiff", "tiff"}, {"svg", "svg"},
        {"pdf", "pdf"}, {"jxl", "jxl"}, {"jp2k", "jp2"}, {"ppm", "pnm"}, {"rad", "hdr"}, {"matrix", "matrix"},
        {"csv", "csv"}, {"fits", "fits"}, {"openexr", "exr"}, {"magick", "magick"},
    };
    const char *prefix = "VipsForeignLoad";
    if (strncmp(loader, prefix, strlen(prefix)) == 0) loader += strlen(prefix);
    char lower[64];
    g_strlcpy(lower, loader, sizeof lower);
    for (char *c = lower; *c; c++) *c = g_ascii_tolower(*c);
    if (strstr(lower, "heif")) {
        const char *compression = NULL;
        int av1 = image && vips_image_get_typeof(image, "heif-compression") &&
                  vips_image_get_string(image, "heif-compression", &compression) == 0 && compression &&
                  strcmp(compression, "av1") == 0;
        g_strlcpy(out, av1 ? "avif" : "heic", out_size);
        return;
    }
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        if (strstr(lower, known[k][0])) {
            g_strlcpy(out, known[k][1], out_size);
            return;
        }
    }
    g_strlcpy(out, lower, out_size);
}

/// Whether the loader reads several frames (animations): those are verified frame by frame (`n=-1`).
static int is_animated_loader(const char *loader) {
    char format[32];
    format_of(loader, NULL, format, sizeof format);
    return strcmp(format, "gif") == 0 || strcmp(format, "webp") == 0;
}

static void fill_info(VipsImage *image, const char *loader, ferry_vips_info *info) {
    memset(info, 0, sizeof *info);
    info->width = vips_image_get_width(image);
    info->pages = vips_image_get_n_pages(image);
    if (info->pages < 1) info->pages = 1;
    info->height = vips_image_get_page_height(image);
    info->orientation = vips_image_get_orientation(image);
    if (info->orientation < 1 || info->orientation > 8) info->orientation = 1;
    int swap = info->orientation >= 5;
    info->display_width = swap ? info->height : info->width;
    info->display_height = swap ? info->width : info->height;
    info->has_alpha = vips_image_hasalpha(image) ? 1 : 0;
    format_of(loader, image, info->format, sizeof info->format);
}

/// Bytes from the web go only to the loaders of image formats: not to libvips's loaders of data files (CSV,
/// matrices, FITS, its own format, raw) nor to ImageMagick's, which reads almost anything, except for the formats
/// only it reads here, recognised by their signatures (`ferry_vips_magick_format`).
static int is_allowed(const char *loader, const void *data, size_t size) {
    static const char *formats[] = {"jpeg", "png", "webp", "gif", "avif", "heic", "tiff", "svg", "pdf", "jxl", "jp2", "pnm", "hdr"};
    char format[32];
    format_of(loader, NULL, format, sizeof format);
    for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++) {
        if (strcmp(format, formats[k]) == 0) return 1;
    }
    return strcmp(format, "magick") == 0 && ferry_vips_magick_format(data, size) != NULL;
}

/// Opens the header of `data` with its loader (lazy: no pixel decoded yet). NULL with the status set on failure.
static VipsImage *open_header(const void *data, size_t size, int all_frames, const char **loader_out,
                              ferry_vips_status *status, char *message, size_t message_size) {
    const char *loader = vips_foreign_find_load_buffer(data, size);
    if (!loader) {
        vips_error_clear();  // its words ("buffer is not in a known format") add nothing to these
        set_message(message, message_size, "no format Ferry decodes: not one libvips reads, nor a BMP, ICO, PSD, DDS, "
                                            "PNM, EXR, SGI, Sun raster or TGA file");
        *status = FERRY_VIPS_UNKNOWN_FORMAT;
        return NULL;
    }
    *loader_out = loader;
    if (!is_allowed(loader, data, size)) {
        char format[32];
        format_of(loader, NULL, format, sizeof format);
        if (strcmp(format, "magick") == 0) {
            // ImageMagick claims almost any bytes (it reads what it cannot place as a TGA): to Ferry, bytes without
            // a signature it trusts are bytes nothing reads.
            set_message(message, message_size, "no format Ferry decodes: not one libvips reads, nor a BMP, ICO, PSD, "
                                               "DDS, PNM, EXR, SGI, Sun raster or TGA file");
            *status = FERRY_VIPS_UNKNOWN_FORMAT;
        } else {
            snprintf(message, message_size, "libvips reads these bytes as %s, not an image format Ferry decodes", format);
            *status = FERRY_VIPS_REFUSED_FORMAT;
        }
        return NULL;
    }
    VipsImage *image = NULL;
    // fail_on=error: truncation and corrupt data end the decode with an error, where libvips would otherwise
    // fill what is missing with grey and succeed.
    if (all_frames && is_animated_loader(loader)) {
        image = vips_image_new_from_buffer(data, size, "", "access", VIPS_ACCESS_SEQUENTIAL,
                                           "fail_on", VIPS_FAIL_ON_ERROR, "n", -1, NULL);
    } else {
        image = vips_image_new_from_buffer(data, size, "", "access", VIPS_ACCESS_SEQUENTIAL,
                                           "fail_on", VIPS_FAIL_ON_ERROR, NULL);
    }
    if (!image) {
        take_error(message, message_size, "the image's header cannot be read");
        *status = FERRY_VIPS_UNDECODABLE;
    }
    return image;
}

static int over_limit(const ferry_vips_info *info, int64_t max_pixels) {
    return max_pixels > 0 && (int64_t)info->width * info->height * info->pages > max_pixels;
}

ferry_vips_status ferry_vips_header(const void *data, size_t size, ferry_vips_info *info, char *message,
                                    size_t message_size) {
    if (!data || size == 0 || !info) {
        set_message(message, message_size, "no bytes");
        return FERRY_VIPS_BAD_ARGUMENT;
    }
    ferry_vips_status status = FERRY_VIPS_OK;
    const char *loader = NULL;
    VipsImage *image = open_header(data, size, 1, &loader, &status, message, message_size);
    if (!image) return status;
    fill_info(image, loader, info);
    g_object_unref(image);
    if (strcmp(info->format, "magick") == 0) {
        // Read by ImageMagick, let in by its signature (is_allowed): named by it. ImageMagick hands over the first
        // image only (a PSD's layers and an ICO's other sizes are not frames), with its rows already upright: the
        // orientation it reports (a TGA stored bottom-up says 4) is where the file's rows start, and applying it
        // again would turn the picture upside down.
        g_strlcpy(info->format, ferry_vips_magick_format(data, size), sizeof info->format);
        info->via_magick = 1;
        info->pages = 1;
        info->orientation = 1;
        info->display_width = info->width;
        info->display_height = info->height;
    }
    return FERRY_VIPS_OK;
}

ferry_vips_status ferry_vips_verify(const void *data, size_t size, int64_t max_pixels, ferry_vips_info *info,
                                    char *message, size_t message_size) {
    ferry_vips_status status = ferry_vips_header(data, size, info, message, message_size);
    if (status != FERRY_VIPS_OK) return status;
    if (over_limit(info, max_pixels)) {
        snprintf(message, message_size, "%d × %d × %d pages is over the limit of %lld pixels", info->width,
                 info->height, info->pages, (long long)max_pixels);
        return FERRY_VIPS_TOO_LARGE;
    }
    const char *loader = NULL;
    VipsImage *image = open_header(data, size, 1, &loader, &status, message, message_size);
    if (!image) return status;
    // The average of every pixel: the cheapest operation that makes the loader decode all of them.
    double average = 0;
    int rc = vips_avg(image, &average, NULL);
    g_object_unref(image);
    if (rc != 0) {
        take_error(message, message_size, "the image does not decode");
        return FERRY_VIPS_UNDECODABLE;
    }
    return FERRY_VIPS_OK;
}

/// The thumbnail box for a fit: width, height and size mode for `vips_thumbnail_buffer`, from the displayed size.
static void thumbnail_box(const ferry_vips_variant *v, const ferry_vips_info *in, int *width, int *height,
                          VipsSize *mode, int *crop) {
    int w = v->width, h = v->height;
    *mode = VIPS_SIZE_BOTH;
    *crop = 0;
    // One side only: the other is unbounded (libvips takes a missing height as equal to the width). Neither: the
    // original's size (a change of format or quality only).
    if (w <= 0 && h <= 0) *mode = VIPS_SIZE_DOWN;
    if (w <= 0) w = VIPS_MAX_COORD;
    if (h <= 0) h = VIPS_MAX_COORD;
    switch (v->fit) {
    case FERRY_VIPS_FIT_COVER:
        *crop = (v->width > 0 && v->height > 0);
        break;
    case FERRY_VIPS_FIT_FILL:
        if (v->width > 0 && v->height > 0) *mode = VIPS_SIZE_FORCE;
        break;
    case FERRY_VIPS_FIT_OUTSIDE:
        if (v->width > 0 && v->height > 0) {
            // The larger of the two scales covers the box; bound by width alone at that scale.
            double sx = (double)v->width / in->display_width, sy = (double)v->height / in->display_height;
            if (sx >= sy) {
                h = VIPS_MAX_COORD;
            } else {
                w = VIPS_MAX_COORD;
            }
        }
        break;
    case FERRY_VIPS_FIT_INSIDE:
    case FERRY_VIPS_FIT_CONTAIN:
        break;
    }
    *width = w;
    *height = h;
}

/// Encodes `image` as `format`; quality 0 keeps the encoder's own default (libvips: 75 for JPEG and WebP, 50 for
/// HEIF), as vipsthumbnail does.
static int save(VipsImage *image, const char *format, int quality, void **out, size_t *out_size) {
    int q = quality > 0 ? quality : 0;
    if (strcmp(format, "jpeg") == 0) {
        return q ? vips_jpegsave_buffer(image, out, out_size, "Q", q, "strip", TRUE, NULL)
                 : vips_jpegsave_buffer(image, out, out_size, "strip", TRUE, NULL);
    }
    if (strcmp(format, "png") == 0) return vips_pngsave_buffer(image, out, out_size, "strip", TRUE, NULL);
    if (strcmp(format, "webp") == 0) {
        return q ? vips_webpsave_buffer(image, out, out_size, "Q", q, "strip", TRUE, NULL)
                 : vips_webpsave_buffer(image, out, out_size, "strip", TRUE, NULL);
    }
    if (strcmp(format, "gif") == 0) return vips_gifsave_buffer(image, out, out_size, "strip", TRUE, NULL);
    if (strcmp(format, "avif") == 0 || strcmp(format, "heic") == 0) {
        VipsForeignHeifCompression compression =
            strcmp(format, "avif") == 0 ? VIPS_FOREIGN_HEIF_COMPRESSION_AV1 : VIPS_FOREIGN_HEIF_COMPRESSION_HEVC;
        return q ? vips_heifsave_buffer(image, out, out_size, "Q", q, "compression", compression, "strip", TRUE, NULL)
                 : vips_heifsave_buffer(image, out, out_size, "compression", compression, "strip", TRUE, NULL);
    }
    if (strcmp(format, "tiff") == 0) return vips_tiffsave_buffer(image, out, out_size, "strip", TRUE, NULL);
    vips_error("ferry_vips", "no saver for \"%s\"", format);
    return -1;
}

static const char *format_name(ferry_vips_format format, const char *input) {
    switch (format) {
    case FERRY_VIPS_FORMAT_JPEG: return "jpeg";
    case FERRY_VIPS_FORMAT_PNG: return "png";
    case FERRY_VIPS_FORMAT_WEBP: return "webp";
    case FERRY_VIPS_FORMAT_AVIF: return "avif";
    case FERRY_VIPS_FORMAT_GIF: return "gif";
    case FERRY_VIPS_FORMAT_ORIGINAL: break;
    }
    // The input's own format when libvips writes it, else PNG.
    static const char *writable[] = {"jpeg", "png", "webp", "gif", "avif", "heic"};
    for (size_t k = 0; k < sizeof writable / sizeof writable[0]; k++) {
        if (strcmp(input, writable[k]) == 0) return writable[k];
    }
    return "png";
}

/// What a frame operation needs: the variant asked for and the output's format.
typedef struct frame_args {
    const ferry_vips_variant *variant;
    const char *format;
} frame_args;

/// Pads a fitted frame to exactly the box, centred: transparent where the output keeps alpha, white otherwise.
static VipsImage *contain(VipsImage *image, const void *arg) {
    const ferry_vips_variant *v = ((const frame_args *)arg)->variant;
    const char *format = ((const frame_args *)arg)->format;
    int keeps_alpha = strcmp(format, "jpeg") != 0;
    VipsImage *base = image, *with_alpha = NULL, *padded = NULL;
    if (keeps_alpha && !vips_image_hasalpha(image)) {
        if (vips_addalpha(image, &with_alpha, NULL)) return NULL;
        base = with_alpha;
    }
    int bands = vips_image_get_bands(base);
    double background[4] = {255, 255, 255, 255};
    if (keeps_alpha) background[0] = background[1] = background[2] = background[3] = 0;
    VipsArrayDouble *bg = vips_array_double_new(background, bands > 4 ? 4 : bands);
    int rc = vips_gravity(base, &padded, VIPS_COMPASS_DIRECTION_CENTRE, v->width, v->height, "extend",
                          VIPS_EXTEND_BACKGROUND, "background", bg, NULL);
    vips_area_unref(VIPS_AREA(bg));
    if (with_alpha) g_object_unref(with_alpha);
    return rc == 0 ? padded : NULL;
}

/// Crops a frame that covers the box to exactly the box, around the centre (an animation's `cover`: libvips's own
/// crop sees the frames as one tall image).
static VipsImage *crop_centre(VipsImage *image, const void *arg) {
    const ferry_vips_variant *v = ((const frame_args *)arg)->variant;
    VipsImage *cropped = NULL;
    int width = VIPS_MIN(v->width, vips_image_get_width(image)), height = VIPS_MIN(v->height, vips_image_get_height(image));
    return vips_smartcrop(image, &cropped, width, height, "interesting", VIPS_INTERESTING_CENTRE, NULL) == 0 ? cropped : NULL;
}

/// Whether a variant of `in` in `format` keeps every frame: an animated GIF or WebP made into a GIF or WebP. Other
/// outputs (JPEG, PNG, AVIF) hold one picture: the first frame.
static int keeps_frames(const ferry_vips_info *in, const char *format) {
    int animated_in = in->pages > 1 && (strcmp(in->format, "gif") == 0 || strcmp(in->format, "webp") == 0);
    return animated_in && (strcmp(format, "gif") == 0 || strcmp(format, "webp") == 0);
}

/// libvips emits "eval" as it computes an image's tiles: a set cancel flag kills the computation there.
static void on_eval(VipsImage *image, VipsProgress *progress, void *flag) {
    (void)progress;
    if (*(const volatile int *)flag) vips_image_set_kill(image, TRUE);
}

ferry_vips_status ferry_vips_make_variant(const void *data, size_t size, int64_t max_pixels,
                                          const ferry_vips_variant *variant, void **out, size_t *out_size,
                                          ferry_vips_info *info, char *message, size_t message_size) {
    if (!variant || !out || !out_size || !info || variant->width < 0 || variant->height < 0 ||
        variant->width > VIPS_MAX_COORD || variant->height > VIPS_MAX_COORD || variant->quality < 0 ||
        variant->quality > 100) {
        set_message(message, message_size, "a variant's width and height are 0…10,000,000 and its quality 0…100");
        return FERRY_VIPS_BAD_ARGUMENT;
    }
    ferry_vips_info in;
    ferry_vips_status status = ferry_vips_header(data, size, &in, message, message_size);
    if (status != FERRY_VIPS_OK) return status;
    if (over_limit(&in, max_pixels)) {
        snprintf(message, message_size, "%d × %d × %d pages is over the limit of %lld pixels", in.width, in.height,
                 in.pages, (long long)max_pixels);
        return FERRY_VIPS_TOO_LARGE;
    }
    const char *format = format_name(variant->format, in.format);
    if ((variant->fit == FERRY_VIPS_FIT_CONTAIN) && (variant->width == 0 || variant->height == 0)) {
        set_message(message, message_size, "fit contain needs both a width and a height");
        return FERRY_VIPS_BAD_ARGUMENT;
    }
    int width, height, crop, frames = keeps_frames(&in, format);
    VipsSize mode;
    // An animation's cover: resized to cover the box (as `outside`), then each frame cropped (crop_centre).
    ferry_vips_variant box = *variant;
    int crop_frames = frames && box.fit == FERRY_VIPS_FIT_COVER && box.width > 0 && box.height > 0;
    if (crop_frames) box.fit = FERRY_VIPS_FIT_OUTSIDE;
    thumbnail_box(&box, &in, &width, &height, &mode, &crop);
    VipsImage *thumb = NULL;
    // fail_on=error as in verify: a variant is never made of a half-decoded original; n=-1: every frame.
    // The loader's own options go through option_string: thumbnail's `fail_on` alone does not reach every loader.
    // no_rotate for ImageMagick's images: their rows are upright already (ferry_vips_header).
    const char *load = frames ? "fail_on=error,n=-1" : "fail_on=error";
    int rc = crop ? vips_thumbnail_buffer((void *)data, size, &thumb, width, "height", height, "size", mode, "crop",
                                          VIPS_INTERESTING_CENTRE, "no_rotate", in.via_magick, "option_string",
                                          load, NULL)
                  : vips_thumbnail_buffer((void *)data, size, &thumb, width, "height", height, "size", mode,
                                          "no_rotate", in.via_magick, "option_string", load, NULL);
    if (rc != 0) {
        take_error(message, message_size, "the image does not decode");
        return FERRY_VIPS_UNDECODABLE;
    }
    VipsImage *final = thumb;
    frame_args args = {variant, format};
    if (variant->fit == FERRY_VIPS_FIT_CONTAIN || crop_frames) {
        final = ferry_each_frame(thumb, crop_frames ? crop_centre : contain, &args);
        g_object_unref(thumb);
        if (!final) {
            take_error(message, message_size, "fitting the variant to its box failed");
            return FERRY_VIPS_UNDECODABLE;
        }
    }
    // Made in memory first (the variant, not the original: shrink-on-load keeps that small), so that a decode
    // failure is told from an encoder's, and a cancel stops the costly part.
    if (variant->cancel) {
        vips_image_set_progress(final, TRUE);
        g_signal_connect(final, "eval", G_CALLBACK(on_eval), (void *)variant->cancel);
    }
    VipsImage *made = vips_image_copy_memory(final);
    g_object_unref(final);
    if (!made) {
        if (variant->cancel && *variant->cancel) {
            take_error(message, message_size, "cancelled");
            set_message(message, message_size, "cancelled");
            return FERRY_VIPS_CANCELLED;
        }
        take_error(message, message_size, "the image does not decode");
        return FERRY_VIPS_UNDECODABLE;
    }
    final = made;
    rc = save(final, format, variant->quality, out, out_size);
    if (rc == 0) {
        fill_info(final, "", info);
        g_strlcpy(info->format, format, sizeof info->format);
        info->orientation = 1;  // applied: the variant is stored upright
    }
    g_object_unref(final);
    if (rc != 0) {
        take_error(message, message_size, "this libvips cannot write the format asked for");
        return FERRY_VIPS_UNSAVABLE;
    }
    return FERRY_VIPS_OK;
}

ferry_vips_status ferry_vips_make_test_image(int width, int height, int alpha, const char *format, int orientation,
                                             void **out, size_t *out_size, char *message, size_t message_size) {
    if (width < 1 || height < 1 || width > 100000 || height > 100000 || !format || !out || !out_size) {
        set_message(message, message_size, "bad test image arguments");
        return FERRY_VIPS_BAD_ARGUMENT;
    }
    VipsImage *x = NULL, *rgb = NULL, *image = NULL;
    // A horizontal gradient in three bands (red rises left to right, blue falls), so orientation can be checked.
    if (vips_xyz(&x, width, height, NULL)) goto failed;
    VipsImage *bands[3] = {NULL, NULL, NULL};
    if (vips_extract_band(x, &bands[0], 0, NULL) || vips_extract_band(x, &bands[2], 1, NULL)) goto failed_bands;
    VipsImage *scaled_x = NULL, *scaled_y = NULL;
    if (vips_linear1(bands[0], &scaled_x, 255.0 / width, 0, "uchar", TRUE, NULL) ||
        vips_linear1(bands[2], &scaled_y, -255.0 / height, 255, "uchar", TRUE, NULL)) {
        if (scaled_x) g_object_unref(scaled_x);
        goto failed_bands;
    }
    VipsImage *parts[4] = {scaled_x, scaled_y, scaled_y, scaled_x};
    int rc = vips_bandjoin(parts, &rgb, alpha ? 4 : 3, NULL);
    g_object_unref(scaled_x);
    g_object_unref(scaled_y);
    g_object_unref(bands[0]);
    g_object_unref(bands[2]);
    g_object_unref(x);
    x = NULL;
    if (rc) goto failed;
    if (vips_copy(rgb, &image, "interpretation", VIPS_INTERPRETATION_sRGB, NULL)) goto failed;
    g_object_unref(rgb);
    rgb = NULL;
    if (orientation > 1) vips_image_set_int(image, VIPS_META_ORIENTATION, orientation);
    if (strcmp(format, "jpeg") == 0) {
        // Not `strip`: the orientation must survive as EXIF.
        rc = vips_jpegsave_buffer(image, out, out_size, "Q", 90, NULL);
    } else if (strcmp(format, "bmp") == 0 || strcmp(format, "ppm") == 0) {
        vips_error("ferry_vips", "use a command-line tool for %s", format);
        rc = -1;
    } else {
        rc = save(image, format, 0, out, out_size);
    }
    g_object_unref(image);
    if (rc) goto failed;
    return FERRY_VIPS_OK;
failed_bands:
    if (bands[0]) g_object_unref(bands[0]);
    if (bands[2]) g_object_unref(bands[2]);
failed:
    if (x) g_object_unref(x);
    if (rgb) g_object_unref(rgb);
    take_error(message, message_size, "making the test image failed");
    return FERRY_VIPS_UNSAVABLE;
}
