// The AVX-512 classes (Skylake and every later x86-64 class): 6 x 64 GEMM micro-kernel and 16-lane elementwise maths.
#include "cpp/kernels/kernels.hpp"

#if defined(__x86_64__) || defined(_M_X64)

#include <immintrin.h>

#include <array>
#include <cmath>
#include <utility>

#include "cpp/kernels/avx512.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,prfchw"))),            \
                             apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,prfchw")
#endif

namespace uform::ram {
namespace {

using avx512::round_bf16_x16;
using avx512::tail_mask;

// e^x for 16 lanes (Cephes' polynomial, about 1 ulp) with the exponent placed by integer arithmetic: the rounding
// shift leaves n in the low bits of t. Inputs are clamped to [-87.3, 88.3], so results stay normal and finite
// (below -87.3 it answers about 1e-38 instead of a smaller number or zero).
inline __m512 exp_x16(__m512 x) noexcept {
    __m512 const shifter = _mm512_set1_ps(12582912.0f); // 1.5 * 2^23
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
    __m512 const t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), shifter);
    __m512 const n = _mm512_sub_ps(t, shifter);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i const exponent = _mm512_slli_epi32(_mm512_castps_si512(t), 23);
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), exponent));
}

// Packs rows of A into 6-row panels, rounded to BF16: 16 depths of all six rows at a time through L1.
void pack_a_skylake(float const *a, std::size_t lda, std::size_t rows, std::size_t depth, float *out) noexcept {
    constexpr std::size_t panel_rows = gemm_micro_rows_k;
    for (std::size_t row = 0; row < rows; row += panel_rows) {
        float *panel = out + row * depth;
        std::size_t const present = rows - row < panel_rows ? rows - row : panel_rows;
        for (std::size_t k = 0; k < depth; k += 16) {
            std::size_t const count = depth - k < 16 ? depth - k : 16;
            __mmask16 const mask = tail_mask(count);
            alignas(64) float block[panel_rows][16];
            for (std::size_t r = 0; r != panel_rows; ++r)
                _mm512_store_ps(block[r], r < present
                                              ? round_bf16_x16(_mm512_maskz_loadu_ps(mask, a + (row + r) * lda + k))
                                              : _mm512_setzero_ps());
            float *target = panel + k * panel_rows;
            for (std::size_t i = 0; i != count; ++i)
                for (std::size_t r = 0; r != panel_rows; ++r) target[i * panel_rows + r] = block[r][i];
        }
    }
}

// One micro tile of `rows_k` rows and `vectors_k` 16-column vectors, the last one masked by `last`. C's lines are
// fetched for writing first, so they are owned by the time the sums land; the depth runs in steps of 8, each step
// pulling its share of `prefetch` toward L2.
template <std::size_t rows_k, std::size_t vectors_k, bool full_k>
void gemm_micro_tile(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                     __mmask16 last, unsigned flags, gemm_prefetch_t prefetch) noexcept {
#pragma clang loop unroll(full)
    for (std::size_t r = 0; r != rows_k; ++r)
#pragma clang loop unroll(full)
        for (std::size_t v = 0; v != vectors_k; ++v)
            _mm_prefetch(reinterpret_cast<char const *>(c + r * ldc + v * 16), _MM_HINT_ET0);
    __m512 sums[rows_k][vectors_k];
#pragma clang loop unroll(full)
    for (std::size_t r = 0; r != rows_k; ++r)
#pragma clang loop unroll(full)
        for (std::size_t v = 0; v != vectors_k; ++v) sums[r][v] = _mm512_setzero_ps();
    auto const step = [&]() __attribute__((always_inline)) {
        __m512 b_vectors[vectors_k];
#pragma clang loop unroll(full)
        for (std::size_t v = 0; v != vectors_k; ++v)
            b_vectors[v] =
                (v + 1 == vectors_k && !full_k) ? _mm512_maskz_loadu_ps(last, b + v * 16) : _mm512_loadu_ps(b + v * 16);
#pragma clang loop unroll(full)
        for (std::size_t r = 0; r != rows_k; ++r) {
            __m512 const a_value = _mm512_set1_ps(a[r]);
#pragma clang loop unroll(full)
            for (std::size_t v = 0; v != vectors_k; ++v)
                sums[r][v] = _mm512_fmadd_ps(a_value, b_vectors[v], sums[r][v]);
        }
        a += gemm_micro_rows_k;
        b += ldb;
    };
    constexpr std::size_t step_depth = 8;
    std::size_t const steps = depth / step_depth;
    std::size_t const per_step = steps == 0 ? 0 : (prefetch.lines + steps - 1) / steps;
    char const *line = prefetch.data, *const lines_end = prefetch.data + prefetch.lines * gemm_prefetch_line_bytes_k;
    for (std::size_t s = 0; s != steps; ++s) {
        for (std::size_t i = 0; i != per_step && line != lines_end; ++i, line += gemm_prefetch_line_bytes_k)
            _mm_prefetch(line, _MM_HINT_T1);
#pragma clang loop unroll(full)
        for (std::size_t i = 0; i != step_depth; ++i) step();
    }
    for (std::size_t k = steps * step_depth; k != depth; ++k) step();
#pragma clang loop unroll(full)
    for (std::size_t r = 0; r != rows_k; ++r)
#pragma clang loop unroll(full)
        for (std::size_t v = 0; v != vectors_k; ++v) {
            __mmask16 const mask = (v + 1 == vectors_k && !full_k) ? last : static_cast<__mmask16>(0xFFFF);
            float *target = c + r * ldc + v * 16;
            __m512 value = sums[r][v];
            if (flags & gemm_accumulate_k) value = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, target), value);
            if (flags & gemm_round_output_k) value = round_bf16_x16(value);
            _mm512_mask_storeu_ps(target, mask, value);
        }
}

// Picks the instantiation for `vectors_k` column vectors, full or masked, and a row count.
template <std::size_t vectors_k, bool full_k>
void gemm_micro_vectors(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                        std::size_t rows, __mmask16 last, unsigned flags, gemm_prefetch_t prefetch) noexcept {
    switch (rows) {
    case 6: gemm_micro_tile<6, vectors_k, full_k>(depth, a, b, ldb, c, ldc, last, flags, prefetch); break;
    case 5: gemm_micro_tile<5, vectors_k, full_k>(depth, a, b, ldb, c, ldc, last, flags, prefetch); break;
    case 4: gemm_micro_tile<4, vectors_k, full_k>(depth, a, b, ldb, c, ldc, last, flags, prefetch); break;
    case 3: gemm_micro_tile<3, vectors_k, full_k>(depth, a, b, ldb, c, ldc, last, flags, prefetch); break;
    case 2: gemm_micro_tile<2, vectors_k, full_k>(depth, a, b, ldb, c, ldc, last, flags, prefetch); break;
    case 1: gemm_micro_tile<1, vectors_k, full_k>(depth, a, b, ldb, c, ldc, last, flags, prefetch); break;
    default: break;
    }
}

// C (+)= A * B over one micro tile of up to 6 x 64.
void gemm_micro_skylake(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                        std::size_t rows, std::size_t columns, unsigned flags, gemm_prefetch_t prefetch) noexcept {
    if (columns == 64) return gemm_micro_vectors<4, true>(depth, a, b, ldb, c, ldc, rows, 0xFFFF, flags, prefetch);
    std::size_t const vectors = (columns + 15) / 16;
    __mmask16 const last = tail_mask(columns - (vectors - 1) * 16);
    switch (vectors) {
    case 4: gemm_micro_vectors<4, false>(depth, a, b, ldb, c, ldc, rows, last, flags, prefetch); break;
    case 3: gemm_micro_vectors<3, false>(depth, a, b, ldb, c, ldc, rows, last, flags, prefetch); break;
    case 2: gemm_micro_vectors<2, false>(depth, a, b, ldb, c, ldc, rows, last, flags, prefetch); break;
    case 1: gemm_micro_vectors<1, false>(depth, a, b, ldb, c, ldc, rows, last, flags, prefetch); break;
    default: break;
    }
}

// Merges a finished row of products into C.
void merge_skylake(float const *tile, float *c, std::size_t count, unsigned flags) noexcept {
    for (std::size_t i = 0; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        __m512 value = _mm512_maskz_loadu_ps(mask, tile + i);
        if (flags & gemm_accumulate_k) value = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, c + i), value);
        if (flags & gemm_round_output_k) value = round_bf16_x16(value);
        _mm512_mask_storeu_ps(c + i, mask, value);
    }
}

// Rounds every value to BF16.
void round_bf16_skylake(float const *in, float *out, std::size_t count) noexcept {
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) _mm512_storeu_ps(out + i, round_bf16_x16(_mm512_loadu_ps(in + i)));
    if (i < count) {
        __mmask16 const mask = tail_mask(count - i);
        _mm512_mask_storeu_ps(out + i, mask, round_bf16_x16(_mm512_maskz_loadu_ps(mask, in + i)));
    }
}

// The sum of squares of `count` values, in 16 F32 lanes.
inline float sum_squares(float const *x, std::size_t count) noexcept {
    __m512 sum = _mm512_setzero_ps();
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        __m512 const value = _mm512_loadu_ps(x + i);
        sum = _mm512_fmadd_ps(value, value, sum);
    }
    if (i < count) {
        __m512 const value = _mm512_maskz_loadu_ps(tail_mask(count - i), x + i);
        sum = _mm512_fmadd_ps(value, value, sum);
    }
    return _mm512_reduce_add_ps(sum);
}

// RMSNorm of one row times the norm weight, optionally rounded for a following product.
void rms_norm_skylake(float const *x, float const *weight, std::size_t width, float eps, float *out,
                      bool round) noexcept {
    float const inverse = 1.0f / std::sqrt(sum_squares(x, width) / static_cast<float>(width) + eps);
    __m512 const factor = _mm512_set1_ps(inverse);
    for (std::size_t i = 0; i < width; i += 16) {
        __mmask16 const mask = tail_mask(width - i);
        __m512 value = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(mask, x + i), factor),
                                     _mm512_maskz_loadu_ps(mask, weight + i));
        if (round) value = round_bf16_x16(value);
        _mm512_mask_storeu_ps(out + i, mask, value);
    }
}

// Rotate-half RoPE of every head of one token, then BF16 rounding.
void rope_round_skylake(float *x, std::size_t heads, std::size_t head_dim, float const *cos,
                        float const *sin) noexcept {
    std::size_t const half = head_dim / 2;
    for (std::size_t h = 0; h != heads; ++h) {
        float *head = x + h * head_dim;
        for (std::size_t j = 0; j < half; j += 16) {
            __mmask16 const mask = tail_mask(half - j);
            __m512 const first = _mm512_maskz_loadu_ps(mask, head + j);
            __m512 const second = _mm512_maskz_loadu_ps(mask, head + j + half);
            __m512 const c = _mm512_maskz_loadu_ps(mask, cos + j), s = _mm512_maskz_loadu_ps(mask, sin + j);
            __m512 const out_first = _mm512_sub_ps(_mm512_mul_ps(first, c), _mm512_mul_ps(second, s));
            __m512 const out_second = _mm512_add_ps(_mm512_mul_ps(second, c), _mm512_mul_ps(first, s));
            _mm512_mask_storeu_ps(head + j, mask, round_bf16_x16(out_first));
            _mm512_mask_storeu_ps(head + j + half, mask, round_bf16_x16(out_second));
        }
    }
}

// Softmax of a row of at most 16 * `vectors_k` values held in registers: the last vector's missing lanes are -inf
// for the maximum and left out of the sum.
template <std::size_t vectors_k>
void softmax_round_short(float *row, std::size_t count, float scale) noexcept {
    __m512 const factor = _mm512_set1_ps(scale), lowest = _mm512_set1_ps(-INFINITY);
    __mmask16 const last = tail_mask(count - (vectors_k - 1) * 16);
    __m512 values[vectors_k];
#pragma clang loop unroll(full)
    for (std::size_t v = 0; v != vectors_k; ++v) {
        __mmask16 const mask = v + 1 == vectors_k ? last : static_cast<__mmask16>(0xFFFF);
        values[v] = _mm512_mask_mul_ps(lowest, mask, _mm512_maskz_loadu_ps(mask, row + v * 16), factor);
    }
    __m512 maximum = values[0];
#pragma clang loop unroll(full)
    for (std::size_t v = 1; v != vectors_k; ++v) maximum = _mm512_max_ps(maximum, values[v]);
    __m512 const shift = _mm512_set1_ps(_mm512_reduce_max_ps(maximum));
    __m512 sum = _mm512_setzero_ps();
#pragma clang loop unroll(full)
    for (std::size_t v = 0; v != vectors_k; ++v) {
        __mmask16 const mask = v + 1 == vectors_k ? last : static_cast<__mmask16>(0xFFFF);
        values[v] = _mm512_maskz_mov_ps(mask, exp_x16(_mm512_sub_ps(values[v], shift)));
        sum = _mm512_add_ps(sum, values[v]);
    }
    __m512 const inverse = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
#pragma clang loop unroll(full)
    for (std::size_t v = 0; v != vectors_k; ++v) {
        __mmask16 const mask = v + 1 == vectors_k ? last : static_cast<__mmask16>(0xFFFF);
        _mm512_mask_storeu_ps(row + v * 16, mask, round_bf16_x16(_mm512_mul_ps(values[v], inverse)));
    }
}

// `softmax_round_short<1>` to `<16>`, by vector count less one: rows up to 256 values.
constexpr auto softmax_round_short_k = []<std::size_t... v>(std::index_sequence<v...>) {
    return std::array<void (*)(float *, std::size_t, float) noexcept, sizeof...(v)>{&softmax_round_short<v + 1>...};
}(std::make_index_sequence<16>{});

// Softmax of a scaled row in F32 in three passes, the probabilities then rounded to BF16 when `round_k` is set.
template <bool round_k>
void softmax_skylake(float *row, std::size_t count, float scale) noexcept {
    if (count == 0) return;
    __m512 const factor = _mm512_set1_ps(scale);
    __m512 maximum = _mm512_set1_ps(-INFINITY);
    for (std::size_t i = 0; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        __m512 const value = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, row + i), factor);
        _mm512_mask_storeu_ps(row + i, mask, value);
        maximum = _mm512_mask_max_ps(maximum, mask, maximum, value);
    }
    __m512 const shift = _mm512_set1_ps(_mm512_reduce_max_ps(maximum));
    __m512 sum = _mm512_setzero_ps();
    for (std::size_t i = 0; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        __m512 const value = exp_x16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, row + i), shift));
        _mm512_mask_storeu_ps(row + i, mask, value);
        sum = _mm512_mask_add_ps(sum, mask, sum, value);
    }
    __m512 const inverse = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (std::size_t i = 0; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        __m512 const value = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, row + i), inverse);
        _mm512_mask_storeu_ps(row + i, mask, round_k ? round_bf16_x16(value) : value);
    }
}

// Softmax of a scaled row in F32, then BF16 rounding of the probabilities: rows up to 256 values in registers,
// longer ones in three passes.
void softmax_round_skylake(float *row, std::size_t count, float scale) noexcept {
    if (count == 0) return;
    if (std::size_t const vectors = (count + 15) / 16; vectors <= softmax_round_short_k.size())
        return softmax_round_short_k[vectors - 1](row, count, scale);
    softmax_skylake<true>(row, count, scale);
}

// The logistic function of every value, with an exact division.
void sigmoid_skylake(float const *in, float *out, std::size_t count) noexcept {
    __m512 const one = _mm512_set1_ps(1.0f);
    for (std::size_t i = 0; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        __m512 const x = _mm512_maskz_loadu_ps(mask, in + i);
        _mm512_mask_storeu_ps(out + i, mask,
                              _mm512_div_ps(one, _mm512_add_ps(one, exp_x16(_mm512_sub_ps(_mm512_setzero_ps(), x)))));
    }
}

// silu(gate) * up for 16 lanes, rounded to BF16. An exact division, as the reference's x / (1 + exp(-x)): a cheaper
// reciprocal flips more BF16 roundings.
inline __m512 silu_mul_round_x16(__m512 gate, __m512 up) noexcept {
    __m512 const silu =
        _mm512_div_ps(gate, _mm512_add_ps(_mm512_set1_ps(1.0f), exp_x16(_mm512_sub_ps(_mm512_setzero_ps(), gate))));
    return round_bf16_x16(_mm512_mul_ps(silu, up));
}

// SiLU of the gate times the up projection, rounded for the down projection: four independent vectors per step, so
// their long dependency chains overlap.
void silu_mul_round_skylake(float const *gate, float const *up, float *out, std::size_t count) noexcept {
    constexpr std::size_t unroll = 4;
    std::size_t i = 0;
    for (; i + 16 * unroll <= count; i += 16 * unroll) {
        __m512 results[unroll];
#pragma clang loop unroll(full)
        for (std::size_t v = 0; v != unroll; ++v)
            results[v] = silu_mul_round_x16(_mm512_loadu_ps(gate + i + v * 16), _mm512_loadu_ps(up + i + v * 16));
#pragma clang loop unroll(full)
        for (std::size_t v = 0; v != unroll; ++v) _mm512_storeu_ps(out + i + v * 16, results[v]);
    }
    for (; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        _mm512_mask_storeu_ps(
            out + i, mask,
            silu_mul_round_x16(_mm512_maskz_loadu_ps(mask, gate + i), _mm512_maskz_loadu_ps(mask, up + i)));
    }
}

// Adds a row into a running sum.
void add_skylake(float *sum, float const *row, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        _mm512_mask_storeu_ps(
            sum + i, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, sum + i), _mm512_maskz_loadu_ps(mask, row + i)));
    }
}

// Scales a row.
void scale_skylake(float *x, std::size_t count, float factor) noexcept {
    __m512 const scale = _mm512_set1_ps(factor);
    for (std::size_t i = 0; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        _mm512_mask_storeu_ps(x + i, mask, _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, x + i), scale));
    }
}

// Divides a row by its L2 norm, leaving a zero row zero.
void l2_normalize_skylake(float *x, std::size_t count) noexcept {
    float const sum = sum_squares(x, count);
    if (sum == 0) return;
    scale_skylake(x, count, 1.0f / std::sqrt(sum));
}

constexpr kernels_t skylake_k{
    uform_cpu_class_intel_skylake_k,
    pack_a_skylake,
    gemm_micro_skylake,
    merge_skylake,
    round_bf16_skylake,
    rms_norm_skylake,
    rope_round_skylake,
    softmax_round_skylake,
    silu_mul_round_skylake,
    add_skylake,
    scale_skylake,
    l2_normalize_skylake,
    softmax_skylake<false>,
    sigmoid_skylake,
    nullptr,
    nullptr,
    nullptr,
    quantize_i8_serial,
    gemm_micro_i8_serial,
    nullptr,
};

} // namespace

// The AVX-512 table.
kernels_t const *kernels_skylake() noexcept { return &skylake_k; }

} // namespace uform::ram

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

#else

namespace uform::ram {
// No AVX-512 on this architecture.
kernels_t const *kernels_skylake() noexcept { return nullptr; }
} // namespace uform::ram

#endif
