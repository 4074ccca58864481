// The software model of the AMX tile instructions, following the SDM's pseudo-code for palette 1: tdpbf16ps sums each
// BF16 pair's even and odd products into two F32 lanes by fused multiply-adds from zero (DAZ on the inputs, FTZ on
// every result), adds the two lanes, then adds that to the accumulator; tdpbssd sums four signed byte products
// exactly and adds them to the accumulator modulo 2^32.
#include "cpp/kernels/amx_tiles.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace uform::ram {
namespace {

/// A subnormal value as zero of its sign (DAZ on an input, FTZ on a result).
inline float flush(float x) noexcept { return std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x; }

/// BF16 bits as F32 (the SDM's `make_fp32`), subnormals as zero.
inline float from_bf16(std::uint16_t bits) noexcept { return flush(std::bit_cast<float>(std::uint32_t(bits) << 16)); }

/// Value `i` of a tile row's 16-bit, 32-bit or 8-bit elements.
inline std::uint16_t half_at(std::uint8_t const *row, std::size_t i) noexcept {
    std::uint16_t value;
    std::memcpy(&value, row + 2 * i, 2);
    return value;
}
inline float float_at(std::uint8_t const *row, std::size_t i) noexcept {
    float value;
    std::memcpy(&value, row + 4 * i, 4);
    return value;
}
inline std::int32_t int_at(std::uint8_t const *row, std::size_t i) noexcept {
    std::int32_t value;
    std::memcpy(&value, row + 4 * i, 4);
    return value;
}

} // namespace

// Palette 1 only: at most 16 rows and 64 bytes a row, whole dwords; the tiles zeroed as the SDM's `ldtilecfg` does.
void amx_tiles_model_t::configure(amx_tile_config_t const &config) noexcept {
    bool valid = config.palette == 1 && config.start_row == 0;
    for (unsigned t = 0; t != 16; ++t) {
        bool const used = t < amx_tiles_k;
        if (!used) valid = valid && config.rows[t] == 0 && config.colsb[t] == 0;
        else valid = valid && config.rows[t] <= amx_tile_rows_k && config.colsb[t] <= amx_tile_bytes_k;
        valid = valid && (config.rows[t] == 0) == (config.colsb[t] == 0);
    }
    if (!valid) {
        faulted_ = true;
        return;
    }
    config_ = config, configured_ = true;
    for (auto &tile : tiles_) tile.fill(0);
}

void amx_tiles_model_t::release() noexcept {
    configured_ = false, config_ = {};
    for (auto &tile : tiles_) tile.fill(0);
}

bool amx_tiles_model_t::usable(unsigned t) noexcept {
    if (configured_ && t < amx_tiles_k && config_.rows[t] != 0) return true;
    faulted_ = true;
    return false;
}

// Rows past the configured ones and bytes past `colsb` read as zero.
void amx_tiles_model_t::load_tile(unsigned t, void const *base, std::size_t stride) noexcept {
    if (!usable(t)) return;
    auto &tile = tiles_[t];
    tile.fill(0);
    auto const *bytes = static_cast<std::uint8_t const *>(base);
    for (std::size_t r = 0; r != config_.rows[t]; ++r)
        std::memcpy(tile.data() + r * amx_tile_bytes_k, bytes + r * stride, config_.colsb[t]);
}

void amx_tiles_model_t::store_tile(unsigned t, void *base, std::size_t stride) noexcept {
    if (!usable(t)) return;
    auto *bytes = static_cast<std::uint8_t *>(base);
    for (std::size_t r = 0; r != config_.rows[t]; ++r)
        std::memcpy(bytes + r * stride, tiles_[t].data() + r * amx_tile_bytes_k, config_.colsb[t]);
}

void amx_tiles_model_t::zero_tile(unsigned t) noexcept {
    if (usable(t)) tiles_[t].fill(0);
}

// The SDM's shape rules: C and A as many rows, A's dwords as B's rows, B and C as wide, whole dwords, three tiles.
bool amx_tiles_model_t::dot_shapes(unsigned c, unsigned a, unsigned b) noexcept {
    if (!usable(c) || !usable(a) || !usable(b)) return false;
    bool const valid = c != a && c != b && a != b && config_.rows[c] == config_.rows[a] &&
                       config_.colsb[a] / 4 == config_.rows[b] && config_.colsb[b] == config_.colsb[c] &&
                       config_.colsb[a] % 4 == 0 && config_.colsb[c] % 4 == 0;
    if (!valid) faulted_ = true;
    return valid;
}

namespace {

/// One lane's `FTZ(fma(a, b, lane))`, `a` and `b` already DAZ: a product of two BF16 values is exact in F32 unless it
/// falls below the normal range, so the fused sum is the plain sum but there.
inline float lane_step(float a, float b, float lane) noexcept {
    float const product = a * b;
    float const sum = std::fabs(product) < FLT_MIN && a != 0.0f && b != 0.0f ? std::fma(a, b, lane) : lane + product;
    return flush(sum);
}

/// A BF16 tile as F32 values, DAZ applied, its even and odd halves apart (`even[r][i]` = element 2i of row r), zero
/// past `rows` x `words`; answers the smallest nonzero magnitude (infinity when none).
double split_tile(std::uint8_t const *tile, std::size_t rows, std::size_t words, float (&even)[16][16],
                  float (&odd)[16][16]) noexcept {
    double smallest = INFINITY;
    for (std::size_t r = 0; r != 16; ++r)
        for (std::size_t i = 0; i != 16; ++i) {
            bool const present = r < rows && i < words;
            even[r][i] = present ? from_bf16(half_at(tile + r * amx_tile_bytes_k, 2 * i)) : 0.0f;
            odd[r][i] = present ? from_bf16(half_at(tile + r * amx_tile_bytes_k, 2 * i + 1)) : 0.0f;
            for (float x : {even[r][i], odd[r][i]})
                if (x != 0.0f) smallest = std::min(smallest, double(std::fabs(x)));
        }
    return smallest;
}

} // namespace

// Per row m and column n: even and odd lanes from +0, each `lane = FTZ(fma(a, b, lane))` over the pairs in order, then
// `C = FTZ(DAZ(C) + FTZ(even + odd))`; the row's bytes past `colsb` are zero after the write, as the SDM's are. When no
// product of the two tiles can fall below the normal range, every fused sum is a plain sum, 16 columns at once.
void amx_tiles_model_t::dot_bf16_tiles(unsigned c, unsigned a, unsigned b) noexcept {
    if (!dot_shapes(c, a, b)) return;
    std::size_t const pairs = config_.colsb[a] / 4, columns = config_.colsb[c] / 4;
    float a_even[16][16], a_odd[16][16], b_even[16][16], b_odd[16][16];
    double const smallest_a = split_tile(tiles_[a].data(), config_.rows[a], pairs, a_even, a_odd);
    double const smallest_b = split_tile(tiles_[b].data(), config_.rows[b], columns, b_even, b_odd);
    bool const exact = smallest_a * smallest_b >= FLT_MIN;
    for (std::size_t m = 0; m != config_.rows[c]; ++m) {
        float even[16] = {}, odd[16] = {};
        for (std::size_t k = 0; k != pairs; ++k)
            if (exact)
                for (std::size_t n = 0; n != 16; ++n) {
                    even[n] = flush(even[n] + a_even[m][k] * b_even[k][n]);
                    odd[n] = flush(odd[n] + a_odd[m][k] * b_odd[k][n]);
                }
            else
                for (std::size_t n = 0; n != 16; ++n) {
                    even[n] = lane_step(a_even[m][k], b_even[k][n], even[n]);
                    odd[n] = lane_step(a_odd[m][k], b_odd[k][n], odd[n]);
                }
        std::uint8_t *row_c = tiles_[c].data() + m * amx_tile_bytes_k;
        for (std::size_t n = 0; n != columns; ++n) {
            float const sum = flush(flush(float_at(row_c, n)) + flush(even[n] + odd[n]));
            std::memcpy(row_c + 4 * n, &sum, 4);
        }
    }
}

// Per row m and column n: the four byte products of each dword summed exactly, added to C modulo 2^32.
void amx_tiles_model_t::dot_i8_tiles(unsigned c, unsigned a, unsigned b) noexcept {
    if (!dot_shapes(c, a, b)) return;
    std::size_t const dwords = config_.colsb[a] / 4, columns = config_.colsb[c] / 4;
    for (std::size_t m = 0; m != config_.rows[c]; ++m) {
        std::uint8_t const *row_a = tiles_[a].data() + m * amx_tile_bytes_k;
        std::uint8_t *row_c = tiles_[c].data() + m * amx_tile_bytes_k;
        for (std::size_t n = 0; n != columns; ++n) {
            std::uint32_t sum = static_cast<std::uint32_t>(int_at(row_c, n));
            for (std::size_t k = 0; k != dwords; ++k) {
                std::uint8_t const *row_b = tiles_[b].data() + k * amx_tile_bytes_k;
                std::int32_t products = 0;
                for (std::size_t i = 0; i != 4; ++i)
                    products += std::int32_t(std::int8_t(row_a[4 * k + i])) * std::int8_t(row_b[4 * n + i]);
                sum += static_cast<std::uint32_t>(products);
            }
            std::memcpy(row_c + 4 * n, &sum, 4);
        }
    }
}

} // namespace uform::ram
