// Unit tests of the trainer's products on AMX tiles (cpp/kernels/amx_product.hpp) through the tiles' software model,
// so they run on any machine: `product` on the model's table against the tile product's scalar definition (per depth
// chunk, each result's two lanes of fused sums over 16-pair tiles, DAZ and FTZ, then merged into C) bit for bit, over
// every kind of operand the trainer passes (F32 or BF16 bits, row-major or transposed), the flags, and edge shapes
// (rows, depths and columns off the tiles' multiples, depths across chunks); the same bits on one and two threads; and
// agreement with the native class's product within F32 summation error. Where the hardware grants tiles, its
// product is checked against the definition within the same error and its bit agreement with the model printed.
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
#include "cpp/kernels/amx_product.hpp"
#include "cpp/kernels/cpu_class.hpp"
#include "tests/unit/train_goldens.hpp"
#include "tests/unit/amx_reference.hpp"

namespace {

using namespace uform;

using namespace amx_test;

/// One product's operands as the test stores them: op(A) [rows x depth] and op(B) [depth x columns], each F32 or
/// BF16 bits, row-major or transposed.
struct case_t {
    std::size_t rows, depth, columns;
    bool a_transposed, b_transposed, a_bits, b_bits;
    std::vector<float> a, b;
    std::vector<std::uint16_t> a16, b16;

    std::size_t a_stride() const { return a_transposed ? rows + 3 : depth + 1; }
    std::size_t b_stride() const { return b_transposed ? depth + 2 : columns + 5; }
    std::size_t a_at(std::size_t i, std::size_t k) const {
        return a_transposed ? k * a_stride() + i : i * a_stride() + k;
    }
    std::size_t b_at(std::size_t k, std::size_t j) const {
        return b_transposed ? j * b_stride() + k : k * b_stride() + j;
    }
    /// op(A)(i, k) and op(B)(k, j) rounded to BF16 as the product reads them.
    float a_value(std::size_t i, std::size_t k) const {
        return a_bits ? bf16_to_f32(a16[a_at(i, k)]) : round_bf16(a[a_at(i, k)]);
    }
    float b_value(std::size_t k, std::size_t j) const {
        return b_bits ? bf16_to_f32(b16[b_at(k, j)]) : round_bf16(b[b_at(k, j)]);
    }
    ram::operand_t a_operand() const {
        return a_bits ? ram::operand_t::bf16(a16.data(), a_stride(), a_transposed)
                      : ram::operand_t{a.data(), a_stride(), a_transposed};
    }
    ram::operand_t b_operand() const {
        return b_bits ? ram::operand_t::bf16(b16.data(), b_stride(), b_transposed)
                      : ram::operand_t{b.data(), b_stride(), b_transposed};
    }
};

case_t make_case(std::mt19937 &random, std::size_t rows, std::size_t depth, std::size_t columns, unsigned kind) {
    case_t c{rows, depth, columns, (kind & 1) != 0, (kind & 2) != 0, (kind & 4) != 0, (kind & 8) != 0, {}, {}, {}, {}};
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    std::size_t const a_size = (c.a_transposed ? depth : rows) * c.a_stride();
    std::size_t const b_size = (c.b_transposed ? columns : depth) * c.b_stride();
    c.a.resize(a_size), c.b.resize(b_size), c.a16.resize(a_size), c.b16.resize(b_size);
    for (std::size_t i = 0; i != a_size; ++i) c.a[i] = value(random), c.a16[i] = f32_to_bf16(value(random));
    for (std::size_t i = 0; i != b_size; ++i) c.b[i] = value(random), c.b16[i] = f32_to_bf16(value(random));
    return c;
}

/// The tile product's definition of C(i, j) from `c0`: per chunk of `amx_depth_chunk_k` depths, per 16-pair tile (zero
/// past the chunk), two lanes of fused sums from zero, their sum added to the chunk's accumulator; each chunk merged
/// into C, accumulating after the first or when `flags` ask, rounded after the last when they ask.
float definition(case_t const &c, std::size_t i, std::size_t j, float c0, unsigned flags) {
    float value = c0;
    for (std::size_t k0 = 0; k0 < c.depth; k0 += ram::amx_depth_chunk_k) {
        std::size_t const end = std::min(c.depth, k0 + ram::amx_depth_chunk_k), pairs = (end - k0 + 1) / 2;
        float chunk = 0.0f;
        for (std::size_t t = 0; t * 16 < pairs; ++t) {
            float lanes[2] = {0.0f, 0.0f};
            for (std::size_t p = 0; p != 16; ++p)
                for (std::size_t h = 0; h != 2; ++h) {
                    std::size_t const k = k0 + 2 * (16 * t + p) + h;
                    float const x = k < end ? c.a_value(i, k) : 0.0f, y = k < end ? c.b_value(k, j) : 0.0f;
                    lanes[h] = flushed(std::fma(flushed(x), flushed(y), lanes[h]));
                }
            chunk = flushed(flushed(chunk) + flushed(lanes[0] + lanes[1]));
        }
        bool const accumulate = k0 != 0 || (flags & ram::gemm_accumulate_k) != 0;
        value = accumulate ? value + chunk : chunk;
        if (end == c.depth && (flags & ram::gemm_round_output_k) != 0) value = round_bf16(value);
    }
    return value;
}

/// `product` of `c` on `kernels` over `parallel` into C (`ldc` = columns + 7, starting from `c0`).
std::vector<float> run(ram::kernels_t const &kernels, ram::parallel_t const &parallel, case_t const &c,
                       std::vector<float> const &c0, unsigned flags) {
    std::vector<float> panels(ram::panels_floats(kernels, c.depth, c.columns));
    ram::panels_t const b = ram::pack_panels(kernels, parallel, c.b_operand(), c.depth, c.columns, panels.data());
    std::vector<float> out = c0, scratch(parallel.threads * ram::product_scratch_floats(c.depth));
    ram::product(kernels, parallel, c.a_operand(), c.rows, b, out.data(), c.columns + 7, flags, scratch.data());
    return out;
}

/// Largest |got - expected| over the sum of |a b| per result (one where the sum is zero).
double worst_error(case_t const &c, std::vector<float> const &got, std::vector<float> const &expected) {
    double worst = 0;
    for (std::size_t i = 0; i != c.rows; ++i)
        for (std::size_t j = 0; j != c.columns; ++j) {
            double scale = 0;
            for (std::size_t k = 0; k != c.depth; ++k) scale += std::fabs(double(c.a_value(i, k)) * c.b_value(k, j));
            std::size_t const at = i * (c.columns + 7) + j;
            worst = std::max(worst, std::fabs(double(got[at]) - expected[at]) / std::max(scale, 1.0));
        }
    return worst;
}

/// One shape, every operand kind and flag: the model's product against the definition and across thread counts.
void test_shape(std::size_t rows, std::size_t depth, std::size_t columns, ram::parallel_t const &two) {
    ram::kernels_t const &model = *ram::kernels_on_tiles(ram::tiles_t::model);
    ram::kernels_t const *native = ram::kernels_for(uform_cpu_class_auto_k);
    ram::kernels_t const *hardware = ram::kernels_on_tiles(ram::tiles_t::hardware);
    std::mt19937 random(unsigned(rows * 131 + depth * 7 + columns));
    std::string const shape = std::to_string(rows) + "x" + std::to_string(depth) + "x" + std::to_string(columns);
    // Every operand kind on small shapes; on deep ones four kinds: neither, A's, B's, both transposed as bits.
    for (unsigned kind = 0; kind < 16; kind += depth > 200 ? 5 : 1) {
        case_t const c = make_case(random, rows, depth, columns, kind);
        std::vector<float> c0(rows * (columns + 7));
        for (float &x : c0) x = std::uniform_real_distribution<float>(-1.0f, 1.0f)(random);
        for (unsigned flags = 0; flags != 4; ++flags) {
            std::string const what = shape + " kind " + std::to_string(kind) + " flags " + std::to_string(flags);
            std::vector<float> const got = run(model, {}, c, c0, flags);
            std::vector<float> expected = c0;
            for (std::size_t i = 0; i != rows; ++i)
                for (std::size_t j = 0; j != columns; ++j)
                    expected[i * (columns + 7) + j] = definition(c, i, j, c0[i * (columns + 7) + j], flags);
            check(std::memcmp(got.data(), expected.data(), got.size() * 4) == 0, what + ": the definition's bits");
            std::vector<float> const threaded = run(model, two, c, c0, flags);
            check(std::memcmp(got.data(), threaded.data(), got.size() * 4) == 0, what + ": two threads' bits");
            if (native != nullptr && (flags & ram::gemm_round_output_k) == 0)
                check(worst_error(c, run(*native, {}, c, c0, flags), got) <= 1e-5, what + ": the native product");
            if (hardware != nullptr) {
                std::vector<float> const tiles = run(*hardware, two, c, c0, flags);
                check(flags & ram::gemm_round_output_k || worst_error(c, tiles, got) <= 1e-5, what + ": hardware");
                if (std::memcmp(tiles.data(), got.data(), got.size() * 4) != 0)
                    std::printf("%s: the hardware's bits differ from the model's\n", what.c_str());
            }
        }
    }
}

} // namespace

int main() {
    ram::kernels_t const *model = ram::kernels_on_tiles(ram::tiles_t::model);
    check(model != nullptr && model->tiles == ram::tiles_t::model, "the model's table");
    check(ram::kernels_on_tiles(ram::tiles_t::none) == nullptr, "no table for no tiles");
    if (model == nullptr) {
        std::printf("%d passed, %d failed\n", passed, failed);
        return 1;
    }
    bool const granted = ram::kernels_on_tiles(ram::tiles_t::hardware) != nullptr;
    std::printf("hardware tiles %s\n", granted ? "granted: checked against the model" : "not granted here");
    ram::parallel_t const two = goldens::threaded(2);
    std::size_t const shapes[][3] = {{1, 1, 1},    {5, 3, 7},      {16, 32, 16},   {17, 33, 65},
                                     {33, 64, 64}, {40, 1030, 40}, {70, 2051, 33}, {3, 96, 130}};
    for (auto const &s : shapes) test_shape(s[0], s[1], s[2], two);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
