// The CUDA trainer's matrix products through cuBLASLt, forward and backward: BF16 operands, F32 accumulation and an F32
// result, either operand read transposed through its layout (never copied), as the backward's `dX = dY W` and
// `dW += dY^T X` need.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/device.hpp"

namespace uform::cuda::train {

/// A row-major BF16 matrix in device memory: rows `stride` values apart, read as its transpose when `transposed`.
struct operand_t {
    std::uint16_t const *data = nullptr;
    std::size_t stride = 0;
    bool transposed = false;
};

/// `c[m x n] (+)= op(a)[m x k] . op(b)[k x n]`, row-major, `c` F32 rows `c_stride` apart, added to when `accumulate`
/// is set; `op(x)` is `x` or, when `x.transposed`, `x^T` (`a` then stored `[k x m]`, `b` `[n x k]`). Answers false
/// when cuBLASLt is missing or refuses.
bool product(stream_t &stream, operand_t a, operand_t b, std::size_t m, std::size_t n, std::size_t k, float *c,
             std::size_t c_stride, bool accumulate) noexcept;

} // namespace uform::cuda::train
