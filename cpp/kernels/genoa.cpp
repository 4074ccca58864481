// The AVX-512 BF16 classes (AMD Genoa and Turin): Ice Lake's kernels (int8 products on VNNI) plus the BF16 pair
// products, a 6 x 64 micro-kernel on `vdpbf16ps` (twice the products of an F32 FMA per instruction), the packing
// conversions, and E4M3 weights dequantized into pairs.
#include "cpp/kernels/kernels.hpp"

#if defined(__x86_64__) || defined(_M_X64)

#include <immintrin.h>

#include "cpp/kernels/avx512.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16"))),        \
                             apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
#endif

namespace uform::ram {
namespace {

using avx512::bf16_high_x16;
using avx512::round_bf16_x16;
using avx512::tail_mask;

// One micro tile of `rows_k` rows by 64 columns over `pairs` pairs; columns past `columns` are computed from B's zero
// padding and not stored.
template <std::size_t rows_k>
void pairs_tile(std::size_t pairs, std::uint32_t const *a, std::size_t a_row, std::size_t a_pair,
                std::uint32_t const *b, float *c, std::size_t ldc, std::size_t columns, unsigned flags) noexcept {
    __m512 sums[rows_k][4];
#pragma clang loop unroll(full)
    for (std::size_t r = 0; r != rows_k; ++r)
#pragma clang loop unroll(full)
        for (std::size_t v = 0; v != 4; ++v) sums[r][v] = _mm512_setzero_ps();
    for (std::size_t p = 0; p != pairs; ++p, a += a_pair, b += 64) {
        __m512bh b_vectors[4];
#pragma clang loop unroll(full)
        for (std::size_t v = 0; v != 4; ++v) b_vectors[v] = (__m512bh)_mm512_loadu_si512(b + v * 16);
#pragma clang loop unroll(full)
        for (std::size_t r = 0; r != rows_k; ++r) {
            __m512bh const a_value = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r * a_row]));
#pragma clang loop unroll(full)
            for (std::size_t v = 0; v != 4; ++v) sums[r][v] = _mm512_dpbf16_ps(sums[r][v], a_value, b_vectors[v]);
        }
    }
#pragma clang loop unroll(full)
    for (std::size_t r = 0; r != rows_k; ++r)
#pragma clang loop unroll(full)
        for (std::size_t v = 0; v != 4; ++v) {
            if (v * 16 >= columns) break;
            __mmask16 const mask = tail_mask(columns - v * 16);
            float *target = c + r * ldc + v * 16;
            __m512 value = sums[r][v];
            if (flags & gemm_accumulate_k) value = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, target), value);
            if (flags & gemm_round_output_k) value = round_bf16_x16(value);
            _mm512_mask_storeu_ps(target, mask, value);
        }
}

// C (+)= A * B over one micro tile of up to 6 x 64 in BF16 pairs.
void gemm_micro_pairs_genoa(std::size_t pairs, std::uint32_t const *a, std::size_t a_row, std::size_t a_pair,
                            std::uint32_t const *b, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                            unsigned flags) noexcept {
    switch (rows) {
    case 6: pairs_tile<6>(pairs, a, a_row, a_pair, b, c, ldc, columns, flags); break;
    case 5: pairs_tile<5>(pairs, a, a_row, a_pair, b, c, ldc, columns, flags); break;
    case 4: pairs_tile<4>(pairs, a, a_row, a_pair, b, c, ldc, columns, flags); break;
    case 3: pairs_tile<3>(pairs, a, a_row, a_pair, b, c, ldc, columns, flags); break;
    case 2: pairs_tile<2>(pairs, a, a_row, a_pair, b, c, ldc, columns, flags); break;
    case 1: pairs_tile<1>(pairs, a, a_row, a_pair, b, c, ldc, columns, flags); break;
    default: break;
    }
}

// Two rows into words of BF16 pairs: the high row's bits above the low row's.
void interleave_bf16_genoa(float const *low, float const *high, std::uint32_t *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        __m512i const lows = _mm512_srli_epi32(bf16_high_x16(_mm512_maskz_loadu_ps(mask, low + i)), 16);
        __m512i const highs =
            high != nullptr ? bf16_high_x16(_mm512_maskz_loadu_ps(mask, high + i)) : _mm512_setzero_si512();
        _mm512_mask_storeu_epi32(out + i, mask, _mm512_or_si512(lows, highs));
    }
}

// A row into BF16 bits.
void convert_bf16_genoa(float const *in, std::uint16_t *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i < count; i += 16) {
        __mmask16 const mask = tail_mask(count - i);
        __m512i const bits = _mm512_srli_epi32(bf16_high_x16(_mm512_maskz_loadu_ps(mask, in + i)), 16);
        _mm512_mask_cvtepi32_storeu_epi16(out + i, mask, bits);
    }
}

// 16 E4M3 bytes as F32 (the bits of `e4m3_to_f32`): a normal magnitude rebiased into F32's exponent, a subnormal one
// (exponent 0) converted as `m * 2^-9`, the NaN pattern a quiet NaN, then the sign.
inline __m512 e4m3_x16(__m128i bytes) noexcept {
    __m512i const values = _mm512_cvtepu8_epi32(bytes);
    __m512i const magnitude = _mm512_and_si512(values, _mm512_set1_epi32(0x7F));
    __m512i const sign = _mm512_slli_epi32(_mm512_and_si512(values, _mm512_set1_epi32(0x80)), 24);
    __m512i normal = _mm512_add_epi32(_mm512_slli_epi32(magnitude, 20), _mm512_set1_epi32(120 << 23));
    normal = _mm512_mask_blend_epi32(_mm512_cmpeq_epi32_mask(magnitude, _mm512_set1_epi32(0x7F)), normal,
                                     _mm512_set1_epi32(0x7FC00000));
    __m512 const subnormal = _mm512_mul_ps(_mm512_cvtepi32_ps(magnitude), _mm512_set1_ps(1.0f / 512.0f));
    __m512 const value = _mm512_mask_blend_ps(_mm512_cmplt_epi32_mask(magnitude, _mm512_set1_epi32(8)),
                                              _mm512_castsi512_ps(normal), subnormal);
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(value), sign));
}

// 16 words at a time: 32 bytes to F32, scaled, rounded to BF16, narrowed to 16 bits in byte order, so the even byte's
// value lands in each word's low half.
void dequantize_e4m3_pairs_genoa(std::uint8_t const *bytes, float scale, std::uint32_t *out,
                                 std::size_t count) noexcept {
    __m512 const factor = _mm512_set1_ps(scale);
    std::size_t i = 0;
    for (; i + 16 <= count; i += 16) {
        for (std::size_t half = 0; half != 2; ++half) {
            __m128i const chunk = _mm_loadu_si128(reinterpret_cast<__m128i const *>(bytes + 2 * i + 16 * half));
            __m512i const rounded = _mm512_srli_epi32(bf16_high_x16(_mm512_mul_ps(e4m3_x16(chunk), factor)), 16);
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i + 8 * half), _mm512_cvtepi32_epi16(rounded));
        }
    }
    if (i != count) dequantize_e4m3_pairs_serial(bytes + 2 * i, scale, out + i, count - i);
}

} // namespace

// Ice Lake's table with the pair products.
kernels_t const *kernels_genoa() noexcept {
    static kernels_t const table = [] {
        kernels_t kernels = *kernels_icelake();
        kernels.cpu_class = uform_cpu_class_amd_genoa_k;
        kernels.gemm_micro_pairs = gemm_micro_pairs_genoa;
        kernels.interleave_bf16 = interleave_bf16_genoa;
        kernels.convert_bf16 = convert_bf16_genoa;
        kernels.dequantize_e4m3_pairs = dequantize_e4m3_pairs_genoa;
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
kernels_t const *kernels_genoa() noexcept { return nullptr; }
} // namespace uform::ram

#endif
