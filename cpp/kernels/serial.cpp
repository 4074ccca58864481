// The serial CPU class: the portable floor every other class must agree with.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpp/kernels/kernels.hpp"
#include "common/scalars.hpp"

namespace uform::ram {
namespace {

// Packs rows of A into 6-row panels, rounded to BF16, the missing rows of the last panel zero.
void pack_a_serial(float const *a, std::size_t lda, std::size_t rows, std::size_t depth, float *out) noexcept {
    for (std::size_t row = 0; row < rows; row += gemm_micro_rows_k) {
        float *panel = out + row * depth;
        for (std::size_t r = 0; r != gemm_micro_rows_k; ++r) {
            float const *source = a + (row + r) * lda;
            bool const present = row + r < rows;
            for (std::size_t k = 0; k != depth; ++k)
                panel[k * gemm_micro_rows_k + r] = present ? round_bf16(source[k]) : 0.0f;
        }
    }
}

// C (+)= A * B over one micro tile, summing each element's products in depth order from zero, then adding C.
void gemm_micro_serial(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                       std::size_t rows, std::size_t columns, unsigned flags, gemm_prefetch_t) noexcept {
    float sums[gemm_micro_rows_k][gemm_panel_columns_k] = {};
    for (std::size_t k = 0; k != depth; ++k) {
        float const *b_row = b + k * ldb;
        for (std::size_t r = 0; r != rows; ++r) {
            float const a_value = a[k * gemm_micro_rows_k + r];
            for (std::size_t n = 0; n != columns; ++n) sums[r][n] += a_value * b_row[n];
        }
    }
    for (std::size_t r = 0; r != rows; ++r)
        for (std::size_t n = 0; n != columns; ++n) {
            float value = sums[r][n];
            if (flags & gemm_accumulate_k) value = c[r * ldc + n] + value;
            if (flags & gemm_round_output_k) value = round_bf16(value);
            c[r * ldc + n] = value;
        }
}

// Merges a finished row of products into C.
void merge_serial(float const *tile, float *c, std::size_t count, unsigned flags) noexcept {
    for (std::size_t i = 0; i != count; ++i) {
        float value = tile[i];
        if (flags & gemm_accumulate_k) value = c[i] + value;
        if (flags & gemm_round_output_k) value = round_bf16(value);
        c[i] = value;
    }
}

// Rounds every value to BF16.
void round_bf16_serial(float const *in, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i) out[i] = round_bf16(in[i]);
}

// RMSNorm of one row times the norm weight, optionally rounded for a following product.
void rms_norm_serial(float const *x, float const *weight, std::size_t width, float eps, float *out,
                     bool round) noexcept {
    float sum = 0;
    for (std::size_t i = 0; i != width; ++i) sum += x[i] * x[i];
    float const inverse = 1.0f / std::sqrt(sum / static_cast<float>(width) + eps);
    for (std::size_t i = 0; i != width; ++i) {
        float const value = x[i] * inverse * weight[i];
        out[i] = round ? round_bf16(value) : value;
    }
}

// Rotate-half RoPE of every head of one token, then BF16 rounding.
void rope_round_serial(float *x, std::size_t heads, std::size_t head_dim, float const *cos, float const *sin) noexcept {
    std::size_t const half = head_dim / 2;
    for (std::size_t h = 0; h != heads; ++h) {
        float *head = x + h * head_dim;
        for (std::size_t j = 0; j != half; ++j) {
            float const first = head[j], second = head[j + half];
            head[j] = round_bf16(first * cos[j] - second * sin[j]);
            head[j + half] = round_bf16(second * cos[j] + first * sin[j]);
        }
    }
}

// Softmax of a scaled row in F32, the probabilities then rounded to BF16 when `round_k` is set.
template <bool round_k>
void softmax_serial(float *row, std::size_t count, float scale) noexcept {
    if (count == 0) return;
    float maximum = -INFINITY;
    for (std::size_t i = 0; i != count; ++i) {
        row[i] *= scale;
        maximum = row[i] > maximum ? row[i] : maximum;
    }
    float sum = 0;
    for (std::size_t i = 0; i != count; ++i) {
        row[i] = std::exp(row[i] - maximum);
        sum += row[i];
    }
    float const inverse = 1.0f / sum;
    for (std::size_t i = 0; i != count; ++i) row[i] = round_k ? round_bf16(row[i] * inverse) : row[i] * inverse;
}

// The logistic function of every value.
void sigmoid_serial(float const *in, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i) out[i] = 1.0f / (1.0f + std::exp(-in[i]));
}

// SiLU of the gate times the up projection, rounded for the down projection.
void silu_mul_round_serial(float const *gate, float const *up, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i) {
        float const g = gate[i];
        out[i] = round_bf16(g / (1.0f + std::exp(-g)) * up[i]);
    }
}

// Adds a row into a running sum.
void add_serial(float *sum, float const *row, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i) sum[i] += row[i];
}

// Scales a row.
void scale_serial(float *x, std::size_t count, float factor) noexcept {
    for (std::size_t i = 0; i != count; ++i) x[i] *= factor;
}

// Divides a row by its L2 norm, leaving a zero row zero.
void l2_normalize_serial(float *x, std::size_t count) noexcept {
    float sum = 0;
    for (std::size_t i = 0; i != count; ++i) sum += x[i] * x[i];
    if (sum == 0) return;
    float const inverse = 1.0f / std::sqrt(sum);
    for (std::size_t i = 0; i != count; ++i) x[i] *= inverse;
}

constexpr kernels_t serial_k{
    uform_cpu_class_serial_k,
    pack_a_serial,
    gemm_micro_serial,
    merge_serial,
    round_bf16_serial,
    rms_norm_serial,
    rope_round_serial,
    softmax_serial<true>,
    silu_mul_round_serial,
    add_serial,
    scale_serial,
    l2_normalize_serial,
    softmax_serial<false>,
    sigmoid_serial,
    nullptr,
    nullptr,
    nullptr,
    quantize_i8_serial,
    gemm_micro_i8_serial,
    nullptr,
};

} // namespace

// Each block's absolute maximum (and whether the row is finite), then every value times 127 / its block's maximum,
// rounded to nearest even.
void quantize_i8_serial(float const *x, std::size_t depth, std::size_t padded, std::uint8_t *out,
                        float *scales) noexcept {
    constexpr std::size_t block = i8_block_k;
    std::size_t const blocks = i8_blocks(depth);
    bool finite = true;
    for (std::size_t j = 0; j != blocks; ++j) {
        float amax = 0;
        for (std::size_t k = j * block; k != std::min(depth, j * block + block); ++k) {
            float const magnitude = std::fabs(x[k]);
            finite &= magnitude <= std::numeric_limits<float>::max();
            amax = magnitude > amax ? magnitude : amax;
        }
        scales[j] = amax;
    }
    if (!finite) {
        std::memset(out, 128, padded);
        std::fill(scales, scales + blocks, std::numeric_limits<float>::quiet_NaN());
        return;
    }
    for (std::size_t j = 0; j != blocks; ++j) {
        std::size_t const begin = j * block, end = std::min(depth, begin + block);
        float const amax = scales[j];
        if (amax == 0) {
            std::memset(out + begin, 128, end - begin);
            continue;
        }
        float const inverse = 127.0f / amax;
        for (std::size_t k = begin; k != end; ++k) {
            long const q = std::clamp(std::lrint(x[k] * inverse), -127l, 127l);
            out[k] = static_cast<std::uint8_t>(q + 128);
        }
        scales[j] = amax / 127.0f;
    }
    std::memset(out + depth, 128, padded - depth);
}

// Exact int32 sums per block of 128 depths, each times its weight scale and then its row block's scale into the F32
// sum in depth order; then C and rounding.
void gemm_micro_i8_serial(std::size_t depth, std::uint8_t const *a, std::size_t lda, float const *a_scales,
                          std::size_t a_blocks, std::int8_t const *b, std::int32_t const *compensation,
                          float const *b_scales, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                          unsigned flags) noexcept {
    constexpr std::size_t block_groups = i8_block_k / 4; // a block's depths in groups of 4
    float sums[gemm_micro_rows_k][gemm_panel_columns_k] = {};
    std::size_t const groups = (depth + 3) / 4;
    for (std::size_t g0 = 0, j = 0; g0 < groups; g0 += block_groups, ++j) {
        std::size_t const g1 = std::min(groups, g0 + block_groups);
        for (std::size_t r = 0; r != rows; ++r)
            for (std::size_t n = 0; n != columns; ++n) {
                std::int32_t sum = compensation[j * 64 + n];
                for (std::size_t g = g0; g != g1; ++g)
                    for (std::size_t i = 0; i != 4; ++i)
                        sum += std::int32_t(a[r * lda + 4 * g + i]) * std::int32_t(b[(g * 64 + n) * 4 + i]);
                float const weighted = static_cast<float>(sum) * b_scales[j * 64 + n];
                float const block = weighted * a_scales[r * a_blocks + j];
                sums[r][n] += block;
            }
    }
    for (std::size_t r = 0; r != rows; ++r)
        for (std::size_t n = 0; n != columns; ++n) {
            float value = sums[r][n];
            if (flags & gemm_accumulate_k) value = c[r * ldc + n] + value;
            if (flags & gemm_round_output_k) value = round_bf16(value);
            c[r * ldc + n] = value;
        }
}

// Each byte through `e4m3_to_f32`, times the scale, rounded to BF16.
void dequantize_e4m3_pairs_serial(std::uint8_t const *bytes, float scale, std::uint32_t *out,
                                  std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i)
        out[i] = f32_to_bf16(e4m3_to_f32(bytes[2 * i]) * scale) |
                 std::uint32_t(f32_to_bf16(e4m3_to_f32(bytes[2 * i + 1]) * scale)) << 16;
}

// The serial table.
kernels_t const &kernels_serial() noexcept { return serial_k; }

} // namespace uform::ram
