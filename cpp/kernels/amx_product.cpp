// The trainer's products on AMX tiles: tasks of row blocks by panels as `product` splits them; per 32 rows and depth
// chunk, A packed once into BF16 rows (tile rows of 16 pairs), then per 32 columns of a pair panel four C tiles fed by
// `tdpbf16ps` from two A tiles and two B tiles read straight from the panel (64 words a pair, 256 bytes apart).
#include "cpp/kernels/amx_product.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/scalars.hpp"
#include "cpp/kernels/amx.hpp"
#include "cpp/kernels/amx_tiles.hpp"
#include "cpp/kernels/cpu_class.hpp"
#include "cpp/kernels/gemm.hpp"

namespace uform::ram {
namespace {

/// Rows and columns of C one pass of four tiles covers, pairs of one A or B tile, rows per task.
constexpr std::size_t block_k = 32, tile_pairs_k = 16, row_block_k = 256;
/// The tiles: C blocks 0-3 (row tile i, column tile j at 2i + j), A tiles 4 and 5, B tiles 6 and 7.
constexpr unsigned a_low_k = 4, a_high_k = 5, b_left_k = 6, b_right_k = 7;

/// BF16 values in one packed A row for a chunk of `depth`: whole tiles of 32.
constexpr std::size_t a_row_values(std::size_t depth) noexcept { return (depth + 31) / 32 * 32; }

/// `out[i] = bf16(in[i])`, nearest even: the conversion of classes without one of their own.
void convert_bf16_portable(float const *in, std::uint16_t *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i) out[i] = f32_to_bf16(in[i]);
}

/// `out[i] = bf16(high[i]) << 16 | bf16(low[i])`; a null `high` reads zeros.
void interleave_bf16_portable(float const *low, float const *high, std::uint32_t *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i)
        out[i] = f32_to_bf16(low[i]) | (high != nullptr ? std::uint32_t(f32_to_bf16(high[i])) << 16 : 0u);
}

/// The native table with `tiles` set and BF16 conversions where it has none, made once; null without a native table.
template <tiles_t tiles>
kernels_t const *table() noexcept {
    static kernels_t const *const made = []() -> kernels_t const * {
        kernels_t const *base = kernels_for(uform_cpu_class_auto_k);
        if (base == nullptr) return nullptr;
        static kernels_t copy = *base;
        copy.tiles = tiles;
        // Every CPU with AMX has AVX-512 BF16, so the hardware's table converts with Genoa's kernels (the portable
        // conversion's bits for every normal input).
        kernels_t const *vector = tiles == tiles_t::hardware ? kernels_genoa() : nullptr;
        if (copy.convert_bf16 == nullptr)
            copy.convert_bf16 = vector != nullptr ? vector->convert_bf16 : convert_bf16_portable;
        if (copy.interleave_bf16 == nullptr)
            copy.interleave_bf16 = vector != nullptr ? vector->interleave_bf16 : interleave_bf16_portable;
        return &copy;
    }();
    return made;
}

/// Where one pass writes: the scratch of its thread (A rows, a zero-padded B tile, the C block, a conversion run).
struct scratch_t {
    std::uint16_t *a;
    std::uint32_t *b_tail;
    float *c_block;
    std::uint16_t *run;
};

/// A thread's scratch (`amx_product_scratch_floats`) cut into a pass's buffers.
scratch_t carve(float *scratch) noexcept {
    auto *a = reinterpret_cast<std::uint16_t *>(scratch);
    float *after_a = scratch + block_k * a_row_values(amx_depth_chunk_k) / 2;
    float *c_block = after_a + tile_pairs_k * gemm_panel_columns_k;
    return {a, reinterpret_cast<std::uint32_t *>(after_a), c_block,
            reinterpret_cast<std::uint16_t *>(c_block + block_k * block_k)};
}

/// Rows [row, row + count) of op(A) over depths [k, k + depth) as BF16 rows of `a_row_values(depth)`, zero past the
/// depth and past `count` up to 32 rows.
void pack_a(kernels_t const &kernels, operand_t const &a, std::size_t row, std::size_t count, std::size_t k,
            std::size_t depth, scratch_t const &s) noexcept {
    std::size_t const width = a_row_values(depth);
    std::fill(s.a, s.a + block_k * width, std::uint16_t(0));
    if (!a.transposed) {
        for (std::size_t r = 0; r != count; ++r) {
            std::size_t const at = (row + r) * a.stride + k;
            if (a.bits != nullptr) std::memcpy(s.a + r * width, a.bits + at, depth * 2);
            else kernels.convert_bf16(a.data + at, s.a + r * width, depth);
        }
        return;
    }
    for (std::size_t d = 0; d != depth; ++d) {
        std::size_t const at = (k + d) * a.stride + row;
        std::uint16_t const *run = a.bits != nullptr ? a.bits + at : s.run;
        if (a.bits == nullptr) kernels.convert_bf16(a.data + at, s.run, count);
        for (std::size_t r = 0; r != count; ++r) s.a[r * width + d] = run[r];
    }
}

/// The pair rows of B's tile `t` for a chunk of `pairs` pairs starting at `words` (64 words a pair): in place when
/// whole, else the rows present copied into the zero-padded `b_tail`.
std::uint32_t const *b_tile(std::uint32_t const *words, std::size_t t, std::size_t pairs, scratch_t const &s) noexcept {
    std::size_t const first = t * tile_pairs_k, present = std::min(tile_pairs_k, pairs - first);
    std::uint32_t const *rows = words + first * gemm_panel_columns_k;
    if (present == tile_pairs_k) return rows;
    std::memcpy(s.b_tail, rows, present * gemm_panel_columns_k * 4);
    std::fill(s.b_tail + present * gemm_panel_columns_k, s.b_tail + tile_pairs_k * gemm_panel_columns_k, 0u);
    return s.b_tail;
}

/// One 32 x 32 block of C over a chunk: its four tiles from zero over the chunk's pair tiles, then stored to `c_block`.
template <typename tiles_at>
void block_product(tiles_at &tiles, std::uint32_t const *words, std::size_t half, std::size_t pairs, std::size_t width,
                   scratch_t const &s) noexcept {
    tiles.template zero<0>(), tiles.template zero<1>(), tiles.template zero<2>(), tiles.template zero<3>();
    std::size_t const a_stride = width * 2, b_stride = gemm_panel_columns_k * 4;
    for (std::size_t t = 0; t * tile_pairs_k < pairs; ++t) {
        std::uint32_t const *b = b_tile(words, t, pairs, s) + half * block_k;
        std::uint16_t const *a = s.a + t * 2 * tile_pairs_k;
        tiles.template load<a_low_k>(a, a_stride);
        tiles.template load<a_high_k>(a + tile_pairs_k * width, a_stride);
        tiles.template load<b_left_k>(b, b_stride);
        tiles.template load<b_right_k>(b + tile_pairs_k, b_stride);
        tiles.template dot_bf16<0, a_low_k, b_left_k>();
        tiles.template dot_bf16<1, a_low_k, b_right_k>();
        tiles.template dot_bf16<2, a_high_k, b_left_k>();
        tiles.template dot_bf16<3, a_high_k, b_right_k>();
    }
    std::size_t const c_stride = block_k * 4;
    tiles.template store<0>(s.c_block, c_stride);
    tiles.template store<1>(s.c_block + tile_pairs_k, c_stride);
    tiles.template store<2>(s.c_block + tile_pairs_k * block_k, c_stride);
    tiles.template store<3>(s.c_block + tile_pairs_k * block_k + tile_pairs_k, c_stride);
}

/// The flags of the chunk at depth `k` of `chunk` in `total`: the caller's accumulation first, rounding last.
constexpr unsigned chunk_flags(unsigned flags, std::size_t k, std::size_t chunk, std::size_t total) noexcept {
    unsigned result = k == 0 ? (flags & gemm_accumulate_k) : gemm_accumulate_k;
    if (k + chunk == total) result |= flags & gemm_round_output_k;
    return result;
}

/// One task: its rows by 32, each chunk's A packed once, then every 32 columns of its panels.
template <typename tiles_at>
void run_task(tiles_at &tiles, kernels_t const &kernels, operand_t const &a, panels_t const &b, gemm_task_t const &task,
              float *c, std::size_t ldc, unsigned flags, scratch_t const &s) noexcept {
    std::size_t const half_pairs = (b.depth + 1) / 2;
    auto const *panel_words = static_cast<std::uint32_t const *>(b.data);
    for (std::size_t row = task.row; row < task.row_end; row += block_k) {
        std::size_t const count = std::min(block_k, task.row_end - row);
        for (std::size_t k = 0; k < b.depth; k += amx_depth_chunk_k) {
            std::size_t const depth = std::min(amx_depth_chunk_k, b.depth - k), pairs = (depth + 1) / 2;
            unsigned const chunk_flag = chunk_flags(flags, k, depth, b.depth);
            pack_a(kernels, a, row, count, k, depth, s);
            for (std::size_t panel = task.panel_begin; panel != task.panel_end; ++panel) {
                std::uint32_t const *words = panel_words + (panel * half_pairs + k / 2) * gemm_panel_columns_k;
                for (std::size_t half = 0; half != gemm_panel_columns_k / block_k; ++half) {
                    std::size_t const column = panel * gemm_panel_columns_k + half * block_k;
                    if (column >= b.columns) break;
                    std::size_t const columns = std::min(block_k, b.columns - column);
                    block_product(tiles, words, half, pairs, a_row_values(depth), s);
                    for (std::size_t r = 0; r != count; ++r)
                        kernels.merge(s.c_block + r * block_k, c + (row + r) * ldc + column, columns, chunk_flag);
                }
            }
        }
    }
}

} // namespace

// The tables, made once each.
kernels_t const *kernels_on_tiles(tiles_t tiles) noexcept {
    if (tiles == tiles_t::model) return table<tiles_t::model>();
    if (tiles == tiles_t::hardware && UFORM_AMX_TILES_HARDWARE && amx_available()) return table<tiles_t::hardware>();
    return nullptr;
}

// Sapphire Rapids with its tiles granted, else the native class as it is.
kernels_t const *kernels_for_training() noexcept {
    if (cpu_class_native() == uform_cpu_class_intel_sapphire_rapids_k)
        if (kernels_t const *tiled = kernels_on_tiles(tiles_t::hardware)) return tiled;
    return kernels_for(uform_cpu_class_auto_k);
}

// A's rows over the widest chunk, the padded B tile, the C block and one transposed run of 32 values.
std::size_t amx_product_scratch_floats(std::size_t) noexcept {
    return block_k * a_row_values(amx_depth_chunk_k) / 2 + tile_pairs_k * gemm_panel_columns_k + block_k * block_k +
           block_k / 2;
}

// `product`'s split of rows and panels; every task configures the tiles of its thread and releases them.
void amx_product(kernels_t const &kernels, parallel_t const &parallel, operand_t a, std::size_t rows, panels_t const &b,
                 float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept {
    std::size_t const panels = panel_count(b.columns);
    if (rows == 0 || panels == 0) return;
    gemm_split_t const split = gemm_split(rows, panels, row_block_k, parallel.threads);
    std::size_t const scratch_floats = product_scratch_floats(b.depth);
    amx_tile_config_t const config = amx_tile_config_t::uniform(amx_tile_rows_k, amx_tile_bytes_k);
    parallel(split.tasks(), [&](std::size_t index, std::size_t thread) noexcept {
        gemm_task_t const task = split.task(index);
        if (task.empty()) return;
        scratch_t const s = carve(scratch + thread * scratch_floats);
        if (kernels.tiles == tiles_t::model) {
            amx_tiles_model_t tiles;
            tiles.configure(config);
            run_task(tiles, kernels, a, b, task, c, ldc, flags, s);
        }
#if UFORM_AMX_TILES_HARDWARE
        else {
            amx_tiles_hardware_t tiles;
            tiles.configure(config);
            run_task(tiles, kernels, a, b, task, c, ldc, flags, s);
            tiles.release();
        }
#endif
    });
}

} // namespace uform::ram
