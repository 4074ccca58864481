// A linear layer's weights as the model's class multiplies them: F32 panels for the FMA micro-kernels, or AMX tiles.
#pragma once

#include <cstddef>

#include "kernels/amx.hpp"
#include "kernels/gemm.hpp"
#include "kernels/kernels.hpp"
#include "parallel.hpp"

namespace uform::ram {

/// `W[columns x depth]` (PyTorch's `[out, in]`), packed once at load for `y = x * W^T`.
struct linear_t {
    packed_matrix_t panels; // the F32 path: BF16 or dequantized E4M3 values in F32 panels
    amx_matrix_t tiles;     // the AMX path: BF16 tiles; used when not empty

    std::size_t columns() const noexcept { return tiles.empty() ? panels.columns() : tiles.columns(); }
    std::size_t depth() const noexcept { return tiles.empty() ? panels.depth() : tiles.depth(); }
    /// Bytes the weights take.
    std::size_t bytes() const noexcept { return panels.bytes() + tiles.bytes(); }
    /// Floats of scratch one thread needs for `multiply`.
    std::size_t scratch_floats() const noexcept;
    /// C[rows x columns] (+)= A[rows x depth] * W^T, A rounded to BF16 on the way in; `flags` are `gemm_flags_t`,
    /// `scratch` holds `parallel.threads * scratch_floats()` floats.
    void multiply(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda,
                  std::size_t rows, float *c, std::size_t ldc, unsigned flags, float *scratch) const noexcept;
};

} // namespace uform::ram
