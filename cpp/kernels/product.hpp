// The trainer's products: C (+)= op(A) op(B) over F32 operands rounded to BF16 as they are packed, on the class's
// BF16 pair micro-kernel where it has one (`gemm_micro_pairs`), else on its F32 one (`gemm_micro`); in AMX tiles on
// the tables `kernels_on_tiles` makes (cpp/kernels/amx_product.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpp/parallel.hpp"
#include "cpp/kernels/e4m3.hpp"
#include "cpp/kernels/kernels.hpp"

namespace uform::ram {

/// A matrix as a product's operand: element (i, k) of op(X) at `data[i * stride + k]`, or at `data[k * stride + i]`
/// when `transposed`; F32 values rounded as they are packed, or, when `bits` is set, BF16 values read from `bits` at
/// the same places instead (already rounded: packing only moves them).
struct operand_t {
    float const *data = nullptr;
    std::size_t stride = 0;
    bool transposed = false;
    std::uint16_t const *bits = nullptr;

    /// BF16 bits as an operand.
    static constexpr operand_t bf16(std::uint16_t const *bits, std::size_t stride, bool transposed = false) noexcept {
        return {nullptr, stride, transposed, bits};
    }
    /// The operand `rows` stored rows (of `stride` values) further on.
    constexpr operand_t advanced(std::size_t rows) const noexcept {
        return {data != nullptr ? data + rows * stride : nullptr, stride, transposed,
                bits != nullptr ? bits + rows * stride : nullptr};
    }
};

/// A product's B packed by `pack_panels`: panels of 64 columns over the whole depth, zero past `columns`; BF16 pair
/// words (`pairs`: panel p's pair q at word `(p * ceil(depth / 2) + q) * 64`) or F32 values (row k at float
/// `(p * depth + k) * 64`). With `scales`, E4M3 weights in the pair layout: each word's two bytes (its low half's
/// first), dequantized by `kernels.dequantize_e4m3_pairs` as the product runs, the depths [128j, 128j + 128) of
/// panel p (`e4m3_block_k`) with `scales[p * e4m3_blocks(depth) + j]`.
struct panels_t {
    void const *data = nullptr;
    std::size_t depth = 0, columns = 0;
    bool pairs = false;
    float const *scales = nullptr;
};

/// Floats `pack_panels` writes for op(B) of `depth x columns` on `kernels`.
std::size_t panels_floats(kernels_t const &kernels, std::size_t depth, std::size_t columns) noexcept;

/// Packs op(B) [depth x columns], rounded to BF16 (nearest even), into `out` (`panels_floats` floats), its panels
/// spread across `parallel`.
panels_t pack_panels(kernels_t const &kernels, parallel_t const &parallel, operand_t b, std::size_t depth,
                     std::size_t columns, float *out) noexcept;

/// Floats of scratch one thread of `product` needs for a product of `depth`: its A, and for E4M3 panels (`e4m3`) one
/// panel's depth block dequantized.
std::size_t product_scratch_floats(std::size_t depth, bool e4m3 = false) noexcept;

/// C[rows x b.columns] (+)= op(A)[rows x b.depth] * B, A rounded to BF16 as it is packed, in blocks of rows and
/// columns across `parallel`'s threads; C's rows are `ldc` apart. `flags` are `gemm_flags_t`; `scratch` holds
/// `parallel.threads * product_scratch_floats(b.depth)` floats. Each result's sum runs in depth order (in pairs on the
/// BF16 path), so the bits do not depend on the threads.
void product(kernels_t const &kernels, parallel_t const &parallel, operand_t a, std::size_t rows, panels_t const &b,
             float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept;

} // namespace uform::ram
