// The WebAssembly SIMD128 class: 6 x 8 GEMM micro-tiles across a 64-column panel, 4-lane elementwise maths, and the
// int8 products on `i32x4.dot_i16x8_s`. SIMD128 has neither FMA nor masked loads: products and sums are separate
// (every product of BF16 values is exact in F32, so the sums match the serial class's up to their order), and a
// partial vector goes through a small buffer.
#include "cpp/kernels/kernels.hpp"

#if defined(__wasm_simd128__)

#include <wasm_simd128.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace uform::ram {
namespace {

constexpr std::size_t lanes_k = 4;

// Loads `count` (<= 4) floats, zeros past them.
inline v128_t load_partial(float const *source, std::size_t count) noexcept {
    if (count >= lanes_k) return wasm_v128_load(source);
    float buffer[lanes_k] = {};
    std::memcpy(buffer, source, count * sizeof(float));
    return wasm_v128_load(buffer);
}

// Stores the first `count` (<= 4) lanes.
inline void store_partial(float *target, v128_t value, std::size_t count) noexcept {
    if (count >= lanes_k) return wasm_v128_store(target, value);
    float buffer[lanes_k];
    wasm_v128_store(buffer, value);
    std::memcpy(target, buffer, count * sizeof(float));
}

// Lanes left from `i` of `count`, at most 4.
inline std::size_t lanes_from(std::size_t i, std::size_t count) noexcept {
    return count - i < lanes_k ? count - i : lanes_k;
}

// Rounds 4 floats to BF16 (nearest even) in F32 form; NaN lanes become quiet NaNs of the same sign.
inline v128_t round_bf16_x4(v128_t value) noexcept {
    v128_t const lsb = wasm_v128_and(wasm_u32x4_shr(value, 16), wasm_i32x4_splat(1));
    v128_t const high = wasm_i32x4_splat(static_cast<int>(0xFFFF0000u));
    v128_t const rounded = wasm_v128_and(wasm_i32x4_add(value, wasm_i32x4_add(lsb, wasm_i32x4_splat(0x7FFF))), high);
    v128_t const quiet = wasm_v128_or(wasm_v128_and(value, high), wasm_i32x4_splat(0x00400000));
    v128_t const nan = wasm_f32x4_ne(value, value);
    return wasm_v128_bitselect(quiet, rounded, nan);
}

// e^x for 4 lanes (Cephes' polynomial, about 1 ulp), the Haswell class's: below -87.3 it is zero.
inline v128_t exp_x4(v128_t x) noexcept {
    v128_t const underflow = wasm_f32x4_lt(x, wasm_f32x4_splat(-87.3f));
    x = wasm_f32x4_min(wasm_f32x4_max(x, wasm_f32x4_splat(-87.3f)), wasm_f32x4_splat(88.7f));
    v128_t const n = wasm_f32x4_nearest(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)));
    v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
    r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
    v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(p, r), r), wasm_f32x4_add(r, wasm_f32x4_splat(1.0f)));
    v128_t const exponent = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n), wasm_i32x4_splat(127)), 23);
    return wasm_v128_andnot(wasm_f32x4_mul(p, exponent), underflow);
}

// Horizontal sum of 4 lanes.
inline float reduce_add(v128_t value) noexcept {
    v128_t const pairs = wasm_f32x4_add(value, wasm_i32x4_shuffle(value, value, 2, 3, 0, 1));
    return wasm_f32x4_extract_lane(wasm_f32x4_add(pairs, wasm_i32x4_shuffle(pairs, pairs, 1, 0, 3, 2)), 0);
}

// Horizontal maximum of 4 lanes.
inline float reduce_max(v128_t value) noexcept {
    v128_t const pairs = wasm_f32x4_max(value, wasm_i32x4_shuffle(value, value, 2, 3, 0, 1));
    return wasm_f32x4_extract_lane(wasm_f32x4_max(pairs, wasm_i32x4_shuffle(pairs, pairs, 1, 0, 3, 2)), 0);
}

// Packs rows of A into 6-row panels, rounded to BF16: 4 depths of all six rows at a time.
void pack_a_wasm(float const *a, std::size_t lda, std::size_t rows, std::size_t depth, float *out) noexcept {
    constexpr std::size_t panel_rows = gemm_micro_rows_k;
    for (std::size_t row = 0; row < rows; row += panel_rows) {
        float *panel = out + row * depth;
        std::size_t const present = rows - row < panel_rows ? rows - row : panel_rows;
        for (std::size_t k = 0; k < depth; k += lanes_k) {
            std::size_t const count = lanes_from(k, depth);
            alignas(16) float block[panel_rows][lanes_k];
            for (std::size_t r = 0; r != panel_rows; ++r)
                wasm_v128_store(block[r], r < present ? round_bf16_x4(load_partial(a + (row + r) * lda + k, count))
                                                      : wasm_f32x4_splat(0.0f));
            float *target = panel + k * panel_rows;
            for (std::size_t i = 0; i != count; ++i)
                for (std::size_t r = 0; r != panel_rows; ++r) target[i * panel_rows + r] = block[r][i];
        }
    }
}

// Adds C when accumulating, rounds when asked, and stores `count` (<= 4) lanes.
inline void finish_store(float *target, v128_t value, std::size_t count, unsigned flags) noexcept {
    if (flags & gemm_accumulate_k) value = wasm_f32x4_add(load_partial(target, count), value);
    if (flags & gemm_round_output_k) value = round_bf16_x4(value);
    store_partial(target, value, count);
}

// One 6-row (or fewer) by 8-column strip of C; B's lanes past `columns` are read as zeros.
template <std::size_t rows_k>
void gemm_micro_strip(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                      std::size_t columns, unsigned flags) noexcept {
    v128_t sums[rows_k][2];
#pragma clang loop unroll(full)
    for (std::size_t r = 0; r != rows_k; ++r) sums[r][0] = sums[r][1] = wasm_f32x4_splat(0.0f);
    std::size_t const low = columns < lanes_k ? columns : lanes_k, high = columns > lanes_k ? columns - lanes_k : 0;
    bool const full = columns >= 2 * lanes_k;
    for (std::size_t k = 0; k != depth; ++k) {
        v128_t const b_low = full ? wasm_v128_load(b) : load_partial(b, low);
        v128_t const b_high = full ? wasm_v128_load(b + lanes_k) : load_partial(b + lanes_k, high);
#pragma clang loop unroll(full)
        for (std::size_t r = 0; r != rows_k; ++r) {
            v128_t const a_value = wasm_v128_load32_splat(a + r);
            sums[r][0] = wasm_f32x4_add(sums[r][0], wasm_f32x4_mul(a_value, b_low));
            sums[r][1] = wasm_f32x4_add(sums[r][1], wasm_f32x4_mul(a_value, b_high));
        }
        a += gemm_micro_rows_k;
        b += ldb;
    }
#pragma clang loop unroll(full)
    for (std::size_t r = 0; r != rows_k; ++r) {
        finish_store(c + r * ldc, sums[r][0], low, flags);
        if (high != 0) finish_store(c + r * ldc + lanes_k, sums[r][1], high, flags);
    }
}

// C (+)= A * B over one micro tile of up to 6 x 64, as up to eight 8-column strips; no prefetch instruction exists.
void gemm_micro_wasm(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                     std::size_t rows, std::size_t columns, unsigned flags, gemm_prefetch_t) noexcept {
    constexpr std::size_t strip_k = 2 * lanes_k;
    for (std::size_t column = 0; column < columns; column += strip_k) {
        std::size_t const strip = columns - column < strip_k ? columns - column : strip_k;
        switch (rows) {
        case 6: gemm_micro_strip<6>(depth, a, b + column, ldb, c + column, ldc, strip, flags); break;
        case 5: gemm_micro_strip<5>(depth, a, b + column, ldb, c + column, ldc, strip, flags); break;
        case 4: gemm_micro_strip<4>(depth, a, b + column, ldb, c + column, ldc, strip, flags); break;
        case 3: gemm_micro_strip<3>(depth, a, b + column, ldb, c + column, ldc, strip, flags); break;
        case 2: gemm_micro_strip<2>(depth, a, b + column, ldb, c + column, ldc, strip, flags); break;
        case 1: gemm_micro_strip<1>(depth, a, b + column, ldb, c + column, ldc, strip, flags); break;
        default: break;
        }
    }
}

// Merges a finished row of products into C.
void merge_wasm(float const *tile, float *c, std::size_t count, unsigned flags) noexcept {
    for (std::size_t i = 0; i < count; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, count);
        finish_store(c + i, load_partial(tile + i, lanes), lanes, flags);
    }
}

// Rounds every value to BF16.
void round_bf16_wasm(float const *in, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, count);
        store_partial(out + i, round_bf16_x4(load_partial(in + i, lanes)), lanes);
    }
}

// The sum of squares of `count` values, in 4 F32 lanes.
inline float sum_squares(float const *x, std::size_t count) noexcept {
    v128_t sum = wasm_f32x4_splat(0.0f);
    for (std::size_t i = 0; i < count; i += lanes_k) {
        v128_t const value = load_partial(x + i, lanes_from(i, count));
        sum = wasm_f32x4_add(sum, wasm_f32x4_mul(value, value));
    }
    return reduce_add(sum);
}

// RMSNorm of one row times the norm weight, optionally rounded for a following product.
void rms_norm_wasm(float const *x, float const *weight, std::size_t width, float eps, float *out, bool round) noexcept {
    v128_t const factor = wasm_f32x4_splat(1.0f / std::sqrt(sum_squares(x, width) / static_cast<float>(width) + eps));
    for (std::size_t i = 0; i < width; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, width);
        v128_t const value =
            wasm_f32x4_mul(wasm_f32x4_mul(load_partial(x + i, lanes), factor), load_partial(weight + i, lanes));
        store_partial(out + i, round ? round_bf16_x4(value) : value, lanes);
    }
}

// Rotate-half RoPE of every head of one token, then BF16 rounding.
void rope_round_wasm(float *x, std::size_t heads, std::size_t head_dim, float const *cos, float const *sin) noexcept {
    std::size_t const half = head_dim / 2;
    for (std::size_t h = 0; h != heads; ++h) {
        float *head = x + h * head_dim;
        for (std::size_t j = 0; j < half; j += lanes_k) {
            std::size_t const lanes = lanes_from(j, half);
            v128_t const first = load_partial(head + j, lanes), second = load_partial(head + j + half, lanes);
            v128_t const c = load_partial(cos + j, lanes), s = load_partial(sin + j, lanes);
            v128_t const out_first = wasm_f32x4_sub(wasm_f32x4_mul(first, c), wasm_f32x4_mul(second, s));
            v128_t const out_second = wasm_f32x4_add(wasm_f32x4_mul(second, c), wasm_f32x4_mul(first, s));
            store_partial(head + j, round_bf16_x4(out_first), lanes);
            store_partial(head + j + half, round_bf16_x4(out_second), lanes);
        }
    }
}

// Scales a row in place and answers its maximum.
inline float scale_and_max(float *row, std::size_t count, float scale) noexcept {
    v128_t const factor = wasm_f32x4_splat(scale), lowest = wasm_f32x4_splat(-INFINITY);
    v128_t maximum = lowest;
    for (std::size_t i = 0; i < count; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, count);
        v128_t value = wasm_f32x4_mul(load_partial(row + i, lanes), factor);
        store_partial(row + i, value, lanes);
        if (lanes < lanes_k) {
            v128_t const valid = wasm_u32x4_lt(wasm_u32x4_make(0, 1, 2, 3), wasm_u32x4_splat(std::uint32_t(lanes)));
            value = wasm_v128_bitselect(value, lowest, valid);
        }
        maximum = wasm_f32x4_max(maximum, value);
    }
    return reduce_max(maximum);
}

// Softmax of a scaled row in F32, the probabilities then rounded to BF16 when `round_k` is set.
template <bool round_k>
void softmax_wasm(float *row, std::size_t count, float scale) noexcept {
    if (count == 0) return;
    v128_t const shift = wasm_f32x4_splat(scale_and_max(row, count, scale));
    v128_t sum = wasm_f32x4_splat(0.0f);
    for (std::size_t i = 0; i < count; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, count);
        v128_t value = exp_x4(wasm_f32x4_sub(load_partial(row + i, lanes), shift));
        store_partial(row + i, value, lanes);
        if (lanes < lanes_k) { // the zeros past the row are e^(0 - shift), not zero
            v128_t const valid = wasm_u32x4_lt(wasm_u32x4_make(0, 1, 2, 3), wasm_u32x4_splat(std::uint32_t(lanes)));
            value = wasm_v128_and(value, valid);
        }
        sum = wasm_f32x4_add(sum, value);
    }
    v128_t const inverse = wasm_f32x4_splat(1.0f / reduce_add(sum));
    for (std::size_t i = 0; i < count; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, count);
        v128_t const value = wasm_f32x4_mul(load_partial(row + i, lanes), inverse);
        store_partial(row + i, round_k ? round_bf16_x4(value) : value, lanes);
    }
}

// The logistic function of every value, with an exact division.
void sigmoid_wasm(float const *in, float *out, std::size_t count) noexcept {
    v128_t const one = wasm_f32x4_splat(1.0f);
    for (std::size_t i = 0; i < count; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, count);
        v128_t const x = load_partial(in + i, lanes);
        store_partial(out + i, wasm_f32x4_div(one, wasm_f32x4_add(one, exp_x4(wasm_f32x4_neg(x)))), lanes);
    }
}

// SiLU of the gate times the up projection, rounded for the down projection; an exact division, as the reference's.
void silu_mul_round_wasm(float const *gate, float const *up, float *out, std::size_t count) noexcept {
    v128_t const one = wasm_f32x4_splat(1.0f);
    for (std::size_t i = 0; i < count; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, count);
        v128_t const g = load_partial(gate + i, lanes);
        v128_t const silu = wasm_f32x4_div(g, wasm_f32x4_add(one, exp_x4(wasm_f32x4_neg(g))));
        store_partial(out + i, round_bf16_x4(wasm_f32x4_mul(silu, load_partial(up + i, lanes))), lanes);
    }
}

// Adds a row into a running sum.
void add_wasm(float *sum, float const *row, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, count);
        store_partial(sum + i, wasm_f32x4_add(load_partial(sum + i, lanes), load_partial(row + i, lanes)), lanes);
    }
}

// Scales a row.
void scale_wasm(float *x, std::size_t count, float factor) noexcept {
    v128_t const scale = wasm_f32x4_splat(factor);
    for (std::size_t i = 0; i < count; i += lanes_k) {
        std::size_t const lanes = lanes_from(i, count);
        store_partial(x + i, wasm_f32x4_mul(load_partial(x + i, lanes), scale), lanes);
    }
}

// Divides a row by its L2 norm, leaving a zero row zero.
void l2_normalize_wasm(float *x, std::size_t count) noexcept {
    float const sum = sum_squares(x, count);
    if (sum == 0) return;
    scale_wasm(x, count, 1.0f / std::sqrt(sum));
}

// The exact int32 sums of one row's block of groups `[g0, g1)` against 4 columns from `n`: each group's 4 unsigned
// bytes of A against the 4 signed bytes of each column, widened to 16 bits and multiplied in pairs.
inline v128_t block_sums_i8(std::uint8_t const *a_row, std::int8_t const *b, std::size_t n, std::size_t g0,
                            std::size_t g1) noexcept {
    v128_t low = wasm_i32x4_splat(0), high = wasm_i32x4_splat(0); // columns n, n + 1 and n + 2, n + 3, in pairs
    for (std::size_t g = g0; g != g1; ++g) {
        v128_t const a16 = wasm_u16x8_extend_low_u8x16(wasm_v128_load32_splat(a_row + 4 * g));
        v128_t const bytes = wasm_v128_load(b + (g * gemm_panel_columns_k + n) * 4);
        low = wasm_i32x4_add(low, wasm_i32x4_dot_i16x8(a16, wasm_i16x8_extend_low_i8x16(bytes)));
        high = wasm_i32x4_add(high, wasm_i32x4_dot_i16x8(a16, wasm_i16x8_extend_high_i8x16(bytes)));
    }
    return wasm_i32x4_add(wasm_i32x4_shuffle(low, high, 0, 2, 4, 6), wasm_i32x4_shuffle(low, high, 1, 3, 5, 7));
}

// Int8 blocks of 128 depths, 4 columns at a time: each block's exact sum plus its compensation, times the column's
// scale, times the row block's scale, added in depth order, as the serial class does; then C and rounding.
void gemm_micro_i8_wasm(std::size_t depth, std::uint8_t const *a, std::size_t lda, float const *a_scales,
                        std::size_t a_blocks, std::int8_t const *b, std::int32_t const *compensation,
                        float const *b_scales, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                        unsigned flags) noexcept {
    constexpr std::size_t block_groups = i8_block_k / 4;
    std::size_t const groups = (depth + 3) / 4;
    for (std::size_t r = 0; r != rows; ++r)
        for (std::size_t n = 0; n < columns; n += lanes_k) { // B's panel holds 64 columns, zero past `columns`
            v128_t sums = wasm_f32x4_splat(0.0f);
            for (std::size_t g0 = 0, j = 0; g0 < groups; g0 += block_groups, ++j) {
                std::size_t const g1 = groups - g0 < block_groups ? groups : g0 + block_groups;
                v128_t const exact = wasm_i32x4_add(block_sums_i8(a + r * lda, b, n, g0, g1),
                                                    wasm_v128_load(compensation + j * gemm_panel_columns_k + n));
                v128_t const weighted = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(exact),
                                                       wasm_v128_load(b_scales + j * gemm_panel_columns_k + n));
                sums = wasm_f32x4_add(sums, wasm_f32x4_mul(weighted, wasm_f32x4_splat(a_scales[r * a_blocks + j])));
            }
            finish_store(c + r * ldc + n, sums, lanes_from(n, columns), flags);
        }
}

constexpr kernels_t wasm_simd128_k{
    uform_cpu_class_wasm_simd128_k,
    pack_a_wasm,
    gemm_micro_wasm,
    merge_wasm,
    round_bf16_wasm,
    rms_norm_wasm,
    rope_round_wasm,
    softmax_wasm<true>,
    silu_mul_round_wasm,
    add_wasm,
    scale_wasm,
    l2_normalize_wasm,
    softmax_wasm<false>,
    sigmoid_wasm,
    nullptr,
    nullptr,
    nullptr,
    quantize_i8_serial,
    gemm_micro_i8_wasm,
    nullptr,
};

} // namespace

// The SIMD128 table.
kernels_t const *kernels_wasm_simd128() noexcept { return &wasm_simd128_k; }

} // namespace uform::ram

#else

namespace uform::ram {
// No SIMD128 in this build.
kernels_t const *kernels_wasm_simd128() noexcept { return nullptr; }
} // namespace uform::ram

#endif
