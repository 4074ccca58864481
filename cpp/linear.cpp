// Dispatch of a linear layer's product to its packed form.
#include "linear.hpp"

namespace uform::ram {

// 64-byte-aligned panels, filled by the trainer's packing (which only moves BF16 bits already rounded).
bool pair_matrix_t::pack(kernels_t const &kernels, parallel_t const &parallel, std::uint16_t const *weights,
                         std::size_t columns, std::size_t depth) noexcept {
    std::size_t const bytes = panels_floats(kernels, depth, columns) * sizeof(float);
    data_.reset(static_cast<float *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
    if (!data_) return false;
    bytes_ = bytes;
    view_ = pack_panels(kernels, parallel, operand_t::bf16(weights, depth, true), depth, columns, data_.get());
    return true;
}

// The A panels (and tile) of the F32 driver, the A scratch of the pair products, the BF16 rows and tile of AMX, or the
// quantized rows of the int8 products.
std::size_t linear_t::scratch_floats() const noexcept {
    if (!blocks.empty()) return int8_scratch_floats(blocks.depth());
    if (!tiles.empty()) return amx_scratch_floats(tiles.depth(), tiles.columns());
    return !pairs.empty() ? product_scratch_floats(pairs.view().depth) : gemm_scratch_floats(panels.depth());
}

// Int8 blocks, AMX tiles or BF16 pairs when packed so, else the F32 micro-kernels.
void linear_t::multiply(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda,
                        std::size_t rows, float *c, std::size_t ldc, unsigned flags, float *scratch) const noexcept {
    if (!blocks.empty()) int8_gemm(kernels, parallel, a, lda, rows, blocks, c, ldc, flags, scratch);
    else if (!tiles.empty()) amx_gemm(kernels, parallel, a, lda, rows, tiles, c, ldc, flags, scratch);
    else if (!pairs.empty()) product(kernels, parallel, operand_t{a, lda}, rows, pairs.view(), c, ldc, flags, scratch);
    else gemm(kernels, parallel, a, lda, rows, panels.view(), c, ldc, flags, scratch);
}

} // namespace uform::ram
