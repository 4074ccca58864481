// Unit tests of the RAM residency's compute core (cpp/): scalar conversions, E4M3 blocks, the GEMM of every
// CPU class against a naive loop, and the text forward on tests/data/tiny.safetensors: packed batches against items
// one by one, the serial class against the dispatched one, E4M3 against BF16, and the PyTorch goldens of
// tests/data/goldens/ under docs/model.md's "How agreement is measured".
//
// Prints "N passed, M failed" and exits nonzero on a failure. Reads $UFORM_TEST_DATA (default tests/data, from the
// repository root). Build: every .cpp of cpp/ and cpp/kernels/, common/checkpoint.cpp and common/json.cpp, and
// NumKong's objects with the defines the RAM build gives them:
//   clang++-22 -std=c++23 -O2 -Iinclude -I. -isystem <numkong>/include <NK_* defines> tests/unit/forward_test.cpp
//       <those sources> <numkong objects> -lpthread
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#if !defined(__wasi__)
#include <thread>
#endif
#include <utility>
#include <vector>

#include "common/checkpoint.hpp"
#include "common/json.hpp"
#include "cpp/forward.hpp"
#include "cpp/kernels/amx_product.hpp"
#include "cpp/kernels/cpu_class.hpp"
#include "cpp/kernels/e4m3.hpp"
#include "cpp/kernels/int8.hpp"
#include "cpp/kernels/gemm.hpp"
#include "common/scalars.hpp"
#include "cpp/linear.hpp"
#include "cpp/mapped_file.hpp"
#include "cpp/weights.hpp"

namespace {

using namespace uform;
using namespace uform::ram;

int passed = 0, failed = 0;

/// Counts one assertion, printing it when it fails.
void check(bool ok, std::string const &what, int line) {
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    std::printf("FAILED (line %d): %s\n", line, what.c_str());
}

#define CHECK(cond) check((cond), #cond, __LINE__)
#define CHECK_LABEL(cond, label) check((cond), std::string(label) + ": " #cond, __LINE__)

/// The test data folder.
std::string data_dir() {
    char const *dir = std::getenv("UFORM_TEST_DATA");
    return dir != nullptr && *dir != 0 ? dir : "tests/data";
}

// region: a two-thread parallel_for, as the executor's ForkUnion pool will provide

/// Runs tasks on the calling thread and one helper, pulling indices from a shared counter. WASI has no threads: there
/// the calling thread runs the tasks in turn as worker 0 and worker 1, so each worker's scratch is still used.
void two_threads(void *, std::size_t count, void *fn_context, task_fn_t fn) noexcept {
#if defined(__wasi__)
    for (std::size_t task = 0; task != count; ++task) fn(fn_context, task, task % 2);
#else
    std::atomic<std::size_t> next{0};
    auto work = [&](std::size_t thread) {
        for (std::size_t task; (task = next.fetch_add(1)) < count;) fn(fn_context, task, thread);
    };
    std::thread helper(work, 1);
    work(0);
    helper.join();
#endif
}

parallel_t const serial_parallel{};
parallel_t const pair_parallel{2, nullptr, two_threads};

// region: comparisons

/// Cosine of two vectors, in F64; 1 when both are zero.
double cosine(float const *a, float const *b, std::size_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i != n; ++i)
        ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
    if (aa == 0 && bb == 0) return 1;
    return ab / std::sqrt(aa * bb);
}

/// The agreement of two blocks of rows: worst row cosine, relative Frobenius error, max abs difference.
struct agreement_t {
    double worst_cosine = 1, relative_frobenius = 0, max_abs = 0;
};

agreement_t agree(float const *a, std::size_t a_stride, float const *b, std::size_t b_stride, std::size_t rows,
                  std::size_t columns) {
    agreement_t result;
    double difference = 0, reference = 0;
    for (std::size_t r = 0; r != rows; ++r) {
        float const *x = a + r * a_stride, *y = b + r * b_stride;
        result.worst_cosine = std::min(result.worst_cosine, cosine(x, y, columns));
        for (std::size_t c = 0; c != columns; ++c) {
            double const d = double(x[c]) - y[c];
            difference += d * d;
            reference += double(y[c]) * y[c];
            result.max_abs = std::max(result.max_abs, std::fabs(d));
        }
    }
    result.relative_frobenius = reference == 0 ? std::sqrt(difference) : std::sqrt(difference / reference);
    return result;
}

// region: scalar conversions and E4M3 blocks

/// BF16 rounding to nearest even, and E4M3 bytes as torch.float8_e4m3fn computes them.
void test_scalars() {
    CHECK(round_bf16(1.0f) == 1.0f);
    CHECK(round_bf16(1.0f + 0x1p-8f) == 1.0f);                      // tie to even (down)
    CHECK(round_bf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);        // tie to even (up)
    CHECK(round_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f); // above the tie
    CHECK(std::isnan(round_bf16(std::nanf(""))));
    CHECK(round_bf16(-0.0f) == 0.0f && std::signbit(round_bf16(-0.0f)));

    CHECK(f32_to_e4m3(1.0f) == 0x38);
    CHECK(f32_to_e4m3(-2.0f) == 0xC0);
    CHECK(f32_to_e4m3(0.1f) == 0x1D); // 1.625 * 2^-4
    CHECK(f32_to_e4m3(448.0f) == 0x7E);
    CHECK(f32_to_e4m3(460.0f) == 0x7E);  // rounds down to 448
    CHECK(f32_to_e4m3(1000.0f) == 0x7E); // saturates
    CHECK(f32_to_e4m3(-1000.0f) == 0xFE);
    CHECK(f32_to_e4m3(0x1p-9f) == 0x01);      // the smallest subnormal
    CHECK(f32_to_e4m3(0x1p-10f) == 0x00);     // tie to even: 0
    CHECK(f32_to_e4m3(3 * 0x1p-10f) == 0x02); // tie to even: 2 * 2^-9
    CHECK(f32_to_e4m3(-0.0f) == 0x80);
    CHECK(f32_to_e4m3(1.0625f) == 0x38); // tie between 1 and 1.125: even
    CHECK(f32_to_e4m3(1.1875f) == 0x3A); // tie between 1.125 and 1.25: even
    bool round_trip = true, decode_matches = true;
    for (int byte = 0; byte != 256; ++byte) {
        if ((byte & 0x7F) == 0x7F) continue; // NaN
        float const value = e4m3_to_f32(static_cast<std::uint8_t>(byte));
        round_trip &= f32_to_e4m3(value) == byte;
        // Cross-check the decoder: the FP16 bits (b & 0x80) << 8 | (b & 0x7F) << 7, times 256 (docs/model.md's trick).
        std::uint16_t const half = static_cast<std::uint16_t>((byte & 0x80) << 8 | (byte & 0x7F) << 7);
        int const exponent = (half >> 10) & 0x1F, mantissa = half & 0x3FF;
        double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
        decode_matches &= value == static_cast<float>((half & 0x8000 ? -magnitude : magnitude) * 256);
    }
    CHECK(round_trip);
    CHECK(decode_matches);

    // Two 128-column blocks on one row block: scales from each block's amax; a zero block has scale 1.
    std::vector<std::uint16_t> weights(3 * 200, f32_to_bf16(0));
    weights[0] = f32_to_bf16(-2.0f), weights[5] = f32_to_bf16(0.5f), weights[200 + 7] = f32_to_bf16(1.0f);
    std::vector<std::uint8_t> bytes(3 * 200);
    std::vector<float> scales(2);
    quantize_e4m3_blocks(weights.data(), 3, 200, 200, bytes.data(), scales.data());
    CHECK(scales[0] == 2.0f / 448.0f);
    CHECK(scales[1] == 1.0f);
    CHECK(bytes[0] == 0xFE);                                      // -448
    CHECK(bytes[5] == f32_to_e4m3(0.5f / (2.0f / 448.0f)));       // 112
    CHECK(bytes[200 + 7] == f32_to_e4m3(1.0f / (2.0f / 448.0f))); // 224
    CHECK(bytes[150] == 0);
}

// region: the GEMM of every class against a naive loop

/// The CPU classes this machine can run, serial first.
std::vector<uform_cpu_class_t> available_classes() {
    std::vector<uform_cpu_class_t> classes{uform_cpu_class_serial_k};
    for (uform_cpu_class_t c :
         {uform_cpu_class_intel_haswell_k, uform_cpu_class_intel_skylake_k, uform_cpu_class_arm_neon_k,
          uform_cpu_class_arm_sve_k, uform_cpu_class_arm_sve2_k, uform_cpu_class_wasm_simd128_k})
        if (cpu_class_available(c)) classes.push_back(c);
    return classes;
}

/// Multiplies `rows` rows of A (`lda` apart) by BF16 `W[columns x depth]` into C (`ldc` apart).
using product_t =
    std::function<void(float const *a, std::size_t lda, std::size_t rows, std::uint16_t const *w, std::size_t columns,
                       std::size_t depth, float *c, std::size_t ldc, unsigned flags)>;

/// One product of given shape and flags against an F64 loop over the BF16-rounded inputs.
void check_product(product_t const &product, std::string const &name, std::size_t rows, std::size_t depth,
                   std::size_t columns, unsigned flags, std::mt19937 &random, bool aliasing = false) {
    std::normal_distribution<float> normal;
    // C rows a multiple of 1 KiB apart take the F32 driver's contiguous-tile path; others are written in place.
    std::size_t const lda = depth + 3, ldc = aliasing ? (columns + 255) / 256 * 256 + 256 : columns + 5;
    std::vector<float> a(rows * lda), c(rows * ldc), initial(rows * ldc);
    std::vector<std::uint16_t> w(columns * depth);
    for (float &value : a) value = normal(random);
    for (std::uint16_t &value : w) value = f32_to_bf16(normal(random));
    for (float &value : initial) value = normal(random);
    c = initial;
    product(a.data(), lda, rows, w.data(), columns, depth, c.data(), ldc, flags);
    double worst = 0;
    for (std::size_t r = 0; r != rows; ++r)
        for (std::size_t n = 0; n != columns; ++n) {
            double sum = 0, magnitude = 0;
            for (std::size_t k = 0; k != depth; ++k) {
                double const product = double(round_bf16(a[r * lda + k])) * bf16_to_f32(w[n * depth + k]);
                sum += product;
                magnitude += std::fabs(product);
            }
            if (flags & gemm_accumulate_k) sum += initial[r * ldc + n], magnitude += std::fabs(initial[r * ldc + n]);
            double const tolerance =
                (flags & gemm_round_output_k) ? 0x1p-8 * std::fabs(sum) + 1e-5 * magnitude : 1e-5 * magnitude + 1e-30;
            worst = std::max(worst, std::fabs(c[r * ldc + n] - sum) / tolerance);
        }
    bool untouched = true; // the padding columns of C stay as they were
    for (std::size_t r = 0; r != rows; ++r)
        for (std::size_t n = columns; n != ldc; ++n) untouched &= c[r * ldc + n] == initial[r * ldc + n];
    char label[160];
    std::snprintf(label, sizeof label, "%s %zux%zux%zu ldc %zu flags %u (worst/tolerance %.3g)", name.c_str(), rows,
                  depth, columns, ldc, flags, worst);
    CHECK_LABEL(worst <= 1, label);
    CHECK_LABEL(untouched, label);
}

/// The F32 driver of `kernels` on `parallel`'s threads.
product_t f32_product(kernels_t const &kernels, parallel_t const &parallel) {
    return [&kernels, &parallel](float const *a, std::size_t lda, std::size_t rows, std::uint16_t const *w,
                                 std::size_t columns, std::size_t depth, float *c, std::size_t ldc, unsigned flags) {
        packed_matrix_t packed;
        CHECK(pack_bf16(w, columns, depth, depth, packed));
        std::vector<float> scratch(std::max<std::size_t>(parallel.threads, 1) * gemm_scratch_floats(depth));
        gemm(kernels, parallel, a, lda, rows, packed.view(), c, ldc, flags, scratch.data());
    };
}

/// A linear's BF16 pair panels on `tiled`, kernels on AMX tiles (the hardware's or the model's), on `parallel`'s
/// threads.
product_t tile_product(kernels_t const &tiled, parallel_t const &parallel) {
    return [&tiled, &parallel](float const *a, std::size_t lda, std::size_t rows, std::uint16_t const *w,
                               std::size_t columns, std::size_t depth, float *c, std::size_t ldc, unsigned flags) {
        linear_t linear;
        CHECK(linear.pairs.pack(tiled, parallel, w, columns, depth));
        std::vector<float> scratch(std::max<std::size_t>(parallel.threads, 1) * linear.scratch_floats());
        linear.multiply(tiled, parallel, a, lda, rows, c, ldc, flags, scratch.data());
    };
}

/// The kernel tables on AMX tiles this machine has: the model's everywhere, the hardware's where granted.
std::vector<std::pair<std::string, kernels_t const *>> tiled_tables() {
    std::vector<std::pair<std::string, kernels_t const *>> tables;
    if (kernels_t const *model = kernels_on_tiles(tiles_t::model)) tables.emplace_back("AMX tile model", model);
    if (kernels_t const *hardware = kernels_on_tiles(tiles_t::hardware)) tables.emplace_back("AMX", hardware);
    return tables;
}

/// Edge shapes (partial micro tiles and panels, depth blocks), every flag, one and two threads.
void test_gemm() {
    std::mt19937 random(7);
    std::vector<std::pair<std::string, product_t>> paths;
    for (uform_cpu_class_t cpu_class : available_classes()) {
        std::string const name = "F32 class " + std::to_string(cpu_class);
        paths.emplace_back(name, f32_product(*kernels_for(cpu_class), serial_parallel));
        paths.emplace_back(name + " on 2 threads", f32_product(*kernels_for(cpu_class), pair_parallel));
    }
    for (auto const &[name, tiled] : tiled_tables()) {
        paths.emplace_back(name, tile_product(*tiled, serial_parallel));
        paths.emplace_back(name + " on 2 threads", tile_product(*tiled, pair_parallel));
    }
    for (auto const &[name, product] : paths) {
        for (std::size_t rows : {1, 5, 6, 7, 13, 300})
            for (std::size_t depth : {1, 17, 128, 129, 300})
                for (std::size_t columns : {1, 15, 33, 64, 65, 130}) {
                    unsigned const flags = static_cast<unsigned>((rows + depth + columns) % 4);
                    check_product(product, name, rows, depth, columns, flags, random);
                    check_product(product, name, rows, depth, columns, flags ^ 3u, random, true);
                }
        check_product(product, name, 517, 256, 700, 0, random);
        check_product(product, name, 40, 1536, 200, gemm_accumulate_k, random);
        check_product(product, name, 300, 300, 700, gemm_accumulate_k | gemm_round_output_k, random, true);
        // Few rows across several AMX slices: threads split the columns.
        check_product(product, name, 7, 129, 600, gemm_accumulate_k, random);
        check_product(product, name, 40, 64, 530, 0, random, true);
        check_product(product, name, 1, 300, 520, gemm_round_output_k, random);
    }
    // Every class sums in the same order over exact products: identical bits.
    std::size_t const rows = 50, depth = 300, columns = 130;
    std::vector<float> a(rows * depth);
    std::vector<std::uint16_t> w(columns * depth);
    std::normal_distribution<float> normal;
    for (float &value : a) value = normal(random);
    for (std::uint16_t &value : w) value = f32_to_bf16(normal(random));
    packed_matrix_t packed;
    CHECK(pack_bf16(w.data(), columns, depth, depth, packed));
    std::vector<float> scratch(gemm_scratch_floats(depth)), expected(rows * columns), c(rows * columns);
    gemm(kernels_serial(), serial_parallel, a.data(), depth, rows, packed.view(), expected.data(), columns, 0,
         scratch.data());
    for (uform_cpu_class_t cpu_class : available_classes()) {
        gemm(*kernels_for(cpu_class), serial_parallel, a.data(), depth, rows, packed.view(), c.data(), columns, 0,
             scratch.data());
        CHECK_LABEL(c == expected, "class " + std::to_string(cpu_class) + " equals serial bit for bit");
    }
}

// region: BF16 and E4M3 pair products

/// The classes this machine runs that have a BF16 pair micro-kernel.
std::vector<uform_cpu_class_t> pair_classes() {
    std::vector<uform_cpu_class_t> classes;
    for (uform_cpu_class_t c : {uform_cpu_class_amd_genoa_k, uform_cpu_class_amd_turin_k})
        if (cpu_class_available(c) && kernels_for(c)->gemm_micro_pairs != nullptr) classes.push_back(c);
    return classes;
}

/// Every pair of E4M3 bytes at several scales: each class's dequantization equals the portable one bit for bit, and
/// that one is `e4m3_to_f32(b) * s` rounded to BF16.
void test_e4m3_dequantization() {
    std::vector<std::uint8_t> bytes(2 * 65536 + 6);
    for (std::size_t i = 0; i != 65536; ++i) bytes[2 * i] = std::uint8_t(i), bytes[2 * i + 1] = std::uint8_t(i >> 8);
    for (float scale : {1.0f, 2.0f / 448.0f, 3.1e-5f, -0.75f}) {
        std::vector<std::uint32_t> expected(65539), words(65539);
        dequantize_e4m3_pairs_serial(bytes.data(), scale, expected.data(), expected.size());
        bool exact = true;
        for (std::size_t i = 0; i != 65536; ++i)
            exact &= expected[i] == (f32_to_bf16(e4m3_to_f32(bytes[2 * i]) * scale) |
                                     std::uint32_t(f32_to_bf16(e4m3_to_f32(bytes[2 * i + 1]) * scale)) << 16);
        CHECK(exact);
        for (uform_cpu_class_t cpu_class : pair_classes()) {
            kernels_for(cpu_class)->dequantize_e4m3_pairs(bytes.data(), scale, words.data(), words.size());
            CHECK_LABEL(words == expected, "class " + std::to_string(cpu_class) + " scale " + std::to_string(scale));
        }
    }
}

/// One pair product on `kernels`: `rows` rows of A by the linear `w` packed as it is (BF16 pairs, or E4M3 bytes).
std::vector<float> pair_product(kernels_t const &kernels, parallel_t const &parallel, linear_t const &linear,
                                std::vector<float> const &a, std::size_t rows, std::size_t depth, std::size_t columns,
                                unsigned flags, std::vector<float> c) {
    std::vector<float> scratch(std::max<std::size_t>(parallel.threads, 1) * linear.scratch_floats());
    linear.multiply(kernels, parallel, a.data(), depth, rows, c.data(), columns, flags, scratch.data());
    return c;
}

/// E4M3 weights in pair panels against BF16 pairs over `q * s` rounded: the same words reach the same kernel, so the
/// same bits; a product of a few rows against its rows one at a time (tiles of 6 rows against tiles of 1).
void test_pair_products() {
    std::mt19937 random(11);
    std::normal_distribution<float> normal;
    std::printf("  pair products on %zu classes\n", pair_classes().size());
    for (uform_cpu_class_t cpu_class : pair_classes()) {
        kernels_t const &kernels = *kernels_for(cpu_class);
        for (std::size_t rows : {1, 6, 7, 17, 24, 25, 130})
            for (std::size_t depth : {1, 17, 129, 300, 1536})
                for (std::size_t columns : {1, 65, 130, 300}) {
                    unsigned const flags = static_cast<unsigned>((rows + depth + columns) % 4);
                    std::vector<std::uint16_t> w(columns * depth);
                    for (std::uint16_t &value : w) value = f32_to_bf16(normal(random) * 0.05f);
                    std::vector<std::uint8_t> bytes(columns * depth);
                    std::vector<float> scales(e4m3_blocks(columns) * e4m3_blocks(depth));
                    quantize_e4m3_blocks(w.data(), columns, depth, depth, bytes.data(), scales.data());
                    std::vector<std::uint16_t> dequantized(columns * depth);
                    for (std::size_t n = 0; n != columns; ++n)
                        for (std::size_t k = 0; k != depth; ++k)
                            dequantized[n * depth + k] =
                                f32_to_bf16(e4m3_to_f32(bytes[n * depth + k]) *
                                            scales[n / e4m3_block_k * e4m3_blocks(depth) + k / e4m3_block_k]);
                    linear_t bf16, e4m3;
                    CHECK(bf16.pairs.pack(kernels, serial_parallel, dequantized.data(), columns, depth));
                    CHECK(e4m3.e4m3.pack(bytes.data(), scales.data(), columns, depth));
                    std::vector<float> a(rows * depth), c(rows * columns);
                    for (float &value : a) value = normal(random);
                    for (float &value : c) value = normal(random);
                    std::vector<float> const expected =
                        pair_product(kernels, serial_parallel, bf16, a, rows, depth, columns, flags, c);
                    char label[120];
                    std::snprintf(label, sizeof label, "class %d %zux%zux%zu flags %u", int(cpu_class), rows, depth,
                                  columns, flags);
                    for (parallel_t const *parallel : {&serial_parallel, &pair_parallel})
                        CHECK_LABEL(pair_product(kernels, *parallel, e4m3, a, rows, depth, columns, flags, c) ==
                                        expected,
                                    std::string("E4M3 pairs equal BF16 pairs, ") + label);
                    bool rows_agree = true;
                    for (std::size_t r = 0; r != rows && rows <= 25; ++r) {
                        std::vector<float> const row(a.begin() + r * depth, a.begin() + (r + 1) * depth);
                        std::vector<float> const alone(c.begin() + r * columns, c.begin() + (r + 1) * columns);
                        rows_agree &= std::equal(
                            expected.begin() + r * columns, expected.begin() + (r + 1) * columns,
                            pair_product(kernels, serial_parallel, bf16, row, 1, depth, columns, flags, alone).begin());
                    }
                    CHECK_LABEL(rows_agree, std::string("rows in tiles equal rows one at a time, ") + label);
                }
    }
}

// region: int8 products

/// Every class the machine can dispatch as, for the int8 products (each class's own kernels).
std::vector<uform_cpu_class_t> int8_classes() {
    std::vector<uform_cpu_class_t> classes;
    for (uform_cpu_class_t c :
         {uform_cpu_class_serial_k, uform_cpu_class_intel_haswell_k, uform_cpu_class_intel_skylake_k,
          uform_cpu_class_intel_icelake_k, uform_cpu_class_intel_sapphire_rapids_k, uform_cpu_class_amd_genoa_k,
          uform_cpu_class_amd_turin_k, uform_cpu_class_arm_neon_k, uform_cpu_class_arm_sve_k,
          uform_cpu_class_arm_sve2_k, uform_cpu_class_wasm_simd128_k})
        if (c == uform_cpu_class_serial_k || cpu_class_available(c)) classes.push_back(c);
    return classes;
}

/// Block quantization: the scale is the block's max / 127, values round to nearest even, a zero block scales by 1.
void test_int8_blocks() {
    std::vector<std::uint16_t> w(2 * 130, 0); // 2 x 130: the second depth block holds 2 columns
    w[0] = f32_to_bf16(0.5f), w[1] = f32_to_bf16(-1.0f), w[2] = f32_to_bf16(0.25f), w[130 + 3] = f32_to_bf16(0.125f);
    std::int8_t block[i8_block_k * i8_block_k];
    float const scale = quantize_i8_block(reinterpret_cast<std::byte const *>(w.data()), 2, 130, 0, 0, block);
    CHECK(scale == 1.0f / 127.0f);
    CHECK(block[0] == 64);   // 63.5 rounds to even
    CHECK(block[1] == -127); // the maximum
    CHECK(block[2] == 32);   // 31.75
    CHECK(block[i8_block_k + 3] == 16);
    CHECK(quantize_i8_block(reinterpret_cast<std::byte const *>(w.data()), 2, 130, 0, 128, block) == 1.0f);
    CHECK(block[0] == 0 && block[1] == 0 && block[i8_block_k] == 0);
}

/// Row quantization per block of 128 depths on every class, each equal to the serial class's bytes and scales: a
/// block of small values beside an outlier keeps its own precision, a zero block scales by 0 (bytes 128), and a row
/// holding a NaN or an infinity has every scale NaN and every byte 128.
void test_int8_rows() {
    std::size_t const depth = 299, padded = 300, blocks = 3; // the third block holds 43 depths, all zero
    std::vector<float> x(depth, 0.0f);
    std::mt19937 random(5);
    std::normal_distribution<float> normal(0.0f, 0.005f);
    for (std::size_t k = 0; k != 256; ++k) x[k] = std::clamp(normal(random), -0.015f, 0.015f);
    x[3] = 1000.0f, x[128] = 0x1p-6f, x[129] = -0x1p-7f; // 127 / 2^-6 is exact: x[129] scales to -63.5
    std::vector<std::uint8_t> expected_bytes(padded);
    std::vector<float> expected_scales(blocks);
    quantize_i8_serial(x.data(), depth, padded, expected_bytes.data(), expected_scales.data());
    CHECK(expected_scales[0] == 1000.0f / 127.0f && expected_scales[1] == 0x1p-6f / 127.0f && expected_scales[2] == 0);
    CHECK(expected_bytes[3] == 255 && expected_bytes[128] == 255 && expected_bytes[129] == 64); // -63.5 to even
    bool precise = true, zero = true;
    for (std::size_t k = 128; k != 256; ++k) // within half a step of 2^-6 / 127, where one row scale keeps only 0
        precise &= std::fabs((expected_bytes[k] - 128) * double(expected_scales[1]) - x[k]) <= 0x1p-6 / 254 * 1.0001;
    for (std::size_t k = 256; k != padded; ++k) zero &= expected_bytes[k] == 128;
    CHECK_LABEL(precise, "the small block keeps its precision beside the outlier");
    CHECK_LABEL(zero, "the zero block and the padding are 128");
    for (uform_cpu_class_t cpu_class : int8_classes()) {
        std::vector<std::uint8_t> bytes(padded);
        std::vector<float> scales(blocks);
        kernels_for(cpu_class)->quantize_i8(x.data(), depth, padded, bytes.data(), scales.data());
        CHECK_LABEL(bytes == expected_bytes && scales == expected_scales,
                    "row quantization equals serial in class " + std::to_string(cpu_class));
    }
    for (float bad : {NAN, INFINITY}) {
        std::vector<float> row = x;
        row[200] = bad;
        for (uform_cpu_class_t cpu_class : int8_classes()) {
            std::vector<std::uint8_t> bytes(padded, 0);
            std::vector<float> scales(blocks, 0.0f);
            kernels_for(cpu_class)->quantize_i8(row.data(), depth, padded, bytes.data(), scales.data());
            bool ok = std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 128; });
            for (float scale : scales) ok &= std::isnan(scale);
            CHECK_LABEL(ok, "a non-finite row has NaN scales and bytes 128 in class " + std::to_string(cpu_class));
        }
    }
}

/// The int8 products' kernel tables: every class's, and those on AMX tiles (`tiled_tables`).
std::vector<std::pair<std::string, kernels_t const *>> int8_tables() {
    std::vector<std::pair<std::string, kernels_t const *>> tables = tiled_tables();
    for (uform_cpu_class_t cpu_class : int8_classes())
        tables.emplace_back("class " + std::to_string(cpu_class), kernels_for(cpu_class));
    return tables;
}

/// One int8 product on every class (and on AMX tiles) and one and two threads: each equals the serial class's bits, and
/// the serial class stays within the quantization's bound of the exact F64 product of the unquantized inputs.
void check_int8_product(std::size_t rows, std::size_t depth, std::size_t columns, unsigned flags,
                        std::mt19937 &random) {
    std::normal_distribution<float> normal;
    std::size_t const lda = depth + 3, ldc = columns + 5;
    std::vector<float> a(rows * lda), initial(rows * ldc);
    std::vector<std::uint16_t> w(columns * depth);
    // Odd depth blocks 64 times smaller than even ones, so that a row's block scales differ.
    for (std::size_t i = 0; i != a.size(); ++i) a[i] = std::ldexp(normal(random), (i % lda) / i8_block_k % 2 ? -6 : 0);
    for (std::uint16_t &value : w) value = f32_to_bf16(normal(random));
    for (float &value : initial) value = normal(random);
    if (rows > 2) std::fill(a.begin() + lda, a.begin() + 2 * lda, 0.0f); // a zero row
    linear_t linear;
    CHECK(linear.blocks.pack(serial_parallel, reinterpret_cast<std::byte const *>(w.data()), columns, depth));
    auto run = [&](kernels_t const &kernels, parallel_t const &parallel) {
        std::vector<float> c = initial;
        std::vector<float> scratch(std::max<std::size_t>(parallel.threads, 1) * linear.scratch_floats());
        linear.multiply(kernels, parallel, a.data(), lda, rows, c.data(), ldc, flags, scratch.data());
        return c;
    };
    std::vector<float> const expected = run(kernels_serial(), serial_parallel);
    char label[160];
    std::snprintf(label, sizeof label, "int8 %zux%zux%zu flags %u", rows, depth, columns, flags);
    for (auto const &[name, kernels] : int8_tables())
        for (parallel_t const *parallel : {&serial_parallel, &pair_parallel}) {
            std::vector<float> const c = run(*kernels, *parallel);
            CHECK_LABEL(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)) == 0,
                        std::string(label) + " " + name + " threads " + std::to_string(parallel->threads) +
                            " equals serial bit for bit");
        }
    double worst = 0, w_max = 0; // the largest weight bounds every block's scale
    for (std::uint16_t bits : w) w_max = std::max(w_max, double(std::fabs(bf16_to_f32(bits))));
    bool untouched = true;
    for (std::size_t r = 0; r != rows; ++r) {
        std::vector<double> a_max((depth + i8_block_k - 1) / i8_block_k, 0.0); // each depth block's scale * 127
        for (std::size_t k = 0; k != depth; ++k)
            a_max[k / i8_block_k] = std::max(a_max[k / i8_block_k], double(std::fabs(a[r * lda + k])));
        for (std::size_t n = 0; n != columns; ++n) {
            double sum = 0, magnitude = 0, tolerance = 1e-30;
            for (std::size_t k = 0; k != depth; ++k) {
                double const weight = bf16_to_f32(w[n * depth + k]), value = a[r * lda + k];
                double const block_max = a_max[k / i8_block_k];
                sum += value * weight, magnitude += std::fabs(value * weight);
                // Each value moves by at most half a step of its block's scale (max / 127).
                tolerance += (block_max * std::fabs(weight) + w_max * std::fabs(value) + block_max * w_max / 254) / 254;
            }
            double const initial_value = initial[r * ldc + n];
            if (flags & gemm_accumulate_k) sum += initial_value, magnitude += std::fabs(initial_value);
            tolerance += 1e-5 * magnitude;
            if (flags & gemm_round_output_k) tolerance += 0x1p-8 * std::fabs(sum);
            worst = std::max(worst, std::fabs(expected[r * ldc + n] - sum) / tolerance);
        }
        for (std::size_t n = columns; n != ldc; ++n) untouched &= expected[r * ldc + n] == initial[r * ldc + n];
    }
    std::snprintf(label, sizeof label, "int8 %zux%zux%zu flags %u (worst/tolerance %.3g)", rows, depth, columns, flags,
                  worst);
    CHECK_LABEL(worst <= 1, label);
    CHECK_LABEL(untouched, label);
}

/// Edge shapes of the int8 products (partial tiles, panels, groups of 4 and blocks of 128), and a row holding a
/// NaN or an infinity, which makes its results NaN (so the forward answers `corrupt`) and leaves the others finite.
void test_int8() {
    test_int8_blocks();
    test_int8_rows();
    std::mt19937 random(11);
    for (std::size_t rows : {1, 5, 6, 7, 13, 300})
        for (std::size_t depth : {1, 17, 128, 129, 300})
            for (std::size_t columns : {1, 15, 33, 64, 65, 130})
                check_int8_product(rows, depth, columns, static_cast<unsigned>((rows + depth + columns) % 4), random);
    check_int8_product(40, 1536, 200, gemm_accumulate_k, random);
    for (float bad : {NAN, INFINITY}) {
        std::size_t const depth = 200, columns = 70;
        std::vector<float> a(3 * depth, 0.5f), c(3 * columns, 0.0f);
        a[depth + 7] = bad;
        std::vector<std::uint16_t> w(columns * depth, f32_to_bf16(0.25f));
        linear_t linear;
        CHECK(linear.blocks.pack(serial_parallel, reinterpret_cast<std::byte const *>(w.data()), columns, depth));
        std::vector<float> scratch(linear.scratch_floats());
        for (uform_cpu_class_t cpu_class : int8_classes()) {
            linear.multiply(*kernels_for(cpu_class), serial_parallel, a.data(), depth, 3, c.data(), columns, 0,
                            scratch.data());
            bool ok = true;
            for (std::size_t n = 0; n != columns; ++n)
                ok &= std::isnan(c[columns + n]) && std::isfinite(c[n]) && std::isfinite(c[2 * columns + n]);
            CHECK_LABEL(ok, "a non-finite row gives NaN results in class " + std::to_string(cpu_class));
        }
    }
}

// region: the model

/// A loaded model: the checkpoint's header, its mapping, the weights.
struct model_t {
    checkpoint_t checkpoint;
    mapped_file_t file;
    model_weights_t weights;
    bool ok = false;
};

/// Loads tiny.safetensors as `cpu_class`, its trunk in BF16, E4M3 or int8; with `tiles` the model's, its products on
/// the AMX tiles' software model.
void load(model_t &model, uform_cpu_class_t cpu_class, uform_scalar_t quantization,
          parallel_t const &parallel = serial_parallel, tiles_t tiles = tiles_t::hardware) {
    std::string const path = data_dir() + "/tiny.safetensors";
    char const *message = nullptr;
    uform_status_t status = checkpoint_read_file(path.data(), path.size(), model.checkpoint, &message);
    CHECK_LABEL(status == uform_status_ok_k, message ? message : "checkpoint_read_file");
    if (status != uform_status_ok_k) return;
    status = model.file.open(path.data(), path.size(), &message);
    CHECK_LABEL(status == uform_status_ok_k, message ? message : "mapped_file_t::open");
    if (status != uform_status_ok_k) return;
    weights_options_t options;
    options.cpu_class = cpu_class;
    options.quantization = quantization;
    options.parallel = parallel;
    options.tiles = tiles;
    options.file = &model.file;
    status = weights_load(model.checkpoint, model.file.bytes(), options, model.weights, &message);
    CHECK_LABEL(status == uform_status_ok_k, message ? message : "weights_load");
    model.ok = status == uform_status_ok_k;
}

/// Texts and their packed tape.
struct texts_t {
    std::vector<std::uint8_t> bytes;
    std::vector<std::size_t> offsets{0};

    void add(std::string_view text) {
        bytes.insert(bytes.end(), text.begin(), text.end());
        offsets.push_back(bytes.size());
    }
    std::size_t count() const { return offsets.size() - 1; }
    token_batch_t batch(bool choose) const { return {bytes.data(), offsets.data(), count(), choose}; }
};

/// Every surface of one forward, as F32 rows.
struct encoded_t {
    std::vector<float> states, token_vectors, embeddings, logits;
    std::size_t tokens = 0;
    uform_status_t status = uform_status_internal_k;
};

/// Runs the forward with every surface the model has (logits only when `choose`).
encoded_t encode(model_weights_t const &weights, token_batch_t const &batch, scratch_t &scratch,
                 parallel_t const &parallel = serial_parallel, bool all = true) {
    geometry_t const &geometry = weights.geometry;
    encoded_t encoded;
    encoded.tokens = token_row_offset(batch, batch.count);
    encoded.states.assign(encoded.tokens * geometry.hidden, NAN);
    encoded.token_vectors.assign(encoded.tokens * geometry.token_width, NAN);
    encoded.embeddings.assign(batch.count * geometry.dimensions, NAN);
    encoded.logits.assign(batch.count * 256, NAN);
    trunk_outputs_t outputs;
    outputs.states = encoded.states.data(), outputs.states_stride = geometry.hidden;
    outputs.embeddings = encoded.embeddings.data(), outputs.embeddings_stride = geometry.dimensions;
    if (all) outputs.token_vectors = encoded.token_vectors.data(), outputs.token_vectors_stride = geometry.token_width;
    if (batch.append_choose) outputs.choose_logits = encoded.logits.data(), outputs.choose_logits_stride = 256;
    forward_hooks_t hooks;
    hooks.parallel = parallel;
    char const *message = nullptr;
    encoded.status = trunk_forward(weights, batch, outputs, scratch, hooks, &message);
    if (encoded.status != uform_status_ok_k) std::printf("trunk_forward: %s\n", message ? message : "?");
    return encoded;
}

/// Deterministic printable text of `length` bytes.
std::string lcg_text(std::size_t length, std::uint64_t seed) {
    std::string text(length, ' ');
    for (char &c : text) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        c = static_cast<char>(32 + (seed >> 33) % 95);
    }
    return text;
}

/// Empty, one byte, and up to 2 KiB, with UTF-8.
texts_t varied_texts() {
    texts_t texts;
    texts.add("");
    texts.add("x");
    texts.add("a cat on a mat");
    texts.add("Gr\xC3\xB6\xC3\x9F"
              "e: \xE5\xA4\xA7\xE3\x81\x8D\xE3\x81\x84\xE7\x8C\xAB \xF0\x9F\x90\x88 na\xC3\xAFve");
    texts.add("");
    texts.add(lcg_text(63, 1));
    texts.add(lcg_text(300, 2));
    texts.add(lcg_text(2048, 3));
    texts.add(lcg_text(700, 4));
    return texts;
}

/// A packed batch equals its items one by one within 1e-3, on one and on two threads.
void test_batch_equals_items(model_weights_t const &weights) {
    texts_t const texts = varied_texts();
    geometry_t const &geometry = weights.geometry;
    scratch_t scratch;
    for (bool choose : {false, true}) {
        encoded_t const packed = encode(weights, texts.batch(choose), scratch, pair_parallel);
        CHECK(packed.status == uform_status_ok_k);
        double states = 0, vectors = 0, embeddings = 0, logits = 0;
        for (std::size_t i = 0; i != texts.count(); ++i) {
            texts_t one;
            one.add(std::string_view(reinterpret_cast<char const *>(texts.bytes.data()) + texts.offsets[i],
                                     texts.offsets[i + 1] - texts.offsets[i]));
            encoded_t const alone = encode(weights, one.batch(choose), scratch);
            std::size_t const row = token_row_offset(texts.batch(choose), i);
            states = std::max(states,
                              agree(alone.states.data(), geometry.hidden, packed.states.data() + row * geometry.hidden,
                                    geometry.hidden, alone.tokens, geometry.hidden)
                                  .max_abs);
            vectors = std::max(vectors, agree(alone.token_vectors.data(), geometry.token_width,
                                              packed.token_vectors.data() + row * geometry.token_width,
                                              geometry.token_width, alone.tokens, geometry.token_width)
                                            .max_abs);
            embeddings = std::max(embeddings,
                                  agree(alone.embeddings.data(), 0, packed.embeddings.data() + i * geometry.dimensions,
                                        0, 1, geometry.dimensions)
                                      .max_abs);
            if (choose)
                logits =
                    std::max(logits, agree(alone.logits.data(), 0, packed.logits.data() + i * 256, 0, 1, 256).max_abs);
        }
        std::string const label = choose ? "with CHOOSE" : "plain";
        CHECK_LABEL(states <= 1e-3, label + " states " + std::to_string(states));
        CHECK_LABEL(vectors <= 1e-3, label + " token vectors " + std::to_string(vectors));
        CHECK_LABEL(embeddings <= 1e-3, label + " embeddings " + std::to_string(embeddings));
        CHECK_LABEL(logits <= 1e-3, label + " logits " + std::to_string(logits));
    }
    // Empty items: no states, a zero embedding.
    encoded_t const packed = encode(weights, texts.batch(false), scratch);
    bool zero = true;
    for (std::size_t c = 0; c != geometry.dimensions; ++c) zero &= packed.embeddings[c] == 0.0f;
    CHECK(zero);
    // A steady loop of same-shaped calls does not grow the scratch again.
    encode(weights, texts.batch(true), scratch, pair_parallel);
    std::size_t const allocations = scratch.allocations();
    for (int i = 0; i != 3; ++i) encode(weights, texts.batch(true), scratch, pair_parallel);
    CHECK(scratch.allocations() == allocations);
}

/// Two models agree under docs/model.md's rules: rows' cosine, relative Frobenius, embeddings' cosine.
void check_models_agree(model_weights_t const &a, model_weights_t const &b, double row_cosine, double frobenius,
                        double embedding_cosine, std::string const &label) {
    texts_t const texts = varied_texts();
    geometry_t const &geometry = a.geometry;
    scratch_t scratch;
    encoded_t const x = encode(a, texts.batch(false), scratch), y = encode(b, texts.batch(false), scratch);
    agreement_t const states =
        agree(x.states.data(), geometry.hidden, y.states.data(), geometry.hidden, x.tokens, geometry.hidden);
    agreement_t const vectors = agree(x.token_vectors.data(), geometry.token_width, y.token_vectors.data(),
                                      geometry.token_width, x.tokens, geometry.token_width);
    agreement_t const embeddings = agree(x.embeddings.data(), geometry.dimensions, y.embeddings.data(),
                                         geometry.dimensions, texts.count(), geometry.dimensions);
    char text[200];
    std::snprintf(text, sizeof text, "%s: states cos %.6f frob %.2e, vectors cos %.6f frob %.2e, embeddings cos %.6f",
                  label.c_str(), states.worst_cosine, states.relative_frobenius, vectors.worst_cosine,
                  vectors.relative_frobenius, embeddings.worst_cosine);
    std::printf("  %s\n", text);
    CHECK_LABEL(states.worst_cosine >= row_cosine && states.relative_frobenius <= frobenius, text);
    CHECK_LABEL(vectors.worst_cosine >= row_cosine && vectors.relative_frobenius <= frobenius, text);
    CHECK_LABEL(embeddings.worst_cosine >= embedding_cosine, text);
}

// region: the goldens

/// A safetensors file read whole, with typed access to its tensors.
struct safetensors_t {
    std::vector<char> bytes;
    json::value_t header;
    std::size_t data = 0;
    bool ok = false;

    explicit safetensors_t(std::string const &path) {
        // stdio rather than a file stream: WASI's libc++ is built without filesystem streams.
        std::FILE *file = std::fopen(path.c_str(), "rb");
        if (file == nullptr) return;
        char chunk[1 << 16];
        for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, file)) != 0;)
            bytes.insert(bytes.end(), chunk, chunk + got);
        std::fclose(file);
        if (bytes.size() < 8) return;
        std::uint64_t length;
        std::memcpy(&length, bytes.data(), 8);
        if (length > bytes.size() - 8) return;
        data = 8 + length;
        ok = json::parse(std::string_view(bytes.data() + 8, length), header) == json::error_t::none;
    }
    /// The tensor `name` as `value_t` values (its dtype must have that size).
    template <typename value_t>
    std::vector<value_t> get(std::string_view name) const {
        json::value_t const *entry = header.find(name);
        if (entry == nullptr) return {};
        json::value_t const *offsets = entry->find("data_offsets");
        std::size_t const begin = offsets->items[0].integer, end = offsets->items[1].integer;
        std::vector<value_t> values((end - begin) / sizeof(value_t));
        std::memcpy(values.data(), bytes.data() + data + begin, values.size() * sizeof(value_t));
        return values;
    }
};

/// text_encode against text.safetensors: states, token vectors, embeddings.
void test_text_golden(model_weights_t const &weights, std::string const &label) {
    safetensors_t const golden(data_dir() + "/goldens/text.safetensors");
    CHECK_LABEL(golden.ok, "goldens/text.safetensors");
    if (!golden.ok) return;
    std::vector<std::uint8_t> const bytes = golden.get<std::uint8_t>("bytes");
    std::vector<std::int64_t> const offsets64 = golden.get<std::int64_t>("offsets");
    std::vector<float> const states = golden.get<float>("states"), vectors = golden.get<float>("token_vectors"),
                             embeddings = golden.get<float>("embeddings");
    std::vector<std::size_t> offsets(offsets64.begin(), offsets64.end());
    geometry_t const &geometry = weights.geometry;
    token_batch_t const batch{bytes.data(), offsets.data(), offsets.size() - 1, false};
    scratch_t scratch;
    encoded_t const ours = encode(weights, batch, scratch, pair_parallel);
    CHECK(ours.status == uform_status_ok_k);
    std::size_t const vector_rows = vectors.size() / geometry.token_width;
    double worst_cosine = 1, worst_frobenius = 0, worst_embedding = 1;
    bool empty_zero = true;
    for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
        std::size_t const row = offsets[i], rows = offsets[i + 1] - offsets[i];
        agreement_t const s = agree(ours.states.data() + row * geometry.hidden, geometry.hidden,
                                    states.data() + row * geometry.hidden, geometry.hidden, rows, geometry.hidden);
        worst_cosine = std::min(worst_cosine, s.worst_cosine);
        worst_frobenius = std::max(worst_frobenius, s.relative_frobenius);
        if (row + rows <= vector_rows) {
            agreement_t const v =
                agree(ours.token_vectors.data() + row * geometry.token_width, geometry.token_width,
                      vectors.data() + row * geometry.token_width, geometry.token_width, rows, geometry.token_width);
            worst_cosine = std::min(worst_cosine, v.worst_cosine);
            worst_frobenius = std::max(worst_frobenius, v.relative_frobenius);
        }
        float const *e = ours.embeddings.data() + i * geometry.dimensions;
        if (rows == 0)
            for (std::size_t c = 0; c != geometry.dimensions; ++c)
                empty_zero &= e[c] == 0.0f && embeddings[i * geometry.dimensions + c] == 0.0f;
        else
            worst_embedding =
                std::min(worst_embedding, cosine(e, embeddings.data() + i * geometry.dimensions, geometry.dimensions));
    }
    char text[200];
    std::snprintf(text, sizeof text, "%s text golden: worst row cosine %.6f, relative Frobenius %.2e, embedding %.7f",
                  label.c_str(), worst_cosine, worst_frobenius, worst_embedding);
    std::printf("  %s\n", text);
    CHECK_LABEL(worst_cosine >= 0.999 && worst_frobenius <= 1e-2, text);
    CHECK_LABEL(worst_embedding >= 0.9999, text);
    CHECK_LABEL(empty_zero, text);
}

/// text_choose against choose.safetensors: the logits at CHOOSE, each group's temperature, the softmax.
void test_choose_golden(model_weights_t const &weights, std::string const &label) {
    safetensors_t const golden(data_dir() + "/goldens/choose.safetensors");
    CHECK_LABEL(golden.ok, "goldens/choose.safetensors");
    if (!golden.ok) return;
    std::vector<std::uint8_t> const prompts = golden.get<std::uint8_t>("prompt_bytes"),
                                    legal = golden.get<std::uint8_t>("legal_bytes");
    std::vector<std::int64_t> const prompt_offsets = golden.get<std::int64_t>("prompt_offsets"),
                                    legal_offsets = golden.get<std::int64_t>("legal_offsets"),
                                    groups = golden.get<std::int64_t>("groups");
    std::vector<float> const expected = golden.get<float>("probabilities");
    std::vector<std::size_t> offsets(prompt_offsets.begin(), prompt_offsets.end());
    token_batch_t const batch{prompts.data(), offsets.data(), offsets.size() - 1, true};
    scratch_t scratch;
    encoded_t const ours = encode(weights, batch, scratch, serial_parallel, false);
    CHECK(ours.status == uform_status_ok_k);
    double worst = 0;
    for (std::size_t i = 0; i != batch.count; ++i) {
        float const temperature = weights.temperatures[groups[i]];
        std::size_t const begin = legal_offsets[i], end = legal_offsets[i + 1];
        double maximum = -INFINITY, sum = 0;
        for (std::size_t j = begin; j != end; ++j)
            maximum = std::max<double>(maximum, ours.logits[i * 256 + legal[j]] / temperature);
        for (std::size_t j = begin; j != end; ++j)
            sum += std::exp(ours.logits[i * 256 + legal[j]] / temperature - maximum);
        for (std::size_t j = begin; j != end; ++j) {
            double const probability = std::exp(ours.logits[i * 256 + legal[j]] / temperature - maximum) / sum;
            worst = std::max(worst, std::fabs(probability - expected[j]));
        }
    }
    char text[120];
    std::snprintf(text, sizeof text, "%s choose golden: worst probability difference %.2e", label.c_str(), worst);
    std::printf("  %s\n", text);
    CHECK_LABEL(worst <= 2e-3, text);
}

/// A profiled call (`forward_hooks_t::phases`): every phase timed, their sum within the call's wall time, and the
/// outputs those of a call without the profile, bit for bit.
void test_phases(model_weights_t const &weights) {
    texts_t texts;
    for (std::size_t length : {40, 3, 75}) texts.add(lcg_text(length, length));
    token_batch_t const batch = texts.batch(false);
    std::vector<float> plain(batch.count * weights.geometry.dimensions), profiled(plain.size());
    trunk_outputs_t outputs;
    outputs.embeddings = plain.data(), outputs.embeddings_stride = weights.geometry.dimensions;
    scratch_t scratch;
    forward_hooks_t hooks;
    CHECK(trunk_forward(weights, batch, outputs, scratch, hooks, nullptr) == uform_status_ok_k);
    std::vector<double> phases(static_cast<std::size_t>(forward_phase_t::count), 0.0);
    hooks.phases = phases.data();
    outputs.embeddings = profiled.data();
    auto const start = std::chrono::steady_clock::now();
    CHECK(trunk_forward(weights, batch, outputs, scratch, hooks, nullptr) == uform_status_ok_k);
    std::chrono::duration<double> const call = std::chrono::steady_clock::now() - start;
    double sum = 0;
    for (std::size_t phase = 0; phase != phases.size(); ++phase) {
        CHECK_LABEL(phases[phase] > 0, std::string("phase timed: ") + forward_phase_name(forward_phase_t(phase)));
        sum += phases[phase];
    }
    CHECK_LABEL(sum <= call.count(), "the phases fit within the call");
    CHECK_LABEL(plain == profiled, "a profiled call's outputs equal a plain call's");
}

/// The AMX path on the tiles' software model, on any machine: BF16 products (linears and attention's) in BF16 tiles,
/// an int8 model's trunk in INT8 tiles, each against the path the machine takes without them.
void test_tile_model(model_weights_t const &native, model_weights_t const &i8) {
    model_t bf16_tiles, i8_tiles;
    load(bf16_tiles, uform_cpu_class_auto_k, uform_scalar_bf16_k, pair_parallel, tiles_t::model);
    load(i8_tiles, uform_cpu_class_auto_k, uform_scalar_i8_k, pair_parallel, tiles_t::model);
    if (!bf16_tiles.ok || !i8_tiles.ok) return;
    CHECK_LABEL(bf16_tiles.weights.amx && bf16_tiles.weights.kernels->tiles == tiles_t::model,
                "the model's tiles were taken");
    std::printf("  AMX tile model:\n");
    test_text_golden(bf16_tiles.weights, "AMX tile model");
    check_models_agree(native, bf16_tiles.weights, 0.999, 1e-2, 0.9999, "AMX tile model vs native");
    check_models_agree(i8, i8_tiles.weights, 0.999, 1e-2, 0.9999, "I8 on the AMX tile model vs native");
}

} // namespace

int main() {
    test_scalars();
    test_gemm();
    test_e4m3_dequantization();
    test_pair_products();
    test_int8();

    // The native class (AMX tiles on Sapphire Rapids when the OS grants them), the AVX-512 F32 path when the machine
    // has it, the serial floor, and an E4M3 model.
    model_t native, skylake, serial, e4m3, i8, i8_serial;
    load(native, uform_cpu_class_auto_k, uform_scalar_bf16_k, pair_parallel);
    bool const has_skylake = cpu_class_available(uform_cpu_class_intel_skylake_k);
    if (has_skylake) load(skylake, uform_cpu_class_intel_skylake_k, uform_scalar_bf16_k, pair_parallel);
    load(serial, uform_cpu_class_serial_k, uform_scalar_bf16_k);
    load(e4m3, uform_cpu_class_auto_k, uform_scalar_e4m3_k, pair_parallel);
    load(i8, uform_cpu_class_auto_k, uform_scalar_i8_k, pair_parallel);
    load(i8_serial, uform_cpu_class_serial_k, uform_scalar_i8_k);
    if (native.ok && serial.ok && e4m3.ok && i8.ok && i8_serial.ok && (skylake.ok || !has_skylake)) {
        std::printf("  native class %d%s, weights %zu bytes\n", int(native.weights.cpu_class),
                    native.weights.amx ? " with AMX tiles" : "", native.weights.bytes());
        std::vector<std::pair<char const *, model_weights_t const *>> models{{"native", &native.weights},
                                                                             {"serial", &serial.weights}};
        if (has_skylake) models.emplace_back("skylake", &skylake.weights);
        for (auto [name, weights] : models) {
            std::printf("  %s:\n", name);
            test_batch_equals_items(*weights);
            test_text_golden(*weights, name);
            test_choose_golden(*weights, name);
        }
        check_models_agree(serial.weights, native.weights, 0.999, 1e-2, 0.9999, "serial vs native");
        if (has_skylake) check_models_agree(serial.weights, skylake.weights, 0.999, 1e-2, 0.9999, "serial vs skylake");
        check_models_agree(e4m3.weights, native.weights, 0.9, 1.0, 0.99, "E4M3 vs BF16");
        check_models_agree(i8.weights, native.weights, 0.9, 1.0, 0.99, "I8 vs BF16");
        check_models_agree(i8_serial.weights, i8.weights, 0.999, 1e-2, 0.9999, "I8 serial vs native");
        test_tile_model(native.weights, i8.weights);
        test_phases(native.weights);
        std::printf("  int8 weights %zu bytes against BF16's %zu\n", i8.weights.bytes(), native.weights.bytes());
        CHECK(i8.weights.bytes() < native.weights.bytes());
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
