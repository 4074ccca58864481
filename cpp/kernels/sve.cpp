// The SVE class (Arm's Scalable Vector Extension: Neoverse V1, Fujitsu A64FX, ...): cpp/kernels/sve.hpp's
// vector-length-agnostic kernels, the BF16 pair products on `BFDOT` where the core has SVE BF16, the int8 products on
// `SDOT`.
#include "cpp/kernels/kernels.hpp"

#if defined(__aarch64__)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("sve,bf16"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("+sve+bf16")
#endif

#include "cpp/kernels/sve.hpp"

namespace uform::ram {

// The SVE table, built once from the core's capabilities.
kernels_t const *kernels_sve() noexcept {
    static kernels_t const table = sve_table(uform_cpu_class_arm_sve_k);
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
// No SVE on this architecture.
kernels_t const *kernels_sve() noexcept { return nullptr; }
} // namespace uform::ram

#endif
