// Scalar conversions shared by every CPU class: BF16 and E4M3 rounding, bit-exact with PyTorch.
#pragma once

#include <bit>
#include <cstdint>

namespace uform::ram {

/// The BF16 bits of `value`, rounded to nearest even; NaN stays a quiet NaN of the same sign.
constexpr std::uint16_t bf16_from_f32(float value) noexcept {
    std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}

/// The F32 value of BF16 bits.
constexpr float f32_from_bf16(std::uint16_t bits) noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

/// `value` rounded to the nearest BF16 (ties to even), kept as F32: what every matrix product's inputs go through.
constexpr float round_bf16(float value) noexcept { return f32_from_bf16(bf16_from_f32(value)); }

/// The `float8_e4m3fn` byte of `value`, rounded to nearest even and saturated at +-448. Bit-exact with
/// `torch.Tensor.to(torch.float8_e4m3fn)` up to a magnitude of 464, past which PyTorch answers NaN.
constexpr std::uint8_t e4m3_from_f32(float value) noexcept {
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

/// The F32 value of a `float8_e4m3fn` byte (0x7F and 0xFF are NaN).
constexpr float f32_from_e4m3(std::uint8_t byte) noexcept {
    std::uint32_t const sign = static_cast<std::uint32_t>(byte & 0x80u) << 24;
    std::uint32_t const exponent = (byte >> 3) & 0xFu, mantissa = byte & 0x7u;
    if (exponent == 0xF && mantissa == 0x7) return std::bit_cast<float>(sign | 0x7FC00000u);
    float magnitude;
    if (exponent == 0) magnitude = static_cast<float>(mantissa) * (1.0f / 512.0f); // m * 2^-9
    else magnitude = std::bit_cast<float>(((exponent + 120u) << 23) | (mantissa << 20));
    return sign ? -magnitude : magnitude;
}

} // namespace uform::ram
