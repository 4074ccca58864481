// The SVE kernels, vector-length agnostic: every loop steps by `svcntw()` lanes under a `whilelt` predicate, so one
// binary runs at any vector length from 128 to 2048 bits. Included by cpp/kernels/sve.cpp and sve2.cpp inside their
// target regions ("sve,bf16" and "sve2,bf16,i8mm"), so each class compiles its own copy; sve2.cpp defines
// UFORM_SVE_USDOT first to take the int8 products on `USDOT`.
#pragma once

#include <arm_sve.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpp/kernels/arm.hpp"
#include "cpp/kernels/kernels.hpp"

namespace uform::ram {
namespace {

// Lanes [i, count) of a loop over `count` 32-bit values.
inline svbool_t lanes_from(std::size_t i, std::size_t count) noexcept { return svwhilelt_b32_u64(i, count); }

// The BF16 bits of each float (nearest even) in the high halves of the lanes, low halves zero; NaN lanes become quiet
// NaNs, as `f32_to_bf16`.
inline svuint32_t bf16_high(svbool_t pg, svfloat32_t value) noexcept {
    svuint32_t const bits = svreinterpret_u32_f32(value);
    svuint32_t const lsb = svand_n_u32_x(pg, svlsr_n_u32_x(pg, bits, 16), 1);
    svuint32_t const rounded = svand_n_u32_x(pg, svadd_u32_x(pg, bits, svadd_n_u32_x(pg, lsb, 0x7FFF)), 0xFFFF0000u);
    svuint32_t const quiet = svorr_n_u32_x(pg, svand_n_u32_x(pg, bits, 0xFFFF0000u), 0x00400000u);
    return svsel_u32(svcmpuo_f32(pg, value, value), quiet, rounded);
}

// Rounds each float to BF16 (nearest even) in F32 form.
inline svfloat32_t round_bf16_v(svbool_t pg, svfloat32_t value) noexcept {
    return svreinterpret_f32_u32(bf16_high(pg, value));
}

// e^x per lane (Cephes' polynomial, about 1 ulp), the same steps as the other classes'; below -87.3 zero.
inline svfloat32_t exp_v(svbool_t pg, svfloat32_t x) noexcept {
    svbool_t const underflow = svcmplt_n_f32(pg, x, -87.3f);
    x = svmin_n_f32_x(pg, svmax_n_f32_x(pg, x, -87.3f), 88.7f);
    svfloat32_t const n = svrintn_f32_x(pg, svmul_n_f32_x(pg, x, 1.44269504088896341f));
    svfloat32_t r = svmls_n_f32_x(pg, x, n, 0.693359375f);
    r = svmls_n_f32_x(pg, r, n, -2.12194440e-4f);
    svfloat32_t p = svdup_n_f32(1.9875691500e-4f);
    p = svmad_n_f32_x(pg, p, r, 1.3981999507e-3f);
    p = svmad_n_f32_x(pg, p, r, 8.3334519073e-3f);
    p = svmad_n_f32_x(pg, p, r, 4.1665795894e-2f);
    p = svmad_n_f32_x(pg, p, r, 1.6666665459e-1f);
    p = svmad_n_f32_x(pg, p, r, 5.0000001201e-1f);
    p = svmla_f32_x(pg, svadd_n_f32_x(pg, r, 1.0f), svmul_f32_x(pg, p, r), r);
    svint32_t const exponent = svlsl_n_s32_x(pg, svadd_n_s32_x(pg, svcvt_s32_f32_x(pg, n), 127), 23);
    svfloat32_t const result = svmul_f32_x(pg, p, svreinterpret_f32_s32(exponent));
    return svsel_f32(underflow, svdup_n_f32(0), result);
}

// Merges results into C under `pg`: accumulation, then rounding, as `gemm_flags_t` say.
inline void merge_v(svbool_t pg, float *target, svfloat32_t value, unsigned flags) noexcept {
    if (flags & gemm_accumulate_k) value = svadd_f32_x(pg, svld1_f32(pg, target), value);
    if (flags & gemm_round_output_k) value = round_bf16_v(pg, value);
    svst1_f32(pg, target, value);
}

// Merges six rows of sums, two vectors each, into C's first `rows` rows (sizeless vectors make no arrays).
inline void merge_rows(svbool_t p0, svbool_t p1, float *c, std::size_t ldc, std::size_t lanes, std::size_t rows,
                       unsigned flags, svfloat32_t s00, svfloat32_t s01, svfloat32_t s10, svfloat32_t s11,
                       svfloat32_t s20, svfloat32_t s21, svfloat32_t s30, svfloat32_t s31, svfloat32_t s40,
                       svfloat32_t s41, svfloat32_t s50, svfloat32_t s51) noexcept {
    merge_v(p0, c, s00, flags), merge_v(p1, c + lanes, s01, flags);
    if (rows > 1) merge_v(p0, c + ldc, s10, flags), merge_v(p1, c + ldc + lanes, s11, flags);
    if (rows > 2) merge_v(p0, c + 2 * ldc, s20, flags), merge_v(p1, c + 2 * ldc + lanes, s21, flags);
    if (rows > 3) merge_v(p0, c + 3 * ldc, s30, flags), merge_v(p1, c + 3 * ldc + lanes, s31, flags);
    if (rows > 4) merge_v(p0, c + 4 * ldc, s40, flags), merge_v(p1, c + 4 * ldc + lanes, s41, flags);
    if (rows > 5) merge_v(p0, c + 5 * ldc, s50, flags), merge_v(p1, c + 5 * ldc + lanes, s51, flags);
}

// Packs rows of A into 6-row panels, rounded to BF16: each row's run of depths rounded in vectors, then spread.
void pack_a_sve(float const *a, std::size_t lda, std::size_t rows, std::size_t depth, float *out) noexcept {
    constexpr std::size_t panel_rows = gemm_micro_rows_k, run = 64;
    for (std::size_t row = 0; row < rows; row += panel_rows) {
        float *panel = out + row * depth;
        std::size_t const present = std::min(rows - row, panel_rows);
        for (std::size_t k = 0; k < depth; k += run) {
            std::size_t const count = std::min(depth - k, run);
            float block[panel_rows][run] = {};
            for (std::size_t r = 0; r != present; ++r)
                for (std::size_t i = 0; i < count; i += svcntw()) {
                    svbool_t const pg = lanes_from(i, count);
                    svst1_f32(pg, block[r] + i, round_bf16_v(pg, svld1_f32(pg, a + (row + r) * lda + k + i)));
                }
            float *target = panel + k * panel_rows;
            for (std::size_t i = 0; i != count; ++i)
                for (std::size_t r = 0; r != panel_rows; ++r) target[i * panel_rows + r] = block[r][i];
        }
    }
}

// C (+)= A * B over one micro tile of up to 6 x 64, in strips of two vectors of columns: 12 sums, A's six values of a
// depth replicated from two quadwords, each product fused into its sum (`FMLA` by element) in depth order. A panel
// holds six rows whatever `rows` is (missing ones zero), so all six are computed and `rows` stored.
void gemm_micro_sve(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                    std::size_t rows, std::size_t columns, unsigned flags, gemm_prefetch_t prefetch) noexcept {
    for (std::size_t line = 0; line != prefetch.lines; ++line)
        svprfb(svptrue_b8(), prefetch.data + line * gemm_prefetch_line_bytes_k, SV_PLDL2KEEP);
    std::size_t const lanes = svcntw();
    svbool_t const all = svptrue_b32(), two = svwhilelt_b32_u64(0, 2);
    for (std::size_t column = 0; column < columns; column += 2 * lanes) {
        svbool_t const p0 = lanes_from(column, columns), p1 = lanes_from(column + lanes, columns);
        svfloat32_t s00 = svdup_n_f32(0), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00;
        svfloat32_t s30 = s00, s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;
        float const *ak = a, *bk = b + column;
        for (std::size_t k = 0; k != depth; ++k, ak += gemm_micro_rows_k, bk += ldb) {
            svfloat32_t const b0 = svld1_f32(p0, bk), b1 = svld1_f32(p1, bk + lanes);
            svfloat32_t const a03 = svld1rq_f32(all, ak), a45 = svld1rq_f32(two, ak + 4);
            s00 = svmla_lane_f32(s00, b0, a03, 0), s01 = svmla_lane_f32(s01, b1, a03, 0);
            s10 = svmla_lane_f32(s10, b0, a03, 1), s11 = svmla_lane_f32(s11, b1, a03, 1);
            s20 = svmla_lane_f32(s20, b0, a03, 2), s21 = svmla_lane_f32(s21, b1, a03, 2);
            s30 = svmla_lane_f32(s30, b0, a03, 3), s31 = svmla_lane_f32(s31, b1, a03, 3);
            s40 = svmla_lane_f32(s40, b0, a45, 0), s41 = svmla_lane_f32(s41, b1, a45, 0);
            s50 = svmla_lane_f32(s50, b0, a45, 1), s51 = svmla_lane_f32(s51, b1, a45, 1);
        }
        merge_rows(p0, p1, c + column, ldc, lanes, rows, flags, s00, s01, s10, s11, s20, s21, s30, s31, s40, s41, s50,
                   s51);
    }
}

// Merges a finished row of products into C.
void merge_sve(float const *tile, float *c, std::size_t count, unsigned flags) noexcept {
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        merge_v(pg, c + i, svld1_f32(pg, tile + i), flags);
    }
}

// Rounds every value to BF16.
void round_bf16_sve(float const *in, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svst1_f32(pg, out + i, round_bf16_v(pg, svld1_f32(pg, in + i)));
    }
}

// The sum of squares of `count` values.
inline float sum_squares(float const *x, std::size_t count) noexcept {
    svfloat32_t sum = svdup_n_f32(0);
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svfloat32_t const value = svld1_f32(pg, x + i);
        sum = svmla_f32_m(pg, sum, value, value);
    }
    return svaddv_f32(svptrue_b32(), sum);
}

// RMSNorm of one row times the norm weight, optionally rounded for a following product.
void rms_norm_sve(float const *x, float const *weight, std::size_t width, float eps, float *out, bool round) noexcept {
    float const factor = 1.0f / std::sqrt(sum_squares(x, width) / static_cast<float>(width) + eps);
    for (std::size_t i = 0; i < width; i += svcntw()) {
        svbool_t const pg = lanes_from(i, width);
        svfloat32_t const value =
            svmul_f32_x(pg, svmul_n_f32_x(pg, svld1_f32(pg, x + i), factor), svld1_f32(pg, weight + i));
        svst1_f32(pg, out + i, round ? round_bf16_v(pg, value) : value);
    }
}

// Rotate-half RoPE of every head of one token, then BF16 rounding.
void rope_round_sve(float *x, std::size_t heads, std::size_t head_dim, float const *cos, float const *sin) noexcept {
    std::size_t const half = head_dim / 2;
    for (std::size_t h = 0; h != heads; ++h) {
        float *head = x + h * head_dim;
        for (std::size_t j = 0; j < half; j += svcntw()) {
            svbool_t const pg = lanes_from(j, half);
            svfloat32_t const first = svld1_f32(pg, head + j), second = svld1_f32(pg, head + j + half);
            svfloat32_t const c = svld1_f32(pg, cos + j), s = svld1_f32(pg, sin + j);
            svfloat32_t const out_first = svsub_f32_x(pg, svmul_f32_x(pg, first, c), svmul_f32_x(pg, second, s));
            svfloat32_t const out_second = svadd_f32_x(pg, svmul_f32_x(pg, second, c), svmul_f32_x(pg, first, s));
            svst1_f32(pg, head + j, round_bf16_v(pg, out_first));
            svst1_f32(pg, head + j + half, round_bf16_v(pg, out_second));
        }
    }
}

// Softmax of a scaled row in F32, the probabilities then rounded to BF16 when `round_k` is set.
template <bool round_k>
void softmax_sve(float *row, std::size_t count, float scale) noexcept {
    if (count == 0) return;
    svfloat32_t maximum = svdup_n_f32(-INFINITY);
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svfloat32_t const value = svmul_n_f32_x(pg, svld1_f32(pg, row + i), scale);
        svst1_f32(pg, row + i, value);
        maximum = svmax_f32_m(pg, maximum, value);
    }
    float const shift = svmaxv_f32(svptrue_b32(), maximum);
    svfloat32_t sum = svdup_n_f32(0);
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svfloat32_t const value = exp_v(pg, svsub_n_f32_x(pg, svld1_f32(pg, row + i), shift));
        svst1_f32(pg, row + i, value);
        sum = svadd_f32_m(pg, sum, value);
    }
    float const inverse = 1.0f / svaddv_f32(svptrue_b32(), sum);
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svfloat32_t const value = svmul_n_f32_x(pg, svld1_f32(pg, row + i), inverse);
        svst1_f32(pg, row + i, round_k ? round_bf16_v(pg, value) : value);
    }
}

// The logistic function of every value, with an exact division.
void sigmoid_sve(float const *in, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svfloat32_t const denominator = svadd_n_f32_x(pg, exp_v(pg, svneg_f32_x(pg, svld1_f32(pg, in + i))), 1.0f);
        svst1_f32(pg, out + i, svdivr_n_f32_x(pg, denominator, 1.0f));
    }
}

// SiLU of the gate times the up projection (an exact division, as the reference), rounded for the down projection.
void silu_mul_round_sve(float const *gate, float const *up, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svfloat32_t const g = svld1_f32(pg, gate + i);
        svfloat32_t const silu = svdiv_f32_x(pg, g, svadd_n_f32_x(pg, exp_v(pg, svneg_f32_x(pg, g)), 1.0f));
        svst1_f32(pg, out + i, round_bf16_v(pg, svmul_f32_x(pg, silu, svld1_f32(pg, up + i))));
    }
}

// Adds a row into a running sum.
void add_sve(float *sum, float const *row, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svst1_f32(pg, sum + i, svadd_f32_x(pg, svld1_f32(pg, sum + i), svld1_f32(pg, row + i)));
    }
}

// Scales a row.
void scale_sve(float *x, std::size_t count, float factor) noexcept {
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svst1_f32(pg, x + i, svmul_n_f32_x(pg, svld1_f32(pg, x + i), factor));
    }
}

// Divides a row by its L2 norm, leaving a zero row zero.
void l2_normalize_sve(float *x, std::size_t count) noexcept {
    float const sum = sum_squares(x, count);
    if (sum == 0) return;
    scale_sve(x, count, 1.0f / std::sqrt(sum));
}

// Two rows into words of BF16 pairs: the high row's bits above the low row's.
void interleave_bf16_sve(float const *low, float const *high, std::uint32_t *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svuint32_t const lows = svlsr_n_u32_x(pg, bf16_high(pg, svld1_f32(pg, low + i)), 16);
        svuint32_t const highs = high != nullptr ? bf16_high(pg, svld1_f32(pg, high + i)) : svdup_n_u32(0);
        svst1_u32(pg, out + i, svorr_u32_x(pg, lows, highs));
    }
}

// A row into BF16 bits, each lane's high half stored as 16 bits.
void convert_bf16_sve(float const *in, std::uint16_t *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += svcntw()) {
        svbool_t const pg = lanes_from(i, count);
        svst1h_u32(pg, out + i, svlsr_n_u32_x(pg, bf16_high(pg, svld1_f32(pg, in + i)), 16));
    }
}

// E4M3 bytes (one a lane) as F32, the bits of `e4m3_to_f32`: a normal magnitude rebiased into F32's exponent, a
// subnormal one (exponent 0) as `m * 2^-9`, the NaN pattern a quiet NaN, then the sign.
inline svfloat32_t e4m3_v(svbool_t pg, svuint32_t values) noexcept {
    svuint32_t const magnitude = svand_n_u32_x(pg, values, 0x7F);
    svuint32_t const sign = svlsl_n_u32_x(pg, svand_n_u32_x(pg, values, 0x80), 24);
    svuint32_t normal = svadd_n_u32_x(pg, svlsl_n_u32_x(pg, magnitude, 20), 120u << 23);
    normal = svsel_u32(svcmpeq_n_u32(pg, magnitude, 0x7F), svdup_n_u32(0x7FC00000u), normal);
    svfloat32_t const subnormal = svmul_n_f32_x(pg, svcvt_f32_u32_x(pg, magnitude), 1.0f / 512.0f);
    svuint32_t const value = svsel_u32(svcmplt_n_u32(pg, magnitude, 8), svreinterpret_u32_f32(subnormal), normal);
    return svreinterpret_f32_u32(svorr_u32_x(pg, value, sign));
}

// The `2 * count` bytes a lane each: to F32, scaled, rounded to BF16, stored as 16 bits in byte order, so the even
// byte's value lands in each word's low half.
void dequantize_e4m3_pairs_sve(std::uint8_t const *bytes, float scale, std::uint32_t *out, std::size_t count) noexcept {
    auto *halves = reinterpret_cast<std::uint16_t *>(out);
    std::size_t const total = 2 * count;
    for (std::size_t i = 0; i < total; i += svcntw()) {
        svbool_t const pg = lanes_from(i, total);
        svfloat32_t const value = svmul_n_f32_x(pg, e4m3_v(pg, svld1ub_u32(pg, bytes + i)), scale);
        svst1h_u32(pg, halves + i, svlsr_n_u32_x(pg, bf16_high(pg, value), 16));
    }
}

// C (+)= A * B over one micro tile of up to 6 x 64 in BF16 pairs on `BFDOT`, in strips of two vectors of words: 12
// sums, each taking a pair of products a step in depth order. Rows past `rows` repeat the last row (never stored), so
// nothing past A is read.
void gemm_micro_pairs_sve(std::size_t pairs, std::uint32_t const *a, std::size_t a_row, std::size_t a_pair,
                          std::uint32_t const *b, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                          unsigned flags) noexcept {
    std::size_t const lanes = svcntw();
    std::uint32_t const *row_of[gemm_micro_rows_k];
    for (std::size_t r = 0; r != gemm_micro_rows_k; ++r) row_of[r] = a + std::min(r, rows - 1) * a_row;
    for (std::size_t column = 0; column < columns; column += 2 * lanes) {
        svbool_t const p0 = lanes_from(column, columns), p1 = lanes_from(column + lanes, columns);
        svfloat32_t s00 = svdup_n_f32(0), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00;
        svfloat32_t s30 = s00, s31 = s00, s40 = s00, s41 = s00, s50 = s00, s51 = s00;
        std::uint32_t const *bp = b + column;
        for (std::size_t p = 0, at = 0; p != pairs; ++p, at += a_pair, bp += gemm_panel_columns_k) {
            svbfloat16_t const b0 = svreinterpret_bf16_u32(svld1_u32(p0, bp));
            svbfloat16_t const b1 = svreinterpret_bf16_u32(svld1_u32(p1, bp + lanes));
#define UFORM_SVE_PAIRS_ROW(r)                                                                                         \
    {                                                                                                                  \
        svbfloat16_t const value = svreinterpret_bf16_u32(svdup_n_u32(row_of[r][at]));                                 \
        s##r##0 = svbfdot_f32(s##r##0, value, b0);                                                                     \
        s##r##1 = svbfdot_f32(s##r##1, value, b1);                                                                     \
    }
            UFORM_SVE_PAIRS_ROW(0)
            UFORM_SVE_PAIRS_ROW(1)
            UFORM_SVE_PAIRS_ROW(2) UFORM_SVE_PAIRS_ROW(3) UFORM_SVE_PAIRS_ROW(4) UFORM_SVE_PAIRS_ROW(5)
#undef UFORM_SVE_PAIRS_ROW
        }
        merge_rows(p0, p1, c + column, ldc, lanes, rows, flags, s00, s01, s10, s11, s20, s21, s30, s31, s40, s41, s50,
                   s51);
    }
}

// Each block's absolute maximum (and whether the row is finite), then every value times 127 / its block's maximum
// rounded to nearest even (`FRINTN`), offset by 128 and stored a byte a lane.
void quantize_i8_sve(float const *x, std::size_t depth, std::size_t padded, std::uint8_t *out, float *scales) noexcept {
    constexpr std::size_t block = i8_block_k;
    std::size_t const blocks = i8_blocks(depth);
    bool bad = false;
    for (std::size_t j = 0; j != blocks; ++j) {
        std::size_t const end = std::min(depth, j * block + block);
        svfloat32_t amax = svdup_n_f32(0);
        for (std::size_t k = j * block; k < end; k += svcntw()) {
            svbool_t const pg = lanes_from(k, end);
            svfloat32_t const magnitude = svabs_f32_x(pg, svld1_f32(pg, x + k));
            bad |= svptest_any(pg, svcmpuo_f32(pg, magnitude, magnitude)) ||
                   svptest_any(pg, svcmpgt_n_f32(pg, magnitude, std::numeric_limits<float>::max()));
            amax = svmax_f32_m(pg, amax, magnitude);
        }
        scales[j] = svmaxv_f32(svptrue_b32(), amax);
    }
    if (bad) return arm::quantize_i8_not_finite(out, padded, scales, blocks);
    for (std::size_t j = 0; j != blocks; ++j) {
        std::size_t const begin = j * block, end = std::min(depth, begin + block);
        float const peak = scales[j];
        if (peak == 0) {
            std::memset(out + begin, 128, end - begin);
            continue;
        }
        float const inverse = 127.0f / peak;
        for (std::size_t k = begin; k < end; k += svcntw()) {
            svbool_t const pg = lanes_from(k, end);
            svfloat32_t const scaled = svrintn_f32_x(pg, svmul_n_f32_x(pg, svld1_f32(pg, x + k), inverse));
            svint32_t q = svcvt_s32_f32_x(pg, scaled);
            q = svadd_n_s32_x(pg, svmin_n_s32_x(pg, svmax_n_s32_x(pg, q, -127), 127), 128);
            svst1b_u32(pg, out + k, svreinterpret_u32_s32(q));
        }
        scales[j] = peak / 127.0f;
    }
    std::memset(out + depth, 128, padded - depth);
}

// The int8 operands of one micro tile: `gemm_micro_i8`'s.
struct i8_tile_t {
    std::uint8_t const *a;
    std::size_t lda;
    float const *a_scales;
    std::size_t a_blocks;
    std::int8_t const *b;
    std::int32_t const *compensation;
    float const *b_scales;
};

// Adds one block's exact int32 sums (2 vectors of columns) into a row's F32 sums: times the columns' scales, then the
// row's, in the serial kernel's order.
inline void add_block(svbool_t p0, svbool_t p1, svint32_t sum0, svint32_t sum1, svfloat32_t scales0,
                      svfloat32_t scales1, float row_scale, svfloat32_t &out0, svfloat32_t &out1) noexcept {
    out0 = svadd_f32_x(p0, out0, svmul_n_f32_x(p0, svmul_f32_x(p0, svcvt_f32_s32_x(p0, sum0), scales0), row_scale));
    out1 = svadd_f32_x(p1, out1, svmul_n_f32_x(p1, svmul_f32_x(p1, svcvt_f32_s32_x(p1, sum1), scales1), row_scale));
}

// One strip of two vectors of columns over int8 blocks: per block of 128 depths, 12 exact int32 sums on `SDOT` (the
// activations made signed by flipping their top bit, from zero) or, with UFORM_SVE_USDOT, on `USDOT` (unsigned
// activations, from the compensation): the same sums either way. Rows past `rows` repeat the last row.
void i8_strip(std::size_t depth, i8_tile_t const &x, float *c, std::size_t ldc, std::size_t rows, std::size_t column,
              std::size_t columns, unsigned flags) noexcept {
    constexpr std::size_t block_groups = i8_block_k / 4;
    std::size_t const lanes = svcntw(), groups = (depth + 3) / 4;
    svbool_t const p0 = lanes_from(column, columns), p1 = lanes_from(column + lanes, columns);
    svbool_t const b0_bytes = svwhilelt_b8_u64(4 * column, 4 * columns);
    svbool_t const b1_bytes = svwhilelt_b8_u64(4 * (column + lanes), 4 * columns);
    std::uint8_t const *row_of[gemm_micro_rows_k];
    for (std::size_t r = 0; r != gemm_micro_rows_k; ++r) row_of[r] = x.a + std::min(r, rows - 1) * x.lda;
    svfloat32_t f00 = svdup_n_f32(0), f01 = f00, f10 = f00, f11 = f00, f20 = f00, f21 = f00;
    svfloat32_t f30 = f00, f31 = f00, f40 = f00, f41 = f00, f50 = f00, f51 = f00;
    for (std::size_t g0 = 0, j = 0; g0 < groups; g0 += block_groups, ++j) {
        std::size_t const g1 = std::min(groups, g0 + block_groups);
#if defined(UFORM_SVE_USDOT)
        svint32_t const start0 = svld1_s32(p0, x.compensation + j * 64 + column);
        svint32_t const start1 = svld1_s32(p1, x.compensation + j * 64 + column + lanes);
#else
        svint32_t const start0 = svdup_n_s32(0), start1 = start0;
#endif
        svint32_t i00 = start0, i01 = start1, i10 = start0, i11 = start1, i20 = start0, i21 = start1;
        svint32_t i30 = start0, i31 = start1, i40 = start0, i41 = start1, i50 = start0, i51 = start1;
        for (std::size_t g = g0; g != g1; ++g) {
            std::int8_t const *group = x.b + g * 256 + column * 4;
            svint8_t const b0 = svld1_s8(b0_bytes, group), b1 = svld1_s8(b1_bytes, group + lanes * 4);
#if defined(UFORM_SVE_USDOT)
#define UFORM_SVE_I8_ROW(r)                                                                                            \
    {                                                                                                                  \
        std::uint32_t word;                                                                                            \
        std::memcpy(&word, row_of[r] + 4 * g, 4);                                                                      \
        svuint8_t const value = svreinterpret_u8_u32(svdup_n_u32(word));                                               \
        i##r##0 = svusdot_s32(i##r##0, value, b0);                                                                     \
        i##r##1 = svusdot_s32(i##r##1, value, b1);                                                                     \
    }
#else
#define UFORM_SVE_I8_ROW(r)                                                                                            \
    {                                                                                                                  \
        std::uint32_t word;                                                                                            \
        std::memcpy(&word, row_of[r] + 4 * g, 4);                                                                      \
        svint8_t const value = svreinterpret_s8_u32(svdup_n_u32(word ^ 0x80808080u));                                  \
        i##r##0 = svdot_s32(i##r##0, value, b0);                                                                       \
        i##r##1 = svdot_s32(i##r##1, value, b1);                                                                       \
    }
#endif
            UFORM_SVE_I8_ROW(0)
            UFORM_SVE_I8_ROW(1) UFORM_SVE_I8_ROW(2) UFORM_SVE_I8_ROW(3) UFORM_SVE_I8_ROW(4) UFORM_SVE_I8_ROW(5)
#undef UFORM_SVE_I8_ROW
        }
        svfloat32_t const scales0 = svld1_f32(p0, x.b_scales + j * 64 + column);
        svfloat32_t const scales1 = svld1_f32(p1, x.b_scales + j * 64 + column + lanes);
        float const *row_scales = x.a_scales + j;
        std::size_t const last = rows - 1, stride = x.a_blocks;
        add_block(p0, p1, i00, i01, scales0, scales1, row_scales[std::min<std::size_t>(0, last) * stride], f00, f01);
        add_block(p0, p1, i10, i11, scales0, scales1, row_scales[std::min<std::size_t>(1, last) * stride], f10, f11);
        add_block(p0, p1, i20, i21, scales0, scales1, row_scales[std::min<std::size_t>(2, last) * stride], f20, f21);
        add_block(p0, p1, i30, i31, scales0, scales1, row_scales[std::min<std::size_t>(3, last) * stride], f30, f31);
        add_block(p0, p1, i40, i41, scales0, scales1, row_scales[std::min<std::size_t>(4, last) * stride], f40, f41);
        add_block(p0, p1, i50, i51, scales0, scales1, row_scales[std::min<std::size_t>(5, last) * stride], f50, f51);
    }
    merge_rows(p0, p1, c + column, ldc, lanes, rows, flags, f00, f01, f10, f11, f20, f21, f30, f31, f40, f41, f50, f51);
}

// C (+)= A * B^T over one micro tile of up to 6 x 64 in int8 blocks, strip by strip.
void gemm_micro_i8_sve(std::size_t depth, std::uint8_t const *a, std::size_t lda, float const *a_scales,
                       std::size_t a_blocks, std::int8_t const *b, std::int32_t const *compensation,
                       float const *b_scales, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                       unsigned flags) noexcept {
    if (rows == 0) return;
    i8_tile_t const x{a, lda, a_scales, a_blocks, b, compensation, b_scales};
    for (std::size_t column = 0; column < columns; column += 2 * svcntw())
        i8_strip(depth, x, c, ldc, rows, column, columns, flags);
}

// The SVE table of `cpu_class`: the pair products where the core has SVE BF16 (HWCAP2_SVEBF16).
kernels_t sve_table(uform_cpu_class_t cpu_class) noexcept {
    kernels_t table{
        cpu_class,    pack_a_sve,       gemm_micro_sve,     merge_sve,          round_bf16_sve,
        rms_norm_sve, rope_round_sve,   softmax_sve<true>,  silu_mul_round_sve, add_sve,
        scale_sve,    l2_normalize_sve, softmax_sve<false>, sigmoid_sve,        nullptr,
        nullptr,      nullptr,          quantize_i8_sve,    gemm_micro_i8_sve,  nullptr,
    };
    if (getauxval(AT_HWCAP2) & HWCAP2_SVEBF16) {
        table.gemm_micro_pairs = gemm_micro_pairs_sve;
        table.interleave_bf16 = interleave_bf16_sve;
        table.convert_bf16 = convert_bf16_sve;
        table.dequantize_e4m3_pairs = dequantize_e4m3_pairs_sve;
    }
    return table;
}

} // namespace
} // namespace uform::ram
