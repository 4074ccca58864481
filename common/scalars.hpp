// Conversions between F32 and every output scalar, rounding to nearest even, in standard C++.
//
// Shared by every backend: the stub, the RAM residency and the GPU residencies' host paths. The narrow
// floats saturate as `types.h` says (`e4m3` at 448, `e5m2` at 57344); NaN stays NaN. `i8` is
// `round(127 * x)` saturating at +-127; `b1` packs one sign bit per column (`x > 0`), least significant
// bit first. The BF16 and E4M3 conversions are also the RAM kernels', bit-exact with PyTorch. Every function here
// relies on the default floating-point environment (round to nearest).
#ifndef UFORM_COMMON_SCALARS_HPP
#define UFORM_COMMON_SCALARS_HPP

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <uform/types.h>

namespace uform {

/// F32 to BF16 bits, rounding to nearest even; NaN stays a quiet NaN of the same sign.
constexpr std::uint16_t f32_to_bf16(float value) noexcept {
    std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return std::uint16_t((bits >> 16) | 0x0040u);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return std::uint16_t(bits >> 16);
}

/// BF16 bits to F32, exactly.
constexpr float bf16_to_f32(std::uint16_t bits) noexcept { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

/// `value` rounded to the nearest BF16 (ties to even), kept as F32: what every matrix product's inputs go
/// through.
constexpr float round_bf16(float value) noexcept { return bf16_to_f32(f32_to_bf16(value)); }

/// F32 to IEEE binary16 bits, rounding to nearest even; overflow goes to infinity as IEEE says.
inline std::uint16_t f32_to_f16(float value) noexcept {
    // The scaling trick of Maratyszcza's FP16: the F32 adder does the rounding, subnormals included.
    float base = (std::fabs(value) * 0x1.0p+112f) * 0x1.0p-110f;
    std::uint32_t const w = std::bit_cast<std::uint32_t>(value);
    std::uint32_t const shl1_w = w + w;
    std::uint32_t const sign = w & 0x80000000u;
    std::uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
    std::uint32_t const bits = std::bit_cast<std::uint32_t>(base);
    std::uint32_t const exp_bits = (bits >> 13) & 0x00007C00u;
    std::uint32_t const mantissa_bits = bits & 0x00000FFFu;
    std::uint32_t const nonsign = exp_bits + mantissa_bits;
    return std::uint16_t((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

/// IEEE binary16 bits to F32, exactly.
inline float f16_to_f32(std::uint16_t bits) noexcept {
    std::uint32_t const sign = std::uint32_t(bits & 0x8000u) << 16;
    std::uint32_t const exponent = (bits >> 10) & 0x1Fu;
    std::uint32_t const mantissa = bits & 0x3FFu;
    float magnitude;
    if (exponent == 0) magnitude = float(mantissa) * 0x1.0p-24f;
    else if (exponent == 31)
        magnitude = mantissa ? std::bit_cast<float>(0x7FC00000u) : std::bit_cast<float>(0x7F800000u);
    else magnitude = std::bit_cast<float>(((exponent + 112u) << 23) | (mantissa << 13));
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
}

namespace detail {

/// F32 to an 8-bit float of `exponent_bits`/`mantissa_bits` with `bias`, rounding to nearest even and
/// saturating at the bit pattern `max_bits` (the largest finite value's magnitude bits).
inline std::uint8_t f32_to_fp8(float value, int mantissa_bits, int bias, std::uint32_t max_bits,
                               std::uint8_t nan_bits) noexcept {
    std::uint32_t const bits = std::bit_cast<std::uint32_t>(value);
    std::uint8_t const sign = std::uint8_t((bits >> 24) & 0x80u);
    std::uint32_t const magnitude = bits & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u) return std::uint8_t(sign | nan_bits);
    std::uint32_t const exponent32 = magnitude >> 23;
    if (exponent32 == 0) return sign; // F32 zeros and subnormals are far below any FP8 subnormal
    int const exponent = int(exponent32) - 127;
    std::uint32_t const significand = (magnitude & 0x7FFFFFu) | 0x800000u;
    int const min_exponent = 1 - bias;
    int shift = 23 - mantissa_bits;
    std::uint32_t result;
    if (exponent >= min_exponent) {
        if (exponent > 15 + bias) return std::uint8_t(sign | max_bits); // far past the range
        std::uint32_t const kept =
            (std::uint32_t(exponent + bias) << mantissa_bits) | ((significand & 0x7FFFFFu) >> shift);
        std::uint32_t const remainder = significand & ((1u << shift) - 1u);
        std::uint32_t const half = 1u << (shift - 1);
        result = kept + ((remainder > half || (remainder == half && (kept & 1u))) ? 1u : 0u);
    } else {
        shift += min_exponent - exponent;
        if (shift >= 32) return sign;
        std::uint32_t const kept = significand >> shift;
        std::uint32_t const remainder = significand & ((1u << shift) - 1u);
        std::uint32_t const half = 1u << (shift - 1);
        result = kept + ((remainder > half || (remainder == half && (kept & 1u))) ? 1u : 0u);
    }
    if (result > max_bits) result = max_bits;
    return std::uint8_t(sign | result);
}

inline float fp8_to_f32(std::uint8_t bits, int mantissa_bits, int bias) noexcept {
    int const exponent_bits = 7 - mantissa_bits;
    std::uint32_t const exponent = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1u);
    std::uint32_t const mantissa = bits & ((1u << mantissa_bits) - 1u);
    float magnitude;
    if (exponent == 0) magnitude = std::ldexp(float(mantissa), 1 - bias - mantissa_bits);
    else magnitude = std::ldexp(float(mantissa | (1u << mantissa_bits)), int(exponent) - bias - mantissa_bits);
    return (bits & 0x80u) ? -magnitude : magnitude;
}

} // namespace detail

/// F32 to OCP E4M3 (`float8_e4m3fn`) bits: nearest even, saturating at 448, NaN to 0x7F. Bit-exact with
/// `torch.Tensor.to(torch.float8_e4m3fn)` up to a magnitude of 464, past which PyTorch answers NaN.
constexpr std::uint8_t f32_to_e4m3(float value) noexcept {
    std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    std::uint32_t const sign = bits & 0x80000000u;
    bits ^= sign;
    std::uint8_t result;
    if (bits > 0x7F800000u) result = 0x7F;                  // NaN
    else if (bits >= 0x43E00000u) result = 0x7E;            // >= 448: saturate to the largest finite value
    else if (bits < (121u << 23)) {                         // below 2^-6: subnormal, rounded by an F32 addition
        constexpr std::uint32_t denormal_mask = 141u << 23; // 2^14
        float const shifted = std::bit_cast<float>(bits) + std::bit_cast<float>(denormal_mask);
        result = static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(shifted) - denormal_mask);
    } else {
        std::uint32_t const mantissa_odd = (bits >> 20) & 1u;
        bits += (static_cast<std::uint32_t>(7 - 127) << 23) + 0x7FFFFu + mantissa_odd;
        result = static_cast<std::uint8_t>(bits >> 20);
    }
    return static_cast<std::uint8_t>(result | (sign >> 24));
}

/// E4M3 bits to F32, exactly; 0x7F and 0xFF are NaN of their sign.
constexpr float e4m3_to_f32(std::uint8_t byte) noexcept {
    std::uint32_t const sign = static_cast<std::uint32_t>(byte & 0x80u) << 24;
    std::uint32_t const exponent = (byte >> 3) & 0xFu, mantissa = byte & 0x7u;
    if (exponent == 0xF && mantissa == 0x7) return std::bit_cast<float>(sign | 0x7FC00000u);
    float magnitude;
    if (exponent == 0) magnitude = static_cast<float>(mantissa) * (1.0f / 512.0f); // m * 2^-9
    else magnitude = std::bit_cast<float>(((exponent + 120u) << 23) | (mantissa << 20));
    return sign ? -magnitude : magnitude;
}

/// F32 to OCP E5M2 bits: nearest even, saturating at 57344 (infinities too), NaN to 0x7E.
inline std::uint8_t f32_to_e5m2(float value) noexcept { return detail::f32_to_fp8(value, 2, 15, 0x7Bu, 0x7Eu); }

/// E5M2 bits to F32, exactly.
inline float e5m2_to_f32(std::uint8_t bits) noexcept {
    if ((bits & 0x7Cu) == 0x7Cu)
        return (bits & 0x03u)
                   ? std::bit_cast<float>(0x7FC00000u)
                   : ((bits & 0x80u) ? -std::bit_cast<float>(0x7F800000u) : std::bit_cast<float>(0x7F800000u));
    return detail::fp8_to_f32(bits, 2, 15);
}

/// F32 to `round(127 * x)`, nearest even, saturating at +-127; NaN gives 0.
inline std::int8_t f32_to_i8(float value) noexcept {
    if (!(value == value)) return 0;
    float const scaled = std::nearbyint(value * 127.0f);
    if (scaled >= 127.0f) return 127;
    if (scaled <= -127.0f) return -127;
    return std::int8_t(scaled);
}

/// Converts `columns` F32 values into `scalar` at `destination`, which must hold
/// `uform_scalar_bytes(scalar, columns)` bytes. `auto` is treated as F32. Unaligned destinations are fine.
inline void convert_row(float const *source, std::size_t columns, uform_scalar_t scalar, void *destination) noexcept {
    auto *out = static_cast<unsigned char *>(destination);
    switch (scalar) {
    case uform_scalar_auto_k:
    case uform_scalar_f32_k: std::memcpy(out, source, columns * sizeof(float)); return;
    case uform_scalar_f16_k:
        for (std::size_t i = 0; i != columns; ++i) {
            std::uint16_t const bits = f32_to_f16(source[i]);
            std::memcpy(out + 2 * i, &bits, 2);
        }
        return;
    case uform_scalar_bf16_k:
        for (std::size_t i = 0; i != columns; ++i) {
            std::uint16_t const bits = f32_to_bf16(source[i]);
            std::memcpy(out + 2 * i, &bits, 2);
        }
        return;
    case uform_scalar_e4m3_k:
        for (std::size_t i = 0; i != columns; ++i) out[i] = f32_to_e4m3(source[i]);
        return;
    case uform_scalar_e5m2_k:
        for (std::size_t i = 0; i != columns; ++i) out[i] = f32_to_e5m2(source[i]);
        return;
    case uform_scalar_i8_k:
        for (std::size_t i = 0; i != columns; ++i) out[i] = static_cast<unsigned char>(f32_to_i8(source[i]));
        return;
    case uform_scalar_b1_k:
        for (std::size_t byte = 0; byte * 8 < columns; ++byte) {
            unsigned char packed = 0;
            for (std::size_t bit = 0; bit != 8 && byte * 8 + bit < columns; ++bit)
                packed |= static_cast<unsigned char>((source[byte * 8 + bit] > 0.0f ? 1u : 0u) << bit);
            out[byte] = packed;
        }
        return;
    }
}

/// Bytes of `columns` values of `scalar`, as `uform_scalar_bytes` answers; `SIZE_MAX` on overflow.
inline std::size_t scalar_bytes(uform_scalar_t const &scalar, std::size_t columns) noexcept {
    std::size_t width;
    static_assert(sizeof(uform_scalar_t) == sizeof(std::uint32_t));
    std::uint32_t bits; // any int a C caller passed
    std::memcpy(&bits, &scalar, sizeof(bits));
    switch (bits) {
    case uform_scalar_f32_k: width = 4; break;
    case uform_scalar_f16_k:
    case uform_scalar_bf16_k: width = 2; break;
    case uform_scalar_e4m3_k:
    case uform_scalar_e5m2_k:
    case uform_scalar_i8_k: width = 1; break;
    case uform_scalar_b1_k: return columns / 8 + (columns % 8 != 0);
    default: return 0;
    }
    if (columns > SIZE_MAX / width) return SIZE_MAX;
    return columns * width;
}

} // namespace uform

#endif // UFORM_COMMON_SCALARS_HPP
