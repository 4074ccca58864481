// The AMX probe: NumKong's capability bits, then its per-thread set-up, which asks Linux for the tile state. A NumKong
// built without its Sapphire Rapids AMX target neither reports the tiles nor asks for them: no AMX then.
#include "cpp/kernels/amx.hpp"

#include <numkong/numkong.h>

#if !defined(NK_TARGET_SAPPHIREAMX)
#define NK_TARGET_SAPPHIREAMX 0
#endif

namespace uform::ram {

// Probes the CPU and asks the OS for the tile state once.
bool amx_available() noexcept {
#if NK_TARGET_SAPPHIREAMX
    static bool const available = [] {
        nk_capability_t const capabilities = nk_capabilities();
        if ((capabilities & nk_cap_sapphireamx_k) == 0) return false;
        return nk_configure_thread(capabilities) != 0;
    }();
    return available;
#else
    return false;
#endif
}

} // namespace uform::ram
