// A linear layer's weights as the model's class multiplies them: F32 panels for the FMA micro-kernels, BF16 pair
// panels for the classes with a pair micro-kernel (AVX-512 BF16) and for AMX tiles, E4M3 bytes in that layout
// (`Scalar::E4M3` models on those classes), or int8 blocks (`Scalar::I8` models).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cpp/aligned.hpp"
#include "cpp/kernels/gemm.hpp"
#include "cpp/kernels/int8.hpp"
#include "cpp/kernels/kernels.hpp"
#include "cpp/kernels/product.hpp"
#include "cpp/parallel.hpp"

namespace uform::ram {

/// BF16 weights `W[columns x depth]` in the pair panels of `product` (cpp/kernels/product.hpp): words of two BF16
/// values along the depth, half the bytes of F32 panels, for `vdpbf16ps`.
class pair_matrix_t {
  public:
    /// Packs row-major BF16 `weights` (2-byte aligned) on `kernels`, which must have a pair micro-kernel or run on AMX
    /// tiles, across `parallel`'s threads; false when out of memory.
    [[nodiscard]] bool pack(kernels_t const &kernels, parallel_t const &parallel, std::uint16_t const *weights,
                            std::size_t columns, std::size_t depth) noexcept;
    bool empty() const noexcept { return data_ == nullptr; }
    /// The product view of the panels.
    panels_t const &view() const noexcept { return view_; }
    /// Bytes the panels take.
    std::size_t bytes() const noexcept { return data_ ? bytes_ : 0; }

  private:
    aligned_ptr_t<float> data_;
    std::size_t bytes_ = 0;
    panels_t view_{};
};

/// E4M3 weights `W[columns x depth]` (`Scalar::E4M3` models on a class with a pair micro-kernel) in the pair layout
/// of `product`, one byte a weight, with one F32 scale per 64 columns by 128 depths: half the bytes of the BF16 pairs,
/// dequantized to BF16 pairs (`q * s` rounded) as each product runs.
class e4m3_matrix_t {
  public:
    /// Packs the row-major bytes and the 128 x 128 block scales of `quantize_e4m3_blocks` for `W[columns x depth]`;
    /// false when out of memory.
    [[nodiscard]] bool pack(std::uint8_t const *bytes, float const *scales, std::size_t columns,
                            std::size_t depth) noexcept;
    bool empty() const noexcept { return data_ == nullptr; }
    /// The product view of the panels.
    panels_t const &view() const noexcept { return view_; }
    /// Bytes the panels and their scales take.
    std::size_t bytes() const noexcept { return data_ ? bytes_ : 0; }

  private:
    aligned_ptr_t<std::uint8_t> data_;
    std::unique_ptr<float[]> scales_;
    std::size_t bytes_ = 0;
    panels_t view_{};
};

/// `W[columns x depth]` (PyTorch's `[out, in]`), packed once at load for `y = x * W^T`.
struct linear_t {
    packed_matrix_t panels; // the F32 path: BF16 or dequantized E4M3 values in F32 panels
    pair_matrix_t pairs;    // the BF16 pair path (micro-kernel or AMX tiles): used when not empty
    e4m3_matrix_t e4m3;     // the E4M3 pair path: used when not empty
    int8_matrix_t blocks;   // the int8 path: int8 blocks with F32 scales; used when not empty

    std::size_t columns() const noexcept {
        return !blocks.empty()  ? blocks.columns()
               : !pairs.empty() ? pairs.view().columns
               : !e4m3.empty()  ? e4m3.view().columns
                                : panels.columns();
    }
    std::size_t depth() const noexcept {
        return !blocks.empty()  ? blocks.depth()
               : !pairs.empty() ? pairs.view().depth
               : !e4m3.empty()  ? e4m3.view().depth
                                : panels.depth();
    }
    /// Bytes the weights take.
    std::size_t bytes() const noexcept { return panels.bytes() + pairs.bytes() + e4m3.bytes() + blocks.bytes(); }
    /// Floats of scratch one thread needs for `multiply`.
    std::size_t scratch_floats() const noexcept;
    /// C[rows x columns] (+)= A[rows x depth] * W^T, A rounded to BF16 on the way in (quantized per row to int8 on the
    /// int8 path); `flags` are `gemm_flags_t`,
    /// `scratch` holds `parallel.threads * scratch_floats()` floats.
    void multiply(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda,
                  std::size_t rows, float *c, std::size_t ldc, unsigned flags, float *scratch) const noexcept;
};

} // namespace uform::ram
