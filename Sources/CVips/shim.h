// libvips's public API (Debian libvips-dev). Its operations are variadic (options as name/value pairs ending in NULL)
// and cannot be called from Swift: CVipsShims wraps the few imgfs uses in plain C functions without GLib types.
#include <vips/vips.h>
