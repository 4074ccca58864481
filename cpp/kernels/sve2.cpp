// The SVE2 class (Armv9 cores: Neoverse N2, V2 and Grace, Cortex-X, ...): cpp/kernels/sve.hpp's vector-length-agnostic
// kernels built for SVE2, the BF16 pair products on `BFDOT` where the core has SVE BF16, and the int8 products on
// `USDOT` (unsigned activation bytes times signed weights, as x86's `vpdpbusd`) where it has SVE I8MM, else on `SDOT`.
#include "cpp/kernels/kernels.hpp"

#if defined(__aarch64__)

#include <sys/auxv.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("sve2,bf16,i8mm"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("+sve2+bf16+i8mm")
#endif

#define UFORM_SVE_USDOT 1
#include "cpp/kernels/sve.hpp"

namespace uform::ram {

// The SVE2 table, built once from the core's capabilities: without SVE I8MM, the SVE class's `SDOT` products.
kernels_t const *kernels_sve2() noexcept {
    static kernels_t const table = [] {
        kernels_t kernels = sve_table(uform_cpu_class_arm_sve2_k);
        if (!(getauxval(AT_HWCAP2) & HWCAP2_SVEI8MM)) kernels.gemm_micro_i8 = kernels_sve()->gemm_micro_i8;
        return kernels;
    }();
    return &table;
}

} // namespace uform::ram

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

#else

namespace uform::ram {
// No SVE2 on this architecture.
kernels_t const *kernels_sve2() noexcept { return nullptr; }
} // namespace uform::ram

#endif
