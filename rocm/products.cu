// The AMD residency's matrix products, its own kernel rather than a BLAS library's (docs/decisions.md, "The AMD
// residency's products"): `c (+)= op(a) . op(b)` with BF16 operands widened to F32, F32 products summed in order of
// depth, and an F32 result, each block one 64 x 64 tile of `c` through 16-deep slices of both operands staged in
// shared memory, each thread a 4 x 4 grid of the tile's outputs. It implements both the inference's `linear`
// (cuda/gemm.hpp) and the trainer's `product` (cuda/train/products.hpp), which cuBLASLt serves on NVIDIA.
#include "cuda/gemm.hpp"
#include "cuda/train/products.hpp"

#include "cuda/portable.hpp"

namespace uform::cuda {
namespace {

constexpr unsigned tile_k = 64;                    // rows and columns of `c` per block
constexpr unsigned depth_k = 16;                   // depth of each staged slice
constexpr unsigned side_k = 16;                    // threads along each side of the tile
constexpr unsigned per_thread_k = tile_k / side_k; // outputs per thread along each side
constexpr unsigned threads_k = side_k * side_k;    // threads per block

/// The F32 value of BF16 bits.
__device__ inline float widen(std::uint16_t bits) { return __uint_as_float(std::uint32_t(bits) << 16); }

/// A row-major BF16 operand as the kernel reads it: element `(row, column)` of `op(x)`.
struct view_t {
    std::uint16_t const *data;
    std::size_t stride;
    bool transposed;

    __device__ float at(std::size_t row, std::size_t column) const {
        return widen(transposed ? data[column * stride + row] : data[row * stride + column]);
    }
};

__global__ void __launch_bounds__(threads_k)
    product_kernel(view_t a, view_t b, std::size_t m, std::size_t n, std::size_t k, float *c, std::size_t c_stride,
                   bool accumulate) {
    __shared__ float a_slice[depth_k][tile_k + 1]; // a_slice[d][i] = op(a)[row0 + i][k0 + d]
    __shared__ float b_slice[depth_k][tile_k + 1]; // b_slice[d][j] = op(b)[k0 + d][column0 + j]
    std::size_t const row0 = std::size_t(blockIdx.x) * tile_k, column0 = std::size_t(blockIdx.y) * tile_k;
    unsigned const thread_row = threadIdx.x / side_k, thread_column = threadIdx.x % side_k;
    float sums[per_thread_k][per_thread_k] = {};
    for (std::size_t k0 = 0; k0 < k; k0 += depth_k) {
        for (unsigned e = threadIdx.x; e < depth_k * tile_k; e += threads_k) {
            unsigned const d = e / tile_k, i = e % tile_k;
            bool const inside = k0 + d < k;
            a_slice[d][i] = inside && row0 + i < m ? a.at(row0 + i, k0 + d) : 0.0f;
            b_slice[d][i] = inside && column0 + i < n ? b.at(k0 + d, column0 + i) : 0.0f;
        }
        block_sync();
        for (unsigned d = 0; d != depth_k; ++d) {
            float left[per_thread_k], right[per_thread_k];
#pragma unroll
            for (unsigned r = 0; r != per_thread_k; ++r) {
                left[r] = a_slice[d][thread_row + r * side_k];
                right[r] = b_slice[d][thread_column + r * side_k];
            }
#pragma unroll
            for (unsigned r = 0; r != per_thread_k; ++r)
#pragma unroll
                for (unsigned s = 0; s != per_thread_k; ++s) sums[r][s] = fmaf(left[r], right[s], sums[r][s]);
        }
        block_sync();
    }
#pragma unroll
    for (unsigned r = 0; r != per_thread_k; ++r)
#pragma unroll
        for (unsigned s = 0; s != per_thread_k; ++s) {
            std::size_t const row = row0 + thread_row + r * side_k, column = column0 + thread_column + s * side_k;
            if (row >= m || column >= n) continue;
            float &target = c[row * c_stride + column];
            target = accumulate ? target + sums[r][s] : sums[r][s];
        }
}

/// Enqueues the product on `stream`, the grid's x the tiles of rows (the long side: tokens), its y those of columns;
/// false when the launch was refused or the grid too wide.
bool launch(view_t a, view_t b, std::size_t m, std::size_t n, std::size_t k, float *c, std::size_t c_stride,
            bool accumulate, cudaStream_t stream) noexcept {
    std::size_t const rows = (m + tile_k - 1) / tile_k, columns = (n + tile_k - 1) / tile_k;
    if (columns > 65535 || rows > 0x7FFFFFFF) return false;
    dim3 const grid{unsigned(rows), unsigned(columns)};
    product_kernel<<<grid, threads_k, 0, stream>>>(a, b, m, n, k, c, c_stride, accumulate);
    return cudaGetLastError() == cudaSuccess;
}

} // namespace

bool linear(stream_t &stream, std::uint16_t const *x, std::size_t x_stride, std::size_t rows, std::uint16_t const *w,
            std::size_t columns, std::size_t depth, float *y, std::size_t y_stride, bool accumulate) noexcept {
    if (rows == 0 || columns == 0) return true;
    // y[rows x columns] = x[rows x depth] . W^T, W stored [columns x depth].
    return launch({x, x_stride, false}, {w, depth, true}, rows, columns, depth, y, y_stride, accumulate, stream.stream);
}

namespace train {

bool product(stream_t &stream, operand_t a, operand_t b, std::size_t m, std::size_t n, std::size_t k, float *c,
             std::size_t c_stride, bool accumulate) noexcept {
    if (m == 0 || n == 0) return true;
    // op(a) is `a` or, transposed, `a` stored [k x m]; op(b) is `b` or, transposed, `b` stored [n x k].
    return launch({a.data, a.stride, a.transposed}, {b.data, b.stride, b.transposed}, m, n, k, c, c_stride, accumulate,
                  stream.stream);
}

} // namespace train
} // namespace uform::cuda
