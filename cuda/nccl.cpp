// Loads NCCL with dlopen and resolves the entry points of nccl.hpp, as cuda/blas.cpp does for cuBLASLt.
#if __has_include(<nccl.h>)
#include "cuda/nccl.hpp"

#include <dlfcn.h>

namespace uform::cuda {
namespace {

/// Resolves `name` into `target`; false when the library lacks it.
template <typename function_type_>
bool resolve(void *library, char const *name, function_type_ &target) noexcept {
    void *symbol = ::dlsym(library, name);
    target = reinterpret_cast<function_type_>(symbol);
    return symbol != nullptr;
}

struct loaded_t {
    nccl_t table{};
    bool ok = false;

    loaded_t() noexcept {
        void *library = nullptr;
#if defined(UFORM_NCCL_PATH)
        library = ::dlopen(UFORM_NCCL_PATH, RTLD_NOW | RTLD_LOCAL);
#endif
        if (library == nullptr) library = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
        if (library == nullptr) return;
        ok = resolve(library, "ncclGetUniqueId", table.get_unique_id) &&
             resolve(library, "ncclCommInitRankConfig", table.init_rank_config) &&
             resolve(library, "ncclCommGetAsyncError", table.get_async_error) &&
             resolve(library, "ncclCommAbort", table.abort) && resolve(library, "ncclCommFinalize", table.finalize) &&
             resolve(library, "ncclCommDestroy", table.destroy) &&
             resolve(library, "ncclGroupStart", table.group_start) && resolve(library, "ncclGroupEnd", table.group_end);
        // The library stays loaded for the process's life: a mesh's communicators may outlive any one caller.
    }
};

} // namespace

nccl_t const *nccl() noexcept {
    static loaded_t const loaded;
    return loaded.ok ? &loaded.table : nullptr;
}

} // namespace uform::cuda
#endif
