// The trainer's products on AMX tiles: `product` (cpp/kernels/product.hpp) over BF16 pair panels, with 32 x 32 blocks
// of C in four F32 tiles fed by `tdpbf16ps`, on the hardware's tiles or on their software model (amx_tiles.hpp).
#pragma once

#include <cstddef>

#include "cpp/kernels/kernels.hpp"
#include "cpp/kernels/product.hpp"

namespace uform::ram {

/// Depths one pass of the tile product sums in its tiles before adding them to C: whole 16-pair tiles.
inline constexpr std::size_t amx_depth_chunk_k = 1024;

/// The native class's kernels with the trainer's products on `tiles` (`hardware` or `model`): the class's table with
/// `tiles` set, and its BF16 conversions where it has none of its own. Null for `none`, for `hardware` where the
/// tiles are not granted (`amx_available`), and where the native class has no kernels.
kernels_t const *kernels_on_tiles(tiles_t tiles) noexcept;

/// The trainer's kernels: the native class's, on the hardware's tiles where that class is Sapphire Rapids and the OS
/// grants the tiles.
kernels_t const *kernels_for_training() noexcept;

/// Floats of scratch one thread of `amx_product` needs for a product of `depth`: 32 rows of A in BF16 over one depth
/// chunk, a zero-padded B tile and a 32 x 32 C block.
std::size_t amx_product_scratch_floats(std::size_t depth) noexcept;

/// `product` in tiles (`kernels.tiles` not `none`, `b` pair panels without scales, `b.depth` > 0): C[rows x
/// b.columns] (+)= op(A) B, A rounded to BF16 as it is packed (by `kernels.convert_bf16`). Per depth chunk of
/// `amx_depth_chunk_k` each result is `tdpbf16ps`'s sum from zero over 16-pair tiles in depth order, then added to C
/// by `kernels.merge` (the caller's accumulation first, rounding with the last chunk), so the bits depend on neither
/// the threads nor the rows' and columns' blocks. `scratch` holds `parallel.threads * product_scratch_floats(b.depth)`.
void amx_product(kernels_t const &kernels, parallel_t const &parallel, operand_t a, std::size_t rows, panels_t const &b,
                 float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept;

} // namespace uform::ram
