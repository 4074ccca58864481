// The AMD residency's GPU classes by architecture: what a device's `gcnArchName` maps to, kept free of HIP's headers
// so that a host-side test checks the mapping without a device.
#pragma once

#include <uform/types.h>

namespace uform::rocm {

/// The class of an AMDGPU architecture as HIP names it (`gfx90a`, `gfx942`, each possibly followed by its target
/// features, as in `gfx942:sramecc+:xnack-`): CDNA 2 for gfx90a, CDNA 3 for gfx942, the two this build compiles for;
/// `uform_gpu_class_auto_k` for any other name, or null.
uform_gpu_class_t class_of_architecture(char const *name) noexcept;

} // namespace uform::rocm
