// Loads NCCL with dlopen and resolves the entry points of nccl.hpp, as cuda/blas.cpp does for cuBLASLt.
#if __has_include(<nccl.h>)
#include "cuda/nccl.hpp"

#include "cuda/library.hpp"

namespace uform::cuda {
namespace {

struct loaded_t {
    nccl_t table{};
    bool ok = false;

    loaded_t() noexcept {
#if defined(UFORM_NCCL_PATH)
        char const *const built = UFORM_NCCL_PATH;
#else
        char const *const built = nullptr;
#endif
        void *const library = open_library(built, "libnccl.so.2");
        if (library == nullptr) return;
        ok = resolve(library, "ncclGetUniqueId", table.get_unique_id) &&
             resolve(library, "ncclCommInitRankConfig", table.init_rank_config) &&
             resolve(library, "ncclCommGetAsyncError", table.get_async_error) &&
             resolve(library, "ncclCommAbort", table.abort) && resolve(library, "ncclCommFinalize", table.finalize) &&
             resolve(library, "ncclCommDestroy", table.destroy) &&
             resolve(library, "ncclGroupStart", table.group_start) &&
             resolve(library, "ncclGroupEnd", table.group_end) && resolve(library, "ncclAllReduce", table.all_reduce);
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
