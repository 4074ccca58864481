// Block-wise E4M3 quantization at load.
#include "cpp/kernels/e4m3.hpp"

#include <algorithm>
#include <cmath>

#include "common/scalars.hpp"

namespace uform::ram {

// Each block: its absolute maximum, its scale, then every value divided by the scale and rounded to E4M3.
void quantize_e4m3_blocks(std::uint16_t const *weights, std::size_t rows, std::size_t columns, std::size_t row_stride,
                          std::uint8_t *bytes, float *scales) noexcept {
    std::size_t const column_blocks = e4m3_blocks(columns);
    for (std::size_t row_begin = 0; row_begin < rows; row_begin += e4m3_block_k) {
        std::size_t const row_end = std::min(rows, row_begin + e4m3_block_k);
        for (std::size_t column_begin = 0; column_begin < columns; column_begin += e4m3_block_k) {
            std::size_t const column_end = std::min(columns, column_begin + e4m3_block_k);
            float amax = 0;
            for (std::size_t r = row_begin; r != row_end; ++r)
                for (std::size_t c = column_begin; c != column_end; ++c)
                    amax = std::max(amax, std::fabs(bf16_to_f32(weights[r * row_stride + c])));
            float const scale = amax == 0 ? 1.0f : amax / 448.0f;
            scales[row_begin / e4m3_block_k * column_blocks + column_begin / e4m3_block_k] = scale;
            for (std::size_t r = row_begin; r != row_end; ++r)
                for (std::size_t c = column_begin; c != column_end; ++c)
                    bytes[r * columns + c] = f32_to_e4m3(bf16_to_f32(weights[r * row_stride + c]) / scale);
        }
    }
}

} // namespace uform::ram
