// The int8 linears of `Scalar::I8` models on AMX tiles: `int8_gemm`'s quantized rows against its panels through
// `tdpbssd`, 32 x 32 blocks of C in four int32 tiles per block of 128 depths, on the hardware's tiles or on their
// software model (amx_tiles.hpp), with the bits of `gemm_micro_i8`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpp/kernels/int8.hpp"
#include "cpp/kernels/kernels.hpp"

namespace uform::ram {

/// Rows of A one tile pass covers: the quantized rows of a task are read in whole passes of this many.
inline constexpr std::size_t amx_int8_rows_k = 32;

/// One task's rows of A as `quantize_i8` left them: `count` rows `stride` bytes apart (a multiple of 64), room for
/// `count` rounded up to `amx_int8_rows_k` rows, and each row's `blocks` scales.
struct int8_rows_t {
    std::uint8_t *bytes = nullptr;
    std::size_t stride = 0, count = 0;
    float const *scales = nullptr;
    std::size_t blocks = 0;
};

/// Floats of scratch one thread of `amx_int8_product` needs besides the rows: a zero-padded B tile, the C block's
/// int32 sums of one depth block and its F32 sums.
std::size_t amx_int8_scratch_floats() noexcept;

/// C[rows.count x the panels' columns] (+)= A * W^T over panels [panel_begin, panel_end) of `b` in tiles
/// (`kernels.tiles` not `none`), C's first row at `c`, rows `ldc` apart. The rows' bytes become signed in place (the
/// 128 offset removed, zero past the depth and past `count`), so each block's `tdpbssd` sum is the exact int32 sum
/// `gemm_micro_i8` forms; its F32 operations follow in the same order, so the bits are the serial class's.
void amx_int8_product(kernels_t const &kernels, int8_rows_t const &rows, int8_matrix_t const &b,
                      std::size_t panel_begin, std::size_t panel_end, float *c, std::size_t ldc, unsigned flags,
                      float *scratch) noexcept;

} // namespace uform::ram
