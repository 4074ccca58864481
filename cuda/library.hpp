// Loading a library of NVIDIA's at run time (cuBLASLt, NCCL), so programs start where it is absent: dlopen, then its
// entry points by name.
#pragma once

#include <dlfcn.h>

namespace uform::cuda {

/// The library at `built` (the toolkit the build used; null for none), else `soname` through the loader's path; null
/// when neither loads. Nothing closes it: what it made may outlive any one caller.
inline void *open_library(char const *built, char const *soname) noexcept {
    void *library = built != nullptr ? ::dlopen(built, RTLD_NOW | RTLD_LOCAL) : nullptr;
    return library != nullptr ? library : ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
}

/// Resolves `name` into `target`; false when the library lacks it.
template <typename function_type_>
bool resolve(void *library, char const *name, function_type_ &target) noexcept {
    void *symbol = ::dlsym(library, name);
    target = reinterpret_cast<function_type_>(symbol);
    return symbol != nullptr;
}

} // namespace uform::cuda
