// Loads cuBLASLt with dlopen and resolves the entry points of blas.hpp; opens and closes a stream's handle.
#include "cuda/blas.hpp"

#include "common/fail.hpp"
#include "cuda/device.hpp"
#include "cuda/library.hpp"

namespace uform::cuda {
namespace {

#define UFORM_CUBLASLT_STRING2(x) #x
#define UFORM_CUBLASLT_STRING(x) UFORM_CUBLASLT_STRING2(x)

struct loaded_t {
    blas_t table{};
    bool ok = false;

    loaded_t() noexcept {
#if defined(UFORM_CUBLASLT_PATH)
        char const *const built = UFORM_CUBLASLT_PATH;
#else
        char const *const built = nullptr;
#endif
        void *const library = open_library(built, "libcublasLt.so." UFORM_CUBLASLT_STRING(CUBLAS_VER_MAJOR));
        if (library == nullptr) return;
        ok = resolve(library, "cublasLtCreate", table.create) && resolve(library, "cublasLtDestroy", table.destroy) &&
             resolve(library, "cublasLtMatmulDescInit_internal", table.matmul_desc_init) &&
             resolve(library, "cublasLtMatmulDescSetAttribute", table.matmul_desc_set) &&
             resolve(library, "cublasLtMatrixLayoutInit_internal", table.layout_init) &&
             resolve(library, "cublasLtMatmulPreferenceInit_internal", table.preference_init) &&
             resolve(library, "cublasLtMatmulPreferenceSetAttribute", table.preference_set) &&
             resolve(library, "cublasLtMatmulAlgoGetHeuristic", table.heuristic) &&
             resolve(library, "cublasLtMatmul", table.matmul);
        // The library stays loaded for the process's life: streams and models may outlive any one caller.
    }
};

} // namespace

blas_t const *blas() noexcept {
    static loaded_t const loaded;
    return loaded.ok ? &loaded.table : nullptr;
}

uform_status_t blas_open(stream_t &stream, char const **message) noexcept {
    blas_t const *api = blas();
    if (api == nullptr)
        return fail(message, uform_status_unsupported_k,
                    "cuBLASLt (libcublasLt.so of the CUDA toolkit) could not be loaded: put it on the loader's path");
    if (api->create(&stream.blas) != CUBLAS_STATUS_SUCCESS) {
        stream.blas = nullptr;
        return fail(message, uform_status_internal_k, "cuBLASLt refused to start on the device");
    }
    return uform_status_ok_k;
}

void blas_close(stream_t &stream) noexcept {
    if (stream.blas != nullptr) (void)blas()->destroy(stream.blas);
    stream.blas = nullptr;
}

} // namespace uform::cuda
