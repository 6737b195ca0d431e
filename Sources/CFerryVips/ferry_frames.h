// Private to CFerryVips: work done frame by frame on an animation (ferry_frames.c).
#ifndef FERRY_FRAMES_H
#define FERRY_FRAMES_H

#include <vips/vips.h>

/// One frame in, a new reference out (NULL with libvips's error set on failure). Does not unref `frame`.
typedef VipsImage *(*ferry_frame_op)(VipsImage *frame, const void *arg);

/// `op` applied to each frame of `in` (frames stacked `page-height` apart, as libvips loads an animation with
/// n=-1), the results stacked again with the new `page-height` and the animation's delays and loop kept. A still
/// image is one frame. A new reference, or NULL with libvips's error set.
VipsImage *ferry_each_frame(VipsImage *in, ferry_frame_op op, const void *arg);

#endif
