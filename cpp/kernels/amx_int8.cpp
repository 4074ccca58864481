// The int8 product on AMX tiles: per 32 rows, per 32 columns of a panel, per block of 128 depths, four C tiles from
// zero over the block's two 16-group tiles of A and B (A's rows straight from the quantized rows, B's straight from
// the panel, 256 bytes a group), stored and scaled into F32 sums as `gemm_micro_i8` scales them.
#include "cpp/kernels/amx_int8.hpp"

#include <algorithm>
#include <cstring>

#include "cpp/kernels/amx_tiles.hpp"

namespace uform::ram {
namespace {

/// Columns of one pass, groups of 4 depths in one tile, bytes from one group of a panel to the next.
constexpr std::size_t block_k = amx_int8_rows_k, tile_groups_k = 16, group_bytes_k = gemm_panel_columns_k * 4;
/// The tiles: C blocks 0-3 (row tile i, column tile j at 2i + j), A tiles 4 and 5, B tiles 6 and 7.
constexpr unsigned a_low_k = 4, a_high_k = 5, b_left_k = 6, b_right_k = 7;

/// A thread's buffers: the zero-padded B tile, the int32 block, the F32 sums.
struct scratch_t {
    std::int8_t *b_tail;
    std::int32_t *block;
    float *sums;
};

/// Removes `quantize_i8`'s offset of 128 from the rows' bytes and zeroes the rest of each row and the rows past
/// `count` up to a whole pass.
void make_signed(int8_rows_t const &rows, std::size_t depth) noexcept {
    std::size_t const padded_rows = (rows.count + block_k - 1) / block_k * block_k;
    for (std::size_t r = 0; r != padded_rows; ++r) {
        std::uint8_t *row = rows.bytes + r * rows.stride;
        std::size_t const present = r < rows.count ? depth : 0;
        for (std::size_t i = 0; i != present; ++i) row[i] ^= 0x80u;
        std::memset(row + present, 0, rows.stride - present);
    }
}

/// Panel `panel`'s groups [16t, 16t + 16): in place when whole, else the groups present copied into the zero-padded
/// `b_tail`.
std::int8_t const *b_tile(int8_matrix_t const &b, std::size_t panel, std::size_t t, scratch_t const &s) noexcept {
    std::size_t const groups = (b.depth() + 3) / 4, first = t * tile_groups_k;
    std::size_t const present = std::min(tile_groups_k, groups - first);
    std::int8_t const *words = b.panel(panel) + first * group_bytes_k;
    if (present == tile_groups_k) return words;
    std::memcpy(s.b_tail, words, present * group_bytes_k);
    std::memset(s.b_tail + present * group_bytes_k, 0, (tile_groups_k - present) * group_bytes_k);
    return s.b_tail;
}

/// The int32 sums of depth block `j` for 32 rows from `a` by the 32 columns from `half` of panel `panel`.
template <typename tiles_at>
void block_sums(tiles_at &tiles, std::uint8_t const *a, std::size_t a_stride, int8_matrix_t const &b, std::size_t panel,
                std::size_t half, std::size_t j, scratch_t const &s) noexcept {
    tiles.template zero<0>(), tiles.template zero<1>(), tiles.template zero<2>(), tiles.template zero<3>();
    std::size_t const tiles_total = (b.depth() + 63) / 64, per_block = i8_block_k / 64;
    for (std::size_t t = j * per_block; t != std::min(tiles_total, (j + 1) * per_block); ++t) {
        std::int8_t const *words = b_tile(b, panel, t, s) + half * block_k * 4;
        std::uint8_t const *rows = a + t * 64;
        tiles.template load<a_low_k>(rows, a_stride);
        tiles.template load<a_high_k>(rows + tile_groups_k * a_stride, a_stride);
        tiles.template load<b_left_k>(words, group_bytes_k);
        tiles.template load<b_right_k>(words + tile_groups_k * 4, group_bytes_k);
        tiles.template dot_i8<0, a_low_k, b_left_k>();
        tiles.template dot_i8<1, a_low_k, b_right_k>();
        tiles.template dot_i8<2, a_high_k, b_left_k>();
        tiles.template dot_i8<3, a_high_k, b_right_k>();
    }
    std::size_t const c_stride = block_k * 4;
    tiles.template store<0>(s.block, c_stride);
    tiles.template store<1>(s.block + tile_groups_k, c_stride);
    tiles.template store<2>(s.block + tile_groups_k * block_k, c_stride);
    tiles.template store<3>(s.block + tile_groups_k * block_k + tile_groups_k, c_stride);
}

/// Every pass of 32 rows by 32 columns over the panels: each depth block's int32 sums as F32, times the column's
/// scale, times the row's, added to the sums from zero in depth order, then merged into C.
template <typename tiles_at>
void run(tiles_at &tiles, kernels_t const &kernels, int8_rows_t const &rows, int8_matrix_t const &b,
         std::size_t panel_begin, std::size_t panel_end, float *c, std::size_t ldc, unsigned flags,
         scratch_t const &s) noexcept {
    for (std::size_t row = 0; row < rows.count; row += block_k) {
        std::size_t const count = std::min(block_k, rows.count - row);
        for (std::size_t panel = panel_begin; panel != panel_end; ++panel)
            for (std::size_t half = 0; half != gemm_panel_columns_k / block_k; ++half) {
                std::size_t const column = panel * gemm_panel_columns_k + half * block_k;
                if (column >= b.columns()) break;
                std::size_t const columns = std::min(block_k, b.columns() - column);
                std::fill(s.sums, s.sums + block_k * block_k, 0.0f);
                for (std::size_t j = 0; j != rows.blocks; ++j) {
                    block_sums(tiles, rows.bytes + row * rows.stride, rows.stride, b, panel, half, j, s);
                    float const *column_scales = b.scales(panel) + j * gemm_panel_columns_k + half * block_k;
                    for (std::size_t r = 0; r != count; ++r) {
                        float const row_scale = rows.scales[(row + r) * rows.blocks + j];
                        for (std::size_t n = 0; n != columns; ++n) {
                            float const weighted = static_cast<float>(s.block[r * block_k + n]) * column_scales[n];
                            float const scaled = weighted * row_scale;
                            s.sums[r * block_k + n] += scaled;
                        }
                    }
                }
                for (std::size_t r = 0; r != count; ++r)
                    kernels.merge(s.sums + r * block_k, c + (row + r) * ldc + column, columns, flags);
            }
    }
}

} // namespace

// The B tile, the int32 block and the F32 sums.
std::size_t amx_int8_scratch_floats() noexcept { return tile_groups_k * group_bytes_k / 4 + 2 * block_k * block_k; }

// The rows made signed, then every pass on the tiles `kernels` names, configured here and released after.
void amx_int8_product(kernels_t const &kernels, int8_rows_t const &rows, int8_matrix_t const &b,
                      std::size_t panel_begin, std::size_t panel_end, float *c, std::size_t ldc, unsigned flags,
                      float *scratch) noexcept {
    if (rows.count == 0 || panel_begin == panel_end || kernels.tiles == tiles_t::none) return;
    make_signed(rows, b.depth());
    scratch_t const s{reinterpret_cast<std::int8_t *>(scratch),
                      reinterpret_cast<std::int32_t *>(scratch + tile_groups_k * group_bytes_k / 4),
                      scratch + tile_groups_k * group_bytes_k / 4 + block_k * block_k};
    amx_tile_config_t const config = amx_tile_config_t::uniform(amx_tile_rows_k, amx_tile_bytes_k);
    if (kernels.tiles == tiles_t::model) {
        amx_tiles_model_t tiles;
        tiles.configure(config);
        run(tiles, kernels, rows, b, panel_begin, panel_end, c, ldc, flags, s);
    }
#if UFORM_AMX_TILES_HARDWARE
    else {
        amx_tiles_hardware_t tiles;
        tiles.configure(config);
        run(tiles, kernels, rows, b, panel_begin, panel_end, c, ldc, flags, s);
        tiles.release();
    }
#endif
}

} // namespace uform::ram
