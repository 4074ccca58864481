// NCCL, loaded at a VRAM mesh's bootstrap rather than linked (NVIDIA ships it as a shared library only): a program that
// never joins a GPU mesh starts and runs without it, and a RAM mesh never touches it. The table of entry points is
// what cuda/mesh.cpp calls through, so that a test hands it a fake one.
#pragma once

#include <nccl.h>

namespace uform::cuda {

/// The NCCL entry points a VRAM mesh calls.
struct nccl_t {
    decltype(&ncclGetUniqueId) get_unique_id;
    decltype(&ncclCommInitRankConfig) init_rank_config;
    decltype(&ncclCommGetAsyncError) get_async_error;
    decltype(&ncclCommAbort) abort;
    decltype(&ncclCommFinalize) finalize;
    decltype(&ncclCommDestroy) destroy;
    decltype(&ncclGroupStart) group_start;
    decltype(&ncclGroupEnd) group_end;
    decltype(&ncclAllReduce) all_reduce;
};

/// NCCL, loaded once: the copy found at build time (its path recorded then), else `libnccl.so.2` through the loader's
/// search path. Null when neither loads or the library lacks an entry point.
nccl_t const *nccl() noexcept;

} // namespace uform::cuda
