// Block quantization of weight matrices to FP8 E4M3, one F32 scale per 128 x 128 block (docs/model.md, "E4M3 at load").
#pragma once

#include <cstddef>
#include <cstdint>

namespace uform::ram {

/// Rows and columns of one quantization block; edge blocks are clipped.
inline constexpr std::size_t e4m3_block_k = 128;

/// Blocks along `extent` rows or columns.
constexpr std::size_t e4m3_blocks(std::size_t extent) noexcept { return (extent + e4m3_block_k - 1) / e4m3_block_k; }

/// Quantizes the BF16 matrix `weights[rows x columns]` (rows `row_stride` values apart) block by block:
/// `s = amax / 448` (1 where amax is 0), `q = e4m3(w / s)` rounded to nearest even and saturating, bytes equal to
/// `torch.float8_e4m3fn`'s. Writes `rows x columns` bytes (row-major) and `e4m3_blocks(rows) x e4m3_blocks(columns)`
/// scales (row-major by block).
void quantize_e4m3_blocks(std::uint16_t const *weights, std::size_t rows, std::size_t columns, std::size_t row_stride,
                          std::uint8_t *bytes, float *scales) noexcept;

} // namespace uform::ram
