// Int8 block quantization at load, the panels it packs, and the product over them: tasks of row blocks by column
// ranges, each quantizing its rows of A once (in L2) and running the micro-kernel over its panels' tiles.
#include "cpp/kernels/int8.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/scalars.hpp"
#include "cpp/kernels/amx_int8.hpp"
#include "cpp/kernels/gemm.hpp"

namespace uform::ram {
namespace {

/// Bytes of quantized A one task keeps for all of its panels.
constexpr std::size_t a_block_bytes_k = 256 * 1024;
/// Most rows per task, a multiple of the micro-kernel's 6.
constexpr std::size_t row_block_max_k = 252;

/// Bytes between two quantized rows of A: the depth in whole groups of 4, rounded up to a cache line.
constexpr std::size_t a_stride(std::size_t depth) noexcept { return (depth + 63) / 64 * 64; }

/// Rows one task quantizes for `depth`: as many as fit `a_block_bytes_k`, in whole micro panels.
std::size_t row_block(std::size_t depth) noexcept {
    std::size_t const fit = a_block_bytes_k / std::max<std::size_t>(a_stride(depth), 1);
    return std::clamp<std::size_t>(fit / gemm_micro_rows_k * gemm_micro_rows_k, 4 * gemm_micro_rows_k, row_block_max_k);
}

/// Floats the scales of one task's rows take, one per row and depth block, in whole cache lines.
std::size_t row_scale_floats(std::size_t depth) noexcept {
    return (row_block(depth) * i8_blocks(depth) + 15) / 16 * 16;
}

/// The BF16 value at `bytes + 2 * index` as F32.
inline float load_bf16(std::byte const *bytes, std::size_t index) noexcept {
    std::uint16_t value;
    std::memcpy(&value, bytes + 2 * index, 2);
    return bf16_to_f32(value);
}

} // namespace

// The block's absolute maximum, its scale, then every value divided by it and rounded to nearest even.
float quantize_i8_block(std::byte const *bytes, std::size_t rows, std::size_t depth, std::size_t row, std::size_t k,
                        std::int8_t *out) noexcept {
    std::size_t const row_end = std::min(rows, row + i8_block_k), k_end = std::min(depth, k + i8_block_k);
    float amax = 0;
    for (std::size_t r = row; r != row_end; ++r)
        for (std::size_t d = k; d != k_end; ++d) amax = std::max(amax, std::fabs(load_bf16(bytes, r * depth + d)));
    float const scale = amax == 0 ? 1.0f : amax / 127.0f;
    for (std::size_t r = row; r != row_end; ++r)
        for (std::size_t d = k; d != k_end; ++d) {
            long const q = std::clamp(std::lrint(load_bf16(bytes, r * depth + d) / scale), -127l, 127l);
            out[(r - row) * i8_block_k + (d - k)] = static_cast<std::int8_t>(q);
        }
    return scale;
}

// One allocation: the panels' bytes, then each panel's compensations and scales; a task per 128 columns.
bool int8_matrix_t::pack(parallel_t const &parallel, std::byte const *bytes, std::size_t columns,
                         std::size_t depth) noexcept {
    std::size_t const panels = panel_count(columns), blocks = i8_blocks(depth);
    panel_bytes_ = (depth + 3) / 4 * 4 * gemm_panel_columns_k;
    sides_at_ = panels * panel_bytes_;
    std::size_t const total = sides_at_ + panels * blocks * gemm_panel_columns_k * 8;
    data_ = aligned_block<std::byte>(total);
    if (!data_) return false;
    std::memset(data_.get(), 0, total);
    bytes_ = total, columns_ = columns, depth_ = depth, blocks_ = blocks;
    parallel(i8_blocks(columns), [&](std::size_t row_block, std::size_t) noexcept {
        std::int8_t block[i8_block_k * i8_block_k];
        std::size_t const row = row_block * i8_block_k, rows = std::min(i8_block_k, columns - row);
        for (std::size_t j = 0; j != blocks; ++j) {
            std::size_t const k = j * i8_block_k, width = std::min(i8_block_k, depth - k);
            float const scale = quantize_i8_block(bytes, columns, depth, row, k, block);
            for (std::size_t r = 0; r != rows; ++r) {
                std::size_t const column = row + r, p = column / gemm_panel_columns_k,
                                  n = column % gemm_panel_columns_k;
                auto *words = reinterpret_cast<std::int8_t *>(data_.get() + p * panel_bytes_);
                auto *sums = reinterpret_cast<std::int32_t *>(side(p));
                auto *factors = reinterpret_cast<float *>(sums + blocks * gemm_panel_columns_k);
                std::int32_t sum = 0;
                for (std::size_t d = 0; d != width; ++d) {
                    std::int8_t const q = block[r * i8_block_k + d];
                    std::size_t const depth_index = k + d;
                    words[((depth_index / 4) * gemm_panel_columns_k + n) * 4 + depth_index % 4] = q;
                    sum += q;
                }
                sums[j * gemm_panel_columns_k + n] = -128 * sum;
                factors[j * gemm_panel_columns_k + n] = scale;
            }
        }
    });
    return true;
}

std::int8_t const *int8_matrix_t::panel(std::size_t panel) const noexcept {
    return reinterpret_cast<std::int8_t const *>(data_.get() + panel * panel_bytes_);
}

std::byte *int8_matrix_t::side(std::size_t panel) const noexcept {
    return data_.get() + sides_at_ + panel * blocks_ * gemm_panel_columns_k * 8;
}

std::int32_t const *int8_matrix_t::compensation(std::size_t panel) const noexcept {
    return reinterpret_cast<std::int32_t const *>(side(panel));
}

float const *int8_matrix_t::scales(std::size_t panel) const noexcept {
    return reinterpret_cast<float const *>(compensation(panel) + blocks_ * gemm_panel_columns_k);
}

// The quantized rows of the largest row block (whole passes of the tile product), their blocks' scales, and the tile
// product's buffers.
std::size_t int8_scratch_floats(std::size_t depth) noexcept {
    std::size_t const rows = (row_block(depth) + amx_int8_rows_k - 1) / amx_int8_rows_k * amx_int8_rows_k;
    return (rows * a_stride(depth) + 3) / 4 + row_scale_floats(depth) + amx_int8_scratch_floats();
}

// Row blocks that fit L2, split further until every thread has a few tasks of even size, as `product` does; each task
// on the class's micro-kernel, or on AMX tiles when `kernels` runs on them.
void int8_gemm(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda, std::size_t rows,
               int8_matrix_t const &b, float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept {
    std::size_t const panels = panel_count(b.columns()), depth = b.depth();
    if (rows == 0 || panels == 0) return;
    gemm_split_t const split = gemm_split(rows, panels, row_block(depth), parallel.threads);
    std::size_t const scratch_floats = int8_scratch_floats(depth), stride = a_stride(depth);
    std::size_t const padded = (depth + 3) / 4 * 4, blocks = i8_blocks(depth);
    parallel(split.tasks(), [&](std::size_t index, std::size_t thread) noexcept {
        gemm_task_t const task = split.task(index);
        if (task.empty()) return;
        std::size_t const row = task.row, row_end = task.row_end;
        std::size_t const panel_begin = task.panel_begin, panel_end = task.panel_end;
        std::size_t const count = row_end - row;
        float *row_scales = scratch + thread * scratch_floats;
        auto *quantized = reinterpret_cast<std::uint8_t *>(row_scales + row_scale_floats(depth));
        for (std::size_t r = 0; r != count; ++r)
            kernels.quantize_i8(a + (row + r) * lda, depth, padded, quantized + r * stride, row_scales + r * blocks);
        if (kernels.tiles != tiles_t::none) {
            float *tile_scratch = row_scales + scratch_floats - amx_int8_scratch_floats();
            amx_int8_product(kernels, {quantized, stride, count, row_scales, blocks}, b, panel_begin, panel_end,
                             c + row * ldc, ldc, flags, tile_scratch);
            return;
        }
        for (std::size_t panel = panel_begin; panel != panel_end; ++panel) {
            std::size_t const column = panel * gemm_panel_columns_k;
            std::size_t const columns = std::min(gemm_panel_columns_k, b.columns() - column);
            for (std::size_t r = 0; r < count; r += gemm_micro_rows_k)
                kernels.gemm_micro_i8(depth, quantized + r * stride, stride, row_scales + r * blocks, blocks,
                                      b.panel(panel), b.compensation(panel), b.scales(panel),
                                      c + (row + r) * ldc + column, ldc, std::min(gemm_micro_rows_k, count - r),
                                      columns, flags);
        }
    });
}

} // namespace uform::ram
