// What the AMX tests share (tests/unit/amx_tiles_test.cpp, tests/unit/amx_product_test.cpp): their tally of checks, and
// the SDM's DAZ and FTZ written from the bits, independently of the model's own flush.
#pragma once

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>

namespace amx_test {

/// Checks that held and that failed.
inline int passed = 0, failed = 0;

/// Counts `ok`, printing `what` when it failed.
inline void check(bool ok, std::string const &what) {
    if (ok) ++passed;
    else ++failed, std::fprintf(stderr, "FAILED: %s\n", what.c_str());
}

/// DAZ and FTZ: a zero exponent with a nonzero fraction reads as zero of its sign.
inline float flushed(float x) {
    std::uint32_t const bits = std::bit_cast<std::uint32_t>(x);
    return (bits & 0x7F800000u) == 0 ? std::bit_cast<float>(bits & 0x80000000u) : x;
}

} // namespace amx_test
