// The int8 linears of `Scalar::I8` models: weights quantized at load to signed bytes with one F32 scale per 128 x 128
// block, packed into 64-column panels for `gemm_micro_i8`; activations quantized at run time per row and block of 128
// depths.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpp/aligned.hpp"
#include "cpp/parallel.hpp"
#include "cpp/kernels/kernels.hpp"

namespace uform::ram {

/// Quantizes the block of BF16 weights `W[rows x depth]` (value (r, k) the little-endian bits at `bytes + 2 * (r *
/// depth + k)`, any alignment) that starts at row `row` and depth `k`, at most 128 x 128: `s = max|w| / 127` (1
/// where the block is zero), `q = nearest_even(w / s)` within [-127, 127]. Writes `q` at `out[(r - row) * 128 + (d -
/// k)]` and answers `s`.
float quantize_i8_block(std::byte const *bytes, std::size_t rows, std::size_t depth, std::size_t row, std::size_t k,
                        std::int8_t *out) noexcept;

/// `W[columns x depth]` quantized to int8 blocks and packed for `gemm_micro_i8`: per 64-column panel, the bytes of
/// every group of 4 depths (zero past the depth and the columns), then per block of 128 depths the columns'
/// compensations and scales (zero past the columns).
class int8_matrix_t {
  public:
    /// Quantizes and packs the BF16 weights at `bytes` (`columns x depth` little-endian values, any alignment) across
    /// `parallel`'s threads; false when out of memory.
    [[nodiscard]] bool pack(parallel_t const &parallel, std::byte const *bytes, std::size_t columns,
                            std::size_t depth) noexcept;
    /// Whether nothing is packed.
    bool empty() const noexcept { return data_ == nullptr; }
    /// The weights' rows: the product's output columns.
    std::size_t columns() const noexcept { return columns_; }
    /// The weights' columns: the product's depth.
    std::size_t depth() const noexcept { return depth_; }
    /// Bytes the panels, compensations and scales take.
    std::size_t bytes() const noexcept { return data_ ? bytes_ : 0; }

    /// Panel `panel`'s bytes, 4 depths of a column in a word, 64 words a group.
    std::int8_t const *panel(std::size_t panel) const noexcept;
    /// Panel `panel`'s compensations: -128 times the sum of a column's bytes, 64 per depth block.
    std::int32_t const *compensation(std::size_t panel) const noexcept;
    /// Panel `panel`'s scales, 64 per depth block.
    float const *scales(std::size_t panel) const noexcept;

  private:
    /// Panel `panel`'s compensations, then its scales.
    std::byte *side(std::size_t panel) const noexcept;
    aligned_ptr_t<std::byte> data_;
    std::size_t bytes_ = 0, columns_ = 0, depth_ = 0;
    std::size_t panel_bytes_ = 0, blocks_ = 0, sides_at_ = 0;
};

/// Floats of scratch one thread of `int8_gemm` needs for a product of `depth`.
std::size_t int8_scratch_floats(std::size_t depth) noexcept;

/// C[rows x b.columns()] (+)= A[rows x b.depth()] * W^T: each row of A quantized to int8 with a scale per block of
/// 128 depths, then `gemm_micro_i8` in blocks of rows and columns across `parallel`'s threads; C's rows are `ldc`
/// apart. `flags` are `gemm_flags_t`; `scratch` holds `parallel.threads * int8_scratch_floats(b.depth())` floats. The
/// bits do not depend on the threads, on the class, or on whether `kernels` run on AMX tiles (`amx_int8_product`).
void int8_gemm(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda, std::size_t rows,
               int8_matrix_t const &b, float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept;

} // namespace uform::ram
