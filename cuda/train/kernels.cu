// The CUDA trainer's kernels: simple and plainly correct first (a block per row, a warp per (token, head) of
// attention), following the CPU trainer's numerics: F32 everywhere, BF16 rounding of what a product reads, the
// per-element maths of cpp/train/maths.hpp. See kernels.hpp for what each computes.
#include "cuda/train/kernels.hpp"

#include "cuda/portable.hpp"

namespace uform::cuda::train {
namespace {

constexpr unsigned block_k = 256;                  // threads of the row-wise and element-wise kernels
constexpr unsigned warps_k = 4;                    // (token, head) jobs per block of the attention kernels
constexpr unsigned dims_per_lane_k = 256 / warp_k; // head dimensions each lane keeps: head_dim at most 256
constexpr std::size_t elements_k = 4096;           // elements per block of the element-wise kernels
constexpr std::uint16_t token_max_k = 257;         // the last row of the byte embedding (CHOOSE); above: a media token

__device__ float warp_sum(float value) {
    for (unsigned offset = warp_k / 2; offset != 0; offset /= 2) value += shuffle_xor(value, offset);
    return value;
}

/// The sum of `value` over the block's `block_k` threads, answered to every thread.
template <typename value_type_>
__device__ value_type_ block_sum(value_type_ value) {
    __shared__ value_type_ partial[block_k / warp_k];
    unsigned const lane = threadIdx.x % warp_k, warp = threadIdx.x / warp_k;
    for (unsigned offset = warp_k / 2; offset != 0; offset /= 2) value += shuffle_xor(value, offset);
    block_sync();
    if (lane == 0) partial[warp] = value;
    block_sync();
    value_type_ total = 0;
    for (unsigned i = 0; i != block_k / warp_k; ++i) total += partial[i];
    return total;
}

/// The element range of this block of an element-wise kernel.
__device__ void element_range(std::size_t count, std::size_t &begin, std::size_t &end) {
    begin = std::size_t(blockIdx.x) * elements_k;
    end = begin + elements_k < count ? begin + elements_k : count;
}

__global__ void to_bf16_kernel(float const *x, std::size_t count, std::uint16_t *out) {
    std::size_t begin, end;
    element_range(count, begin, end);
    for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) out[i] = bf16_bits(x[i]);
}

__global__ void squared_sum_kernel(float const *x, std::size_t count, double *sum) {
    std::size_t begin, end;
    element_range(count, begin, end);
    double local = 0;
    for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) local += double(x[i]) * double(x[i]);
    local = block_sum(local);
    if (threadIdx.x == 0) atomicAdd(sum, local);
}

__global__ void scale_kernel(float *x, std::size_t count, float factor) {
    std::size_t begin, end;
    element_range(count, begin, end);
    for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) x[i] = maths::mul(x[i], factor);
}

__global__ void adamw_non_finite_kernel(float const *master, float const *grad, float const *moment1,
                                        float const *moment2, std::size_t count, bool decays,
                                        maths::adamw_scalars_t scalars, unsigned *flag) {
    std::size_t begin, end;
    element_range(count, begin, end);
    unsigned bad = 0;
    for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
        maths::adamw_element_t const next =
            maths::adamw_element(scalars, decays, master[i], grad[i], moment1[i], moment2[i]);
        bad += isfinite(next.theta) && isfinite(next.m) && isfinite(next.v) ? 0u : 1u;
    }
    if (bad != 0) atomicAdd(flag, bad);
}

__global__ void adamw_kernel(float *master, float const *grad, float *moment1, float *moment2, std::size_t count,
                             bool decays, maths::adamw_scalars_t scalars) {
    std::size_t begin, end;
    element_range(count, begin, end);
    for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
        maths::adamw_element_t const next =
            maths::adamw_element(scalars, decays, master[i], grad[i], moment1[i], moment2[i]);
        master[i] = next.theta;
        moment1[i] = next.m;
        moment2[i] = next.v;
    }
}

__global__ void rms_norm_backward_kernel(float const *x, float const *dy, float const *weight, std::size_t width,
                                         float eps, float *dx, float *partial) {
    std::size_t const row = blockIdx.x;
    float const *xr = x + row * width, *dyr = dy + row * width;
    float squares = 0, dot = 0;
    for (std::size_t j = threadIdx.x; j < width; j += blockDim.x) {
        squares += xr[j] * xr[j];
        dot += dyr[j] * weight[j] * xr[j];
    }
    squares = block_sum(squares);
    dot = block_sum(dot);
    float const inverse = 1.0f / sqrtf(squares / float(width) + eps);
    float const c = inverse * inverse * inverse * dot / float(width);
    for (std::size_t j = threadIdx.x; j < width; j += blockDim.x) {
        dx[row * width + j] += maths::rms_norm_backward(xr[j], dyr[j], weight[j], inverse, c);
        partial[row * width + j] = dyr[j] * xr[j] * inverse;
    }
}

__global__ void column_sum_kernel(float const *x, std::size_t rows, std::size_t width, float *out) {
    std::size_t const j = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (j >= width) return;
    float sum = 0;
    for (std::size_t r = 0; r != rows; ++r) sum += x[r * width + j];
    out[j] += sum;
}

__global__ void silu_gate_backward_kernel(float *gate_up, float const *d, std::size_t ffn) {
    std::size_t const row = blockIdx.x;
    float *gate = gate_up + row * 2 * ffn, *up = gate + ffn;
    for (std::size_t j = threadIdx.x; j < ffn; j += blockDim.x) {
        float const x = gate[j], sig = 1.0f / (1.0f + expf(-x));
        maths::silu_gate_backward(x, up[j], sig, d[row * ffn + j], gate[j], up[j]);
    }
}

__global__ void rope_backward_kernel(float *dqkv, std::uint32_t const *positions, std::size_t heads,
                                     std::size_t head_dim, double theta, std::uint32_t section_t,
                                     std::uint32_t section_h) {
    std::size_t const token = blockIdx.x, half = head_dim / 2, width = heads * head_dim;
    float *row = dqkv + token * 3 * width;
    for (std::size_t index = threadIdx.x; index < 2 * heads * half; index += blockDim.x) {
        std::size_t const which = index / (heads * half), head = index / half % heads, pair = index % half;
        std::uint32_t const axis = pair < section_t ? 0 : pair < section_t + section_h ? 1 : 2;
        double const frequency = pow(theta, -2.0 * double(pair) / double(head_dim));
        double const angle = double(positions[3 * token + axis]) * frequency;
        float const c = float(cos(angle)), s = float(sin(angle));
        float *d = row + which * width + head * head_dim;
        float low, high;
        maths::unrotate_pair(d[pair], d[half + pair], c, s, low, high);
        d[pair] = low;
        d[half + pair] = high;
    }
}

/// One lane's share of a head's vector: dimensions `lane + r 32`.
struct lane_vector_t {
    float v[dims_per_lane_k];
};

__device__ lane_vector_t load(float const *x, std::size_t head_dim, unsigned lane, bool round) {
    lane_vector_t out;
#pragma unroll
    for (unsigned r = 0; r != dims_per_lane_k; ++r) {
        std::size_t const d = lane + r * warp_k;
        out.v[r] = d < head_dim ? (round ? round_bf16(x[d]) : x[d]) : 0.0f;
    }
    return out;
}

/// The dot product of a lane vector with row `x`, summed over the warp.
__device__ float dot(lane_vector_t const &a, float const *x, std::size_t head_dim, unsigned lane) {
    float sum = 0;
#pragma unroll
    for (unsigned r = 0; r != dims_per_lane_k; ++r) {
        std::size_t const d = lane + r * warp_k;
        if (d < head_dim) sum += a.v[r] * x[d];
    }
    return warp_sum(sum);
}

/// `out += weight x` over a lane's dimensions.
__device__ void accumulate(lane_vector_t &out, float weight, float const *x, std::size_t head_dim, unsigned lane) {
#pragma unroll
    for (unsigned r = 0; r != dims_per_lane_k; ++r) {
        std::size_t const d = lane + r * warp_k;
        if (d < head_dim) out.v[r] += weight * x[d];
    }
}

__device__ void store(lane_vector_t const &a, float *x, std::size_t head_dim, unsigned lane) {
#pragma unroll
    for (unsigned r = 0; r != dims_per_lane_k; ++r) {
        std::size_t const d = lane + r * warp_k;
        if (d < head_dim) x[d] = a.v[r];
    }
}

/// Per (query, head): the softmax's maximum and sum, D = Σ_j P dP, then dq = Σ_j bf16(dS) k (rotated).
__global__ void attention_queries_kernel(float const *qkv, float const *d_out, std::uint32_t const *segment_begin,
                                         std::uint32_t const *segment_end, std::size_t tokens, std::size_t heads,
                                         std::size_t head_dim, float scale, float root, float *statistics,
                                         float *dqkv) {
    unsigned const lane = threadIdx.x % warp_k;
    std::size_t const job = std::size_t(blockIdx.x) * warps_k + threadIdx.x / warp_k;
    if (job >= tokens * heads) return;
    std::size_t const token = job / heads, head = job % heads, width = heads * head_dim, stride = 3 * width;
    std::size_t const begin = segment_begin[token], end = segment_end[token];
    lane_vector_t const q = load(qkv + token * stride + head * head_dim, head_dim, lane, false);
    lane_vector_t const d_o = load(d_out + token * width + head * head_dim, head_dim, lane, true);
    auto key = [&](std::size_t j) { return qkv + j * stride + width + head * head_dim; };
    auto value = [&](std::size_t j) { return qkv + j * stride + 2 * width + head * head_dim; };
    float maximum = -CUDART_INF_F, sum = 0;
    for (std::size_t j = begin; j != end; ++j) {
        float const s = dot(q, key(j), head_dim, lane) * scale;
        float const next = fmaxf(maximum, s);
        sum = sum * expf(maximum - next) + expf(s - next);
        maximum = next;
    }
    float const inverse = 1.0f / sum;
    float dsum = 0;
    for (std::size_t j = begin; j != end; ++j) {
        float const p = expf(dot(q, key(j), head_dim, lane) * scale - maximum) * inverse;
        dsum += p * dot(d_o, value(j), head_dim, lane);
    }
    lane_vector_t dq{};
    for (std::size_t j = begin; j != end; ++j) {
        float const p = expf(dot(q, key(j), head_dim, lane) * scale - maximum) * inverse;
        float const ds = p * (dot(d_o, value(j), head_dim, lane) - dsum) / root;
        accumulate(dq, round_bf16(ds), key(j), head_dim, lane);
    }
    store(dq, dqkv + token * stride + head * head_dim, head_dim, lane);
    if (lane == 0) {
        float *st = statistics + job * 3;
        st[0] = maximum, st[1] = inverse, st[2] = dsum;
    }
}

/// Per (key, head): dv = Σ_i bf16(P) bf16(dO_i) and dk = Σ_i bf16(dS) q_i over the queries of its segment.
__global__ void attention_keys_kernel(float const *qkv, float const *d_out, std::uint32_t const *segment_begin,
                                      std::uint32_t const *segment_end, std::size_t tokens, std::size_t heads,
                                      std::size_t head_dim, float scale, float root, float const *statistics,
                                      float *dqkv) {
    unsigned const lane = threadIdx.x % warp_k;
    std::size_t const job = std::size_t(blockIdx.x) * warps_k + threadIdx.x / warp_k;
    if (job >= tokens * heads) return;
    std::size_t const token = job / heads, head = job % heads, width = heads * head_dim, stride = 3 * width;
    std::size_t const begin = segment_begin[token], end = segment_end[token];
    lane_vector_t const k = load(qkv + token * stride + width + head * head_dim, head_dim, lane, false);
    lane_vector_t const v = load(qkv + token * stride + 2 * width + head * head_dim, head_dim, lane, false);
    lane_vector_t dk{}, dv{};
    for (std::size_t i = begin; i != end; ++i) {
        float const *st = statistics + (i * heads + head) * 3;
        float const *q = qkv + i * stride + head * head_dim;
        lane_vector_t const d_o = load(d_out + i * width + head * head_dim, head_dim, lane, true);
        float const p = expf(dot(k, q, head_dim, lane) * scale - st[0]) * st[1];
        float dp = 0;
#pragma unroll
        for (unsigned r = 0; r != dims_per_lane_k; ++r) dp += d_o.v[r] * v.v[r];
        dp = warp_sum(dp);
        float const ds = p * (dp - st[2]) / root, pr = round_bf16(p), dsr = round_bf16(ds);
#pragma unroll
        for (unsigned r = 0; r != dims_per_lane_k; ++r) dv.v[r] += pr * d_o.v[r];
        accumulate(dk, dsr, q, head_dim, lane);
    }
    store(dk, dqkv + token * stride + width + head * head_dim, head_dim, lane);
    store(dv, dqkv + token * stride + 2 * width + head * head_dim, head_dim, lane);
}

__global__ void embed_backward_kernel(float const *dx, std::uint16_t const *ids, std::size_t hidden,
                                      float *table_grad) {
    std::size_t const token = blockIdx.x;
    if (ids[token] > token_max_k) return;
    float *target = table_grad + std::size_t(ids[token]) * hidden;
    for (std::size_t j = threadIdx.x; j < hidden; j += blockDim.x) atomicAdd(target + j, dx[token * hidden + j]);
}

__global__ void mean_pool_backward_kernel(float const *d_pooled, std::uint32_t const *offsets, std::size_t width,
                                          float *dh) {
    std::size_t const item = blockIdx.x, begin = offsets[item], end = offsets[item + 1];
    if (begin == end) return;
    float const n = float(end - begin);
    for (std::size_t row = begin; row != end; ++row)
        for (std::size_t j = threadIdx.x; j < width; j += blockDim.x)
            dh[row * width + j] += d_pooled[item * width + j] / n;
}

__global__ void normalize_backward_kernel(float const *y, float const *dy, float const *lengths, std::size_t width,
                                          float *dx) {
    std::size_t const row = blockIdx.x;
    float const *yr = y + row * width, *dyr = dy + row * width;
    float d = 0;
    for (std::size_t j = threadIdx.x; j < width; j += blockDim.x) d += yr[j] * dyr[j];
    d = block_sum(d);
    float const length = lengths[row];
    for (std::size_t j = threadIdx.x; j < width; j += blockDim.x)
        dx[row * width + j] = length > 0 ? (dyr[j] - yr[j] * d) / length : 0.0f;
}

__global__ void scatter_add_rows_kernel(float const *x, std::uint32_t const *rows, std::size_t width, float *out) {
    std::size_t const r = blockIdx.x;
    float *target = out + std::size_t(rows[r]) * width;
    for (std::size_t j = threadIdx.x; j < width; j += blockDim.x) target[j] += x[r * width + j];
}

__global__ void round_f32_kernel(float const *x, std::size_t count, float *out) {
    std::size_t begin, end;
    element_range(count, begin, end);
    for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) out[i] = round_bf16(x[i]);
}

__global__ void embed_text_kernel(float const *table, std::uint16_t const *ids, std::size_t hidden, float *x) {
    std::size_t const token = blockIdx.x;
    if (ids[token] > token_max_k) return;
    float const *row = table + std::size_t(ids[token]) * hidden;
    for (std::size_t j = threadIdx.x; j < hidden; j += blockDim.x) x[token * hidden + j] = row[j];
}

__global__ void scatter_bias_rows_kernel(float const *embedded, float const *bias, std::uint32_t const *rows,
                                         std::size_t width, float *x) {
    std::size_t const r = blockIdx.x;
    float *target = x + std::size_t(rows[r]) * width;
    for (std::size_t j = threadIdx.x; j < width; j += blockDim.x) target[j] = embedded[r * width + j] + bias[j];
}

__global__ void gather_rows_kernel(float const *x, std::uint32_t const *rows, std::size_t width, float *out) {
    std::size_t const r = blockIdx.x;
    float const *source = x + std::size_t(rows[r]) * width;
    for (std::size_t j = threadIdx.x; j < width; j += blockDim.x) out[r * width + j] = source[j];
}

bool launched() noexcept { return cudaGetLastError() == cudaSuccess; }

unsigned element_blocks(std::size_t count) noexcept { return unsigned((count + elements_k - 1) / elements_k); }

} // namespace

bool to_bf16(float const *x, std::size_t count, std::uint16_t *out, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    to_bf16_kernel<<<element_blocks(count), block_k, 0, stream>>>(x, count, out);
    return launched();
}

bool squared_sum(float const *x, std::size_t count, double *sum, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    squared_sum_kernel<<<element_blocks(count), block_k, 0, stream>>>(x, count, sum);
    return launched();
}

bool scale(float *x, std::size_t count, float factor, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    scale_kernel<<<element_blocks(count), block_k, 0, stream>>>(x, count, factor);
    return launched();
}

bool adamw_non_finite(float const *master, float const *grad, float const *moment1, float const *moment2,
                      std::size_t count, bool decays, maths::adamw_scalars_t const &scalars, unsigned *flag,
                      cudaStream_t stream) noexcept {
    if (count == 0) return true;
    adamw_non_finite_kernel<<<element_blocks(count), block_k, 0, stream>>>(master, grad, moment1, moment2, count,
                                                                           decays, scalars, flag);
    return launched();
}

bool adamw(float *master, float const *grad, float *moment1, float *moment2, std::size_t count, bool decays,
           maths::adamw_scalars_t const &scalars, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    adamw_kernel<<<element_blocks(count), block_k, 0, stream>>>(master, grad, moment1, moment2, count, decays, scalars);
    return launched();
}

bool rms_norm_backward(float const *x, float const *dy, float const *weight, std::size_t rows, std::size_t width,
                       float eps, float *dx, float *partial, cudaStream_t stream) noexcept {
    if (rows == 0) return true;
    rms_norm_backward_kernel<<<unsigned(rows), block_k, 0, stream>>>(x, dy, weight, width, eps, dx, partial);
    return launched();
}

bool column_sum(float const *x, std::size_t rows, std::size_t width, float *out, cudaStream_t stream) noexcept {
    if (rows == 0 || width == 0) return true;
    column_sum_kernel<<<unsigned((width + block_k - 1) / block_k), block_k, 0, stream>>>(x, rows, width, out);
    return launched();
}

bool silu_gate_backward(float *gate_up, float const *d, std::size_t rows, std::size_t ffn,
                        cudaStream_t stream) noexcept {
    if (rows == 0) return true;
    silu_gate_backward_kernel<<<unsigned(rows), block_k, 0, stream>>>(gate_up, d, ffn);
    return launched();
}

bool rope_backward(float *dqkv, std::size_t tokens, std::uint32_t const *positions, std::size_t heads,
                   std::size_t head_dim, double theta, std::uint32_t section_t, std::uint32_t section_h,
                   cudaStream_t stream) noexcept {
    if (tokens == 0) return true;
    rope_backward_kernel<<<unsigned(tokens), block_k, 0, stream>>>(dqkv, positions, heads, head_dim, theta, section_t,
                                                                   section_h);
    return launched();
}

bool attention_backward(float const *qkv, float const *d_out, std::uint32_t const *segment_begin,
                        std::uint32_t const *segment_end, std::size_t tokens, std::size_t heads, std::size_t head_dim,
                        float *statistics, float *dqkv, cudaStream_t stream) noexcept {
    if (tokens == 0) return true;
    if (head_dim == 0 || head_dim > dims_per_lane_k * warp_k) return false;
    unsigned const blocks = unsigned((tokens * heads + warps_k - 1) / warps_k);
    // The forward's scale (cuda/kernels.cu), and the CPU trainer's divisor of the scores' gradient.
    float const scale = 1.0f / sqrtf(float(head_dim));
    float const root = float(sqrt(double(head_dim)));
    attention_queries_kernel<<<blocks, warps_k * warp_k, 0, stream>>>(qkv, d_out, segment_begin, segment_end, tokens,
                                                                      heads, head_dim, scale, root, statistics, dqkv);
    if (!launched()) return false;
    attention_keys_kernel<<<blocks, warps_k * warp_k, 0, stream>>>(qkv, d_out, segment_begin, segment_end, tokens,
                                                                   heads, head_dim, scale, root, statistics, dqkv);
    return launched();
}

bool embed_backward(float const *dx, std::uint16_t const *ids, std::size_t tokens, std::size_t hidden,
                    float *table_grad, cudaStream_t stream) noexcept {
    if (tokens == 0) return true;
    embed_backward_kernel<<<unsigned(tokens), block_k, 0, stream>>>(dx, ids, hidden, table_grad);
    return launched();
}

bool mean_pool_backward(float const *d_pooled, std::uint32_t const *offsets, std::size_t count, std::size_t width,
                        float *dh, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    mean_pool_backward_kernel<<<unsigned(count), block_k, 0, stream>>>(d_pooled, offsets, width, dh);
    return launched();
}

bool normalize_backward(float const *y, float const *dy, float const *lengths, std::size_t rows, std::size_t width,
                        float *dx, cudaStream_t stream) noexcept {
    if (rows == 0) return true;
    normalize_backward_kernel<<<unsigned(rows), block_k, 0, stream>>>(y, dy, lengths, width, dx);
    return launched();
}

bool scatter_add_rows(float const *x, std::uint32_t const *rows, std::size_t count, std::size_t width, float *out,
                      cudaStream_t stream) noexcept {
    if (count == 0) return true;
    scatter_add_rows_kernel<<<unsigned(count), block_k, 0, stream>>>(x, rows, width, out);
    return launched();
}

bool round_f32(float const *x, std::size_t count, float *out, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    round_f32_kernel<<<element_blocks(count), block_k, 0, stream>>>(x, count, out);
    return launched();
}

bool embed_text(float const *table, std::uint16_t const *ids, std::size_t tokens, std::size_t hidden, float *x,
                cudaStream_t stream) noexcept {
    if (tokens == 0) return true;
    embed_text_kernel<<<unsigned(tokens), block_k, 0, stream>>>(table, ids, hidden, x);
    return launched();
}

bool scatter_bias_rows(float const *embedded, float const *bias, std::uint32_t const *rows, std::size_t count,
                       std::size_t width, float *x, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    scatter_bias_rows_kernel<<<unsigned(count), block_k, 0, stream>>>(embedded, bias, rows, width, x);
    return launched();
}

bool gather_rows(float const *x, std::uint32_t const *rows, std::size_t count, std::size_t width, float *out,
                 cudaStream_t stream) noexcept {
    if (count == 0) return true;
    gather_rows_kernel<<<unsigned(count), block_k, 0, stream>>>(x, rows, width, out);
    return launched();
}

} // namespace uform::cuda::train
