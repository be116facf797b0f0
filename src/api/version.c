/*
 * api/version — what this build of the library is: its version, the
 * kernel families compiled in and those this CPU runs, the compiler. For
 * `sprig --version`, bug reports and programs that load libsprig.so (the
 * Python module) to check what they got.
 */
#include "sprig.h"
#include "tensor/matmul.h"

#include <string.h>

const char *sprig_version(void) { return SPRIG_VERSION; }

void sprig_get_build_info(struct sprig_build_info *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->version = SPRIG_VERSION;
    out->kernels_compiled = sprig_kernels_compiled(false);
    out->kernels_cpu = sprig_kernels_compiled(true);
    out->kernels_selected = sprig_kernels_name();
#if defined(__clang__)
    out->compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    out->compiler = "gcc " __VERSION__;
#else
    out->compiler = "unknown";
#endif
}
