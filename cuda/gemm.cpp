// cuBLASLt in column-major terms: row-major `y[rows x columns]` is column-major `y^T[columns x rows]`, which is
// `W[columns x depth] . x^T[depth x rows]`, so A is `W` stored column-major as `[depth x columns]` and transposed, B is
// `x` stored column-major as `[depth x rows]`. Descriptors live on the stack (the `*Init` functions), so a product
// allocates no host memory of its own. The functions come from blas.hpp's table (cuBLASLt is loaded, not linked).
#include "cuda/gemm.hpp"

#include "cuda/blas.hpp"

namespace uform::cuda {

bool linear(stream_t &stream, std::uint16_t const *x, std::size_t x_stride, std::size_t rows, std::uint16_t const *w,
            std::size_t columns, std::size_t depth, float *y, std::size_t y_stride, bool accumulate) noexcept {
    if (rows == 0 || columns == 0) return true;
    blas_t const *api = blas();
    if (api == nullptr) return false;
    cublasLtMatmulDescOpaque_t operation_storage;
    cublasLtMatrixLayoutOpaque_t a_storage, b_storage, c_storage;
    cublasLtMatmulPreferenceOpaque_t preference_storage;
    cublasLtMatmulDesc_t const operation = &operation_storage;
    cublasLtMatrixLayout_t const a = &a_storage, b = &b_storage, c = &c_storage;
    cublasLtMatmulPreference_t const preference = &preference_storage;
    cublasOperation_t const transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
    std::size_t const workspace = stream.workspace.size;
    bool ok =
        api->matmul_desc_init(operation, sizeof(operation_storage), CUBLAS_COMPUTE_32F, CUDA_R_32F) ==
            CUBLAS_STATUS_SUCCESS &&
        api->matmul_desc_set(operation, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)) ==
            CUBLAS_STATUS_SUCCESS &&
        api->matmul_desc_set(operation, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)) == CUBLAS_STATUS_SUCCESS &&
        api->layout_init(a, sizeof(a_storage), CUDA_R_16BF, depth, columns, std::int64_t(depth)) ==
            CUBLAS_STATUS_SUCCESS &&
        api->layout_init(b, sizeof(b_storage), CUDA_R_16BF, depth, rows, std::int64_t(x_stride)) ==
            CUBLAS_STATUS_SUCCESS &&
        api->layout_init(c, sizeof(c_storage), CUDA_R_32F, columns, rows, std::int64_t(y_stride)) ==
            CUBLAS_STATUS_SUCCESS &&
        api->preference_init(preference, sizeof(preference_storage)) == CUBLAS_STATUS_SUCCESS &&
        api->preference_set(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)) ==
            CUBLAS_STATUS_SUCCESS;
    if (!ok) return false;
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    if (api->heuristic(stream.blas, operation, a, b, c, c, preference, 1, &heuristic, &found) !=
            CUBLAS_STATUS_SUCCESS ||
        found == 0)
        return false;
    float const alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    return api->matmul(stream.blas, operation, &alpha, w, a, x, b, &beta, y, c, y, c, &heuristic.algo,
                       stream.workspace.data, workspace, stream.stream) == CUBLAS_STATUS_SUCCESS;
}

} // namespace uform::cuda
