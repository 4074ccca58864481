// The AVX2 class (Haswell): 6 x 16 GEMM micro-tiles across a 64-column panel and 8-lane elementwise maths.
#include "cpp/kernels/kernels.hpp"

#if defined(__x86_64__) || defined(_M_X64)

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace uform::ram {
namespace {

// A lane mask for the first `count` (<= 8) of 8 lanes, for maskload/maskstore.
inline __m256i tail_mask(std::size_t count) noexcept {
    __m256i const lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lanes);
}

// Loads `count` (<= 8) floats, zeros past them.
inline __m256 load_partial(float const *source, std::size_t count) noexcept {
    return count >= 8 ? _mm256_loadu_ps(source) : _mm256_maskload_ps(source, tail_mask(count));
}

// Stores the first `count` (<= 8) lanes.
inline void store_partial(float *target, __m256 value, std::size_t count) noexcept {
    if (count >= 8) _mm256_storeu_ps(target, value);
    else _mm256_maskstore_ps(target, tail_mask(count), value);
}

// Rounds 8 floats to BF16 (nearest even) in F32 form; NaN lanes become quiet NaNs.
inline __m256 round_bf16_x8(__m256 value) noexcept {
    __m256i const bits = _mm256_castps_si256(value);
    __m256i const lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    __m256i const high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    __m256i const rounded =
        _mm256_and_si256(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), high);
    __m256i const quiet = _mm256_or_si256(_mm256_and_si256(bits, high), _mm256_set1_epi32(0x00400000));
    __m256 const nan = _mm256_cmp_ps(value, value, _CMP_UNORD_Q);
    return _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet), nan);
}

// e^x for 8 lanes (Cephes' polynomial, about 1 ulp); below -87.3 it is zero, above 88.7 infinity-free.
inline __m256 exp_x8(__m256 x) noexcept {
    __m256 const underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
    __m256 const n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i const exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 const result = _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
    return _mm256_andnot_ps(underflow, result);
}

// Horizontal sum of 8 lanes.
inline float reduce_add(__m256 value) noexcept {
    __m128 sum = _mm_add_ps(_mm256_castps256_ps128(value), _mm256_extractf128_ps(value, 1));
    sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
    sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
    return _mm_cvtss_f32(sum);
}

// Horizontal maximum of 8 lanes.
inline float reduce_max(__m256 value) noexcept {
    __m128 maximum = _mm_max_ps(_mm256_castps256_ps128(value), _mm256_extractf128_ps(value, 1));
    maximum = _mm_max_ps(maximum, _mm_movehl_ps(maximum, maximum));
    maximum = _mm_max_ss(maximum, _mm_movehdup_ps(maximum));
    return _mm_cvtss_f32(maximum);
}

// Packs rows of A into 6-row panels, rounded to BF16: 8 depths of all six rows at a time through L1.
void pack_a_haswell(float const *a, std::size_t lda, std::size_t rows, std::size_t depth, float *out) noexcept {
    constexpr std::size_t panel_rows = gemm_micro_rows_k;
    for (std::size_t row = 0; row < rows; row += panel_rows) {
        float *panel = out + row * depth;
        std::size_t const present = rows - row < panel_rows ? rows - row : panel_rows;
        for (std::size_t k = 0; k < depth; k += 8) {
            std::size_t const count = depth - k < 8 ? depth - k : 8;
            alignas(32) float block[panel_rows][8];
            for (std::size_t r = 0; r != panel_rows; ++r)
                _mm256_store_ps(block[r], r < present ? round_bf16_x8(load_partial(a + (row + r) * lda + k, count))
                                                      : _mm256_setzero_ps());
            float *target = panel + k * panel_rows;
            for (std::size_t i = 0; i != count; ++i)
                for (std::size_t r = 0; r != panel_rows; ++r) target[i * panel_rows + r] = block[r][i];
        }
    }
}

// One 6-row (or fewer) by 16-column strip of C, the second 8-lane half masked to `columns - 8` when partial.
template <std::size_t rows_k>
void gemm_micro_strip(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                      std::size_t columns, unsigned flags) noexcept {
    __m256 sums[rows_k][2];
#pragma clang loop unroll(full)
    for (std::size_t r = 0; r != rows_k; ++r) sums[r][0] = sums[r][1] = _mm256_setzero_ps();
    bool const full = columns >= 16;
    __m256i const mask_low = tail_mask(columns < 8 ? columns : 8);
    __m256i const mask_high = tail_mask(columns > 8 ? columns - 8 : 0);
    for (std::size_t k = 0; k != depth; ++k) {
        __m256 const b_low = full ? _mm256_loadu_ps(b) : _mm256_maskload_ps(b, mask_low);
        __m256 const b_high = full ? _mm256_loadu_ps(b + 8) : _mm256_maskload_ps(b + 8, mask_high);
#pragma clang loop unroll(full)
        for (std::size_t r = 0; r != rows_k; ++r) {
            __m256 const a_value = _mm256_broadcast_ss(a + r);
            sums[r][0] = _mm256_fmadd_ps(a_value, b_low, sums[r][0]);
            sums[r][1] = _mm256_fmadd_ps(a_value, b_high, sums[r][1]);
        }
        a += gemm_micro_rows_k;
        b += ldb;
    }
#pragma clang loop unroll(full)
    for (std::size_t r = 0; r != rows_k; ++r)
        for (std::size_t half = 0; half != 2; ++half) {
            std::size_t const lanes = half == 0 ? (columns < 8 ? columns : 8) : (columns > 8 ? columns - 8 : 0);
            if (lanes == 0) continue;
            float *target = c + r * ldc + half * 8;
            __m256 value = sums[r][half];
            if (flags & gemm_accumulate_k) value = _mm256_add_ps(load_partial(target, lanes), value);
            if (flags & gemm_round_output_k) value = round_bf16_x8(value);
            store_partial(target, value, lanes);
        }
}

// C (+)= A * B over one micro tile of up to 6 x 64, as up to four 16-column strips.
void gemm_micro_haswell(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                        std::size_t rows, std::size_t columns, unsigned flags, gemm_prefetch_t prefetch) noexcept {
    for (std::size_t line = 0; line != prefetch.lines; ++line)
        _mm_prefetch(prefetch.data + line * gemm_prefetch_line_bytes_k, _MM_HINT_T1);
    for (std::size_t column = 0; column < columns; column += 16) {
        std::size_t const strip = columns - column < 16 ? columns - column : 16;
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
void merge_haswell(float const *tile, float *c, std::size_t count, unsigned flags) noexcept {
    for (std::size_t i = 0; i < count; i += 8) {
        std::size_t const lanes = count - i < 8 ? count - i : 8;
        __m256 value = load_partial(tile + i, lanes);
        if (flags & gemm_accumulate_k) value = _mm256_add_ps(load_partial(c + i, lanes), value);
        if (flags & gemm_round_output_k) value = round_bf16_x8(value);
        store_partial(c + i, value, lanes);
    }
}

// Rounds every value to BF16.
void round_bf16_haswell(float const *in, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += 8) {
        std::size_t const lanes = count - i < 8 ? count - i : 8;
        store_partial(out + i, round_bf16_x8(load_partial(in + i, lanes)), lanes);
    }
}

// The sum of squares of `count` values, in 8 F32 lanes.
inline float sum_squares(float const *x, std::size_t count) noexcept {
    __m256 sum = _mm256_setzero_ps();
    for (std::size_t i = 0; i < count; i += 8) {
        __m256 const value = load_partial(x + i, count - i < 8 ? count - i : 8);
        sum = _mm256_fmadd_ps(value, value, sum);
    }
    return reduce_add(sum);
}

// RMSNorm of one row times the norm weight, optionally rounded for a following product.
void rms_norm_haswell(float const *x, float const *weight, std::size_t width, float eps, float *out,
                      bool round) noexcept {
    __m256 const factor = _mm256_set1_ps(1.0f / std::sqrt(sum_squares(x, width) / static_cast<float>(width) + eps));
    for (std::size_t i = 0; i < width; i += 8) {
        std::size_t const lanes = width - i < 8 ? width - i : 8;
        __m256 value =
            _mm256_mul_ps(_mm256_mul_ps(load_partial(x + i, lanes), factor), load_partial(weight + i, lanes));
        store_partial(out + i, round ? round_bf16_x8(value) : value, lanes);
    }
}

// Rotate-half RoPE of every head of one token, then BF16 rounding.
void rope_round_haswell(float *x, std::size_t heads, std::size_t head_dim, float const *cos,
                        float const *sin) noexcept {
    std::size_t const half = head_dim / 2;
    for (std::size_t h = 0; h != heads; ++h) {
        float *head = x + h * head_dim;
        for (std::size_t j = 0; j < half; j += 8) {
            std::size_t const lanes = half - j < 8 ? half - j : 8;
            __m256 const first = load_partial(head + j, lanes), second = load_partial(head + j + half, lanes);
            __m256 const c = load_partial(cos + j, lanes), s = load_partial(sin + j, lanes);
            __m256 const out_first = _mm256_sub_ps(_mm256_mul_ps(first, c), _mm256_mul_ps(second, s));
            __m256 const out_second = _mm256_add_ps(_mm256_mul_ps(second, c), _mm256_mul_ps(first, s));
            store_partial(head + j, round_bf16_x8(out_first), lanes);
            store_partial(head + j + half, round_bf16_x8(out_second), lanes);
        }
    }
}

// Softmax of a scaled row in F32, the probabilities then rounded to BF16 when `round_k` is set.
template <bool round_k>
void softmax_haswell(float *row, std::size_t count, float scale) noexcept {
    if (count == 0) return;
    __m256 const factor = _mm256_set1_ps(scale);
    __m256 maximum = _mm256_set1_ps(-INFINITY);
    for (std::size_t i = 0; i < count; i += 8) {
        std::size_t const lanes = count - i < 8 ? count - i : 8;
        __m256 const value = _mm256_mul_ps(load_partial(row + i, lanes), factor);
        store_partial(row + i, value, lanes);
        __m256 const valid = _mm256_castsi256_ps(tail_mask(lanes));
        maximum = _mm256_max_ps(maximum, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), value, valid));
    }
    __m256 const shift = _mm256_set1_ps(reduce_max(maximum));
    __m256 sum = _mm256_setzero_ps();
    for (std::size_t i = 0; i < count; i += 8) {
        std::size_t const lanes = count - i < 8 ? count - i : 8;
        __m256 const value = exp_x8(_mm256_sub_ps(load_partial(row + i, lanes), shift));
        store_partial(row + i, value, lanes);
        sum = _mm256_add_ps(sum, _mm256_and_ps(value, _mm256_castsi256_ps(tail_mask(lanes))));
    }
    __m256 const inverse = _mm256_set1_ps(1.0f / reduce_add(sum));
    for (std::size_t i = 0; i < count; i += 8) {
        std::size_t const lanes = count - i < 8 ? count - i : 8;
        __m256 const value = _mm256_mul_ps(load_partial(row + i, lanes), inverse);
        store_partial(row + i, round_k ? round_bf16_x8(value) : value, lanes);
    }
}

// The logistic function of every value, with an exact division.
void sigmoid_haswell(float const *in, float *out, std::size_t count) noexcept {
    __m256 const one = _mm256_set1_ps(1.0f);
    for (std::size_t i = 0; i < count; i += 8) {
        std::size_t const lanes = count - i < 8 ? count - i : 8;
        __m256 const x = load_partial(in + i, lanes);
        store_partial(out + i, _mm256_div_ps(one, _mm256_add_ps(one, exp_x8(_mm256_sub_ps(_mm256_setzero_ps(), x)))),
                      lanes);
    }
}

// SiLU of the gate times the up projection, rounded for the down projection.
void silu_mul_round_haswell(float const *gate, float const *up, float *out, std::size_t count) noexcept {
    __m256 const one = _mm256_set1_ps(1.0f);
    for (std::size_t i = 0; i < count; i += 8) {
        std::size_t const lanes = count - i < 8 ? count - i : 8;
        __m256 const g = load_partial(gate + i, lanes);
        // An exact division, as the reference's x / (1 + exp(-x)): a cheaper reciprocal flips more BF16 roundings.
        __m256 const silu = _mm256_div_ps(g, _mm256_add_ps(one, exp_x8(_mm256_sub_ps(_mm256_setzero_ps(), g))));
        store_partial(out + i, round_bf16_x8(_mm256_mul_ps(silu, load_partial(up + i, lanes))), lanes);
    }
}

// Adds a row into a running sum.
void add_haswell(float *sum, float const *row, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += 8) {
        std::size_t const lanes = count - i < 8 ? count - i : 8;
        store_partial(sum + i, _mm256_add_ps(load_partial(sum + i, lanes), load_partial(row + i, lanes)), lanes);
    }
}

// Scales a row.
void scale_haswell(float *x, std::size_t count, float factor) noexcept {
    __m256 const scale = _mm256_set1_ps(factor);
    for (std::size_t i = 0; i < count; i += 8) {
        std::size_t const lanes = count - i < 8 ? count - i : 8;
        store_partial(x + i, _mm256_mul_ps(load_partial(x + i, lanes), scale), lanes);
    }
}

// Divides a row by its L2 norm, leaving a zero row zero.
void l2_normalize_haswell(float *x, std::size_t count) noexcept {
    float const sum = sum_squares(x, count);
    if (sum == 0) return;
    scale_haswell(x, count, 1.0f / std::sqrt(sum));
}

constexpr kernels_t haswell_k{
    uform_cpu_class_intel_haswell_k,
    pack_a_haswell,
    gemm_micro_haswell,
    merge_haswell,
    round_bf16_haswell,
    rms_norm_haswell,
    rope_round_haswell,
    softmax_haswell<true>,
    silu_mul_round_haswell,
    add_haswell,
    scale_haswell,
    l2_normalize_haswell,
    softmax_haswell<false>,
    sigmoid_haswell,
    nullptr,
    nullptr,
    nullptr,
    quantize_i8_serial,
    gemm_micro_i8_serial,
    nullptr,
};

} // namespace

// The AVX2 table.
kernels_t const *kernels_haswell() noexcept { return &haswell_k; }

} // namespace uform::ram

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

#else

namespace uform::ram {
// No AVX2 on this architecture.
kernels_t const *kernels_haswell() noexcept { return nullptr; }
} // namespace uform::ram

#endif
