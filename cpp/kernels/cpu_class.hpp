// CPU classes: what the hardware offers and which kernel table each class dispatches to.
#pragma once

#include <cstdint>

#include <uform/types.h>

#include "cpp/kernels/kernels.hpp"

namespace uform::ram {

/// The most capable class this machine and build can dispatch as (what `auto` resolves to).
uform_cpu_class_t cpu_class_native() noexcept;

/// Whether this machine and build can dispatch as `cpu_class` (never `auto`).
bool cpu_class_available(uform_cpu_class_t cpu_class) noexcept;

/// The kernels `cpu_class` dispatches to (`auto` resolves to the native class); nullptr when it is not available.
/// Classes without kernels of their own yet use the nearest lower class's (the AVX-512 classes use Skylake's, Genoa
/// and Turin Skylake's plus BF16 pair products; the WebAssembly classes the serial ones). The Arm classes NEON, SVE and
/// SVE2 have their own; `arm-sme` has none, so it is never available and a pinned `arm-sme` is refused.
kernels_t const *kernels_for(uform_cpu_class_t cpu_class) noexcept;

/// Prepares the calling thread to run `cpu_class`'s kernels (NumKong's `nk_configure_thread`); call it once on
/// every worker thread. False when the OS refuses.
bool cpu_class_configure_thread(uform_cpu_class_t cpu_class) noexcept;

/// The NumKong capabilities `cpu_class_configure_thread` last configured the calling thread for; zero for a thread
/// it never configured.
std::uint64_t cpu_class_thread_configuration() noexcept;

} // namespace uform::ram
