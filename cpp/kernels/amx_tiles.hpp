// The AMX tile instructions as a small interface with two implementations: the hardware's (intrinsics, x86-64 only)
// and a software model of the same instructions as Intel's SDM defines them, so code written once against the
// interface (cpp/kernels/amx_product.cpp) runs and is tested bit for bit on machines without AMX.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && !defined(__wasm__)
#include <immintrin.h>
#define UFORM_AMX_TILES_HARDWARE 1
#else
#define UFORM_AMX_TILES_HARDWARE 0
#endif

namespace uform::ram {

/// Tiles in the register file, rows of a tile and bytes of a row (palette 1).
inline constexpr unsigned amx_tiles_k = 8, amx_tile_rows_k = 16, amx_tile_bytes_k = 64;

/// The 64-byte operand of `ldtilecfg`: the palette, then each tile's bytes per row and rows.
struct alignas(64) amx_tile_config_t {
    std::uint8_t palette = 1;
    std::uint8_t start_row = 0;
    std::uint8_t reserved[14] = {};
    std::uint16_t colsb[16] = {};
    std::uint8_t rows[16] = {};

    /// Every tile `rows` x `colsb` bytes.
    static amx_tile_config_t uniform(std::uint8_t rows, std::uint16_t colsb) noexcept {
        amx_tile_config_t config;
        for (unsigned t = 0; t != amx_tiles_k; ++t) config.colsb[t] = colsb, config.rows[t] = rows;
        return config;
    }
};
static_assert(sizeof(amx_tile_config_t) == 64);

/// The software model: eight tiles of 16 rows by 64 bytes and their configuration, each instruction as the SDM's
/// pseudo-code states it (docs/decisions.md, "The AMX tile model"). An instruction the hardware would refuse (#UD: no
/// configuration, a tile shape the operation does not accept) changes nothing and sets `faulted`.
class amx_tiles_model_t {
  public:
    /// `ldtilecfg`: takes the shapes and zeroes every tile; an unsupported palette or shape faults.
    void configure(amx_tile_config_t const &config) noexcept;
    /// `tilerelease`: back to the unconfigured state, tiles zero.
    void release() noexcept;
    /// `tileloadd`: the tile's rows of `colsb` bytes from `base`, `stride` bytes apart; the rest of the tile zero.
    template <unsigned T>
    void load(void const *base, std::size_t stride) noexcept {
        load_tile(T, base, stride);
    }
    /// `tilestored`: the tile's rows of `colsb` bytes to `base`, `stride` bytes apart.
    template <unsigned T>
    void store(void *base, std::size_t stride) noexcept {
        store_tile(T, base, stride);
    }
    /// `tilezero`.
    template <unsigned T>
    void zero() noexcept {
        zero_tile(T);
    }
    /// `tdpbf16ps C, A, B`.
    template <unsigned C, unsigned A, unsigned B>
    void dot_bf16() noexcept {
        dot_bf16_tiles(C, A, B);
    }
    /// `tdpbssd C, A, B`.
    template <unsigned C, unsigned A, unsigned B>
    void dot_i8() noexcept {
        dot_i8_tiles(C, A, B);
    }

    /// Whether an instruction faulted since the model was made.
    bool faulted() const noexcept { return faulted_; }
    /// The 1,024 bytes of tile `t` (for tests).
    std::uint8_t const *bytes(unsigned t) const noexcept { return tiles_[t % amx_tiles_k].data(); }

  private:
    void load_tile(unsigned t, void const *base, std::size_t stride) noexcept;
    void store_tile(unsigned t, void *base, std::size_t stride) noexcept;
    void zero_tile(unsigned t) noexcept;
    void dot_bf16_tiles(unsigned c, unsigned a, unsigned b) noexcept;
    void dot_i8_tiles(unsigned c, unsigned a, unsigned b) noexcept;
    /// Whether `c (+)= a b` has shapes the dot-product instructions accept; faults otherwise.
    bool dot_shapes(unsigned c, unsigned a, unsigned b) noexcept;
    /// Whether tile `t` exists and the model is configured; faults otherwise.
    bool usable(unsigned t) noexcept;

    std::array<std::array<std::uint8_t, amx_tile_rows_k * amx_tile_bytes_k>, amx_tiles_k> tiles_{};
    amx_tile_config_t config_{};
    bool configured_ = false, faulted_ = false;
};

#if UFORM_AMX_TILES_HARDWARE
/// The hardware: each operation one instruction. Only where `amx_available()` (cpp/kernels/amx.hpp) holds.
struct amx_tiles_hardware_t {
    /// `ldtilecfg`.
    __attribute__((target("amx-tile"))) void configure(amx_tile_config_t const &config) noexcept {
        _tile_loadconfig(&config);
    }
    /// `tilerelease`.
    __attribute__((target("amx-tile"))) void release() noexcept { _tile_release(); }
    /// `tileloadd`.
    template <unsigned T>
    __attribute__((target("amx-tile"))) void load(void const *base, std::size_t stride) noexcept {
        _tile_loadd(T, base, stride);
    }
    /// `tilestored`.
    template <unsigned T>
    __attribute__((target("amx-tile"))) void store(void *base, std::size_t stride) noexcept {
        _tile_stored(T, base, stride);
    }
    /// `tilezero`.
    template <unsigned T>
    __attribute__((target("amx-tile"))) void zero() noexcept {
        _tile_zero(T);
    }
    /// `tdpbf16ps C, A, B`.
    template <unsigned C, unsigned A, unsigned B>
    __attribute__((target("amx-tile,amx-bf16"))) void dot_bf16() noexcept {
        _tile_dpbf16ps(C, A, B);
    }
    /// `tdpbssd C, A, B`.
    template <unsigned C, unsigned A, unsigned B>
    __attribute__((target("amx-tile,amx-int8"))) void dot_i8() noexcept {
        _tile_dpbssd(C, A, B);
    }
};
#endif

} // namespace uform::ram
