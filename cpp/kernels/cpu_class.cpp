// CPU class detection through NumKong's capability probe, and the class-to-kernels table.
#include "cpp/kernels/cpu_class.hpp"

#include <numkong/capabilities.h>

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace uform::ram {
namespace {

// The NumKong capability a class needs; zero for a class no capability describes.
nk_capability_t capability_of(uform_cpu_class_t cpu_class) noexcept {
    switch (cpu_class) {
    case uform_cpu_class_serial_k: return nk_cap_serial_k;
    case uform_cpu_class_intel_haswell_k: return nk_cap_haswell_k;
    case uform_cpu_class_intel_skylake_k: return nk_cap_skylake_k;
    case uform_cpu_class_intel_icelake_k: return nk_cap_icelake_k;
    case uform_cpu_class_intel_sapphire_rapids_k: return nk_cap_sapphire_k;
    case uform_cpu_class_amd_genoa_k: return nk_cap_genoa_k;
    case uform_cpu_class_amd_turin_k: return nk_cap_turin_k;
    case uform_cpu_class_arm_neon_k: return nk_cap_neon_k;
    case uform_cpu_class_arm_sve_k: return nk_cap_sve_k;
    case uform_cpu_class_arm_sve2_k: return nk_cap_sve2_k;
    case uform_cpu_class_arm_sme_k: return nk_cap_sme_k;
    case uform_cpu_class_wasm_v128_relaxed_k: return nk_cap_v128relaxed_k;
    default: return 0;
    }
}

// The capabilities `cpu_class_configure_thread` last configured the calling thread for.
thread_local std::uint64_t thread_configuration = 0;

// The hardware's capabilities, probed once.
nk_capability_t capabilities() noexcept {
    static nk_capability_t const probed = nk_capabilities();
    return probed;
}

#if defined(__aarch64__)
// Whether this core runs an Arm class, from the kernel's HWCAP words: NEON needs Advanced SIMD, SVE and SVE2 their
// own bits besides. SME has no kernels of its own, so it is never available (a pinned `arm-sme` is refused).
bool arm_class_available(uform_cpu_class_t cpu_class) noexcept {
    unsigned long const hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    bool const simd = (hwcap & HWCAP_ASIMD) != 0;
    switch (cpu_class) {
    case uform_cpu_class_arm_neon_k: return simd;
    case uform_cpu_class_arm_sve_k: return simd && (hwcap & HWCAP_SVE) != 0;
    case uform_cpu_class_arm_sve2_k: return simd && (hwcap & HWCAP_SVE) != 0 && (hwcap2 & HWCAP2_SVE2) != 0;
    default: return false;
    }
}
#else
// No Arm class runs off AArch64.
bool arm_class_available(uform_cpu_class_t) noexcept { return false; }
#endif

} // namespace

// The best class the capabilities allow, most specific first.
uform_cpu_class_t cpu_class_native() noexcept {
    static constexpr uform_cpu_class_t preference[] = {
        uform_cpu_class_amd_turin_k,     uform_cpu_class_intel_sapphire_rapids_k,
        uform_cpu_class_amd_genoa_k,     uform_cpu_class_intel_icelake_k,
        uform_cpu_class_intel_skylake_k, uform_cpu_class_intel_haswell_k,
        uform_cpu_class_arm_sme_k,       uform_cpu_class_arm_sve2_k,
        uform_cpu_class_arm_sve_k,       uform_cpu_class_arm_neon_k,
        uform_cpu_class_wasm_simd128_k,
    };
    for (uform_cpu_class_t cpu_class : preference)
        if (cpu_class_available(cpu_class)) return cpu_class;
    return uform_cpu_class_serial_k;
}

// A class is available when the hardware has its capability and the build has kernels for it.
bool cpu_class_available(uform_cpu_class_t cpu_class) noexcept {
#if defined(__wasm__)
    // WebAssembly: the engine validated the module's SIMD128 instructions when it loaded it, so the build decides.
    // `wasm-v128-relaxed` has no kernels, so it is refused.
    if (cpu_class == uform_cpu_class_wasm_simd128_k) return kernels_wasm_simd128() != nullptr;
    if (cpu_class == uform_cpu_class_wasm_v128_relaxed_k) return false;
#endif
    switch (cpu_class) {
    case uform_cpu_class_arm_neon_k:
    case uform_cpu_class_arm_sve_k:
    case uform_cpu_class_arm_sve2_k:
    case uform_cpu_class_arm_sme_k: return arm_class_available(cpu_class);
    default: break;
    }
    nk_capability_t const needed = capability_of(cpu_class);
    if (needed == 0 || (capabilities() & needed) != needed) return false;
    switch (cpu_class) {
    case uform_cpu_class_intel_haswell_k: return kernels_haswell() != nullptr;
    case uform_cpu_class_intel_skylake_k:
    case uform_cpu_class_intel_icelake_k:
    case uform_cpu_class_intel_sapphire_rapids_k:
    case uform_cpu_class_amd_genoa_k:
    case uform_cpu_class_amd_turin_k: return kernels_skylake() != nullptr;
    default: return true;
    }
}

// Each class's table: its own, or the nearest lower class's.
kernels_t const *kernels_for(uform_cpu_class_t cpu_class) noexcept {
    if (cpu_class == uform_cpu_class_auto_k) cpu_class = cpu_class_native();
    if (!cpu_class_available(cpu_class)) return nullptr;
    switch (cpu_class) {
    case uform_cpu_class_intel_haswell_k: return kernels_haswell();
    case uform_cpu_class_intel_skylake_k: return kernels_skylake();
    case uform_cpu_class_intel_icelake_k:
    // Sapphire Rapids has AVX-512 BF16, but its `vdpbf16ps` gives half the products a second of its F32 FMAs
    // (docs/decisions.md, "Kernels"), so it keeps Ice Lake's F32 panels.
    case uform_cpu_class_intel_sapphire_rapids_k: return kernels_icelake();
    case uform_cpu_class_amd_genoa_k:
    case uform_cpu_class_amd_turin_k: return kernels_genoa();
    case uform_cpu_class_arm_neon_k: return kernels_neon();
    case uform_cpu_class_arm_sve_k: return kernels_sve();
    case uform_cpu_class_arm_sve2_k: return kernels_sve2();
    case uform_cpu_class_wasm_simd128_k: return kernels_wasm_simd128();
    default: return &kernels_serial();
    }
}

// NumKong's per-thread set-up (AMX tile permission on Linux, SME state on Arm), remembered per thread.
bool cpu_class_configure_thread(uform_cpu_class_t cpu_class) noexcept {
    if (cpu_class == uform_cpu_class_auto_k) cpu_class = cpu_class_native();
    nk_capability_t const wanted = capabilities() & (capability_of(cpu_class) | nk_cap_serial_k);
    if (nk_configure_thread(wanted) == 0) return false;
    thread_configuration = wanted;
    return true;
}

// What this thread was configured for.
std::uint64_t cpu_class_thread_configuration() noexcept { return thread_configuration; }

} // namespace uform::ram
