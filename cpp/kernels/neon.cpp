// The NEON class (AArch64's Advanced SIMD, every 64-bit Arm core): 6 x 16 GEMM micro-tiles across a 64-column panel
// and 4-lane elementwise maths; the BF16 pair products on `BFDOT` where the core has BF16 (HWCAP2_BF16), and the int8
// products on `USDOT` (I8MM) or `SDOT` (the dot-product extension), each only where `getauxval` reports it.
#include "cpp/kernels/kernels.hpp"

#if defined(__aarch64__)

#include <arm_neon.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpp/kernels/arm.hpp"

namespace uform::ram {
namespace {

// Loads `count` (<= 4) floats, zeros past them.
inline float32x4_t load_partial(float const *source, std::size_t count) noexcept {
    if (count >= 4) return vld1q_f32(source);
    float lanes[4] = {};
    std::memcpy(lanes, source, count * sizeof(float));
    return vld1q_f32(lanes);
}

// Stores the first `count` (<= 4) lanes.
inline void store_partial(float *target, float32x4_t value, std::size_t count) noexcept {
    if (count >= 4) return vst1q_f32(target, value);
    float lanes[4];
    vst1q_f32(lanes, value);
    std::memcpy(target, lanes, count * sizeof(float));
}

// The BF16 bits of 4 floats (nearest even) in the high halves of the lanes, low halves zero; NaN lanes become quiet
// NaNs, as `f32_to_bf16`.
inline uint32x4_t bf16_high_x4(float32x4_t value) noexcept {
    uint32x4_t const bits = vreinterpretq_u32_f32(value);
    uint32x4_t const high = vdupq_n_u32(0xFFFF0000u);
    uint32x4_t const lsb = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
    uint32x4_t const rounded = vandq_u32(vaddq_u32(bits, vaddq_u32(lsb, vdupq_n_u32(0x7FFF))), high);
    uint32x4_t const quiet = vorrq_u32(vandq_u32(bits, high), vdupq_n_u32(0x00400000));
    uint32x4_t const number = vceqq_f32(value, value);
    return vbslq_u32(number, rounded, quiet);
}

// Rounds 4 floats to BF16 (nearest even) in F32 form.
inline float32x4_t round_bf16_x4(float32x4_t value) noexcept { return vreinterpretq_f32_u32(bf16_high_x4(value)); }

// e^x for 4 lanes (Cephes' polynomial, about 1 ulp), the same steps as the x86 classes' `exp_x8`; below -87.3 zero.
inline float32x4_t exp_x4(float32x4_t x) noexcept {
    uint32x4_t const underflow = vcltq_f32(x, vdupq_n_f32(-87.3f));
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.7f));
    float32x4_t const n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), vmulq_f32(p, r), r);
    int32x4_t const exponent = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
    float32x4_t const result = vmulq_f32(p, vreinterpretq_f32_s32(exponent));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(result), underflow));
}

// Packs rows of A into 6-row panels, rounded to BF16: 4 depths of all six rows at a time.
void pack_a_neon(float const *a, std::size_t lda, std::size_t rows, std::size_t depth, float *out) noexcept {
    constexpr std::size_t panel_rows = gemm_micro_rows_k;
    for (std::size_t row = 0; row < rows; row += panel_rows) {
        float *panel = out + row * depth;
        std::size_t const present = std::min(rows - row, panel_rows);
        for (std::size_t k = 0; k < depth; k += 4) {
            std::size_t const count = std::min<std::size_t>(depth - k, 4);
            float block[panel_rows][4];
            for (std::size_t r = 0; r != panel_rows; ++r)
                vst1q_f32(block[r],
                          r < present ? round_bf16_x4(load_partial(a + (row + r) * lda + k, count)) : vdupq_n_f32(0));
            float *target = panel + k * panel_rows;
            for (std::size_t i = 0; i != count; ++i)
                for (std::size_t r = 0; r != panel_rows; ++r) target[i * panel_rows + r] = block[r][i];
        }
    }
}

// Merges 4-lane results into `count` (<= 4) values of C: accumulation, then rounding, as `gemm_flags_t` say.
inline void merge_x4(float *target, float32x4_t value, std::size_t count, unsigned flags) noexcept {
    if (count == 0) return;
    if (flags & gemm_accumulate_k) value = vaddq_f32(load_partial(target, count), value);
    if (flags & gemm_round_output_k) value = round_bf16_x4(value);
    store_partial(target, value, count);
}

// One 6-row (or fewer) by 16-column strip of C: 4 x `rows_k` accumulators, each product fused into its sum in depth
// order.
template <std::size_t rows_k>
void gemm_strip(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                std::size_t columns, unsigned flags) noexcept {
    float32x4_t sums[rows_k][4];
    for (std::size_t r = 0; r != rows_k; ++r)
        for (std::size_t v = 0; v != 4; ++v) sums[r][v] = vdupq_n_f32(0);
    float padded[16] = {};
    for (std::size_t k = 0; k != depth; ++k, a += gemm_micro_rows_k, b += ldb) {
        float const *row = b;
        if (columns < 16) row = static_cast<float const *>(std::memcpy(padded, b, columns * sizeof(float)));
        float32x4_t const b0 = vld1q_f32(row), b1 = vld1q_f32(row + 4), b2 = vld1q_f32(row + 8),
                          b3 = vld1q_f32(row + 12);
        for (std::size_t r = 0; r != rows_k; ++r) {
            float const value = a[r];
            sums[r][0] = vfmaq_n_f32(sums[r][0], b0, value);
            sums[r][1] = vfmaq_n_f32(sums[r][1], b1, value);
            sums[r][2] = vfmaq_n_f32(sums[r][2], b2, value);
            sums[r][3] = vfmaq_n_f32(sums[r][3], b3, value);
        }
    }
    for (std::size_t r = 0; r != rows_k; ++r)
        for (std::size_t v = 0; v != 4 && v * 4 < columns; ++v)
            merge_x4(c + r * ldc + v * 4, sums[r][v], std::min<std::size_t>(columns - v * 4, 4), flags);
}

// C (+)= A * B over one micro tile of up to 6 x 64, as up to four 16-column strips.
void gemm_micro_neon(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                     std::size_t rows, std::size_t columns, unsigned flags, gemm_prefetch_t prefetch) noexcept {
    for (std::size_t line = 0; line != prefetch.lines; ++line)
        __builtin_prefetch(prefetch.data + line * gemm_prefetch_line_bytes_k, 0, 2);
    for (std::size_t column = 0; column < columns; column += 16) {
        std::size_t const strip = std::min<std::size_t>(columns - column, 16);
        float const *bs = b + column;
        float *cs = c + column;
        switch (rows) {
        case 6: gemm_strip<6>(depth, a, bs, ldb, cs, ldc, strip, flags); break;
        case 5: gemm_strip<5>(depth, a, bs, ldb, cs, ldc, strip, flags); break;
        case 4: gemm_strip<4>(depth, a, bs, ldb, cs, ldc, strip, flags); break;
        case 3: gemm_strip<3>(depth, a, bs, ldb, cs, ldc, strip, flags); break;
        case 2: gemm_strip<2>(depth, a, bs, ldb, cs, ldc, strip, flags); break;
        case 1: gemm_strip<1>(depth, a, bs, ldb, cs, ldc, strip, flags); break;
        default: break;
        }
    }
}

// Merges a finished row of products into C.
void merge_neon(float const *tile, float *c, std::size_t count, unsigned flags) noexcept {
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        merge_x4(c + i, load_partial(tile + i, lanes), lanes, flags);
    }
}

// Rounds every value to BF16.
void round_bf16_neon(float const *in, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        store_partial(out + i, round_bf16_x4(load_partial(in + i, lanes)), lanes);
    }
}

// The sum of squares of `count` values, in 4 F32 lanes.
inline float sum_squares(float const *x, std::size_t count) noexcept {
    float32x4_t sum = vdupq_n_f32(0);
    for (std::size_t i = 0; i < count; i += 4) {
        float32x4_t const value = load_partial(x + i, std::min<std::size_t>(count - i, 4));
        sum = vfmaq_f32(sum, value, value);
    }
    return vaddvq_f32(sum);
}

// RMSNorm of one row times the norm weight, optionally rounded for a following product.
void rms_norm_neon(float const *x, float const *weight, std::size_t width, float eps, float *out, bool round) noexcept {
    float32x4_t const factor = vdupq_n_f32(1.0f / std::sqrt(sum_squares(x, width) / static_cast<float>(width) + eps));
    for (std::size_t i = 0; i < width; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(width - i, 4);
        float32x4_t const value =
            vmulq_f32(vmulq_f32(load_partial(x + i, lanes), factor), load_partial(weight + i, lanes));
        store_partial(out + i, round ? round_bf16_x4(value) : value, lanes);
    }
}

// Rotate-half RoPE of every head of one token, then BF16 rounding.
void rope_round_neon(float *x, std::size_t heads, std::size_t head_dim, float const *cos, float const *sin) noexcept {
    std::size_t const half = head_dim / 2;
    for (std::size_t h = 0; h != heads; ++h) {
        float *head = x + h * head_dim;
        for (std::size_t j = 0; j < half; j += 4) {
            std::size_t const lanes = std::min<std::size_t>(half - j, 4);
            float32x4_t const first = load_partial(head + j, lanes), second = load_partial(head + j + half, lanes);
            float32x4_t const c = load_partial(cos + j, lanes), s = load_partial(sin + j, lanes);
            float32x4_t const out_first = vsubq_f32(vmulq_f32(first, c), vmulq_f32(second, s));
            float32x4_t const out_second = vaddq_f32(vmulq_f32(second, c), vmulq_f32(first, s));
            store_partial(head + j, round_bf16_x4(out_first), lanes);
            store_partial(head + j + half, round_bf16_x4(out_second), lanes);
        }
    }
}

// Softmax of a scaled row in F32, the probabilities then rounded to BF16 when `round_k` is set.
template <bool round_k>
void softmax_neon(float *row, std::size_t count, float scale) noexcept {
    if (count == 0) return;
    float32x4_t maximum = vdupq_n_f32(-INFINITY);
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        float32x4_t const value = vmulq_f32(load_partial(row + i, lanes), vdupq_n_f32(scale));
        store_partial(row + i, value, lanes);
        float32x4_t const valid =
            vbslq_f32(vcltq_u32(vld1q_u32(arm::lane_index_k), vdupq_n_u32(lanes)), value, vdupq_n_f32(-INFINITY));
        maximum = vmaxq_f32(maximum, valid);
    }
    float32x4_t const shift = vdupq_n_f32(vmaxvq_f32(maximum));
    float32x4_t sum = vdupq_n_f32(0);
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        float32x4_t const value = exp_x4(vsubq_f32(load_partial(row + i, lanes), shift));
        store_partial(row + i, value, lanes);
        uint32x4_t const valid = vcltq_u32(vld1q_u32(arm::lane_index_k), vdupq_n_u32(lanes));
        sum = vaddq_f32(sum, vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(value), valid)));
    }
    float32x4_t const inverse = vdupq_n_f32(1.0f / vaddvq_f32(sum));
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        float32x4_t const value = vmulq_f32(load_partial(row + i, lanes), inverse);
        store_partial(row + i, round_k ? round_bf16_x4(value) : value, lanes);
    }
}

// The logistic function of every value, with an exact division.
void sigmoid_neon(float const *in, float *out, std::size_t count) noexcept {
    float32x4_t const one = vdupq_n_f32(1.0f);
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        float32x4_t const x = load_partial(in + i, lanes);
        store_partial(out + i, vdivq_f32(one, vaddq_f32(one, exp_x4(vnegq_f32(x)))), lanes);
    }
}

// SiLU of the gate times the up projection (an exact division, as the reference), rounded for the down projection.
void silu_mul_round_neon(float const *gate, float const *up, float *out, std::size_t count) noexcept {
    float32x4_t const one = vdupq_n_f32(1.0f);
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        float32x4_t const g = load_partial(gate + i, lanes);
        float32x4_t const silu = vdivq_f32(g, vaddq_f32(one, exp_x4(vnegq_f32(g))));
        store_partial(out + i, round_bf16_x4(vmulq_f32(silu, load_partial(up + i, lanes))), lanes);
    }
}

// Adds a row into a running sum.
void add_neon(float *sum, float const *row, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        store_partial(sum + i, vaddq_f32(load_partial(sum + i, lanes), load_partial(row + i, lanes)), lanes);
    }
}

// Scales a row.
void scale_neon(float *x, std::size_t count, float factor) noexcept {
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        store_partial(x + i, vmulq_n_f32(load_partial(x + i, lanes), factor), lanes);
    }
}

// Divides a row by its L2 norm, leaving a zero row zero.
void l2_normalize_neon(float *x, std::size_t count) noexcept {
    float const sum = sum_squares(x, count);
    if (sum == 0) return;
    scale_neon(x, count, 1.0f / std::sqrt(sum));
}

// Two rows into words of BF16 pairs: the high row's bits above the low row's.
void interleave_bf16_neon(float const *low, float const *high, std::uint32_t *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        uint32x4_t const lows = vshrq_n_u32(bf16_high_x4(load_partial(low + i, lanes)), 16);
        uint32x4_t const highs = high != nullptr ? bf16_high_x4(load_partial(high + i, lanes)) : vdupq_n_u32(0);
        std::uint32_t words[4];
        vst1q_u32(words, vorrq_u32(lows, highs));
        std::memcpy(out + i, words, lanes * sizeof(std::uint32_t));
    }
}

// A row into BF16 bits.
void convert_bf16_neon(float const *in, std::uint16_t *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += 4) {
        std::size_t const lanes = std::min<std::size_t>(count - i, 4);
        std::uint16_t bits[4];
        vst1_u16(bits, vshrn_n_u32(bf16_high_x4(load_partial(in + i, lanes)), 16));
        std::memcpy(out + i, bits, lanes * sizeof(std::uint16_t));
    }
}

// 4 E4M3 bytes (widened to 32-bit lanes) as F32, the bits of `e4m3_to_f32`: a normal magnitude rebiased into F32's
// exponent, a subnormal one (exponent 0) as `m * 2^-9`, the NaN pattern a quiet NaN, then the sign.
inline float32x4_t e4m3_x4(uint32x4_t values) noexcept {
    uint32x4_t const magnitude = vandq_u32(values, vdupq_n_u32(0x7F));
    uint32x4_t const sign = vshlq_n_u32(vandq_u32(values, vdupq_n_u32(0x80)), 24);
    uint32x4_t normal = vaddq_u32(vshlq_n_u32(magnitude, 20), vdupq_n_u32(120u << 23));
    normal = vbslq_u32(vceqq_u32(magnitude, vdupq_n_u32(0x7F)), vdupq_n_u32(0x7FC00000u), normal);
    float32x4_t const subnormal = vmulq_f32(vcvtq_f32_u32(magnitude), vdupq_n_f32(1.0f / 512.0f));
    uint32x4_t const value = vbslq_u32(vcltq_u32(magnitude, vdupq_n_u32(8)), vreinterpretq_u32_f32(subnormal), normal);
    return vreinterpretq_f32_u32(vorrq_u32(value, sign));
}

// 8 words (16 bytes) at a time: each byte to F32, scaled, rounded to BF16, narrowed to 16 bits in byte order, so the
// even byte's value lands in each word's low half.
void dequantize_e4m3_pairs_neon(std::uint8_t const *bytes, float scale, std::uint32_t *out,
                                std::size_t count) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        uint8x16_t const chunk = vld1q_u8(bytes + 2 * i);
        uint16x8_t const halves[2] = {vmovl_u8(vget_low_u8(chunk)), vmovl_u8(vget_high_u8(chunk))};
        auto *target = reinterpret_cast<std::uint16_t *>(out + i);
        for (std::size_t h = 0; h != 2; ++h) {
            float32x4_t const low = vmulq_n_f32(e4m3_x4(vmovl_u16(vget_low_u16(halves[h]))), scale);
            float32x4_t const high = vmulq_n_f32(e4m3_x4(vmovl_u16(vget_high_u16(halves[h]))), scale);
            uint16x8_t const bits =
                vcombine_u16(vshrn_n_u32(bf16_high_x4(low), 16), vshrn_n_u32(bf16_high_x4(high), 16));
            std::uint16_t lanes[8];
            vst1q_u16(lanes, bits);
            std::memcpy(target + 8 * h, lanes, sizeof(lanes));
        }
    }
    if (i != count) dequantize_e4m3_pairs_serial(bytes + 2 * i, scale, out + i, count - i);
}

// Each block's absolute maximum (and whether the row is finite), then `fcvtns` (nearest even, as `lrint`) of every
// value times 127 / its block's maximum.
void quantize_i8_neon(float const *x, std::size_t depth, std::size_t padded, std::uint8_t *out,
                      float *scales) noexcept {
    constexpr std::size_t block = i8_block_k;
    std::size_t const blocks = i8_blocks(depth);
    uint32x4_t finite = vdupq_n_u32(~0u);
    for (std::size_t j = 0; j != blocks; ++j) {
        std::size_t const end = std::min(depth, j * block + block);
        float32x4_t amax = vdupq_n_f32(0);
        for (std::size_t k = j * block; k < end; k += 4) {
            float32x4_t const magnitude = vabsq_f32(load_partial(x + k, std::min<std::size_t>(end - k, 4)));
            finite = vandq_u32(finite, vcleq_f32(magnitude, vdupq_n_f32(std::numeric_limits<float>::max())));
            amax = vmaxq_f32(amax, magnitude);
        }
        scales[j] = vmaxvq_f32(amax);
    }
    if (vminvq_u32(finite) == 0) return arm::quantize_i8_not_finite(out, padded, scales, blocks);
    for (std::size_t j = 0; j != blocks; ++j) {
        std::size_t const begin = j * block, end = std::min(depth, begin + block);
        float const peak = scales[j];
        if (peak == 0) {
            std::memset(out + begin, 128, end - begin);
            continue;
        }
        float32x4_t const inverse = vdupq_n_f32(127.0f / peak);
        for (std::size_t k = begin; k < end; k += 4) {
            std::size_t const lanes = std::min<std::size_t>(end - k, 4);
            int32x4_t q = vcvtnq_s32_f32(vmulq_f32(load_partial(x + k, lanes), inverse));
            q = vaddq_s32(vminq_s32(vmaxq_s32(q, vdupq_n_s32(-127)), vdupq_n_s32(127)), vdupq_n_s32(128));
            std::uint8_t bytes[8];
            vst1_u8(bytes, vmovn_u16(vcombine_u16(vmovn_u32(vreinterpretq_u32_s32(q)), vdup_n_u16(0))));
            std::memcpy(out + k, bytes, lanes);
        }
        scales[j] = peak / 127.0f;
    }
    std::memset(out + depth, 128, padded - depth);
}

// One micro tile's strip of `rows_k` rows by up to 16 columns in BF16 pairs on `BFDOT`: each of 4 x `rows_k` sums
// takes a pair of products a step, in depth order; B's pair p is the 64 words at `b + p * 64`, zero past the columns.
template <std::size_t rows_k>
__attribute__((target("bf16"))) void pairs_strip(std::size_t pairs, std::uint32_t const *a, std::size_t a_row,
                                                 std::size_t a_pair, std::uint32_t const *b, float *c, std::size_t ldc,
                                                 std::size_t columns, unsigned flags) noexcept {
    float32x4_t sums[rows_k][4];
    for (std::size_t r = 0; r != rows_k; ++r)
        for (std::size_t v = 0; v != 4; ++v) sums[r][v] = vdupq_n_f32(0);
    for (std::size_t p = 0; p != pairs; ++p, a += a_pair, b += gemm_panel_columns_k) {
        bfloat16x8_t b_vectors[4];
        for (std::size_t v = 0; v != 4; ++v) b_vectors[v] = vreinterpretq_bf16_u32(vld1q_u32(b + v * 4));
        for (std::size_t r = 0; r != rows_k; ++r) {
            bfloat16x8_t const a_value = vreinterpretq_bf16_u32(vdupq_n_u32(a[r * a_row]));
            for (std::size_t v = 0; v != 4; ++v) sums[r][v] = vbfdotq_f32(sums[r][v], a_value, b_vectors[v]);
        }
    }
    for (std::size_t r = 0; r != rows_k; ++r)
        for (std::size_t v = 0; v != 4 && v * 4 < columns; ++v)
            merge_x4(c + r * ldc + v * 4, sums[r][v], std::min<std::size_t>(columns - v * 4, 4), flags);
}

// C (+)= A * B over one micro tile of up to 6 x 64 in BF16 pairs, as up to four 16-column strips.
void gemm_micro_pairs_bfdot(std::size_t pairs, std::uint32_t const *a, std::size_t a_row, std::size_t a_pair,
                            std::uint32_t const *b, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                            unsigned flags) noexcept {
    for (std::size_t column = 0; column < columns; column += 16) {
        std::size_t const strip = std::min<std::size_t>(columns - column, 16);
        switch (rows) {
        case 6: pairs_strip<6>(pairs, a, a_row, a_pair, b + column, c + column, ldc, strip, flags); break;
        case 5: pairs_strip<5>(pairs, a, a_row, a_pair, b + column, c + column, ldc, strip, flags); break;
        case 4: pairs_strip<4>(pairs, a, a_row, a_pair, b + column, c + column, ldc, strip, flags); break;
        case 3: pairs_strip<3>(pairs, a, a_row, a_pair, b + column, c + column, ldc, strip, flags); break;
        case 2: pairs_strip<2>(pairs, a, a_row, a_pair, b + column, c + column, ldc, strip, flags); break;
        case 1: pairs_strip<1>(pairs, a, a_row, a_pair, b + column, c + column, ldc, strip, flags); break;
        default: break;
        }
    }
}

// The int8 operands of one strip of a micro tile (`gemm_micro_i8`'s, B's and its sides at the strip's column).
struct i8_strip_t {
    std::uint8_t const *a;
    std::size_t lda;
    float const *a_scales;
    std::size_t a_blocks;
    std::int8_t const *b;
    std::int32_t const *compensation;
    float const *b_scales;
};

// One strip of `rows_k` rows by up to 8 columns over int8 blocks: per block of 128 depths, 2 x `rows_k` exact int32
// sums, on `USDOT` (unsigned activation bytes times signed weights, from the compensation) or on `SDOT` (the
// activations made signed by flipping their top bit, from zero: the same sums); then each block's sum times the
// column's scale, then the row's, added to the F32 sums in depth order, as the serial kernel.
template <std::size_t rows_k, bool usdot_k>
__attribute__((target("dotprod,i8mm"))) void i8_strip(std::size_t depth, i8_strip_t const &x, float *c, std::size_t ldc,
                                                      std::size_t columns, unsigned flags) noexcept {
    constexpr std::size_t block_groups = i8_block_k / 4;
    std::size_t const groups = (depth + 3) / 4;
    float32x4_t sums[rows_k][2];
    for (std::size_t r = 0; r != rows_k; ++r) sums[r][0] = sums[r][1] = vdupq_n_f32(0);
    for (std::size_t g0 = 0, j = 0; g0 < groups; g0 += block_groups, ++j) {
        std::size_t const g1 = std::min(groups, g0 + block_groups);
        int32x4_t acc[rows_k][2];
        for (std::size_t r = 0; r != rows_k; ++r)
            for (std::size_t v = 0; v != 2; ++v)
                acc[r][v] = usdot_k ? vld1q_s32(x.compensation + j * 64 + v * 4) : vdupq_n_s32(0);
        for (std::size_t g = g0; g != g1; ++g) {
            int8x16_t const b0 = vld1q_s8(x.b + g * 256), b1 = vld1q_s8(x.b + g * 256 + 16);
            for (std::size_t r = 0; r != rows_k; ++r) {
                std::uint32_t word;
                std::memcpy(&word, x.a + r * x.lda + 4 * g, 4);
                if constexpr (usdot_k) {
                    uint8x16_t const a_value = vreinterpretq_u8_u32(vdupq_n_u32(word));
                    acc[r][0] = vusdotq_s32(acc[r][0], a_value, b0);
                    acc[r][1] = vusdotq_s32(acc[r][1], a_value, b1);
                } else {
                    int8x16_t const a_value = vreinterpretq_s8_u32(vdupq_n_u32(word ^ 0x80808080u));
                    acc[r][0] = vdotq_s32(acc[r][0], a_value, b0);
                    acc[r][1] = vdotq_s32(acc[r][1], a_value, b1);
                }
            }
        }
        float32x4_t const column_scales[2] = {vld1q_f32(x.b_scales + j * 64), vld1q_f32(x.b_scales + j * 64 + 4)};
        for (std::size_t r = 0; r != rows_k; ++r) {
            float const row_scale = x.a_scales[r * x.a_blocks + j];
            for (std::size_t v = 0; v != 2; ++v)
                sums[r][v] = vaddq_f32(sums[r][v],
                                       vmulq_n_f32(vmulq_f32(vcvtq_f32_s32(acc[r][v]), column_scales[v]), row_scale));
        }
    }
    for (std::size_t r = 0; r != rows_k; ++r)
        for (std::size_t v = 0; v != 2 && v * 4 < columns; ++v)
            merge_x4(c + r * ldc + v * 4, sums[r][v], std::min<std::size_t>(columns - v * 4, 4), flags);
}

// C (+)= A * B^T over one micro tile of up to 6 x 64 in int8 blocks, as 8-column strips.
template <bool usdot_k>
void gemm_micro_i8_dot(std::size_t depth, std::uint8_t const *a, std::size_t lda, float const *a_scales,
                       std::size_t a_blocks, std::int8_t const *b, std::int32_t const *compensation,
                       float const *b_scales, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                       unsigned flags) noexcept {
    for (std::size_t column = 0; column < columns; column += 8) {
        i8_strip_t const x{a, lda, a_scales, a_blocks, b + column * 4, compensation + column, b_scales + column};
        std::size_t const strip = std::min<std::size_t>(columns - column, 8);
        switch (rows) {
        case 6: i8_strip<6, usdot_k>(depth, x, c + column, ldc, strip, flags); break;
        case 5: i8_strip<5, usdot_k>(depth, x, c + column, ldc, strip, flags); break;
        case 4: i8_strip<4, usdot_k>(depth, x, c + column, ldc, strip, flags); break;
        case 3: i8_strip<3, usdot_k>(depth, x, c + column, ldc, strip, flags); break;
        case 2: i8_strip<2, usdot_k>(depth, x, c + column, ldc, strip, flags); break;
        case 1: i8_strip<1, usdot_k>(depth, x, c + column, ldc, strip, flags); break;
        default: break;
        }
    }
}

// The NEON table: the pair products where the core has BF16, the int8 products on the widest dot product it has.
kernels_t neon_table() noexcept {
    kernels_t table{
        uform_cpu_class_arm_neon_k,
        pack_a_neon,
        gemm_micro_neon,
        merge_neon,
        round_bf16_neon,
        rms_norm_neon,
        rope_round_neon,
        softmax_neon<true>,
        silu_mul_round_neon,
        add_neon,
        scale_neon,
        l2_normalize_neon,
        softmax_neon<false>,
        sigmoid_neon,
        nullptr,
        nullptr,
        nullptr,
        quantize_i8_neon,
        gemm_micro_i8_serial,
        nullptr,
    };
    unsigned long const hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    if (hwcap2 & HWCAP2_I8MM) table.gemm_micro_i8 = gemm_micro_i8_dot<true>;
    else if (hwcap & HWCAP_ASIMDDP) table.gemm_micro_i8 = gemm_micro_i8_dot<false>;
    if (hwcap2 & HWCAP2_BF16) {
        table.gemm_micro_pairs = gemm_micro_pairs_bfdot;
        table.interleave_bf16 = interleave_bf16_neon;
        table.convert_bf16 = convert_bf16_neon;
        table.dequantize_e4m3_pairs = dequantize_e4m3_pairs_neon;
    }
    return table;
}

} // namespace

// The NEON table, built once from the core's capabilities.
kernels_t const *kernels_neon() noexcept {
    static kernels_t const table = neon_table();
    return &table;
}

} // namespace uform::ram

#else

namespace uform::ram {
// No NEON on this architecture.
kernels_t const *kernels_neon() noexcept { return nullptr; }
} // namespace uform::ram

#endif
