// Packed weight panels and the blocked GEMM driver over a class's micro-kernel: C (+)= A * B.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpp/parallel.hpp"
#include "cpp/kernels/kernels.hpp"

namespace uform::ram {

/// The B operand of a GEMM: `depth` rows by `columns` columns, stored as panels of 64 columns;
/// panel p's row k starts at `data + p * panel_stride + k * row_stride`.
/// Packed weights use `row_stride = 64`; a row-major matrix is the view `panel_stride = 64, row_stride = lda`.
struct gemm_b_t {
    float const *data = nullptr;
    std::size_t depth = 0;
    std::size_t columns = 0;
    std::size_t panel_stride = 0;
    std::size_t row_stride = 0;
};

/// A weight matrix `W[columns x depth]` (PyTorch's `[out, in]`) packed once so that `y = x * W^T` is a GEMM:
/// panels of 64 output columns, each `depth` rows of 64 F32 values, the last panel zero-padded.
class packed_matrix_t {
  public:
    packed_matrix_t() noexcept = default;
    packed_matrix_t(packed_matrix_t &&other) noexcept;
    packed_matrix_t &operator=(packed_matrix_t &&other) noexcept;
    packed_matrix_t(packed_matrix_t const &) = delete;
    packed_matrix_t &operator=(packed_matrix_t const &) = delete;
    ~packed_matrix_t() noexcept;

    /// Allocates zeroed panels for `columns x depth`; false when out of memory.
    [[nodiscard]] bool allocate(std::size_t columns, std::size_t depth) noexcept;
    /// Stores `W[column][k] = value`; `value` must already be what the products should see.
    void set(std::size_t column, std::size_t k, float value) noexcept {
        data_[column / gemm_panel_columns_k * panel_stride() + k * gemm_panel_columns_k +
              column % gemm_panel_columns_k] = value;
    }
    /// The GEMM view of these panels.
    gemm_b_t view() const noexcept { return {data_, depth_, columns_, panel_stride(), gemm_panel_columns_k}; }
    std::size_t columns() const noexcept { return columns_; }
    std::size_t depth() const noexcept { return depth_; }
    /// Bytes the panels take.
    std::size_t bytes() const noexcept { return panels() * panel_stride() * sizeof(float); }

  private:
    std::size_t panels() const noexcept { return panel_count(columns_); }
    std::size_t panel_stride() const noexcept { return depth_ * gemm_panel_columns_k; }

    float *data_ = nullptr;
    std::size_t columns_ = 0, depth_ = 0;
};

/// Packs BF16 weights `W[columns x depth]` (row-major, `row_stride` values apart) into `out`, converted to F32.
[[nodiscard]] bool pack_bf16(std::uint16_t const *weights, std::size_t columns, std::size_t depth,
                             std::size_t row_stride, packed_matrix_t &out) noexcept;

/// A row stride for `columns` floats that keeps a micro tile's rows off the same L1 sets: a multiple of 16 floats,
/// never a multiple of 256 (1 KiB). Internal buffers that feed or receive GEMMs use it.
constexpr std::size_t gemm_padded_stride(std::size_t columns) noexcept {
    std::size_t const stride = (columns + 15) / 16 * 16;
    return stride % 256 == 0 ? stride + 16 : stride;
}

/// Floats of A-panel scratch one thread needs for a product of `depth`: `gemm` takes `threads` times this.
std::size_t gemm_scratch_floats(std::size_t depth) noexcept;

/// One task of a split product: rows [row, row_end) by panels [panel_begin, panel_end), possibly empty.
struct gemm_task_t {
    std::size_t row = 0, row_end = 0, panel_begin = 0, panel_end = 0;
    bool empty() const noexcept { return row >= row_end || panel_begin >= panel_end; }
};

/// How a product of `rows` by `panels` splits into tasks across threads, shared by every driver (F32, BF16 pairs,
/// int8): row blocks of at most a driver's block of rows, in whole micro tiles, then column ranges.
struct gemm_split_t {
    std::size_t rows = 0, panels = 0, tiles = 0, row_blocks = 1, column_ranges = 1;

    /// Tasks in all: row blocks by column ranges.
    std::size_t tasks() const noexcept { return row_blocks * column_ranges; }
    /// Task `task`'s rows and panels.
    gemm_task_t task(std::size_t task) const noexcept;
};

/// Row blocks of at most `block_rows` (which fit the driver's cache budget); with several threads at least 8 blocks
/// each (of 120 rows or more, so B's extra passes from L3 stay cheap), so that a core slowed by its neighbours holds
/// up the end of the call by a small task; then as many column ranges as give every thread a few tasks, and row
/// blocks added until the tasks split evenly across the threads.
gemm_split_t gemm_split(std::size_t rows, std::size_t panels, std::size_t block_rows, std::size_t threads) noexcept;

/// C[rows x b.columns] (+)= A[rows x b.depth] * B, split into blocks of rows and columns across `parallel`'s
/// threads. A's rows are `lda` apart and are rounded to BF16 as they are packed; C's rows are `ldc` apart.
/// `flags` are `gemm_flags_t`; `scratch` holds `parallel.threads * gemm_scratch_floats(b.depth)` floats.
void gemm(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda, std::size_t rows,
          gemm_b_t const &b, float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept;

/// C[rows x b.columns] (+)= A * B on the calling thread, A already packed by `kernels.pack_a` over `b.depth`.
void gemm_packed(kernels_t const &kernels, float const *a_packed, std::size_t rows, gemm_b_t const &b, float *c,
                 std::size_t ldc, unsigned flags) noexcept;

} // namespace uform::ram
