// The stub's deterministic rows: FNV-1a over an item's modality and bytes seeds a SplitMix64 stream
// per surface and row, so an item's rows depend on nothing but the item.
#ifndef UFORM_STUB_ROWS_HPP
#define UFORM_STUB_ROWS_HPP

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include <uform/uform.h>

#include "common/regular_file.hpp"

namespace uform::stub {

inline constexpr std::uint64_t fnv_offset_k = 0xCBF29CE484222325ull;

/// FNV-1a 64 over `length` bytes, continuing from `hash`.
inline std::uint64_t fnv1a(std::uint64_t hash, void const *data, std::size_t length) noexcept {
    auto const *bytes = static_cast<unsigned char const *>(data);
    for (std::size_t i = 0; i != length; ++i) hash = (hash ^ bytes[i]) * 0x100000001B3ull;
    return hash;
}

/// FNV-1a of one 64-bit value, little-endian.
inline std::uint64_t fnv1a_u64(std::uint64_t hash, std::uint64_t value) noexcept {
    unsigned char bytes[8];
    for (int i = 0; i != 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
    return fnv1a(hash, bytes, 8);
}

/// SplitMix64: advances `state` and answers the next value.
inline std::uint64_t splitmix64(std::uint64_t &state) noexcept {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// A uniform value in `[-1, 1)` from the stream.
inline float uniform(std::uint64_t &state) noexcept { return float(double(splitmix64(state) >> 40) * 0x1.0p-23 - 1.0); }

/// The surfaces a row belongs to, mixed into its stream.
enum surface_t : std::uint64_t {
    surface_embedding_k = 1,
    surface_state_k = 2,
    surface_token_vector_k = 3,
    surface_logit_k = 4,
    surface_bag_k = 5,
};

/// The seed of an item: FNV-1a over a modality tag, then the bytes hashed in by the caller.
inline std::uint64_t item_seed(uform_modality_t modality) noexcept {
    unsigned char const tag[2] = {'U', static_cast<unsigned char>(modality)};
    return fnv1a(fnv_offset_k, tag, 2);
}

/// The stream of one row of one surface of an item.
inline std::uint64_t row_stream(std::uint64_t seed, surface_t surface, std::uint64_t row) noexcept {
    std::uint64_t state = seed ^ (std::uint64_t(surface) * 0xD6E8FEB86659FD93ull);
    std::uint64_t mixed = row + 0x632BE59BD9B4E019ull;
    return state ^ splitmix64(mixed);
}

/// Fills `columns` values of one row: uniform values scaled to unit RMS (states), or normalised to a unit
/// L2 norm (`unit`: embeddings and token vectors).
inline void fill_row(std::uint64_t seed, surface_t surface, std::uint64_t row, std::size_t columns, bool unit,
                     float *out) noexcept {
    std::uint64_t state = row_stream(seed, surface, row);
    double sum = 0;
    for (std::size_t i = 0; i != columns; ++i) {
        out[i] = uniform(state);
        sum += double(out[i]) * double(out[i]);
    }
    double const scale = unit ? (sum > 0 ? 1.0 / std::sqrt(sum) : 0.0) : std::sqrt(3.0);
    for (std::size_t i = 0; i != columns; ++i) out[i] = float(out[i] * scale);
}

/// What reading a media file learned: its bytes' hash and length, or the failure.
struct file_digest_t {
    uform_status_t status;
    std::uint64_t hash;
    std::uint64_t length;
};

/// Hashes a whole file (NUL-terminated path) into `seed`: `not-found`, `io`, or `corrupt` when empty.
inline file_digest_t digest_file(char const *path, std::uint64_t seed) noexcept {
    uform::regular_file_t file;
    switch (file.open(path, true)) {
    case uform::file_open_t::ok: break;
    case uform::file_open_t::missing:
    case uform::file_open_t::not_folder: return {uform_status_not_found_k, 0, 0};
    default: return {uform_status_io_k, 0, 0}; // a FIFO, device or directory answers at once, never blocks
    }
    unsigned char buffer[16384];
    std::uint64_t length = 0;
    for (;;) {
        std::int64_t const got = file.read_at(buffer, sizeof(buffer), length);
        if (got < 0) return {uform_status_io_k, 0, 0};
        seed = fnv1a(seed, buffer, std::size_t(got));
        length += std::uint64_t(got);
        if (std::size_t(got) < sizeof(buffer)) break;
    }
    if (length == 0) return {uform_status_corrupt_k, 0, 0};
    return {uform_status_ok_k, seed, length};
}

inline char const *digest_message(uform_status_t status) noexcept {
    switch (status) {
    case uform_status_not_found_k: return "a media file does not exist";
    case uform_status_corrupt_k: return "a media file is empty";
    default: return "a media file could not be read";
    }
}

/// The stub's choice logits: uniform in `[-4, 4)` per text and byte.
inline float choice_logit(std::uint64_t text_seed, unsigned char byte) noexcept {
    std::uint64_t state = row_stream(text_seed, surface_logit_k, byte);
    return 4.0f * uniform(state);
}

} // namespace uform::stub

#endif // UFORM_STUB_ROWS_HPP
