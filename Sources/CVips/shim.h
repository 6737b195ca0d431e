// libvips, for the C shim CFerryVips only: Swift code imports CFerryVips, whose header names no vips or glib type.
// This target exists for its pkg-config flags (`pkg-config vips`), which SwiftPM hands to the targets that use it.
#include <vips/vips.h>
