// The CUDA residency's matrix products through cuBLASLt: `y = x . W^T` with BF16 inputs, F32 accumulation and an F32
// result, as docs/model.md's "Precision" asks of every linear.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/device.hpp"

namespace uform::cuda {

/// `y[rows x columns] (+)= x[rows x depth] . W[columns x depth]^T` on `stream`'s device and stream: `x` BF16 rows
/// `x_stride` values apart, `W` BF16 rows `depth` apart (PyTorch's `[out, in]`), `y` F32 rows `y_stride` apart,
/// added to when `accumulate` is set. Answers false when cuBLASLt refuses.
bool linear(stream_t &stream, std::uint16_t const *x, std::size_t x_stride, std::size_t rows, std::uint16_t const *w,
            std::size_t columns, std::size_t depth, float *y, std::size_t y_stride, bool accumulate) noexcept;

} // namespace uform::cuda
