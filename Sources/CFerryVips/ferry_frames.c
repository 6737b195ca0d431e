// Frame-by-frame work for animated variants. Why: libvips's thumbnail resizes an animation as it should (every
// frame, delays kept), but its crop and the padding of `contain` see the frames stacked as one tall image: a crop
// would keep the middle frame, padding would pad the stack. Those two steps run here on each frame instead.
#include "ferry_frames.h"

VipsImage *ferry_each_frame(VipsImage *in, ferry_frame_op op, const void *arg) {
    if (!in || !op) {
        vips_error("ferry_vips", "ferry_each_frame: no image or no operation");
        return NULL;
    }
    int width = vips_image_get_width(in), page = vips_image_get_page_height(in);
    int pages = page > 0 ? vips_image_get_height(in) / page : 1;
    if (pages <= 1) return op(in, arg);
    VipsImage **made = g_new0(VipsImage *, pages);
    VipsImage *joined = NULL, *out = NULL;
    int ok = 1;
    for (int i = 0; i < pages && ok; i++) {
        VipsImage *frame = NULL;
        if (vips_extract_area(in, &frame, 0, i * page, width, page, NULL)) {
            ok = 0;
            break;
        }
        made[i] = op(frame, arg);
        g_object_unref(frame);
        ok = made[i] != NULL;
    }
    // The joined image takes its metadata (delays, loop) from the first frame, which has the animation's.
    if (ok && vips_arrayjoin(made, &joined, pages, "across", 1, NULL) == 0 && vips_copy(joined, &out, NULL) == 0) {
        vips_image_set_int(out, VIPS_META_PAGE_HEIGHT, vips_image_get_height(made[0]));
        vips_image_set_int(out, VIPS_META_N_PAGES, pages);
    }
    if (joined) g_object_unref(joined);
    for (int i = 0; i < pages; i++) {
        if (made[i]) g_object_unref(made[i]);
    }
    g_free(made);
    return out;
}
