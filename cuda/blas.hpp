// cuBLASLt, loaded at the first GPU call rather than linked: the library is over 500 MB, and linking it would map it
// into every program that links libuform_static.a (raising a RAM-only program's resident memory by over 200 MB), and
// make programs fail to start on machines without it.
#pragma once

#include <cublasLt.h>

namespace uform::cuda {

/// The cuBLASLt entry points the residency calls.
struct blas_t {
    decltype(&cublasLtCreate) create;
    decltype(&cublasLtDestroy) destroy;
    decltype(&cublasLtMatmulDescInit_internal) matmul_desc_init;
    decltype(&cublasLtMatmulDescSetAttribute) matmul_desc_set;
    decltype(&cublasLtMatrixLayoutInit_internal) layout_init;
    decltype(&cublasLtMatmulPreferenceInit_internal) preference_init;
    decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set;
    decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
    decltype(&cublasLtMatmul) matmul;
};

/// cuBLASLt, loaded once: the copy of the toolkit this library was built against (its path, recorded at build time),
/// else `libcublasLt.so.<major>` through the loader's search path. Null when neither loads.
blas_t const *blas() noexcept;

} // namespace uform::cuda
