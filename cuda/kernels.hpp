// The CUDA residency's kernels (kernels.cu), as the host side launches them: plain pointers into device memory, one
// stream, no types of CUDA's own beyond the stream, so that host files compile with the project's C++ compiler.
// BF16 values travel as their 16 bits. Each launcher enqueues on `stream` and answers whether the launch was accepted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/portable.hpp"

namespace uform::cuda {

/// Most dimensions of one attention head the kernels take (each lane of a warp keeps `head_dim / warp_k` sums).
inline constexpr std::size_t head_dim_max_k = 256;

/// Whether this build carries code the CUDA device `device` runs (SASS for its architecture, or PTX it compiles).
bool kernels_run_on(int device) noexcept;

/// `x[t] = table[ids[t]]` for `tokens` rows of `hidden` F32 values (`x` rows `x_stride` apart).
bool embed_rows(float const *table, std::uint16_t const *ids, std::size_t tokens, std::size_t hidden, float *x,
                std::size_t x_stride, cudaStream_t stream) noexcept;

/// `out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * weight`: BF16 into `out_bf16` (rows `out_stride` values apart) when it
/// is non-null, else F32 into `out_f32`.
bool rms_norm(float const *x, std::size_t x_stride, float const *weight, std::size_t rows, std::size_t width, float eps,
              std::uint16_t *out_bf16, float *out_f32, std::size_t out_stride, cudaStream_t stream) noexcept;

/// Rotates the queries and keys of every token's `heads` heads in place (docs/model.md's rotate-half RoPE, positions
/// `(t, h, w)` three per token, frequencies `theta^(-2j / head_dim)` in F64, each angle's cosine and sine rounded to
/// F32 once), then rounds queries, keys and values to BF16 values kept in F32, as the attention products read them.
/// `qkv` rows hold q, k, v of `heads * head_dim` each; `sections` are the pairs rotated by t, h and w.
bool rope_round(float *qkv, std::size_t qkv_stride, std::size_t tokens, std::uint32_t const *positions,
                std::size_t heads, std::size_t head_dim, double theta, std::uint32_t section_t, std::uint32_t section_h,
                cudaStream_t stream) noexcept;

/// Attention of every token's `heads` heads over the tokens of its own segment, `[segment_begin[t],
/// segment_end[t])`: `softmax(q . k^T / sqrt(head_dim))` in F32, probabilities rounded to BF16, times the values; the
/// result rounded to BF16 into `out` (rows `out_stride` values apart). `head_dim` is even and at most `head_dim_max_k`.
bool attention(float const *qkv, std::size_t qkv_stride, std::uint32_t const *segment_begin,
               std::uint32_t const *segment_end, std::size_t tokens, std::size_t heads, std::size_t head_dim,
               std::uint16_t *out, std::size_t out_stride, cudaStream_t stream) noexcept;

/// `out[t][i] = bf16(silu(gu[t][i]) * gu[t][ffn + i])` for `ffn` values of each of `rows` rows.
bool silu_mul(float const *gate_up, std::size_t gate_up_stride, std::size_t rows, std::size_t ffn, std::uint16_t *out,
              std::size_t out_stride, cudaStream_t stream) noexcept;

/// `out[r] = bf16(x[rows[r]])` for `count` rows of `width` values; `rows` null takes rows `0..count`.
bool gather_bf16(float const *x, std::size_t x_stride, std::uint32_t const *rows, std::size_t count, std::size_t width,
                 std::uint16_t *out, std::size_t out_stride, cudaStream_t stream) noexcept;

/// `out[i] = bf16(mean of x's rows [offsets[i], offsets[i + 1]))`, zero for an empty item; `count` items.
bool mean_pool_bf16(float const *x, std::size_t x_stride, std::uint32_t const *offsets, std::size_t count,
                    std::size_t width, std::uint16_t *out, std::size_t out_stride, cudaStream_t stream) noexcept;

/// Scales each of `rows` rows of `width` values to unit L2 norm; a zero row stays zero.
bool l2_normalize(float *x, std::size_t stride, std::size_t rows, std::size_t width, cudaStream_t stream) noexcept;

/// `out[r][c] = bf16(bytes[r][c] as E4M3 * scales[r / 128][c / 128])` for a `rows x columns` matrix quantized in
/// 128 x 128 blocks (docs/model.md, "E4M3 at load"), rows `columns` apart.
bool dequantize_e4m3(std::uint8_t const *bytes, float const *scales, std::size_t rows, std::size_t columns,
                     std::uint16_t *out, cudaStream_t stream) noexcept;

/// Adds to `*flag` (device memory, zeroed by the caller) one for every non-finite value of `rows` rows of `width`.
bool count_non_finite(float const *x, std::size_t stride, std::size_t rows, std::size_t width, unsigned *flag,
                      cudaStream_t stream) noexcept;

} // namespace uform::cuda
