// The trainer's products: B packed once per call into 64-column panels, then tasks of row blocks by column ranges,
// each packing its rows of A per depth block (in L2) and running the micro-kernel over the panels' tiles.
#include "cpp/kernels/product.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/scalars.hpp"
#include "cpp/kernels/amx_product.hpp"
#include "cpp/kernels/gemm.hpp"

namespace uform::ram {
namespace {

/// Most depth per block, even (whole pairs): a 64-column B block of 768 depths is 96 KiB in pairs, 192 KiB in F32.
constexpr std::size_t depth_block_max_k = 768;
/// Bytes of packed F32 A one task keeps for all of its panels (half that in pairs).
constexpr std::size_t a_block_bytes_k = 512 * 1024;
/// Most rows per task, a multiple of the micro-kernel's 6.
constexpr std::size_t row_block_max_k = 252;
/// Pairs of depths per task of `pack_panels`.
constexpr std::size_t pack_pairs_k = 64;

/// Depth per block for a product of `depth`: even blocks of at most `depth_block_max_k`, rounded up to whole pairs.
std::size_t depth_block(std::size_t depth) noexcept {
    std::size_t const blocks = std::max<std::size_t>(1, (depth + depth_block_max_k - 1) / depth_block_max_k);
    std::size_t const step = (depth + blocks - 1) / blocks;
    return std::max<std::size_t>(2, (step + 1) / 2 * 2);
}

/// Rows one task packs for `depth`: as many as fit `a_block_bytes_k` at one depth block, in whole micro panels.
std::size_t row_block(std::size_t depth) noexcept {
    std::size_t const fit = a_block_bytes_k / sizeof(float) / depth_block(depth);
    return std::clamp<std::size_t>(fit / gemm_micro_rows_k * gemm_micro_rows_k, 4 * gemm_micro_rows_k, row_block_max_k);
}

/// The flags of depth block [k, k + depth) of `total`: the caller's accumulation first, rounding last.
constexpr unsigned block_flags(unsigned flags, std::size_t k, std::size_t depth, std::size_t total) noexcept {
    unsigned result = k == 0 ? (flags & gemm_accumulate_k) : gemm_accumulate_k;
    if (k + depth == total) result |= flags & gemm_round_output_k;
    return result;
}

/// `out[i] = high[i] << 16 | low[i]` over BF16 bits; a null `high` reads zeros.
void interleave_bits(std::uint16_t const *low, std::uint16_t const *high, std::uint32_t *out,
                     std::size_t count) noexcept {
    if (high == nullptr)
        for (std::size_t i = 0; i != count; ++i) out[i] = low[i];
    else
        for (std::size_t i = 0; i != count; ++i) out[i] = low[i] | std::uint32_t(high[i]) << 16;
}

/// Whether `kernels` packs B as pairs: a BF16 pair micro-kernel, or products on AMX tiles.
inline bool packs_pairs(kernels_t const &kernels) noexcept {
    return kernels.gemm_micro_pairs != nullptr || kernels.tiles != tiles_t::none;
}

/// Element `at` of an operand's storage as F32 rounded to BF16.
inline float element(operand_t const &x, std::size_t at) noexcept {
    return x.bits != nullptr ? bf16_to_f32(x.bits[at]) : round_bf16(x.data[at]);
}

/// Pair panels of a row-major op(B): pair q of panel p interleaves rows 2q and 2q + 1, zero past the columns.
void pack_pairs_rows(kernels_t const &k, operand_t b, std::size_t depth, std::size_t columns, std::size_t panel,
                     std::size_t q_begin, std::size_t q_end, std::uint32_t *words) noexcept {
    std::size_t const half = (depth + 1) / 2, column = panel * gemm_panel_columns_k;
    std::size_t const count = std::min(gemm_panel_columns_k, columns - column);
    for (std::size_t q = q_begin; q != q_end; ++q) {
        std::uint32_t *row = words + (panel * half + q) * gemm_panel_columns_k;
        bool const high = 2 * q + 1 < depth;
        if (b.bits != nullptr) {
            std::uint16_t const *low = b.bits + 2 * q * b.stride + column;
            interleave_bits(low, high ? low + b.stride : nullptr, row, count);
        } else {
            float const *low = b.data + 2 * q * b.stride + column;
            k.interleave_bf16(low, high ? low + b.stride : nullptr, row, count);
        }
        std::fill(row + count, row + gemm_panel_columns_k, 0u);
    }
}

/// Pair panels of a transposed op(B) (depth-contiguous columns): each column's run of pairs converted, then spread.
void pack_pairs_columns(kernels_t const &k, operand_t b, std::size_t depth, std::size_t columns, std::size_t panel,
                        std::size_t q_begin, std::size_t q_end, std::uint32_t *words) noexcept {
    std::size_t const half = (depth + 1) / 2;
    std::uint16_t bits[2 * pack_pairs_k];
    for (std::size_t j = 0; j != gemm_panel_columns_k; ++j) {
        std::size_t const column = panel * gemm_panel_columns_k + j;
        std::size_t const count = std::min(depth, 2 * q_end) - 2 * q_begin;
        if (column >= columns) std::fill(bits, bits + count, std::uint16_t(0));
        else if (b.bits != nullptr) std::memcpy(bits, b.bits + column * b.stride + 2 * q_begin, count * 2);
        else k.convert_bf16(b.data + column * b.stride + 2 * q_begin, bits, count);
        if (count % 2 != 0) bits[count] = 0;
        for (std::size_t q = q_begin; q != q_end; ++q) {
            std::size_t const at = 2 * (q - q_begin);
            words[(panel * half + q) * gemm_panel_columns_k + j] = bits[at] | std::uint32_t(bits[at + 1]) << 16;
        }
    }
}

/// F32 panels of op(B) over depths [k_begin, k_end), rounded, zero past the columns.
void pack_floats(kernels_t const &k, operand_t b, std::size_t depth, std::size_t columns, std::size_t panel,
                 std::size_t k_begin, std::size_t k_end, float *out) noexcept {
    std::size_t const column = panel * gemm_panel_columns_k;
    std::size_t const count = std::min(gemm_panel_columns_k, columns - column);
    for (std::size_t d = k_begin; d != k_end; ++d) {
        float *row = out + (panel * depth + d) * gemm_panel_columns_k;
        if (!b.transposed && b.bits == nullptr) k.round_bf16(b.data + d * b.stride + column, row, count);
        else if (!b.transposed)
            for (std::size_t j = 0; j != count; ++j) row[j] = bf16_to_f32(b.bits[d * b.stride + column + j]);
        else
            for (std::size_t j = 0; j != count; ++j) row[j] = element(b, (column + j) * b.stride + d);
        std::fill(row + count, row + gemm_panel_columns_k, 0.0f);
    }
}

/// Rows [row, row + count) of op(A) over depths [k, k + depth) as F32 micro panels (`pack_a`'s layout).
void pack_a_floats(kernels_t const &kernels, operand_t a, std::size_t row, std::size_t count, std::size_t k,
                   std::size_t depth, float *out) noexcept {
    if (!a.transposed && a.bits == nullptr)
        return kernels.pack_a(a.data + row * a.stride + k, a.stride, count, depth, out);
    for (std::size_t tile = 0; tile * gemm_micro_rows_k < count; ++tile) {
        float *panel = out + tile * depth * gemm_micro_rows_k;
        std::size_t const first = tile * gemm_micro_rows_k;
        std::size_t const present = std::min(gemm_micro_rows_k, count - first);
        for (std::size_t d = 0; d != depth; ++d)
            for (std::size_t r = 0; r != gemm_micro_rows_k; ++r) {
                std::size_t const at =
                    a.transposed ? (k + d) * a.stride + row + first + r : (row + first + r) * a.stride + k + d;
                panel[d * gemm_micro_rows_k + r] = r < present ? element(a, at) : 0.0f;
            }
    }
}

/// Rows [row, row + count) of op(A) over depths [k, k + depth) as pair words: row-major A as rows of pairs
/// (`a_row` = pairs, `a_pair` = 1), transposed A as runs of rows per pair (`a_row` = 1, `a_pair` = count). Answers
/// the words: `out`, or row-major BF16 bits in place (`a_row` = half the stride) when their pairs are whole words.
std::uint32_t const *pack_a_pairs(kernels_t const &kernels, operand_t a, std::size_t row, std::size_t count,
                                  std::size_t k, std::size_t depth, std::uint32_t *out, std::size_t &a_row,
                                  std::size_t &a_pair) noexcept {
    std::size_t const pairs = (depth + 1) / 2;
    if (!a.transposed) {
        a_row = pairs, a_pair = 1;
        if (a.bits != nullptr && depth % 2 == 0 && a.stride % 2 == 0 && k % 2 == 0 &&
            reinterpret_cast<std::uintptr_t>(a.bits) % 4 == 0) {
            a_row = a.stride / 2;
            return reinterpret_cast<std::uint32_t const *>(a.bits + row * a.stride + k);
        }
        for (std::size_t r = 0; r != count; ++r) {
            std::uint32_t *words = out + r * pairs;
            auto *bits = reinterpret_cast<std::uint16_t *>(words);
            if (depth % 2 != 0) words[pairs - 1] = 0;
            if (a.bits != nullptr) std::memcpy(bits, a.bits + (row + r) * a.stride + k, depth * 2);
            else kernels.convert_bf16(a.data + (row + r) * a.stride + k, bits, depth);
        }
        return out;
    }
    a_row = 1, a_pair = count;
    for (std::size_t q = 0; q != pairs; ++q) {
        std::size_t const at = (k + 2 * q) * a.stride + row;
        bool const high = 2 * q + 1 < depth;
        if (a.bits != nullptr)
            interleave_bits(a.bits + at, high ? a.bits + at + a.stride : nullptr, out + q * count, count);
        else kernels.interleave_bf16(a.data + at, high ? a.data + at + a.stride : nullptr, out + q * count, count);
    }
    return out;
}

/// Depths [k, k + depth) of E4M3 panel `panel` as BF16 pair words in `out`, scale block by scale block.
std::uint32_t const *dequantize_panel(kernels_t const &kernels, panels_t const &b, std::size_t panel, std::size_t k,
                                      std::size_t depth, std::uint32_t *out) noexcept {
    std::size_t const half = (b.depth + 1) / 2, blocks = e4m3_blocks(b.depth);
    auto const *bytes = static_cast<std::uint8_t const *>(b.data);
    for (std::size_t d = k; d < k + depth;) {
        std::size_t const block = d / e4m3_block_k;
        std::size_t const end = std::min(k + depth, (block + 1) * e4m3_block_k);
        std::size_t const first = d / 2, last = (end + 1) / 2;
        kernels.dequantize_e4m3_pairs(bytes + (panel * half + first) * gemm_panel_columns_k * 2,
                                      b.scales[panel * blocks + block], out + (first - k / 2) * gemm_panel_columns_k,
                                      (last - first) * gemm_panel_columns_k);
        d = end;
    }
    return out;
}

} // namespace

// Panels of pair words or of F32 values.
std::size_t panels_floats(kernels_t const &kernels, std::size_t depth, std::size_t columns) noexcept {
    std::size_t const rows = packs_pairs(kernels) ? (depth + 1) / 2 : depth;
    return panel_count(columns) * rows * gemm_panel_columns_k;
}

// Tasks of one panel by a run of depths.
panels_t pack_panels(kernels_t const &kernels, parallel_t const &parallel, operand_t b, std::size_t depth,
                     std::size_t columns, float *out) noexcept {
    bool const pairs = packs_pairs(kernels);
    std::size_t const panels = panel_count(columns), rows = pairs ? (depth + 1) / 2 : depth;
    std::size_t const step = pairs ? pack_pairs_k : 2 * pack_pairs_k, runs = (rows + step - 1) / step;
    auto *words = reinterpret_cast<std::uint32_t *>(out);
    parallel(panels * runs, [&](std::size_t task, std::size_t) noexcept {
        std::size_t const panel = task / runs, begin = task % runs * step, end = std::min(rows, begin + step);
        if (!pairs) pack_floats(kernels, b, depth, columns, panel, begin, end, out);
        else if (!b.transposed) pack_pairs_rows(kernels, b, depth, columns, panel, begin, end, words);
        else pack_pairs_columns(kernels, b, depth, columns, panel, begin, end, words);
    });
    return {out, depth, columns, pairs};
}

// Enough for the largest row block of `depth` in F32 (pairs take half), then a panel's depth block in pairs; at least
// what the tile product takes.
std::size_t product_scratch_floats(std::size_t depth, bool e4m3) noexcept {
    return std::max(row_block(depth) * depth_block(depth) + (e4m3 ? gemm_panel_columns_k * depth_block(depth) / 2 : 0),
                    amx_product_scratch_floats(depth));
}

// Row blocks that fit L2, split further until every thread has a few tasks of even size, as `gemm` does.
void product(kernels_t const &kernels, parallel_t const &parallel, operand_t a, std::size_t rows, panels_t const &b,
             float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept {
    std::size_t const panels = panel_count(b.columns);
    if (rows == 0 || panels == 0) return;
    if (kernels.tiles != tiles_t::none && b.pairs && b.scales == nullptr && b.depth != 0)
        return amx_product(kernels, parallel, a, rows, b, c, ldc, flags, scratch);
    gemm_split_t const split = gemm_split(rows, panels, row_block(b.depth), parallel.threads);
    std::size_t const scratch_floats = product_scratch_floats(b.depth, b.scales != nullptr);
    std::size_t const depth_step = depth_block(b.depth);
    std::size_t const half = (b.depth + 1) / 2;
    // One row block split over column ranges (a short query's) is converted to BF16 once, before the fork, instead of
    // once per range: into thread 0's A scratch, which the tasks then leave untouched, reading the words in place.
    if (b.pairs && !a.transposed && a.bits == nullptr && split.row_blocks == 1 && split.column_ranges > 1 &&
        b.depth % 2 == 0 && rows * b.depth <= 2 * row_block(b.depth) * depth_step) {
        auto *bits = reinterpret_cast<std::uint16_t *>(scratch);
        for (std::size_t row = 0; row != rows; ++row)
            kernels.convert_bf16(a.data + row * a.stride, bits + row * b.depth, b.depth);
        a = operand_t::bf16(bits, b.depth);
    }
    parallel(split.tasks(), [&](std::size_t index, std::size_t thread) noexcept {
        gemm_task_t const task = split.task(index);
        if (task.empty()) return;
        std::size_t const row = task.row, row_end = task.row_end;
        std::size_t const panel_begin = task.panel_begin, panel_end = task.panel_end;
        std::size_t const count = row_end - row;
        float *target = c + row * ldc;
        if (b.depth == 0) {
            if (flags & gemm_accumulate_k) return;
            std::size_t const begin = panel_begin * gemm_panel_columns_k;
            std::size_t const end = std::min(b.columns, panel_end * gemm_panel_columns_k);
            for (std::size_t r = 0; r != count; ++r) std::fill(target + r * ldc + begin, target + r * ldc + end, 0.0f);
            return;
        }
        float *packed = scratch + thread * scratch_floats;
        auto *dequantized = reinterpret_cast<std::uint32_t *>(packed + row_block(b.depth) * depth_step);
        for (std::size_t k = 0; k < b.depth; k += depth_step) {
            std::size_t const depth = std::min(depth_step, b.depth - k);
            unsigned const block_flag = block_flags(flags, k, depth, b.depth);
            std::size_t a_row = 0, a_pair = 0;
            std::uint32_t const *words = nullptr;
            if (b.pairs)
                words = pack_a_pairs(kernels, a, row, count, k, depth, reinterpret_cast<std::uint32_t *>(packed), a_row,
                                     a_pair);
            else pack_a_floats(kernels, a, row, count, k, depth, packed);
            for (std::size_t panel = panel_begin; panel != panel_end; ++panel) {
                std::size_t const column = panel * gemm_panel_columns_k;
                std::size_t const columns = std::min(gemm_panel_columns_k, b.columns - column);
                std::uint32_t const *words_b = nullptr;
                if (b.scales != nullptr) words_b = dequantize_panel(kernels, b, panel, k, depth, dequantized);
                else if (b.pairs)
                    words_b =
                        static_cast<std::uint32_t const *>(b.data) + (panel * half + k / 2) * gemm_panel_columns_k;
                for (std::size_t r = 0; r < count; r += gemm_micro_rows_k) {
                    std::size_t const tile_rows = std::min(gemm_micro_rows_k, count - r);
                    float *tile = target + r * ldc + column;
                    if (b.pairs)
                        kernels.gemm_micro_pairs((depth + 1) / 2, words + r * a_row, a_row, a_pair, words_b, tile, ldc,
                                                 tile_rows, columns, block_flag);
                    else
                        kernels.gemm_micro(depth, packed + r * depth,
                                           static_cast<float const *>(b.data) +
                                               (panel * b.depth + k) * gemm_panel_columns_k,
                                           gemm_panel_columns_k, tile, ldc, tile_rows, columns, block_flag, {});
                }
            }
        }
    });
}

} // namespace uform::ram
