// The blocked GEMM driver: row blocks of packed A kept in L2, B panels streamed from L2 with the next one prefetched.
#include "cpp/kernels/gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/scalars.hpp"

namespace uform::ram {
namespace {

/// Most depth per block: a 64-column B panel of 768 rows is 192 KiB, streamed from L2 while the next one arrives.
constexpr std::size_t depth_block_max_k = 768;
/// Bytes of packed A one task keeps (in L2) for all of its panels.
constexpr std::size_t a_block_bytes_k = 512 * 1024;
/// Most rows per task, a multiple of the micro-kernel's 6.
constexpr std::size_t row_block_max_k = 252;

/// Depth per block for a product of `depth`: even blocks of at most `depth_block_max_k`.
std::size_t depth_block(std::size_t depth) noexcept {
    std::size_t const blocks = std::max<std::size_t>(1, (depth + depth_block_max_k - 1) / depth_block_max_k);
    return (depth + blocks - 1) / blocks;
}

/// Rows one task packs for `depth`: as many as fit `a_block_bytes_k` at one depth block, in whole micro panels.
std::size_t row_block(std::size_t depth) noexcept {
    std::size_t const fit = a_block_bytes_k / sizeof(float) / std::max<std::size_t>(depth_block(depth), 1);
    std::size_t const rows = fit / gemm_micro_rows_k * gemm_micro_rows_k;
    return std::clamp<std::size_t>(rows, 4 * gemm_micro_rows_k, row_block_max_k);
}

/// Depth block [k, k + depth) of packed rows [0, rows) of A times panels [panel_begin, panel_end) of B into C.
/// A's panels are `a_panel_floats` apart, each starting at this depth block. While one panel runs, its micro tiles
/// pull the next panel's block toward L2 (when panels are contiguous), a share each.
void gemm_block(kernels_t const &kernels, float const *a, std::size_t a_panel_floats, std::size_t rows,
                gemm_b_t const &b, std::size_t k, std::size_t depth, std::size_t panel_begin, std::size_t panel_end,
                float *c, std::size_t ldc, unsigned flags) noexcept {
    bool const contiguous = b.row_stride == gemm_panel_columns_k;
    std::size_t const tiles = (rows + gemm_micro_rows_k - 1) / gemm_micro_rows_k;
    std::size_t const block_lines = depth * gemm_panel_columns_k * sizeof(float) / gemm_prefetch_line_bytes_k;
    std::size_t const tile_lines = (block_lines + tiles - 1) / tiles;
    for (std::size_t panel = panel_begin; panel != panel_end; ++panel) {
        float const *b_panel = b.data + panel * b.panel_stride + k * b.row_stride;
        char const *next =
            contiguous && panel + 1 != panel_end ? reinterpret_cast<char const *>(b_panel + b.panel_stride) : nullptr;
        std::size_t const column = panel * gemm_panel_columns_k;
        std::size_t const columns = std::min(gemm_panel_columns_k, b.columns - column);
        for (std::size_t tile = 0; tile != tiles; ++tile) {
            std::size_t const r = tile * gemm_micro_rows_k;
            std::size_t const first_line = std::min(block_lines, tile * tile_lines);
            gemm_prefetch_t const prefetch{next != nullptr ? next + first_line * gemm_prefetch_line_bytes_k : nullptr,
                                           next != nullptr ? std::min(tile_lines, block_lines - first_line) : 0};
            kernels.gemm_micro(depth, a + tile * a_panel_floats, b_panel, b.row_stride, c + r * ldc + column, ldc,
                               std::min(gemm_micro_rows_k, rows - r), columns, flags, prefetch);
        }
    }
}

/// The flags of depth block [k, k + depth) of `total`: the caller's accumulation first, rounding last.
constexpr unsigned block_flags(unsigned flags, std::size_t k, std::size_t depth, std::size_t total) noexcept {
    unsigned result = k == 0 ? (flags & gemm_accumulate_k) : gemm_accumulate_k;
    if (k + depth == total) result |= flags & gemm_round_output_k;
    return result;
}

/// Zeroes (or, accumulating, keeps) C's panels [panel_begin, panel_end) of `rows` rows: a product of depth 0.
void gemm_empty(std::size_t rows, gemm_b_t const &b, std::size_t panel_begin, std::size_t panel_end, float *c,
                std::size_t ldc, unsigned flags) noexcept {
    if (flags & gemm_accumulate_k) return;
    std::size_t const column_begin = panel_begin * gemm_panel_columns_k;
    std::size_t const column_end = std::min(b.columns, panel_end * gemm_panel_columns_k);
    for (std::size_t r = 0; r != rows; ++r)
        std::memset(c + r * ldc + column_begin, 0, (column_end - column_begin) * sizeof(float));
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
        for (std::size_t k = 0; k != depth; ++k) out.set(column, k, bf16_to_f32(weights[column * row_stride + k]));
    return true;
}

// Enough for the largest row block of `depth`.
std::size_t gemm_scratch_floats(std::size_t depth) noexcept { return row_block(depth) * depth_block(depth); }

// Row blocks first, then column ranges, then row blocks again until the tasks divide among the threads.
gemm_split_t gemm_split(std::size_t rows, std::size_t panels, std::size_t block_rows, std::size_t threads) noexcept {
    gemm_split_t split;
    split.rows = rows, split.panels = panels;
    split.tiles = (rows + gemm_micro_rows_k - 1) / gemm_micro_rows_k;
    split.row_blocks = std::max<std::size_t>(1, (rows + block_rows - 1) / block_rows);
    threads = std::max<std::size_t>(threads, 1);
    std::size_t const wanted = threads > 1 ? 3 * threads : 1;
    if (threads > 1) split.row_blocks = std::max(split.row_blocks, std::min(8 * threads, split.tiles / 20));
    split.column_ranges =
        std::min(panels, std::max<std::size_t>(1, (wanted + split.row_blocks - 1) / split.row_blocks));
    split.column_ranges = std::max<std::size_t>(split.column_ranges, 1);
    while (split.tasks() % threads != 0 && split.row_blocks < split.tiles) ++split.row_blocks;
    return split;
}

// Row blocks and column ranges even in micro tiles and panels.
gemm_task_t gemm_split_t::task(std::size_t task) const noexcept {
    std::size_t const block = task / column_ranges, range = task % column_ranges;
    return {tiles * block / row_blocks * gemm_micro_rows_k,
            std::min(rows, tiles * (block + 1) / row_blocks * gemm_micro_rows_k), panels * range / column_ranges,
            panels * (range + 1) / column_ranges};
}

// The product split into tasks of row blocks by column ranges, each task packing its rows of A once per depth block.
void gemm(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda, std::size_t rows,
          gemm_b_t const &b, float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept {
    std::size_t const panels = panel_count(b.columns);
    if (rows == 0 || panels == 0) return;
    gemm_split_t const split = gemm_split(rows, panels, row_block(b.depth), parallel.threads);
    std::size_t const scratch_floats = gemm_scratch_floats(b.depth);
    std::size_t const depth_step = depth_block(b.depth);
    parallel(split.tasks(), [&](std::size_t index, std::size_t thread) noexcept {
        gemm_task_t const task = split.task(index);
        if (task.empty()) return;
        std::size_t const row = task.row, count = task.row_end - task.row;
        std::size_t const panel = task.panel_begin, panel_end = task.panel_end;
        if (b.depth == 0) return gemm_empty(count, b, panel, panel_end, c + row * ldc, ldc, flags);
        float *a_packed = scratch + thread * scratch_floats;
        for (std::size_t k = 0; k < b.depth; k += depth_step) {
            std::size_t const depth = std::min(depth_step, b.depth - k);
            kernels.pack_a(a + row * lda + k, lda, count, depth, a_packed);
            gemm_block(kernels, a_packed, depth * gemm_micro_rows_k, count, b, k, depth, panel, panel_end,
                       c + row * ldc, ldc, block_flags(flags, k, depth, b.depth));
        }
    });
}

// A packed product on the calling thread.
void gemm_packed(kernels_t const &kernels, float const *a_packed, std::size_t rows, gemm_b_t const &b, float *c,
                 std::size_t ldc, unsigned flags) noexcept {
    std::size_t const panels = panel_count(b.columns);
    if (rows == 0 || panels == 0) return;
    if (b.depth == 0) return gemm_empty(rows, b, 0, panels, c, ldc, flags);
    std::size_t const depth_step = depth_block(b.depth);
    for (std::size_t k = 0; k < b.depth; k += depth_step) {
        std::size_t const depth = std::min(depth_step, b.depth - k);
        gemm_block(kernels, a_packed + k * gemm_micro_rows_k, b.depth * gemm_micro_rows_k, rows, b, k, depth, 0, panels,
                   c, ldc, block_flags(flags, k, depth, b.depth));
    }
}

} // namespace uform::ram
