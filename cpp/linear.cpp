// Dispatch of a linear layer's product to its packed form.
#include "cpp/linear.hpp"

#include <cstring>
#include <new>

#include "cpp/kernels/e4m3.hpp"

namespace uform::ram {

// 64-byte-aligned panels, filled by the trainer's packing (which only moves BF16 bits already rounded).
bool pair_matrix_t::pack(kernels_t const &kernels, parallel_t const &parallel, std::uint16_t const *weights,
                         std::size_t columns, std::size_t depth) noexcept {
    std::size_t const bytes = panels_floats(kernels, depth, columns) * sizeof(float);
    data_ = aligned_block<float>(bytes);
    if (!data_) return false;
    bytes_ = bytes;
    view_ = pack_panels(kernels, parallel, operand_t::bf16(weights, depth, true), depth, columns, data_.get());
    return true;
}

static_assert(e4m3_block_k % gemm_panel_columns_k == 0, "a panel's columns lie within one quantization block");

// Bytes spread into the pair layout, zero past the columns and the depth; a scale per panel and depth block.
bool e4m3_matrix_t::pack(std::uint8_t const *bytes, float const *scales, std::size_t columns,
                         std::size_t depth) noexcept {
    std::size_t const panels = panel_count(columns), half = (depth + 1) / 2;
    std::size_t const blocks = e4m3_blocks(depth);
    std::size_t const size = panels * half * gemm_panel_columns_k * 2;
    data_ = aligned_block<std::uint8_t>(size);
    scales_.reset(new (std::nothrow) float[panels * blocks]);
    if (!data_ || !scales_) return data_.reset(), false;
    std::memset(data_.get(), 0, size);
    for (std::size_t column = 0; column != columns; ++column) {
        std::size_t const panel = column / gemm_panel_columns_k, n = column % gemm_panel_columns_k;
        for (std::size_t k = 0; k != depth; ++k)
            data_.get()[((panel * half + k / 2) * gemm_panel_columns_k + n) * 2 + k % 2] = bytes[column * depth + k];
    }
    for (std::size_t panel = 0; panel != panels; ++panel)
        for (std::size_t block = 0; block != blocks; ++block)
            scales_[panel * blocks + block] = scales[panel * gemm_panel_columns_k / e4m3_block_k * blocks + block];
    bytes_ = size + panels * blocks * sizeof(float);
    view_ = {data_.get(), depth, columns, true, scales_.get()};
    return true;
}

// The A panels (and tile) of the F32 driver, the A scratch of the pair products (and of their tile product), or the
// quantized rows of the int8 products.
std::size_t linear_t::scratch_floats() const noexcept {
    if (!blocks.empty()) return int8_scratch_floats(blocks.depth());
    if (!e4m3.empty()) return product_scratch_floats(e4m3.view().depth, true);
    return !pairs.empty() ? product_scratch_floats(pairs.view().depth) : gemm_scratch_floats(panels.depth());
}

// Int8 blocks, BF16 pairs or E4M3 pairs when packed so, else the F32 micro-kernels (`kernels` on AMX tiles run the
// first two there).
void linear_t::multiply(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda,
                        std::size_t rows, float *c, std::size_t ldc, unsigned flags, float *scratch) const noexcept {
    if (!blocks.empty()) int8_gemm(kernels, parallel, a, lda, rows, blocks, c, ldc, flags, scratch);
    else if (!pairs.empty()) product(kernels, parallel, operand_t{a, lda}, rows, pairs.view(), c, ldc, flags, scratch);
    else if (!e4m3.empty()) product(kernels, parallel, operand_t{a, lda}, rows, e4m3.view(), c, ldc, flags, scratch);
    else gemm(kernels, parallel, a, lda, rows, panels.view(), c, ldc, flags, scratch);
}

} // namespace uform::ram
