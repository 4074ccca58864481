// The trainer's random numbers (docs/decisions.md, "Training"): counter-based SplitMix64 streams named by a seed and
// a label, so that the seeded weights, the masks and the sketches of the tests are computed the same in C++ and in
// the PyTorch reference (tools/reference/train_random.py), bit for bit, on any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace uform::train {

/// FNV-1a, 64-bit, of a label's bytes: what names a stream.
constexpr std::uint64_t fnv1a64(std::string_view label) noexcept {
    std::uint64_t hash = 0xCBF29CE484222325ull;
    for (char c : label) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
    return hash;
}

/// SplitMix64's output function.
constexpr std::uint64_t splitmix64_mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// A uniform integer below `n` from a draw: `((w >> 32) * n) >> 32`.
constexpr std::uint64_t uniform_below(std::uint64_t draw, std::uint64_t n) noexcept { return ((draw >> 32) * n) >> 32; }

/// A uniform real in [0, 1) from a draw: `(w >> 11) / 2^53`.
constexpr double uniform_real(std::uint64_t draw) noexcept {
    return static_cast<double>(draw >> 11) * (1.0 / 9007199254740992.0);
}

/// A named stream: draw `k` is SplitMix64's mix of `state + (k + 1) * 0x9E3779B97F4A7C15`, computable on its own;
/// `next`, `below` and `real` read it in order.
class stream_t {
  public:
    constexpr stream_t(std::uint64_t seed, std::string_view label) noexcept : state_(seed ^ fnv1a64(label)) {}

    /// Draw `k` of the stream, without advancing it.
    constexpr std::uint64_t draw(std::uint64_t k) const noexcept {
        return splitmix64_mix(state_ + (k + 1) * 0x9E3779B97F4A7C15ull);
    }
    /// Standard normal `e` of the stream: Irwin-Hall over the twelve 32-bit halves of draws `6e .. 6e + 5`, exact in
    /// double (mean 0, variance 1, within +-6).
    constexpr double normal(std::uint64_t e) const noexcept {
        std::uint64_t sum = 0;
        for (std::uint64_t k = 6 * e; k != 6 * e + 6; ++k) {
            std::uint64_t const w = draw(k);
            sum += (w >> 32) + (w & 0xFFFFFFFFull);
        }
        return static_cast<double>(sum) * (1.0 / 4294967296.0) - 6.0;
    }
    /// The next draw, advancing the stream.
    constexpr std::uint64_t next() noexcept { return draw(taken_++); }
    /// The next draw as a uniform integer below `n`.
    constexpr std::uint64_t below(std::uint64_t n) noexcept { return uniform_below(next(), n); }
    /// The next draw as a uniform real in [0, 1).
    constexpr double real() noexcept { return uniform_real(next()); }

  private:
    std::uint64_t state_;
    std::uint64_t taken_ = 0;
};

} // namespace uform::train
