// The blocked GEMM driver: depth blocks that keep a B micro-panel in L1, row blocks that keep A in L2.
#include "gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "scalars.hpp"

namespace uform::ram {
namespace {

/// Depth per block: a 64-column B micro-panel of 128 rows is 32 KiB, resident in L1 while A streams past.
constexpr std::size_t depth_block_k = 128;
/// Panels per column group: the C block a group updates stays in L2 across the depth blocks.
constexpr std::size_t panel_group_k = 4;
/// Bytes of packed A one task keeps (in L2) for all of its column groups.
constexpr std::size_t a_block_bytes_k = 512 * 1024;
/// Most rows per task, a multiple of the micro-kernel's 6.
constexpr std::size_t row_block_max_k = 252;

/// Rows one task packs for `depth`: as many as fit `a_block_bytes_k`, in whole micro panels.
std::size_t row_block(std::size_t depth) noexcept {
    std::size_t const fit = a_block_bytes_k / sizeof(float) / std::max<std::size_t>(depth, 1);
    std::size_t const rows = fit / gemm_micro_rows_k * gemm_micro_rows_k;
    return std::clamp<std::size_t>(rows, 4 * gemm_micro_rows_k, row_block_max_k);
}

/// Whether rows `stride` floats apart alias in L1: a C tile's six rows on a few sets evict the resident B panel.
constexpr bool aliasing_stride(std::size_t stride) noexcept { return stride % 256 == 0; }

/// Columns of the contiguous C tile a group goes through when the caller's C rows alias: 4 panels, padded.
constexpr std::size_t tile_stride_k = panel_group_k * gemm_panel_columns_k + 16;

/// Packed rows [0, rows) of A times panels [panel_begin, panel_end) of B into C, in column groups and depth blocks.
/// With `tile`, each group accumulates in that contiguous buffer first and is then merged into C once.
void gemm_block(kernels_t const &kernels, float const *a_packed, std::size_t rows, gemm_b_t const &b,
                std::size_t panel_begin, std::size_t panel_end, float *c, std::size_t ldc, unsigned flags,
                float *tile) noexcept {
    if (b.depth == 0) {
        if (flags & gemm_accumulate_k) return;
        std::size_t const column_begin = panel_begin * gemm_panel_columns_k;
        std::size_t const column_end = std::min(b.columns, panel_end * gemm_panel_columns_k);
        for (std::size_t r = 0; r != rows; ++r)
            std::memset(c + r * ldc + column_begin, 0, (column_end - column_begin) * sizeof(float));
        return;
    }
    for (std::size_t group = panel_begin; group < panel_end; group += panel_group_k) {
        std::size_t const group_end = std::min(panel_end, group + panel_group_k);
        std::size_t const group_column = group * gemm_panel_columns_k;
        std::size_t const group_columns = std::min(b.columns, group_end * gemm_panel_columns_k) - group_column;
        float *target = tile != nullptr ? tile : c + group_column;
        std::size_t const target_stride = tile != nullptr ? tile_stride_k : ldc;
        unsigned const final_flags = tile != nullptr ? 0u : flags;
        for (std::size_t k = 0; k < b.depth; k += depth_block_k) {
            std::size_t const depth = std::min(depth_block_k, b.depth - k);
            unsigned block_flags = k == 0 ? (final_flags & gemm_accumulate_k) : gemm_accumulate_k;
            if (k + depth == b.depth) block_flags |= final_flags & gemm_round_output_k;
            for (std::size_t panel = group; panel != group_end; ++panel) {
                float const *b_panel = b.data + panel * b.panel_stride + k * b.row_stride;
                std::size_t const column = panel * gemm_panel_columns_k;
                std::size_t const columns = std::min(gemm_panel_columns_k, b.columns - column);
                for (std::size_t r = 0; r < rows; r += gemm_micro_rows_k)
                    kernels.gemm_micro(depth, a_packed + r * b.depth + k * gemm_micro_rows_k, b_panel, b.row_stride,
                                       target + r * target_stride + (column - group_column), target_stride,
                                       std::min(gemm_micro_rows_k, rows - r), columns, block_flags);
            }
        }
        if (tile != nullptr)
            for (std::size_t r = 0; r != rows; ++r)
                kernels.merge(tile + r * tile_stride_k, c + r * ldc + group_column, group_columns, flags);
    }
}

} // namespace

// Moves the panels.
packed_matrix_t::packed_matrix_t(packed_matrix_t &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)), columns_(std::exchange(other.columns_, 0)),
      depth_(std::exchange(other.depth_, 0)) {}

// Moves the panels, freeing ours.
packed_matrix_t &packed_matrix_t::operator=(packed_matrix_t &&other) noexcept {
    if (this != &other) {
        std::free(data_);
        data_ = std::exchange(other.data_, nullptr);
        columns_ = std::exchange(other.columns_, 0);
        depth_ = std::exchange(other.depth_, 0);
    }
    return *this;
}

// Frees the panels.
packed_matrix_t::~packed_matrix_t() noexcept { std::free(data_); }

// Allocates zeroed, 64-byte-aligned panels.
bool packed_matrix_t::allocate(std::size_t columns, std::size_t depth) noexcept {
    std::free(data_);
    data_ = nullptr;
    columns_ = columns;
    depth_ = depth;
    std::size_t const size = std::max<std::size_t>(bytes(), 64);
    data_ = static_cast<float *>(std::aligned_alloc(64, (size + 63) / 64 * 64));
    if (data_ == nullptr) {
        columns_ = depth_ = 0;
        return false;
    }
    std::memset(data_, 0, size);
    return true;
}

// Converts BF16 rows into panels.
bool pack_bf16(std::uint16_t const *weights, std::size_t columns, std::size_t depth, std::size_t row_stride,
               packed_matrix_t &out) noexcept {
    if (!out.allocate(columns, depth)) return false;
    for (std::size_t column = 0; column != columns; ++column)
        for (std::size_t k = 0; k != depth; ++k) out.set(column, k, f32_from_bf16(weights[column * row_stride + k]));
    return true;
}

// Enough for the largest row block of `depth`.
std::size_t gemm_scratch_floats(std::size_t depth) noexcept { return row_block(depth) * (depth + tile_stride_k); }

// The product split into tasks of row blocks by column ranges, each task packing its rows of A once.
void gemm(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda, std::size_t rows,
          gemm_b_t const &b, float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept {
    std::size_t const panels = (b.columns + gemm_panel_columns_k - 1) / gemm_panel_columns_k;
    if (rows == 0 || panels == 0) return;
    // Even row blocks, then as many column ranges as it takes to give every thread a few tasks.
    std::size_t const row_blocks = (rows + row_block(b.depth) - 1) / row_block(b.depth);
    std::size_t const block_rows =
        ((rows + row_blocks - 1) / row_blocks + gemm_micro_rows_k - 1) / gemm_micro_rows_k * gemm_micro_rows_k;
    std::size_t const wanted = parallel.threads > 1 ? 3 * parallel.threads : 1;
    std::size_t const column_ranges =
        std::min(panels, std::max<std::size_t>(1, (wanted + row_blocks - 1) / row_blocks));
    std::size_t const range_panels = (panels + column_ranges - 1) / column_ranges;
    std::size_t const scratch_floats = gemm_scratch_floats(b.depth);
    parallel(row_blocks * column_ranges, [&](std::size_t task, std::size_t thread) noexcept {
        std::size_t const row = task / column_ranges * block_rows;
        std::size_t const panel = task % column_ranges * range_panels;
        if (row >= rows || panel >= panels) return;
        std::size_t const count = std::min(block_rows, rows - row);
        float *a_packed = scratch + thread * scratch_floats;
        float *tile = aliasing_stride(ldc) ? a_packed + row_block(b.depth) * b.depth : nullptr;
        kernels.pack_a(a + row * lda, lda, count, b.depth, a_packed);
        gemm_block(kernels, a_packed, count, b, panel, std::min(panels, panel + range_panels), c + row * ldc, ldc,
                   flags, tile);
    });
}

// A packed product on the calling thread.
void gemm_packed(kernels_t const &kernels, float const *a_packed, std::size_t rows, gemm_b_t const &b, float *c,
                 std::size_t ldc, unsigned flags) noexcept {
    std::size_t const panels = (b.columns + gemm_panel_columns_k - 1) / gemm_panel_columns_k;
    if (rows == 0 || panels == 0) return;
    gemm_block(kernels, a_packed, rows, b, 0, panels, c, ldc, flags, nullptr);
}

} // namespace uform::ram
