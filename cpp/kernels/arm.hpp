// What the Arm classes (cpp/kernels/neon.cpp, sve.cpp, sve2.cpp) share: plain C++, no vector types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

namespace uform::ram::arm {

/// The lanes 0..3 of a 128-bit vector of 32-bit values, for tail masks.
inline constexpr std::uint32_t lane_index_k[4] = {0, 1, 2, 3};

/// `quantize_i8`'s answer for a row holding a NaN or an infinity: every byte 128 and every scale NaN.
inline void quantize_i8_not_finite(std::uint8_t *out, std::size_t padded, float *scales, std::size_t blocks) noexcept {
    std::memset(out, 128, padded);
    for (std::size_t j = 0; j != blocks; ++j) scales[j] = std::numeric_limits<float>::quiet_NaN();
}

} // namespace uform::ram::arm
