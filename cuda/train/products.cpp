// Row-major products in cuBLASLt's column-major terms: row-major `c[m x n]` is column-major `c^T[n x m]` =
// `op(b)^T . op(a)^T`. A row-major `x[r x c]` is column-major `x^T[c x r]` with the same stride, so an operand read as
// stored is cuBLASLt's untransposed `[c x r]`, and one read transposed is its `[c x r]` with CUBLAS_OP_T. Descriptors
// live on the stack (the `*Init` functions): a product allocates no host memory.
#include "cuda/train/products.hpp"

#include "cuda/blas.hpp"

namespace uform::cuda::train {
namespace {

/// One operand's cuBLASLt view: its column-major layout and operation, `rows x columns` being the product's shape of
/// `op(x)^T`.
struct view_t {
    std::uint64_t rows, columns;
    cublasOperation_t operation;
};

/// The view of `x` whose `op(x)^T` is `[rows x columns]` column-major.
view_t view_of(operand_t const &x, std::size_t rows, std::size_t columns) noexcept {
    // Untransposed: `op(x)^T = x^T`, which is the stored matrix read column-major, `[rows x columns]`.
    // Transposed: `op(x)^T = x`, the stored `[columns x rows]` column-major read with CUBLAS_OP_T.
    return x.transposed ? view_t{columns, rows, CUBLAS_OP_T} : view_t{rows, columns, CUBLAS_OP_N};
}

} // namespace

bool product(stream_t &stream, operand_t a, operand_t b, std::size_t m, std::size_t n, std::size_t k, float *c,
             std::size_t c_stride, bool accumulate) noexcept {
    if (m == 0 || n == 0) return true;
    blas_t const *api = blas();
    if (api == nullptr) return false;
    // c^T[n x m] = op(b)^T[n x k] . op(a)^T[k x m]: cuBLASLt's A is `b`, its B is `a`.
    view_t const first = view_of(b, n, k), second = view_of(a, k, m);
    cublasLtMatmulDescOpaque_t operation_storage;
    cublasLtMatrixLayoutOpaque_t a_storage, b_storage, c_storage;
    cublasLtMatmulPreferenceOpaque_t preference_storage;
    cublasLtMatmulDesc_t const operation = &operation_storage;
    cublasLtMatrixLayout_t const la = &a_storage, lb = &b_storage, lc = &c_storage;
    cublasLtMatmulPreference_t const preference = &preference_storage;
    std::size_t const workspace = stream.workspace.size;
    bool const ok =
        api->matmul_desc_init(operation, sizeof(operation_storage), CUBLAS_COMPUTE_32F, CUDA_R_32F) ==
            CUBLAS_STATUS_SUCCESS &&
        api->matmul_desc_set(operation, CUBLASLT_MATMUL_DESC_TRANSA, &first.operation, sizeof(first.operation)) ==
            CUBLAS_STATUS_SUCCESS &&
        api->matmul_desc_set(operation, CUBLASLT_MATMUL_DESC_TRANSB, &second.operation, sizeof(second.operation)) ==
            CUBLAS_STATUS_SUCCESS &&
        api->layout_init(la, sizeof(a_storage), CUDA_R_16BF, first.rows, first.columns, std::int64_t(b.stride)) ==
            CUBLAS_STATUS_SUCCESS &&
        api->layout_init(lb, sizeof(b_storage), CUDA_R_16BF, second.rows, second.columns, std::int64_t(a.stride)) ==
            CUBLAS_STATUS_SUCCESS &&
        api->layout_init(lc, sizeof(c_storage), CUDA_R_32F, n, m, std::int64_t(c_stride)) == CUBLAS_STATUS_SUCCESS &&
        api->preference_init(preference, sizeof(preference_storage)) == CUBLAS_STATUS_SUCCESS &&
        api->preference_set(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)) ==
            CUBLAS_STATUS_SUCCESS;
    if (!ok) return false;
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    if (api->heuristic(stream.blas, operation, la, lb, lc, lc, preference, 1, &heuristic, &found) !=
            CUBLAS_STATUS_SUCCESS ||
        found == 0)
        return false;
    float const alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    return api->matmul(stream.blas, operation, &alpha, b.data, la, a.data, lb, &beta, c, lc, c, lc, &heuristic.algo,
                       stream.workspace.data, workspace, stream.stream) == CUBLAS_STATUS_SUCCESS;
}

} // namespace uform::cuda::train
