// The AMX path for BF16 weights on Sapphire Rapids: NumKong's tile kernels, BF16 x BF16 products accumulated in F32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpp/parallel.hpp"
#include "cpp/kernels/kernels.hpp"

namespace uform::ram {

/// Whether AMX BF16 tiles can run here: NumKong was built with its Sapphire Rapids AMX kernels, the CPU has them, and
/// the OS granted the process the tile state (asked for once, by the first call).
bool amx_available() noexcept;

/// Columns of one slice of an `amx_matrix_t`: a whole number of NumKong's 16-column tiles.
inline constexpr std::size_t amx_slice_columns_k = 256;

/// A BF16 weight matrix `W[columns x depth]` packed into NumKong's AMX tile layout, so that `y = x * W^T`: slices of
/// `amx_slice_columns_k` columns (the last one shorter), each a layout of its own, so threads can split the columns
/// of a product with few rows.
class amx_matrix_t {
  public:
    amx_matrix_t() noexcept = default;
    amx_matrix_t(amx_matrix_t &&other) noexcept;
    amx_matrix_t &operator=(amx_matrix_t &&other) noexcept;
    amx_matrix_t(amx_matrix_t const &) = delete;
    amx_matrix_t &operator=(amx_matrix_t const &) = delete;
    ~amx_matrix_t() noexcept;

    /// Packs BF16 values (little-endian, row-major, any alignment); false when out of memory or AMX is unavailable.
    [[nodiscard]] bool pack(void const *weights, std::size_t columns, std::size_t depth) noexcept;
    bool empty() const noexcept { return data_ == nullptr; }
    /// Slices of columns, each `amx_slice_columns_k` wide but the last.
    std::size_t slices() const noexcept { return (columns_ + amx_slice_columns_k - 1) / amx_slice_columns_k; }
    /// NumKong's layout of slice `slice`, its columns from `slice * amx_slice_columns_k`.
    void const *slice(std::size_t slice) const noexcept { return static_cast<char const *>(data_) + slice * stride_; }
    std::size_t columns() const noexcept { return columns_; }
    std::size_t depth() const noexcept { return depth_; }
    std::size_t bytes() const noexcept { return bytes_; }

  private:
    void *data_ = nullptr;
    std::size_t columns_ = 0, depth_ = 0, bytes_ = 0, stride_ = 0; // `stride_`: bytes from one slice to the next
};

/// Bytes NumKong's AMX layout takes for a BF16 matrix `W[columns x depth]`.
std::size_t amx_packed_bytes(std::size_t columns, std::size_t depth) noexcept;

/// Packs `columns` rows of `depth` BF16 values (`stride` values apart, 2-byte aligned) into `packed`
/// (`amx_packed_bytes` of them, 64-byte aligned). Needs `amx_available()`.
void amx_pack(std::uint16_t const *rows, std::size_t columns, std::size_t depth, std::size_t stride,
              void *packed) noexcept;

/// C[rows x columns] = A[rows x depth] * W^T in AMX tiles on the calling thread, A in BF16 (`lda` values apart),
/// C's rows `ldc` floats apart. Needs `amx_available()`.
void amx_multiply(std::uint16_t const *a, std::size_t lda, std::size_t rows, void const *packed, std::size_t columns,
                  std::size_t depth, float *c, std::size_t ldc) noexcept;

/// Rounds `count` F32 values to BF16 bits, nearest even.
void amx_to_bf16(float const *in, std::uint16_t *out, std::size_t count) noexcept;

/// Floats of scratch one thread needs for `amx_gemm` over `b`: its rows of A in BF16 and a C tile.
std::size_t amx_scratch_floats(std::size_t depth, std::size_t columns) noexcept;

/// C[rows x b.columns()] (+)= A[rows x b.depth()] * W^T: A's rows (`lda` apart) rounded to BF16 into scratch, the
/// product in AMX tiles with F32 accumulation, then merged into C (`ldc` apart) by `kernels.merge` when `flags`
/// (`gemm_flags_t`) accumulate or round. Row blocks spread across `parallel`'s threads, and column slices too when
/// the rows are too few to go round; `scratch` holds
/// `parallel.threads * amx_scratch_floats(...)` floats.
void amx_gemm(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda, std::size_t rows,
              amx_matrix_t const &b, float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept;

} // namespace uform::ram
