// Dispatch of a linear layer's product to its packed form.
#include "linear.hpp"

namespace uform::ram {

// The A panels (and tile) of the F32 driver, or the BF16 rows and tile of the AMX one.
std::size_t linear_t::scratch_floats() const noexcept {
    return tiles.empty() ? gemm_scratch_floats(panels.depth()) : amx_scratch_floats(tiles.depth(), tiles.columns());
}

// AMX tiles when packed so, else the F32 micro-kernels.
void linear_t::multiply(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda,
                        std::size_t rows, float *c, std::size_t ldc, unsigned flags, float *scratch) const noexcept {
    if (!tiles.empty()) amx_gemm(kernels, parallel, a, lda, rows, tiles, c, ldc, flags, scratch);
    else gemm(kernels, parallel, a, lda, rows, panels.view(), c, ldc, flags, scratch);
}

} // namespace uform::ram
