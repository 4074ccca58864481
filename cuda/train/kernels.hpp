// The CUDA trainer's kernels (cuda/train/kernels.cu) as the host side launches them: the backward of each forward
// kernel of cuda/kernels.hpp, the update, and the conversions between them. Plain pointers into device memory, one
// stream; each launcher enqueues and answers whether the launch was accepted. The per-element maths is
// cpp/train/maths.hpp's, the CPU trainer's own functions compiled for the device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/portable.hpp"

#include "cpp/train/maths.hpp"

namespace uform::cuda::train {

/// The trainer's per-element maths, shared with the CPU trainer.
namespace maths = uform::train::maths;

/// `out[i] = bits(bf16(x[i]))` for `count` values.
bool to_bf16(float const *x, std::size_t count, std::uint16_t *out, cudaStream_t stream) noexcept;

/// `*sum += Σ x[i]^2` in double over `count` values (`sum` device memory the caller zeroes).
bool squared_sum(float const *x, std::size_t count, double *sum, cudaStream_t stream) noexcept;

/// `x[i] *= factor` for `count` values.
bool scale(float *x, std::size_t count, float factor, cudaStream_t stream) noexcept;

/// Adds to `*flag` one for each element whose AdamW update (`maths::adamw_element`) would not be finite; writes
/// nothing else.
bool adamw_non_finite(float const *master, float const *grad, float const *moment1, float const *moment2,
                      std::size_t count, bool decays, maths::adamw_scalars_t const &scalars, unsigned *flag,
                      cudaStream_t stream) noexcept;

/// One AdamW step (`maths::adamw_element`) of `count` elements in place.
bool adamw(float *master, float const *grad, float *moment1, float *moment2, std::size_t count, bool decays,
           maths::adamw_scalars_t const &scalars, cudaStream_t stream) noexcept;

/// The backward of `y = RMSNorm(x) * w` over `rows` rows of `width`: `dx += ...` (rows `width` apart), and each row's
/// share of dL/dw into `partial` [rows x width], which `column_sum` adds up.
bool rms_norm_backward(float const *x, float const *dy, float const *weight, std::size_t rows, std::size_t width,
                       float eps, float *dx, float *partial, cudaStream_t stream) noexcept;

/// `out[j] += Σ_r x[r][j]` over `rows` rows of `width`, rows in order (the same sum on every run).
bool column_sum(float const *x, std::size_t rows, std::size_t width, float *out, cudaStream_t stream) noexcept;

/// SiLU-gate's backward over `rows` rows: `gate_up` holds each row's F32 gate and up (`2 ffn` values) and becomes
/// their gradients, given `d` = dL/d(silu(gate) up) (`ffn` values a row).
bool silu_gate_backward(float *gate_up, float const *d, std::size_t rows, std::size_t ffn,
                        cudaStream_t stream) noexcept;

/// RoPE's backward in place over the queries' and keys' gradients of `dqkv` (rows `3 heads head_dim` apart), the
/// angles as `cuda::rope_round` computes them.
bool rope_backward(float *dqkv, std::size_t tokens, std::uint32_t const *positions, std::size_t heads,
                   std::size_t head_dim, double theta, std::uint32_t section_t, std::uint32_t section_h,
                   cudaStream_t stream) noexcept;

/// Attention's backward, recomputing the probabilities from `qkv` (the forward's rotated, BF16-rounded q, k, v in F32,
/// rows `3 heads head_dim` apart) within each token's segment `[segment_begin[t], segment_end[t])`, without a T x T
/// matrix: per (query, head) the softmax's maximum and sum and `Σ_j P dP` into `statistics` [tokens x heads x 3] and
/// dq; per (key, head) dk and dv. `d_out` is dL/d(attention output) (rows `heads head_dim` apart); the gradients land
/// in `dqkv` (rows as `qkv`), before RoPE's backward.
bool attention_backward(float const *qkv, float const *d_out, std::uint32_t const *segment_begin,
                        std::uint32_t const *segment_end, std::size_t tokens, std::size_t heads, std::size_t head_dim,
                        float *statistics, float *dqkv, cudaStream_t stream) noexcept;

/// `table_grad[ids[t]] += dx[t]` for `tokens` rows of `hidden` (the byte embedding's backward); an id above 257 (a
/// media token's row) is skipped.
bool embed_backward(float const *dx, std::uint16_t const *ids, std::size_t tokens, std::size_t hidden,
                    float *table_grad, cudaStream_t stream) noexcept;

/// `dh[t] += d_pooled[i] / n_i` for each token `t` of item `i` (`offsets` [count + 1]), the mean pool's backward.
bool mean_pool_backward(float const *d_pooled, std::uint32_t const *offsets, std::size_t count, std::size_t width,
                        float *dh, cudaStream_t stream) noexcept;

/// The backward of `y = x / |x|` per row: `dx = (dy - y (y . dy)) / |x|`, zero for a zero row; `lengths` [rows].
bool normalize_backward(float const *y, float const *dy, float const *lengths, std::size_t rows, std::size_t width,
                        float *dx, cudaStream_t stream) noexcept;

/// `out[rows[r]] += x[r]` for `count` rows of `width` (the byte head's rows into dL/dh); `rows` distinct.
bool scatter_add_rows(float const *x, std::uint32_t const *rows, std::size_t count, std::size_t width, float *out,
                      cudaStream_t stream) noexcept;

/// `out[i] = bf16(x[i])` as F32 values, for `count` values (the BF16 copy of a tensor the products do not read).
bool round_f32(float const *x, std::size_t count, float *out, cudaStream_t stream) noexcept;

/// `x[t] = table[ids[t]]` for `tokens` rows of `hidden` F32 values; a row whose id is above 257 (a media token's) is
/// left as it is.
bool embed_text(float const *table, std::uint16_t const *ids, std::size_t tokens, std::size_t hidden, float *x,
                cudaStream_t stream) noexcept;

/// `x[rows[r]] = embedded[r] + bias` for `count` rows of `width` (a front-end's tokens into the residual stream).
bool scatter_bias_rows(float const *embedded, float const *bias, std::uint32_t const *rows, std::size_t count,
                       std::size_t width, float *x, cudaStream_t stream) noexcept;

/// `out[r] = x[rows[r]]` for `count` rows of `width` F32 values.
bool gather_rows(float const *x, std::uint32_t const *rows, std::size_t count, std::size_t width, float *out,
                 cudaStream_t stream) noexcept;

} // namespace uform::cuda::train
