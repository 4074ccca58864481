// The AVX-512 VNNI classes (Intel Ice Lake, Sapphire Rapids; Genoa and Turin build on it): Skylake's kernels plus the
// int8 products of `Scalar::I8` models, a 6 x 64 micro-kernel on `vpdpbusd` (unsigned activation bytes times signed
// weight bytes, four products a lane summed exactly into int32) and the row quantizer (a scale per 128 depths).
#include "cpp/kernels/kernels.hpp"

#if defined(__x86_64__) || defined(_M_X64)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "cpp/kernels/avx512.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"))),        \
                             apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")
#endif

namespace uform::ram {
namespace {

using avx512::round_bf16_x16;
using avx512::tail_mask;

// Each block's absolute maximum and the row's finiteness, then `cvtps2dq` (nearest even under the default MXCSR, as
// `lrint`) of every value times 127 / its block's maximum.
void quantize_i8_icelake(float const *x, std::size_t depth, std::size_t padded, std::uint8_t *out,
                         float *scales) noexcept {
    constexpr std::size_t block = i8_block_k;
    std::size_t const blocks = i8_blocks(depth);
    __mmask16 bad = 0;
    __m512 const largest = _mm512_set1_ps(std::numeric_limits<float>::max());
    for (std::size_t j = 0; j != blocks; ++j) {
        std::size_t const end = std::min(depth, j * block + block);
        __m512 amax = _mm512_setzero_ps();
        for (std::size_t k = j * block; k < end; k += 16) {
            __m512 const magnitude = _mm512_abs_ps(_mm512_maskz_loadu_ps(tail_mask(end - k), x + k));
            bad |= _mm512_cmp_ps_mask(magnitude, largest, _CMP_NLE_UQ);
            amax = _mm512_max_ps(amax, magnitude);
        }
        scales[j] = _mm512_reduce_max_ps(amax);
    }
    if (bad != 0) {
        std::memset(out, 128, padded);
        for (std::size_t j = 0; j != blocks; ++j) scales[j] = std::numeric_limits<float>::quiet_NaN();
        return;
    }
    __m512i const low = _mm512_set1_epi32(-127), high = _mm512_set1_epi32(127), offset = _mm512_set1_epi32(128);
    for (std::size_t j = 0; j != blocks; ++j) {
        std::size_t const begin = j * block, end = std::min(depth, begin + block);
        float const peak = scales[j];
        if (peak == 0) {
            std::memset(out + begin, 128, end - begin);
            continue;
        }
        __m512 const inverse = _mm512_set1_ps(127.0f / peak);
        for (std::size_t k = begin; k < end; k += 16) {
            __mmask16 const mask = tail_mask(end - k);
            __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(mask, x + k), inverse));
            q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, low), high), offset);
            // The register form of `vpmovdb` and a plain store: its masked store form is microcoded on AMD's cores.
            __m128i const bytes = _mm512_cvtepi32_epi8(q);
            if (end - k >= 16) _mm_storeu_si128(reinterpret_cast<__m128i *>(out + k), bytes);
            else _mm_mask_storeu_epi8(out + k, mask, bytes);
        }
        scales[j] = peak / 127.0f;
    }
    std::memset(out + depth, 128, padded - depth);
}

// One micro tile of `rows_k` rows by 64 columns, as two halves of 32: per block of 128 depths, 2 x `rows_k` int32
// accumulators on `vpdpbusd`, each block's sum scaled into 2 x `rows_k` F32 sums, all of them in registers.
template <std::size_t rows_k>
void i8_tile(std::size_t depth, std::uint8_t const *a, std::size_t lda, float const *a_scales, std::size_t a_blocks,
             std::int8_t const *b, std::int32_t const *compensation, float const *b_scales, float *c, std::size_t ldc,
             std::size_t columns, unsigned flags) noexcept {
    constexpr std::size_t block_groups = i8_block_k / 4; // a block's depths in groups of 4
    std::size_t const groups = (depth + 3) / 4;
    for (std::size_t half = 0; half * 32 < columns; ++half) {
        __m512 sums[rows_k][2];
#pragma clang loop unroll(full)
        for (std::size_t r = 0; r != rows_k; ++r) sums[r][0] = sums[r][1] = _mm512_setzero_ps();
        for (std::size_t g0 = 0, j = 0; g0 < groups; g0 += block_groups, ++j) {
            std::size_t const g1 = groups - g0 < block_groups ? groups : g0 + block_groups;
            // The sums start from the compensation, so they end as the signed activations' sums.
            __m512i const start0 = _mm512_loadu_si512(compensation + j * 64 + half * 32);
            __m512i const start1 = _mm512_loadu_si512(compensation + j * 64 + half * 32 + 16);
            __m512i acc[rows_k][2];
#pragma clang loop unroll(full)
            for (std::size_t r = 0; r != rows_k; ++r) acc[r][0] = start0, acc[r][1] = start1;
            std::int8_t const *b_group = b + (g0 * 64 + half * 32) * 4;
            for (std::size_t g = g0; g != g1; ++g, b_group += 256) {
                __m512i const b0 = _mm512_loadu_si512(b_group), b1 = _mm512_loadu_si512(b_group + 64);
#pragma clang loop unroll(full)
                for (std::size_t r = 0; r != rows_k; ++r) {
                    std::int32_t word;
                    std::memcpy(&word, a + r * lda + 4 * g, 4);
                    __m512i const a_value = _mm512_set1_epi32(word);
                    acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], a_value, b0);
                    acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], a_value, b1);
                }
            }
            // Times the columns' scales, then the row block's: the serial kernel's two products in its order.
            std::size_t const at = j * 64 + half * 32;
            __m512 const column_scales0 = _mm512_loadu_ps(b_scales + at);
            __m512 const column_scales1 = _mm512_loadu_ps(b_scales + at + 16);
#pragma clang loop unroll(full)
            for (std::size_t r = 0; r != rows_k; ++r) {
                __m512 const row_scale = _mm512_set1_ps(a_scales[r * a_blocks + j]);
                __m512 const block0 =
                    _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][0]), column_scales0), row_scale);
                __m512 const block1 =
                    _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][1]), column_scales1), row_scale);
                sums[r][0] = _mm512_add_ps(sums[r][0], block0);
                sums[r][1] = _mm512_add_ps(sums[r][1], block1);
            }
        }
#pragma clang loop unroll(full)
        for (std::size_t r = 0; r != rows_k; ++r)
#pragma clang loop unroll(full)
            for (std::size_t v = 0; v != 2; ++v) {
                std::size_t const column = half * 32 + v * 16;
                if (column >= columns) break;
                __mmask16 const mask = tail_mask(columns - column);
                float *target = c + r * ldc + column;
                __m512 value = sums[r][v];
                if (flags & gemm_accumulate_k) value = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, target), value);
                if (flags & gemm_round_output_k) value = round_bf16_x16(value);
                _mm512_mask_storeu_ps(target, mask, value);
            }
    }
}

// C (+)= A * B^T over one micro tile of up to 6 x 64 in int8 blocks.
void gemm_micro_i8_icelake(std::size_t depth, std::uint8_t const *a, std::size_t lda, float const *a_scales,
                           std::size_t a_blocks, std::int8_t const *b, std::int32_t const *compensation,
                           float const *b_scales, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                           unsigned flags) noexcept {
    switch (rows) {
    case 6: i8_tile<6>(depth, a, lda, a_scales, a_blocks, b, compensation, b_scales, c, ldc, columns, flags); break;
    case 5: i8_tile<5>(depth, a, lda, a_scales, a_blocks, b, compensation, b_scales, c, ldc, columns, flags); break;
    case 4: i8_tile<4>(depth, a, lda, a_scales, a_blocks, b, compensation, b_scales, c, ldc, columns, flags); break;
    case 3: i8_tile<3>(depth, a, lda, a_scales, a_blocks, b, compensation, b_scales, c, ldc, columns, flags); break;
    case 2: i8_tile<2>(depth, a, lda, a_scales, a_blocks, b, compensation, b_scales, c, ldc, columns, flags); break;
    case 1: i8_tile<1>(depth, a, lda, a_scales, a_blocks, b, compensation, b_scales, c, ldc, columns, flags); break;
    default: break;
    }
}

} // namespace

// Skylake's table with the int8 products.
kernels_t const *kernels_icelake() noexcept {
    static kernels_t const table = [] {
        kernels_t kernels = *kernels_skylake();
        kernels.cpu_class = uform_cpu_class_intel_icelake_k;
        kernels.quantize_i8 = quantize_i8_icelake;
        kernels.gemm_micro_i8 = gemm_micro_i8_icelake;
        return kernels;
    }();
    return &table;
}

} // namespace uform::ram

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

#else

namespace uform::ram {
// No AVX-512 on this architecture.
kernels_t const *kernels_icelake() noexcept { return nullptr; }
} // namespace uform::ram

#endif
