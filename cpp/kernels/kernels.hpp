// The table of compute kernels one CPU class dispatches to, chosen once per model.
#pragma once

#include <cstddef>
#include <cstdint>

#include <uform/types.h>

namespace uform::ram {

/// Columns of one packed weight panel, and the widest column block a GEMM micro-kernel computes.
inline constexpr std::size_t gemm_panel_columns_k = 64;
/// Rows of A one GEMM micro-kernel call takes at most, the same in every class so tilings agree.
inline constexpr std::size_t gemm_micro_rows_k = 6;

/// What a GEMM micro-kernel does with C.
enum gemm_flags_t : unsigned {
    /// Add to C instead of overwriting it.
    gemm_accumulate_k = 1u,
    /// Round the results to BF16 (kept as F32) when storing them: for outputs that only feed another product.
    gemm_round_output_k = 2u,
};

/// Rows and columns of one int8 weight quantization block (edge blocks clipped), and the depths one activation scale
/// covers.
inline constexpr std::size_t i8_block_k = 128;

/// Panels of `gemm_panel_columns_k` columns for `columns`, the last one partial.
constexpr std::size_t panel_count(std::size_t columns) noexcept {
    return (columns + gemm_panel_columns_k - 1) / gemm_panel_columns_k;
}

/// Int8 blocks of `i8_block_k` along `extent`, the last one clipped.
constexpr std::size_t i8_blocks(std::size_t extent) noexcept { return (extent + i8_block_k - 1) / i8_block_k; }

/// Bytes of one line a GEMM micro-kernel prefetches.
inline constexpr std::size_t gemm_prefetch_line_bytes_k = 64;

/// Cache lines a GEMM micro-kernel pulls toward L2 while it computes, spread over its depth: a share of the next
/// B panel, so that panel is waiting in L2 when its turn comes. A hint: kernels may ignore it.
struct gemm_prefetch_t {
    /// The first line; null when there is nothing to fetch.
    char const *data = nullptr;
    /// Lines of `gemm_prefetch_line_bytes_k` bytes from `data`.
    std::size_t lines = 0;
};

/// Where a kernel table's trainer products run on AMX tiles (cpp/kernels/amx_product.hpp): nowhere, the hardware's
/// tiles, or the software model of them.
enum class tiles_t : unsigned char { none, hardware, model };

/// The kernels of one CPU class. Each computes the same numbers as the serial class up to summation order.
struct kernels_t {
    /// The class these kernels implement.
    uform_cpu_class_t cpu_class;

    /// Packs rows of A for the micro-kernel, rounded to BF16: `rows` rows of `depth` values, `lda` apart, become
    /// ceil(rows / 6) panels of `depth x 6` values (value (r, k) of panel p at `out[p * depth * 6 + k * 6 + r]`),
    /// missing rows of the last panel zero.
    void (*pack_a)(float const *a, std::size_t lda, std::size_t rows, std::size_t depth, float *out) noexcept;

    /// C[rows x columns] (+)= A[rows x depth] * B[depth x columns] in F32, with rows <= 6 and columns <= 64.
    /// A is one packed panel (`pack_a`), its value (r, k) at `a[k * 6 + r]`; B's row k starts at `b + k * ldb`
    /// and holds BF16-rounded values, so every product is exact in F32; C's row r starts at `c + r * ldc`.
    /// Each result sums its products in depth order from zero, then adds C when accumulating. `prefetch` names lines
    /// to pull toward L2 meanwhile.
    void (*gemm_micro)(std::size_t depth, float const *a, float const *b, std::size_t ldb, float *c, std::size_t ldc,
                       std::size_t rows, std::size_t columns, unsigned flags, gemm_prefetch_t prefetch) noexcept;

    /// Merges a finished row of products into C: `c[i] = (accumulate ? c[i] : 0) + tile[i]`, then rounded to BF16
    /// when `gemm_round_output_k` is set, over `count` values; `flags` are `gemm_flags_t`.
    void (*merge)(float const *tile, float *c, std::size_t count, unsigned flags) noexcept;

    /// `out[i] = round_bf16(in[i])`; `out` may equal `in`.
    void (*round_bf16)(float const *in, float *out, std::size_t count) noexcept;

    /// `out = x / sqrt(mean(x^2) + eps) * weight` over `width` values, then rounded to BF16 when `round` is set.
    void (*rms_norm)(float const *x, float const *weight, std::size_t width, float eps, float *out,
                     bool round) noexcept;

    /// Rotates the `heads` heads of one token in place (rotate-half: dims j and j + head_dim / 2 by the angle
    /// whose cosine and sine are `cos[j]`, `sin[j]`), then rounds them to BF16.
    void (*rope_round)(float *x, std::size_t heads, std::size_t head_dim, float const *cos, float const *sin) noexcept;

    /// `row = softmax(row * scale)` in place over `count` values in F32, then rounded to BF16.
    void (*softmax_round)(float *row, std::size_t count, float scale) noexcept;

    /// `out[i] = round_bf16(silu(gate[i]) * up[i])`; `out` may equal `gate`.
    void (*silu_mul_round)(float const *gate, float const *up, float *out, std::size_t count) noexcept;

    /// `sum[i] += row[i]`.
    void (*add)(float *sum, float const *row, std::size_t count) noexcept;

    /// `x[i] *= factor`.
    void (*scale)(float *x, std::size_t count, float factor) noexcept;

    /// Divides `x` by its L2 norm in place; a zero vector stays zero.
    void (*l2_normalize)(float *x, std::size_t count) noexcept;

    /// `row = softmax(row * scale)` in place over `count` values in F32, unrounded (the trainer keeps it).
    void (*softmax)(float *row, std::size_t count, float scale) noexcept;

    /// `out[i] = 1 / (1 + exp(-in[i]))`; `out` may equal `in`.
    void (*sigmoid)(float const *in, float *out, std::size_t count) noexcept;

    // The trainer's BF16 pair products (cpp/kernels/product.hpp): null in classes without a BF16 dot-product
    // instruction. A word holds two BF16 values, depth 2p in its low half and depth 2p + 1 in its high half.

    /// C[rows x columns] (+)= A[rows x 2 pairs] * B[2 pairs x columns] with rows <= 6 and columns <= 64. A's word
    /// (r, p) is at `a[r * a_row + p * a_pair]`; B's pair p is the 64 words at `b + p * 64`, zero past `columns`.
    /// Each result sums its pairs from zero in depth order in F32 (a pair's two products are exact; BF16 subnormals
    /// read as zero, subnormal sums flush to zero), then adds C when accumulating and rounds as `gemm_micro` does.
    void (*gemm_micro_pairs)(std::size_t pairs, std::uint32_t const *a, std::size_t a_row, std::size_t a_pair,
                             std::uint32_t const *b, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                             unsigned flags) noexcept;

    /// `out[i] = bf16(high[i]) << 16 | bf16(low[i])` (nearest even); a null `high` reads zeros.
    void (*interleave_bf16)(float const *low, float const *high, std::uint32_t *out, std::size_t count) noexcept;

    /// `out[i] = bf16(in[i])` (nearest even) as bits.
    void (*convert_bf16)(float const *in, std::uint16_t *out, std::size_t count) noexcept;

    // The int8 products of `Scalar::I8` models (cpp/kernels/int8.hpp): in every class, the same integer sums and the
    // same F32 operations in the same order, so every class computes the serial class's bits.

    /// Quantizes one row of `depth` F32 values per block of 128 depths (`i8_block_k`): block j's scale is `s[j] =
    /// max|x| / 127` over `x[128j .. 128j + 127]` and `out[k] = nearest_even(x[k] * (127 / max|x|)) + 128` within [1,
    /// 255], then 128 in the `padded - depth` bytes after them. Writes the ceil(depth / 128) scales at `scales`: 0 for
    /// a zero block (its bytes 128); every one NaN (all bytes 128) when the row holds a NaN or an infinity anywhere,
    /// so the products it feeds are not finite.
    void (*quantize_i8)(float const *x, std::size_t depth, std::size_t padded, std::uint8_t *out,
                        float *scales) noexcept;

    /// C[rows x columns] (+)= A * B^T with rows <= 6 and columns <= 64 over int8 blocks of 128 depths. A's row r is
    /// `depth` bytes from `quantize_i8` at `a + r * lda`, its block j's scale `a_scales[r * a_blocks + j]`; B is one
    /// panel of `int8.hpp`: the signed bytes of depths 4g..4g+3 of column n at `b + (g * 64 + n) * 4`, then per depth
    /// block j the column's `compensation[j * 64 + n]` (-128 times the sum of its bytes in the block) and
    /// `b_scales[j * 64 + n]`. Each block's exact int32 sum `compensation + S` becomes F32, times `b_scales[j * 64 +
    /// n]`, times `a_scales[r * a_blocks + j]`, added to the result's sum from zero in depth order; then C is added
    /// when accumulating and the result rounded as `gemm_micro` does.
    void (*gemm_micro_i8)(std::size_t depth, std::uint8_t const *a, std::size_t lda, float const *a_scales,
                          std::size_t a_blocks, std::int8_t const *b, std::int32_t const *compensation,
                          float const *b_scales, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                          unsigned flags) noexcept;

    /// The BF16 pair words of E4M3 weights (`Scalar::E4M3` models on a class with `gemm_micro_pairs`; null in the
    /// others): `out[i]` holds bytes `2i` (low half) and `2i + 1` (high half), each value times `scale` rounded to BF16
    /// (nearest even), over `count` words. Every class computes `dequantize_e4m3_pairs_serial`'s bits.
    void (*dequantize_e4m3_pairs)(std::uint8_t const *bytes, float scale, std::uint32_t *out,
                                  std::size_t count) noexcept;

    /// Where `product` runs over BF16 pair panels: `none` in every class's own table (its micro-kernels); the tables
    /// of `kernels_on_tiles` (cpp/kernels/amx_product.hpp) run it in AMX tiles, the hardware's or the model's.
    tiles_t tiles = tiles_t::none;
};

/// The portable `quantize_i8`: the serial class's, and Haswell's and Skylake's, which lack VNNI.
void quantize_i8_serial(float const *x, std::size_t depth, std::size_t padded, std::uint8_t *out,
                        float *scales) noexcept;
/// The portable `gemm_micro_i8`: the serial class's, and Haswell's and Skylake's, which lack VNNI.
void gemm_micro_i8_serial(std::size_t depth, std::uint8_t const *a, std::size_t lda, float const *a_scales,
                          std::size_t a_blocks, std::int8_t const *b, std::int32_t const *compensation,
                          float const *b_scales, float *c, std::size_t ldc, std::size_t rows, std::size_t columns,
                          unsigned flags) noexcept;

/// The portable `dequantize_e4m3_pairs`, the reference of the others.
void dequantize_e4m3_pairs_serial(std::uint8_t const *bytes, float scale, std::uint32_t *out,
                                  std::size_t count) noexcept;

/// The portable floor: plain C++, no intrinsics.
kernels_t const &kernels_serial() noexcept;
/// AVX2 + FMA (x86-64 builds only; nullptr elsewhere).
kernels_t const *kernels_haswell() noexcept;
/// AVX-512 F/BW/DQ/VL (x86-64 builds only; nullptr elsewhere).
kernels_t const *kernels_skylake() noexcept;
/// AVX-512 with VNNI (Intel Ice Lake, Sapphire Rapids): Skylake's kernels plus the int8 products on `vpdpbusd`
/// (x86-64 only; nullptr elsewhere).
kernels_t const *kernels_icelake() noexcept;
/// AVX-512 with BF16 (AMD Genoa, Turin): Ice Lake's kernels plus the BF16 pair products (x86-64 only; nullptr
/// elsewhere).
kernels_t const *kernels_genoa() noexcept;
/// WebAssembly SIMD128 (wasm32 builds with `-msimd128` only; nullptr elsewhere): 4-lane F32 panels and elementwise
/// maths, and the int8 products on `i32x4.dot_i16x8_s`; no BF16 pair products.
kernels_t const *kernels_wasm_simd128() noexcept;
/// AArch64's NEON (every 64-bit Arm core), with the BF16 pair products on `BFDOT` where the core has BF16 and the int8
/// products on `USDOT` (I8MM) or `SDOT` (dot product) where it has them (AArch64 only; nullptr elsewhere).
kernels_t const *kernels_neon() noexcept;
/// SVE, vector-length agnostic, with the BF16 pair products on `BFDOT` where the core has SVE BF16 and the int8
/// products on `SDOT` (AArch64 only; nullptr elsewhere).
kernels_t const *kernels_sve() noexcept;
/// SVE2: SVE's kernels built for SVE2, the int8 products on `USDOT` where the core has SVE I8MM (AArch64 only; nullptr
/// elsewhere).
kernels_t const *kernels_sve2() noexcept;

} // namespace uform::ram
