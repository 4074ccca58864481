// The CUDA residency's kernels: simple and plainly correct first (one block or warp per row or per query), following
// docs/model.md's numerics as cpp/kernels/serial.cpp does: F32 everywhere, BF16 rounding (to nearest even) of every
// matrix product's inputs, F32 accumulation. See kernels.hpp for what each computes.
#include "cuda/kernels.hpp"

#include "cuda/portable.hpp"

namespace uform::cuda {
namespace {

constexpr unsigned block_k = 256;         // threads of the row-wise kernels
constexpr unsigned attention_warps_k = 4; // queries per block of the attention kernel

__device__ float warp_sum(float value) {
    for (unsigned offset = warp_k / 2; offset != 0; offset /= 2) value += shuffle_xor(value, offset);
    return value;
}

__device__ float warp_max(float value) {
    for (unsigned offset = warp_k / 2; offset != 0; offset /= 2) value = fmaxf(value, shuffle_xor(value, offset));
    return value;
}

/// The sum of `value` over the block's `block_k` threads, answered to every thread.
__device__ float block_sum(float value) {
    __shared__ float partial[block_k / warp_k];
    unsigned const lane = threadIdx.x % warp_k, warp = threadIdx.x / warp_k;
    value = warp_sum(value);
    block_sync(); // a previous call's readers are done with `partial`
    if (lane == 0) partial[warp] = value;
    block_sync();
    float total = 0;
    for (unsigned i = 0; i != block_k / warp_k; ++i) total += partial[i];
    return total;
}

__global__ void embed_rows_kernel(float const *table, std::uint16_t const *ids, std::size_t hidden, float *x,
                                  std::size_t x_stride) {
    std::size_t const token = blockIdx.x;
    float const *source = table + std::size_t(ids[token]) * hidden;
    for (std::size_t i = threadIdx.x; i < hidden; i += blockDim.x) x[token * x_stride + i] = source[i];
}

__global__ void rms_norm_kernel(float const *x, std::size_t x_stride, float const *weight, std::size_t width, float eps,
                                std::uint16_t *out_bf16, float *out_f32, std::size_t out_stride) {
    std::size_t const row = blockIdx.x;
    float const *source = x + row * x_stride;
    float squares = 0;
    for (std::size_t i = threadIdx.x; i < width; i += blockDim.x) squares += source[i] * source[i];
    float const inverse = 1.0f / sqrtf(block_sum(squares) / float(width) + eps);
    for (std::size_t i = threadIdx.x; i < width; i += blockDim.x) {
        float const value = source[i] * inverse * weight[i];
        if (out_bf16 != nullptr) out_bf16[row * out_stride + i] = bf16_bits(value);
        else out_f32[row * out_stride + i] = value;
    }
}

__global__ void rope_round_kernel(float *qkv, std::size_t qkv_stride, std::uint32_t const *positions, std::size_t heads,
                                  std::size_t head_dim, double theta, std::uint32_t section_t,
                                  std::uint32_t section_h) {
    std::size_t const token = blockIdx.x, half = head_dim / 2, width = heads * head_dim;
    float *row = qkv + token * qkv_stride;
    // Queries and keys: each thread one pair of one head of either.
    for (std::size_t index = threadIdx.x; index < 2 * heads * half; index += blockDim.x) {
        std::size_t const which = index / (heads * half), head = index / half % heads, pair = index % half;
        std::uint32_t const axis = pair < section_t ? 0 : pair < section_t + section_h ? 1 : 2;
        double const frequency = pow(theta, -2.0 * double(pair) / double(head_dim));
        double const angle = double(positions[3 * token + axis]) * frequency;
        float const cosine = float(cos(angle)), sine = float(sin(angle));
        float *first = row + which * width + head * head_dim + pair, *second = first + half;
        float const a = *first, b = *second;
        *first = round_bf16(a * cosine - b * sine);
        *second = round_bf16(b * cosine + a * sine);
    }
    // Values: rounded only.
    for (std::size_t i = threadIdx.x; i < width; i += blockDim.x) row[2 * width + i] = round_bf16(row[2 * width + i]);
}

/// One warp per (token, head): the scores' maximum and sum over the segment's keys, then the weighted values, with
/// each probability rounded to BF16 once normalized (two passes over the keys, so that the rounding sees the final
/// probability as the CPU's softmax does).
__global__ void attention_kernel(float const *qkv, std::size_t qkv_stride, std::uint32_t const *segment_begin,
                                 std::uint32_t const *segment_end, std::size_t tokens, std::size_t heads,
                                 std::size_t head_dim, float scale, std::uint16_t *out, std::size_t out_stride) {
    constexpr unsigned dims_per_lane_k = unsigned(head_dim_max_k / warp_k);
    extern __shared__ float shared[]; // per warp: the query, then 32 probabilities
    unsigned const lane = threadIdx.x % warp_k, warp = threadIdx.x / warp_k;
    std::size_t const job = std::size_t(blockIdx.x) * attention_warps_k + warp;
    if (job >= tokens * heads) return;
    std::size_t const token = job / heads, head = job % heads, width = heads * head_dim;
    float *query = shared + warp * (head_dim + warp_k);
    float *probabilities = query + head_dim;
    float const *q = qkv + token * qkv_stride + head * head_dim;
    for (std::size_t d = lane; d < head_dim; d += warp_k) query[d] = q[d];
    warp_sync();
    std::size_t const begin = segment_begin[token], end = segment_end[token];
    auto score = [&](std::size_t key) {
        float const *k = qkv + key * qkv_stride + width + head * head_dim;
        float dot = 0;
        for (std::size_t d = 0; d != head_dim; ++d) dot += query[d] * k[d];
        return dot * scale;
    };
    float maximum = -CUDART_INF_F;
    for (std::size_t key = begin + lane; key < end; key += warp_k) maximum = fmaxf(maximum, score(key));
    maximum = warp_max(maximum);
    float sum = 0;
    for (std::size_t key = begin + lane; key < end; key += warp_k) sum += expf(score(key) - maximum);
    float const inverse = 1.0f / warp_sum(sum);

    float accumulated[dims_per_lane_k];
#pragma unroll
    for (unsigned r = 0; r != dims_per_lane_k; ++r) accumulated[r] = 0;
    for (std::size_t chunk = begin; chunk < end; chunk += warp_k) {
        std::size_t const key = chunk + lane;
        probabilities[lane] = key < end ? round_bf16(expf(score(key) - maximum) * inverse) : 0.0f;
        warp_sync();
        std::size_t const count = end - chunk < warp_k ? end - chunk : warp_k;
        for (std::size_t j = 0; j != count; ++j) {
            float const p = probabilities[j];
            float const *v = qkv + (chunk + j) * qkv_stride + 2 * width + head * head_dim;
#pragma unroll
            for (unsigned r = 0; r != dims_per_lane_k; ++r) {
                std::size_t const d = lane + r * warp_k;
                if (d < head_dim) accumulated[r] += p * v[d];
            }
        }
        warp_sync();
    }
    std::uint16_t *target = out + token * out_stride + head * head_dim;
#pragma unroll
    for (unsigned r = 0; r != dims_per_lane_k; ++r) {
        std::size_t const d = lane + r * warp_k;
        if (d < head_dim) target[d] = bf16_bits(accumulated[r]);
    }
}

__global__ void silu_mul_kernel(float const *gate_up, std::size_t gate_up_stride, std::size_t ffn, std::uint16_t *out,
                                std::size_t out_stride) {
    std::size_t const row = blockIdx.x;
    float const *gate = gate_up + row * gate_up_stride, *up = gate + ffn;
    for (std::size_t i = threadIdx.x; i < ffn; i += blockDim.x) {
        float const g = gate[i];
        out[row * out_stride + i] = bf16_bits(g / (1.0f + expf(-g)) * up[i]);
    }
}

__global__ void gather_bf16_kernel(float const *x, std::size_t x_stride, std::uint32_t const *rows, std::size_t width,
                                   std::uint16_t *out, std::size_t out_stride) {
    std::size_t const index = blockIdx.x, row = rows != nullptr ? rows[index] : index;
    for (std::size_t i = threadIdx.x; i < width; i += blockDim.x)
        out[index * out_stride + i] = bf16_bits(x[row * x_stride + i]);
}

__global__ void mean_pool_kernel(float const *x, std::size_t x_stride, std::uint32_t const *offsets, std::size_t width,
                                 std::uint16_t *out, std::size_t out_stride) {
    std::size_t const item = blockIdx.x, begin = offsets[item], end = offsets[item + 1];
    for (std::size_t i = threadIdx.x; i < width; i += blockDim.x) {
        float sum = 0;
        for (std::size_t row = begin; row != end; ++row) sum += x[row * x_stride + i];
        out[item * out_stride + i] = bf16_bits(end == begin ? 0.0f : sum * (1.0f / float(end - begin)));
    }
}

__global__ void l2_normalize_kernel(float *x, std::size_t stride, std::size_t width) {
    float *row = x + std::size_t(blockIdx.x) * stride;
    float squares = 0;
    for (std::size_t i = threadIdx.x; i < width; i += blockDim.x) squares += row[i] * row[i];
    float const sum = block_sum(squares);
    if (sum == 0) return;
    float const inverse = 1.0f / sqrtf(sum);
    for (std::size_t i = threadIdx.x; i < width; i += blockDim.x) row[i] *= inverse;
}

/// The value of an E4M3 byte (no infinities; 0x7F and 0xFF are NaN).
__device__ float e4m3_value(std::uint8_t byte) {
    unsigned const exponent = (byte >> 3) & 0xFu, mantissa = byte & 0x7u;
    float magnitude;
    if (exponent == 0xFu && mantissa == 0x7u) magnitude = CUDART_NAN_F;
    else if (exponent == 0) magnitude = ldexpf(float(mantissa), -9); // subnormal: m / 8 * 2^-6
    else magnitude = ldexpf(float(8 + mantissa), int(exponent) - 10);
    return (byte & 0x80u) ? -magnitude : magnitude;
}

__global__ void dequantize_e4m3_kernel(std::uint8_t const *bytes, float const *scales, std::size_t columns,
                                       std::size_t block_columns, std::uint16_t *out) {
    std::size_t const row = blockIdx.x;
    for (std::size_t c = threadIdx.x; c < columns; c += blockDim.x) {
        float const scale = scales[(row / 128) * block_columns + c / 128];
        out[row * columns + c] = bf16_bits(e4m3_value(bytes[row * columns + c]) * scale);
    }
}

__global__ void count_non_finite_kernel(float const *x, std::size_t stride, std::size_t width, unsigned *flag) {
    float const *row = x + std::size_t(blockIdx.x) * stride;
    unsigned bad = 0;
    for (std::size_t i = threadIdx.x; i < width; i += blockDim.x) bad += isfinite(row[i]) ? 0u : 1u;
    if (bad != 0) atomicAdd(flag, bad);
}

/// Whether the launch just enqueued was accepted.
bool launched() noexcept { return cudaGetLastError() == cudaSuccess; }

} // namespace

bool kernels_run_on(int device) noexcept {
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    cudaFuncAttributes attributes{};
    bool const runs = cudaFuncGetAttributes(&attributes, embed_rows_kernel) == cudaSuccess;
    (void)cudaGetLastError();
    (void)cudaSetDevice(current);
    return runs;
}

bool embed_rows(float const *table, std::uint16_t const *ids, std::size_t tokens, std::size_t hidden, float *x,
                std::size_t x_stride, cudaStream_t stream) noexcept {
    if (tokens == 0) return true;
    embed_rows_kernel<<<unsigned(tokens), block_k, 0, stream>>>(table, ids, hidden, x, x_stride);
    return launched();
}

bool rms_norm(float const *x, std::size_t x_stride, float const *weight, std::size_t rows, std::size_t width, float eps,
              std::uint16_t *out_bf16, float *out_f32, std::size_t out_stride, cudaStream_t stream) noexcept {
    if (rows == 0) return true;
    rms_norm_kernel<<<unsigned(rows), block_k, 0, stream>>>(x, x_stride, weight, width, eps, out_bf16, out_f32,
                                                            out_stride);
    return launched();
}

bool rope_round(float *qkv, std::size_t qkv_stride, std::size_t tokens, std::uint32_t const *positions,
                std::size_t heads, std::size_t head_dim, double theta, std::uint32_t section_t, std::uint32_t section_h,
                cudaStream_t stream) noexcept {
    if (tokens == 0) return true;
    rope_round_kernel<<<unsigned(tokens), block_k, 0, stream>>>(qkv, qkv_stride, positions, heads, head_dim, theta,
                                                                section_t, section_h);
    return launched();
}

bool attention(float const *qkv, std::size_t qkv_stride, std::uint32_t const *segment_begin,
               std::uint32_t const *segment_end, std::size_t tokens, std::size_t heads, std::size_t head_dim,
               std::uint16_t *out, std::size_t out_stride, cudaStream_t stream) noexcept {
    if (tokens == 0) return true;
    if (head_dim == 0 || head_dim > head_dim_max_k) return false;
    std::size_t const jobs = tokens * heads;
    unsigned const blocks = unsigned((jobs + attention_warps_k - 1) / attention_warps_k);
    std::size_t const shared = attention_warps_k * (head_dim + warp_k) * sizeof(float);
    float const scale = 1.0f / sqrtf(float(head_dim));
    attention_kernel<<<blocks, attention_warps_k * warp_k, shared, stream>>>(
        qkv, qkv_stride, segment_begin, segment_end, tokens, heads, head_dim, scale, out, out_stride);
    return launched();
}

bool silu_mul(float const *gate_up, std::size_t gate_up_stride, std::size_t rows, std::size_t ffn, std::uint16_t *out,
              std::size_t out_stride, cudaStream_t stream) noexcept {
    if (rows == 0) return true;
    silu_mul_kernel<<<unsigned(rows), block_k, 0, stream>>>(gate_up, gate_up_stride, ffn, out, out_stride);
    return launched();
}

bool gather_bf16(float const *x, std::size_t x_stride, std::uint32_t const *rows, std::size_t count, std::size_t width,
                 std::uint16_t *out, std::size_t out_stride, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    gather_bf16_kernel<<<unsigned(count), block_k, 0, stream>>>(x, x_stride, rows, width, out, out_stride);
    return launched();
}

bool mean_pool_bf16(float const *x, std::size_t x_stride, std::uint32_t const *offsets, std::size_t count,
                    std::size_t width, std::uint16_t *out, std::size_t out_stride, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    mean_pool_kernel<<<unsigned(count), block_k, 0, stream>>>(x, x_stride, offsets, width, out, out_stride);
    return launched();
}

bool l2_normalize(float *x, std::size_t stride, std::size_t rows, std::size_t width, cudaStream_t stream) noexcept {
    if (rows == 0) return true;
    l2_normalize_kernel<<<unsigned(rows), block_k, 0, stream>>>(x, stride, width);
    return launched();
}

bool dequantize_e4m3(std::uint8_t const *bytes, float const *scales, std::size_t rows, std::size_t columns,
                     std::uint16_t *out, cudaStream_t stream) noexcept {
    if (rows == 0) return true;
    dequantize_e4m3_kernel<<<unsigned(rows), block_k, 0, stream>>>(bytes, scales, columns, (columns + 127) / 128, out);
    return launched();
}

bool count_non_finite(float const *x, std::size_t stride, std::size_t rows, std::size_t width, unsigned *flag,
                      cudaStream_t stream) noexcept {
    if (rows == 0) return true;
    count_non_finite_kernel<<<unsigned(rows), block_k, 0, stream>>>(x, stride, width, flag);
    return launched();
}

} // namespace uform::cuda
