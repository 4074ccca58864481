// Unit tests of the AMX tile layer's software model (cpp/kernels/amx_tiles.hpp), checked on any machine: its tdpbf16ps
// and tdpbssd against scalar references of the SDM's pseudo-code on random shapes, its order of sums, DAZ and FTZ on
// hand-made cases, loads and stores, and the uses the hardware refuses.
//
// Prints "N passed, M failed" and exits nonzero on a failure.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/scalars.hpp"
#include "cpp/kernels/amx_tiles.hpp"
#include "tests/unit/amx_reference.hpp"

namespace {

using namespace uform;
using ram::amx_tile_config_t;
using ram::amx_tiles_model_t;

using namespace amx_test;

/// BF16 bits as F32, DAZ applied.
float bf16(std::uint16_t bits) { return flushed(std::bit_cast<float>(std::uint32_t(bits) << 16)); }

/// Random BF16 bits: values of modest range, or with `wide` also zeros, subnormals and values of any exponent.
std::uint16_t random_bf16(std::mt19937 &random, bool wide = true) {
    std::uint32_t const kind = wide ? random() % 16 : 15;
    std::uint16_t const sign = std::uint16_t(random() & 0x8000u);
    if (kind == 0) return sign;
    if (kind == 1) return std::uint16_t(sign | (random() % 127 + 1)); // subnormal
    if (kind == 2) return std::uint16_t(sign | (random() % 0x7F00u)); // any finite exponent
    return f32_to_bf16(std::uniform_real_distribution<float>(-4.0f, 4.0f)(random));
}

/// The SDM's tdpbf16ps on plain arrays: C[m][n] of `rows x columns` F32, A[m][2k + i] BF16, B[k][2n + i] BF16.
void reference_bf16(std::vector<float> &c, std::vector<std::uint16_t> const &a, std::vector<std::uint16_t> const &b,
                    std::size_t rows, std::size_t pairs, std::size_t columns) {
    for (std::size_t m = 0; m != rows; ++m)
        for (std::size_t n = 0; n != columns; ++n) {
            float lanes[2] = {0.0f, 0.0f};
            for (std::size_t k = 0; k != pairs; ++k)
                for (std::size_t i = 0; i != 2; ++i)
                    lanes[i] = flushed(
                        std::fma(bf16(a[m * 2 * pairs + 2 * k + i]), bf16(b[k * 2 * columns + 2 * n + i]), lanes[i]));
            c[m * columns + n] = flushed(flushed(c[m * columns + n]) + flushed(lanes[0] + lanes[1]));
        }
}

/// The model configured with C in tile 0, A in 1 and B in 2 for `rows x pairs` by `pairs x columns`.
amx_tiles_model_t model_for(std::size_t rows, std::size_t pairs, std::size_t columns) {
    amx_tile_config_t config;
    config.rows[0] = std::uint8_t(rows), config.colsb[0] = std::uint16_t(4 * columns);
    config.rows[1] = std::uint8_t(rows), config.colsb[1] = std::uint16_t(4 * pairs);
    config.rows[2] = std::uint8_t(pairs), config.colsb[2] = std::uint16_t(4 * columns);
    amx_tiles_model_t model;
    model.configure(config);
    return model;
}

/// tdpbf16ps through the model: load C, A and B from arrays, one instruction, store C.
std::vector<float> model_bf16(std::vector<float> c, std::vector<std::uint16_t> const &a,
                              std::vector<std::uint16_t> const &b, std::size_t rows, std::size_t pairs,
                              std::size_t columns, bool &faulted) {
    amx_tiles_model_t model = model_for(rows, pairs, columns);
    model.load<0>(c.data(), columns * 4);
    model.load<1>(a.data(), pairs * 4);
    model.load<2>(b.data(), columns * 4);
    model.dot_bf16<0, 1, 2>();
    model.store<0>(c.data(), columns * 4);
    faulted = model.faulted();
    return c;
}

/// Random shapes, edges included: the model's tdpbf16ps equals the reference bit for bit.
void test_dot_bf16_random() {
    std::mt19937 random(7);
    bool same = true, faulted = false;
    for (int trial = 0; trial != 400; ++trial) {
        std::size_t const rows = random() % 16 + 1, pairs = random() % 16 + 1, columns = random() % 16 + 1;
        std::vector<std::uint16_t> a(rows * 2 * pairs), b(pairs * 2 * columns);
        bool const wide = trial % 2 == 0; // else no product leaves the normal range
        for (auto &x : a) x = random_bf16(random, wide);
        for (auto &x : b) x = random_bf16(random, wide);
        std::vector<float> c(rows * columns);
        for (auto &x : c) x = trial % 3 == 0 ? 0.0f : bf16(random_bf16(random)) * 3.0f;
        bool fault = false;
        std::vector<float> const got = model_bf16(c, a, b, rows, pairs, columns, fault);
        reference_bf16(c, a, b, rows, pairs, columns);
        faulted = faulted || fault;
        same = same && std::memcmp(got.data(), c.data(), c.size() * 4) == 0;
    }
    check(!faulted, "tdpbf16ps on valid shapes never faults");
    check(same, "tdpbf16ps equals the SDM's reference bit for bit on 400 random shapes");
}

/// One row, one column: the model's tdpbf16ps of the pairs given, accumulated into `c0`.
float dot_pairs(std::vector<float> const &a_values, std::vector<float> const &b_values, float c0) {
    std::vector<std::uint16_t> a, b;
    for (float x : a_values) a.push_back(f32_to_bf16(x));
    for (float x : b_values) b.push_back(f32_to_bf16(x));
    bool fault = false;
    return model_bf16({c0}, a, b, 1, a_values.size() / 2, 1, fault)[0];
}

/// The SDM's order of sums, DAZ on the inputs and FTZ on results, by hand.
void test_dot_bf16_cases() {
    float const big = 16777216.0f; // 2^24: adding 1 to it rounds back (ties to even)
    // Even lane: 2^24 + 1 -> 2^24; odd lane: 1 + 1 = 2; lanes summed: 2^24 + 2. A running sum would give 2^24.
    check(dot_pairs({big, 1, 1, 1}, {1, 1, 1, 1}, 0) == big + 2, "each lane sums its products before the lanes add");
    // The pairs' sum is added to C last: 2^24 + (1 + 1) = 2^24 + 2, not (2^24 + 1) + 1.
    check(dot_pairs({1, 1}, {1, 1}, big) == big + 2, "the accumulator adds the instruction's sum once");
    float const tiny_in = std::ldexp(1.0f, -130); // BF16 subnormal: read as zero
    check(dot_pairs({tiny_in, 0}, {std::ldexp(1.0f, 100), 0}, 0) == 0.0f, "a subnormal BF16 input reads as zero");
    float const small = std::ldexp(1.0f, -70); // 2^-140 product: subnormal, flushed
    check(dot_pairs({small, 0}, {small, 0}, 0) == 0.0f, "a subnormal product's sum flushes to zero");
    float const negative = dot_pairs({-small, 0}, {small, 0}, 0);
    check(negative == 0.0f && std::signbit(negative) == false, "a flushed lane then +0 lanes sum to +0");
    check(dot_pairs({1, 2}, {3, 4}, std::ldexp(1.0f, -127)) == 11.0f, "a subnormal accumulator reads as zero");
    check(std::isnan(dot_pairs({NAN, 0}, {1, 0}, 0)), "a NaN input gives NaN");
}

/// tdpbssd: random bytes (-128 included) and an accumulator near the limits wrap modulo 2^32.
void test_dot_i8() {
    std::mt19937 random(11);
    bool same = true, faulted = false;
    for (int trial = 0; trial != 200; ++trial) {
        std::size_t const rows = random() % 16 + 1, dwords = random() % 16 + 1, columns = random() % 16 + 1;
        std::vector<std::int8_t> a(rows * 4 * dwords), b(dwords * 4 * columns);
        for (auto &x : a) x = std::int8_t(random());
        for (auto &x : b) x = std::int8_t(random());
        std::vector<std::int32_t> c(rows * columns);
        for (auto &x : c) x = trial % 2 ? std::int32_t(random()) : INT32_MAX - std::int32_t(random() % 1000);
        amx_tiles_model_t model = model_for(rows, dwords, columns);
        model.load<0>(c.data(), columns * 4);
        model.load<1>(a.data(), dwords * 4);
        model.load<2>(b.data(), columns * 4);
        model.dot_i8<0, 1, 2>();
        std::vector<std::int32_t> got(c.size());
        model.store<0>(got.data(), columns * 4);
        for (std::size_t m = 0; m != rows; ++m)
            for (std::size_t n = 0; n != columns; ++n) {
                std::int64_t sum = 0;
                for (std::size_t k = 0; k != 4 * dwords; ++k)
                    sum += std::int64_t(a[m * 4 * dwords + k]) * b[(k / 4) * 4 * columns + 4 * n + k % 4];
                auto const wrapped = std::uint32_t(std::uint64_t(std::int64_t(c[m * columns + n]) + sum));
                same = same && std::uint32_t(got[m * columns + n]) == wrapped;
            }
        faulted = faulted || model.faulted();
    }
    check(!faulted, "tdpbssd on valid shapes never faults");
    check(same, "tdpbssd equals the exact sums modulo 2^32 on 200 random shapes");
}

/// Loads read the configured rows and bytes only (the rest zero), stores write them only, and bad use faults.
void test_load_store_faults() {
    amx_tile_config_t config;
    config.rows[3] = 5, config.colsb[3] = 12;
    amx_tiles_model_t model;
    model.load<3>(nullptr, 0);
    check(model.faulted(), "a load before ldtilecfg faults");
    model = {};
    model.configure(config);
    std::vector<std::uint8_t> source(40 * 8), target(40 * 8, 0xAB);
    for (std::size_t i = 0; i != source.size(); ++i) source[i] = std::uint8_t(i + 1);
    model.load<3>(source.data(), 40);
    model.store<3>(target.data(), 40);
    bool rows_ok = true, rest_zero = true;
    for (std::size_t r = 0; r != 8; ++r)
        for (std::size_t i = 0; i != 40; ++i)
            rows_ok = rows_ok && target[r * 40 + i] == (r < 5 && i < 12 ? source[r * 40 + i] : 0xAB);
    for (std::size_t i = 0; i != 1024; ++i)
        rest_zero = rest_zero && (i / 64 < 5 && i % 64 < 12 ? model.bytes(3)[i] != 0 : model.bytes(3)[i] == 0);
    check(rows_ok && !model.faulted(), "a store writes the configured rows and bytes only, stride apart");
    check(rest_zero, "a load leaves the tile zero past its shape");
    model.dot_bf16<3, 3, 3>();
    check(model.faulted(), "a dot product over one tile thrice faults");
    amx_tiles_model_t shapes = model_for(4, 3, 5);
    shapes.dot_bf16<1, 0, 2>();
    check(shapes.faulted(), "a dot product whose shapes disagree faults");
    amx_tile_config_t wide;
    wide.rows[0] = 17, wide.colsb[0] = 64;
    amx_tiles_model_t refused;
    refused.configure(wide);
    check(refused.faulted(), "a configuration past 16 rows faults");
}

} // namespace

int main() {
    test_dot_bf16_random();
    test_dot_bf16_cases();
    test_dot_i8();
    test_load_store_faults();
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
