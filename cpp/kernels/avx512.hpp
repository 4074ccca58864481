// The 16-lane helpers every AVX-512 class shares (skylake.cpp, icelake.cpp, genoa.cpp): the mask of a partial
// vector and the BF16 rounding of a row's outputs. Each function carries the AVX-512F target itself, so it compiles
// the same in every file that includes it, whatever that file's own target pragma, and inlines into any caller whose
// target is a superset (every AVX-512 class's is). Include it after <immintrin.h>, outside the file's target region.
#ifndef UFORM_CPP_KERNELS_AVX512_HPP
#define UFORM_CPP_KERNELS_AVX512_HPP

#if defined(__x86_64__) || defined(_M_X64)

#include <immintrin.h>

#include <cstddef>

namespace uform::ram::avx512 {

/// The lanes of the last partial vector of `count` values: the low `count` bits, all 16 from `count >= 16` on.
__attribute__((target("avx512f"))) inline __mmask16 tail_mask(std::size_t count) noexcept {
    return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1u);
}

/// The BF16 (nearest even) of 16 floats in the high halves of their words, low halves zero; NaN lanes become quiet
/// NaNs. The same bits as serial's `round_bf16` and common/scalars.hpp's `f32_to_bf16`.
__attribute__((target("avx512f"))) inline __m512i bf16_high_x16(__m512 value) noexcept {
    __m512i const bits = _mm512_castps_si512(value);
    __m512i const lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
    rounded = _mm512_and_si512(rounded, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
    __mmask16 const nan = _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q);
    __m512i const quiet = _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))),
                                          _mm512_set1_epi32(0x00400000));
    return _mm512_mask_blend_epi32(nan, rounded, quiet);
}

/// Rounds 16 floats to BF16 (nearest even), kept as F32: `bf16_high_x16`'s bits read as floats.
__attribute__((target("avx512f"))) inline __m512 round_bf16_x16(__m512 value) noexcept {
    return _mm512_castsi512_ps(bf16_high_x16(value));
}

} // namespace uform::ram::avx512

#endif // x86-64

#endif // UFORM_CPP_KERNELS_AVX512_HPP
