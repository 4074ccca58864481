// The device trunk: the staged inputs uploaded, the blocks' forward keeping each block's input and, within a bound,
// its activations; the backward recomputing what was not kept, then each block's backward; the heads' unit rows on the
// host (cpp/train/trunk.cpp does the same on the CPU, in the same order of roundings).
#include "cuda/train/trunk.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>

#include "common/fail.hpp"
#include "common/scalars.hpp"
#include "cuda/kernels.hpp"
#include "cuda/train/kernels.hpp"
#include "cuda/train/products.hpp"

namespace uform::cuda::train {
namespace {

using uform::train::parameters_t;

constexpr std::size_t alignment_k = 256;

constexpr std::size_t aligned(std::size_t bytes) noexcept {
    return (bytes + alignment_k - 1) / alignment_k * alignment_k;
}

/// The front-end tensor names of media index `m`.
std::string_view media_weight(std::size_t m) noexcept {
    return m == 0 ? "embed.image.weight" : m == 1 ? "embed.video.weight" : "embed.audio.weight";
}
std::string_view media_bias(std::size_t m) noexcept {
    return m == 0 ? "embed.image.bias" : m == 1 ? "embed.video.bias" : "embed.audio.bias";
}

/// The name `blocks.{l}.{suffix}` of a block's tensor, on the stack.
class block_name_t {
  public:
    explicit block_name_t(std::size_t block) noexcept {
        prefix_ = std::size_t(std::snprintf(text_, sizeof text_, "blocks.%zu.", block));
    }
    std::string_view operator()(std::string_view suffix) const noexcept {
        std::size_t const length = std::min(suffix.size(), sizeof text_ - 1 - prefix_);
        std::memcpy(text_ + prefix_, suffix.data(), length);
        return {text_, prefix_ + length};
    }

  private:
    mutable char text_[96];
    std::size_t prefix_ = 0;
};

/// The bytes of one block's slot for `tokens` tokens.
std::size_t slot_bytes_of(geometry_t const &g, std::size_t tokens) noexcept {
    std::size_t const H = g.hidden, A = g.heads * g.head_dim, F = g.ffn_hidden;
    return 2 * aligned(tokens * H * 2) + aligned(tokens * A * 2) + aligned(tokens * F * 2) +
           aligned(tokens * 3 * A * 4) + aligned(tokens * H * 4);
}

/// Slot `i`'s arrays in `b`.
device_slot_t slot_at(trunk_buffers_t const &b, geometry_t const &g, std::size_t tokens, std::size_t i) noexcept {
    std::size_t const H = g.hidden, A = g.heads * g.head_dim, F = g.ffn_hidden;
    std::byte *at = b.slots + i * b.slot_bytes;
    device_slot_t s{};
    auto take = [&](auto *&pointer, std::size_t count) noexcept {
        using value_t = std::remove_reference_t<decltype(*pointer)>;
        pointer = reinterpret_cast<value_t *>(at);
        at += aligned(count * sizeof(value_t));
    };
    take(s.n1, tokens * H), take(s.n2, tokens * H), take(s.ao, tokens * A), take(s.m, tokens * F);
    take(s.qkv, tokens * 3 * A), take(s.xm, tokens * H);
    return s;
}

/// Carves `b` from `base` (or only sizes it when `base` is null) for `slots` slots; answers the bytes in all.
std::size_t carve(parameters_t const &p, staged_request_t const &st, std::size_t slots, std::byte *base,
                  trunk_buffers_t &b) noexcept {
    geometry_t const &g = p.geometry;
    std::size_t const N = st.tokens, items = st.items, H = g.hidden, A = g.heads * g.head_dim, F = g.ffn_hidden;
    std::size_t const R = st.logit_rows.size(), V = st.vector_rows.size(), D = g.dimensions, TW = g.token_width;
    std::size_t offset = 0, media_max = 0;
    auto take = [&](auto *&pointer, std::size_t count) noexcept {
        using value_t = std::remove_reference_t<decltype(*pointer)>;
        pointer = base == nullptr ? nullptr : reinterpret_cast<value_t *>(base + offset);
        offset += aligned(count * sizeof(value_t));
    };
    take(b.ids, N), take(b.positions, 3 * N), take(b.segment_begin, N), take(b.segment_end, N);
    take(b.item_offsets, items + 1), take(b.logit_rows, R), take(b.vector_rows, V);
    for (std::size_t m = 0; m != 3; ++m) {
        take(b.media_rows[m], st.media_rows[m].size()), take(b.patches[m], st.media_patches[m].size());
        take(b.patch_bits[m], st.media_patches[m].size());
        media_max = std::max(media_max, st.media_rows[m].size());
    }
    take(b.saved, (g.depth + 1) * N * H);
    b.slot_bytes = slot_bytes_of(g, N);
    take(b.slots, slots * b.slot_bytes);
    take(b.gu, N * 2 * F), take(b.h, N * H), take(b.e, items * D), take(b.t, V * TW), take(b.logits, R * 256);
    take(b.pooled, items * H), take(b.vector_in, V * H), take(b.logit_in, R * H);
    take(b.wide, N * std::max(F, A)), take(b.dqkv, N * 3 * A), take(b.dn, std::max(N, media_max) * H);
    take(b.dx, N * H), take(b.partial, std::max(N, media_max) * H), take(b.statistics, N * g.heads * 3);
    take(b.dhead, std::max({items, V, R}) * H), take(b.dbits, N * std::max({H, 2 * F, 3 * A}));
    take(b.d_embeddings, items * D), take(b.d_vectors, V * TW), take(b.d_logits, R * 256);
    return offset;
}

/// Copies `count` values of `source` to the device's `target` on `stream`; false when refused.
template <typename value_type_>
bool upload(value_type_ *target, std::vector<value_type_> const &source, cudaStream_t stream) noexcept {
    if (source.empty()) return true;
    return cudaMemcpyAsync(target, source.data(), source.size() * sizeof(value_type_), cudaMemcpyHostToDevice,
                           stream) == cudaSuccess;
}

/// Copies `count` device values into `target` (resized) on `stream`; false when refused.
bool download(std::vector<float> &target, float const *source, std::size_t count, cudaStream_t stream) noexcept {
    if (count == 0) return true;
    return cudaMemcpyAsync(target.data(), source, count * sizeof(float), cudaMemcpyDeviceToHost, stream) == cudaSuccess;
}

/// `x / |x|` of a row into `out`, answering `|x|`; a zero row stays zero (cpp/train/trunk.cpp's).
float normalize_into(float const *x, float *out, std::size_t count) noexcept {
    float sum = 0;
    for (std::size_t i = 0; i != count; ++i) sum += x[i] * x[i];
    float const length = std::sqrt(sum);
    for (std::size_t i = 0; i != count; ++i) out[i] = length > 0 ? x[i] / length : 0.0f;
    return length;
}

/// The BF16 bits of `dx = (dy - y (y . dy)) / |x|` (zero for a zero row), the backward of `y = x / |x|`.
void normalize_backward_bits(float const *y, float const *dy, float length, std::uint16_t *dx,
                             std::size_t count) noexcept {
    float dot = 0;
    for (std::size_t i = 0; i != count; ++i) dot += y[i] * dy[i];
    for (std::size_t i = 0; i != count; ++i) dx[i] = f32_to_bf16(length > 0 ? (dy[i] - y[i] * dot) / length : 0.0f);
}

/// One call's view: stream, device tensors, host records, buffers; `ok` turns false at the first refused launch.
struct pass_t {
    stream_t &stream;
    device_parameters_t const &device;
    parameters_t const &p;
    trunk_buffers_t const &b;
    staged_request_t const &st;
    bool ok = true;

    geometry_t const &g() const noexcept { return p.geometry; }
    std::size_t index(std::string_view name) const noexcept {
        return static_cast<std::size_t>(p.find(name) - p.tensors.data());
    }
    device_tensor_t const &tensor(std::string_view name) const noexcept { return device.tensor(index(name)); }
    cudaStream_t s() const noexcept { return stream.stream; }

    /// `y (+)= x W^T` over `rows` rows, `x` BF16 rows of the weight's input width.
    void linear(std::uint16_t const *x, std::size_t rows, std::string_view name, float *y, bool accumulate) noexcept {
        uform::train::tensor_t const &w = *p.find(name);
        std::size_t const out = w.shape[0], in = w.shape[1];
        if (rows != 0)
            ok =
                ok && product(stream, {x, in, false}, {tensor(name).bits, in, true}, rows, out, in, y, out, accumulate);
    }
    /// `dx (+)= dy W` over `rows` rows, `dy` BF16 rows of the weight's output width.
    void input_grad(std::uint16_t const *dy, std::size_t rows, std::string_view name, float *dx,
                    bool accumulate) noexcept {
        uform::train::tensor_t const &w = *p.find(name);
        std::size_t const out = w.shape[0], in = w.shape[1];
        if (rows != 0)
            ok = ok &&
                 product(stream, {dy, out, false}, {tensor(name).bits, in, false}, rows, in, out, dx, in, accumulate);
    }
    /// `grad(W) += dy^T x` over `rows` rows: `dy` read transposed through its layout.
    void weight_grad(std::uint16_t const *dy, std::uint16_t const *x, std::size_t rows,
                     std::string_view name) noexcept {
        uform::train::tensor_t const &w = *p.find(name);
        std::size_t const out = w.shape[0], in = w.shape[1];
        if (rows != 0)
            ok = ok && product(stream, {dy, out, true}, {x, in, false}, out, in, rows, tensor(name).grad, in, true);
    }
    /// `dbits = bits(bf16(d))` of `count` values.
    std::uint16_t const *bits(float const *d, std::size_t count) noexcept {
        ok = ok && to_bf16(d, count, b.dbits, s());
        return b.dbits;
    }
    /// `out = bf16(RMSNorm(x) * w)` over the tokens.
    void norm_bits(float const *x, std::string_view name, std::uint16_t *out) noexcept {
        std::size_t const H = g().hidden;
        ok = ok && cuda::rms_norm(x, H, tensor(name).copy, st.tokens, H, g().norm_eps, out, nullptr, H, s());
    }
    /// The backward of `y = RMSNorm(x) * w`: `dx += ...`, `grad(w) +=` the sum over tokens.
    void norm_backward(float const *x, float const *dy, std::string_view name) noexcept {
        std::size_t const H = g().hidden, N = st.tokens;
        device_tensor_t const &w = tensor(name);
        ok = ok && rms_norm_backward(x, dy, w.copy, N, H, g().norm_eps, b.dx, b.partial, s()) &&
             column_sum(b.partial, N, H, w.grad, s());
    }
};

/// Tells `sums` (when given, and the pass held) that the gradients from tensor `from` on are final once the work the
/// pass enqueued so far runs: their buckets may start summing.
void announce(pass_t const &pass, overlapped_sums_t *sums, std::size_t from) noexcept {
    if (sums && pass.ok) sums->ready(from);
}

/// Block `l` from `saved[l]` into slot `a`, `gu` and `saved[l + 1]` (cpp/train/trunk.cpp's `block_forward`).
void block_forward(pass_t &pass, std::size_t l, device_slot_t const &a) noexcept {
    geometry_t const &g = pass.g();
    trunk_buffers_t const &b = pass.b;
    std::size_t const H = g.hidden, A = g.heads * g.head_dim, N = pass.st.tokens, F = g.ffn_hidden;
    block_name_t const prefix{l};
    float const *x = b.saved + l * N * H;
    float *next = b.saved + (l + 1) * N * H;
    cudaStream_t const s = pass.s();
    pass.norm_bits(x, prefix("attn_norm.weight"), a.n1);
    pass.linear(a.n1, N, prefix("attn.qkv.weight"), a.qkv, false);
    pass.ok = pass.ok &&
              cuda::rope_round(a.qkv, 3 * A, N, b.positions, g.heads, g.head_dim, double(g.rope_theta),
                               std::uint32_t(g.rope_sections[0]), std::uint32_t(g.rope_sections[1]), s) &&
              cuda::attention(a.qkv, 3 * A, b.segment_begin, b.segment_end, N, g.heads, g.head_dim, a.ao, A, s) &&
              cudaMemcpyAsync(a.xm, x, N * H * sizeof(float), cudaMemcpyDeviceToDevice, s) == cudaSuccess;
    pass.linear(a.ao, N, prefix("attn.out.weight"), a.xm, true);
    pass.norm_bits(a.xm, prefix("mlp_norm.weight"), a.n2);
    pass.linear(a.n2, N, prefix("mlp.gate_up.weight"), b.gu, false);
    pass.ok = pass.ok && cuda::silu_mul(b.gu, 2 * F, N, F, a.m, F, s) &&
              cudaMemcpyAsync(next, a.xm, N * H * sizeof(float), cudaMemcpyDeviceToDevice, s) == cudaSuccess;
    pass.linear(a.m, N, prefix("mlp.down.weight"), next, true);
}

/// The backward of block `l` (slot `a` holding it, `gu` its gate and up): `dx` holds dL/d saved[l + 1] and becomes
/// dL/d saved[l] (cpp/train/trunk.cpp's `block_backward`).
void block_backward(pass_t &pass, std::size_t l, device_slot_t const &a) noexcept {
    geometry_t const &g = pass.g();
    trunk_buffers_t const &b = pass.b;
    std::size_t const H = g.hidden, A = g.heads * g.head_dim, N = pass.st.tokens, F = g.ffn_hidden;
    block_name_t const prefix{l};
    cudaStream_t const s = pass.s();
    // MLP.
    std::uint16_t const *dy = pass.bits(b.dx, N * H);
    pass.weight_grad(dy, a.m, N, prefix("mlp.down.weight"));
    pass.input_grad(dy, N, prefix("mlp.down.weight"), b.wide, false);
    pass.ok = pass.ok && silu_gate_backward(b.gu, b.wide, N, F, s);
    dy = pass.bits(b.gu, N * 2 * F);
    pass.input_grad(dy, N, prefix("mlp.gate_up.weight"), b.dn, false);
    pass.weight_grad(dy, a.n2, N, prefix("mlp.gate_up.weight"));
    pass.norm_backward(a.xm, b.dn, prefix("mlp_norm.weight"));
    // Attention.
    dy = pass.bits(b.dx, N * H);
    pass.weight_grad(dy, a.ao, N, prefix("attn.out.weight"));
    pass.input_grad(dy, N, prefix("attn.out.weight"), b.wide, false);
    pass.ok = pass.ok &&
              attention_backward(a.qkv, b.wide, b.segment_begin, b.segment_end, N, g.heads, g.head_dim, b.statistics,
                                 b.dqkv, s) &&
              rope_backward(b.dqkv, N, b.positions, g.heads, g.head_dim, double(g.rope_theta),
                            std::uint32_t(g.rope_sections[0]), std::uint32_t(g.rope_sections[1]), s);
    dy = pass.bits(b.dqkv, N * 3 * A);
    pass.input_grad(dy, N, prefix("attn.qkv.weight"), b.dn, false);
    pass.weight_grad(dy, a.n1, N, prefix("attn.qkv.weight"));
    pass.norm_backward(b.saved + l * N * H, b.dn, prefix("attn_norm.weight"));
}

/// The embeddings into `saved[0]`: byte rows, then each front-end's patches through its linear plus bias.
void embed(pass_t &pass) noexcept {
    trunk_buffers_t const &b = pass.b;
    std::size_t const H = pass.g().hidden, N = pass.st.tokens;
    cudaStream_t const s = pass.s();
    pass.ok = pass.ok && embed_text(pass.tensor("embed.byte.weight").copy, b.ids, N, H, b.saved, s);
    for (std::size_t m = 0; m != 3; ++m) {
        std::size_t const rows = pass.st.media_rows[m].size();
        if (rows == 0) continue;
        pass.ok = pass.ok && to_bf16(b.patches[m], pass.st.media_patches[m].size(), b.patch_bits[m], s);
        pass.linear(b.patch_bits[m], rows, media_weight(m), b.dn, false);
        pass.ok =
            pass.ok && scatter_bias_rows(b.dn, pass.tensor(media_bias(m)).copy, b.media_rows[m], rows, H, b.saved, s);
    }
}

/// The embeddings' backward from `dx`: byte rows scatter-added, each front-end's weight and bias.
void embed_rows_backward(pass_t &pass) noexcept {
    trunk_buffers_t const &b = pass.b;
    std::size_t const H = pass.g().hidden, N = pass.st.tokens;
    cudaStream_t const s = pass.s();
    pass.ok = pass.ok && train::embed_backward(b.dx, b.ids, N, H, pass.tensor("embed.byte.weight").grad, s);
    for (std::size_t m = 0; m != 3; ++m) {
        std::size_t const rows = pass.st.media_rows[m].size();
        if (rows == 0) continue;
        pass.ok = pass.ok && gather_rows(b.dx, b.media_rows[m], rows, H, b.dn, s) &&
                  column_sum(b.dn, rows, H, pass.tensor(media_bias(m)).grad, s);
        pass.weight_grad(pass.bits(b.dn, rows * H), b.patch_bits[m], rows, media_weight(m));
    }
}

/// The final norm and the heads: pooled embeddings, the flagged rows' token vectors, the byte logits (device rows).
void heads(pass_t &pass) noexcept {
    geometry_t const &g = pass.g();
    trunk_buffers_t const &b = pass.b;
    staged_request_t const &st = pass.st;
    std::size_t const H = g.hidden, N = st.tokens, R = st.logit_rows.size(), V = st.vector_rows.size();
    cudaStream_t const s = pass.s();
    pass.ok = pass.ok && cuda::rms_norm(b.saved + g.depth * N * H, H, pass.tensor("final_norm.weight").copy, N, H,
                                        g.norm_eps, nullptr, b.h, H, s);
    pass.ok = pass.ok && cuda::mean_pool_bf16(b.h, H, b.item_offsets, st.items, H, b.pooled, H, s);
    pass.linear(b.pooled, st.items, "head.embedding.weight", b.e, false);
    if (V != 0) {
        pass.ok = pass.ok && cuda::gather_bf16(b.h, H, b.vector_rows, V, H, b.vector_in, H, s);
        pass.linear(b.vector_in, V, "head.token.weight", b.t, false);
    }
    if (R != 0) {
        pass.ok = pass.ok && cuda::gather_bf16(b.h, H, b.logit_rows, R, H, b.logit_in, H, s);
        pass.linear(b.logit_in, R, "head.byte.weight", b.logits, false);
    }
}

/// The heads' backward into `dh` (zeroed here), given the output gradients' BF16 bits uploaded.
void heads_backward(pass_t &pass, float *dh) noexcept {
    geometry_t const &g = pass.g();
    trunk_buffers_t const &b = pass.b;
    staged_request_t const &st = pass.st;
    std::size_t const H = g.hidden, N = st.tokens, R = st.logit_rows.size(), V = st.vector_rows.size();
    cudaStream_t const s = pass.s();
    pass.ok = pass.ok && cudaMemsetAsync(dh, 0, N * H * sizeof(float), s) == cudaSuccess;
    if (st.items != 0) {
        pass.input_grad(b.d_embeddings, st.items, "head.embedding.weight", b.dhead, false);
        pass.weight_grad(b.d_embeddings, b.pooled, st.items, "head.embedding.weight");
        pass.ok = pass.ok && mean_pool_backward(b.dhead, b.item_offsets, st.items, H, dh, s);
    }
    if (V != 0) {
        pass.input_grad(b.d_vectors, V, "head.token.weight", b.dhead, false);
        pass.weight_grad(b.d_vectors, b.vector_in, V, "head.token.weight");
        pass.ok = pass.ok && scatter_add_rows(b.dhead, b.vector_rows, V, H, dh, s);
    }
    if (R != 0) {
        pass.input_grad(b.d_logits, R, "head.byte.weight", b.dhead, false);
        pass.weight_grad(b.d_logits, b.logit_in, R, "head.byte.weight");
        pass.ok = pass.ok && scatter_add_rows(b.dhead, b.logit_rows, R, H, dh, s);
    }
}

/// Waits for the stream; `internal` with `what` when a launch was refused or the device failed.
uform_status_t finish(stream_t &stream, bool ok, char const *what, char const **message) noexcept {
    if (cudaStreamSynchronize(stream.stream) == cudaSuccess && ok) return uform_status_ok_k;
    (void)cudaGetLastError();
    return fail(message, uform_status_internal_k, what);
}

} // namespace

device_trunk_t::device_trunk_t() noexcept = default;
device_trunk_t::~device_trunk_t() noexcept = default;

uform_status_t device_trunk_t::prepare(stream_t &stream, parameters_t const &p, char const **message) noexcept {
    geometry_t const &g = p.geometry;
    std::size_t const depth = std::max<std::size_t>(g.depth, 1);
    if (kept_bytes_ == 0) {
        std::size_t free = 0, total = 0;
        if (cudaMemGetInfo(&free, &total) != cudaSuccess) (void)cudaGetLastError();
        kept_bytes_ = std::max<std::size_t>(free / 2, 1);
    }
    slots_ =
        std::clamp<std::size_t>(kept_bytes_ / std::max<std::size_t>(slot_bytes_of(g, staged_.tokens), 1), 1, depth);
    std::size_t const bytes = carve(p, staged_, slots_, nullptr, buffers_);
    if (bytes > memory_.size) {
        memory_.release();
        if (!memory_.reserve(bytes))
            return fail(message, uform_status_out_of_memory_k, "out of device memory for the trainer's activations");
        ++allocations_;
    }
    carve(p, staged_, slots_, static_cast<std::byte *>(memory_.data), buffers_);
    holder_.assign(slots_, g.depth), gu_holder_ = g.depth;
    trunk_buffers_t const &b = buffers_;
    cudaStream_t const s = stream.stream;
    bool ok = upload(b.ids, staged_.ids, s) && upload(b.positions, staged_.positions, s) &&
              upload(b.segment_begin, staged_.segment_begin, s) && upload(b.segment_end, staged_.segment_end, s) &&
              upload(b.item_offsets, staged_.item_offsets, s) && upload(b.logit_rows, staged_.logit_rows, s) &&
              upload(b.vector_rows, staged_.vector_rows, s);
    for (std::size_t m = 0; m != 3; ++m)
        ok = ok && upload(b.media_rows[m], staged_.media_rows[m], s) &&
             upload(b.patches[m], staged_.media_patches[m], s);
    if (!ok) {
        (void)cudaGetLastError();
        return fail(message, uform_status_internal_k, "the device refused the step's inputs");
    }
    return uform_status_ok_k;
}

void device_trunk_t::unit_rows() noexcept {
    std::size_t const D = staged_.items == 0 ? 0 : z_.size() / staged_.items;
    for (std::size_t i = 0; i != staged_.items; ++i)
        e_norm_[i] = normalize_into(e_.data() + i * D, z_.data() + i * D, D);
    std::size_t const V = staged_.vector_rows.size(), TW = V == 0 ? 0 : vectors_.size() / V;
    for (std::size_t r = 0; r != V; ++r) t_norm_[r] = normalize_into(t_.data() + r * TW, vectors_.data() + r * TW, TW);
}

uform_status_t device_trunk_t::forward(stream_t &stream, device_parameters_t const &device, parameters_t const &p,
                                       uform::train::trunk_request_t const &request, uform::train::poll_t poll,
                                       uform::train::trunk_outputs_t &out, char const **message) noexcept {
    if (uform_status_t status = stage_request(p, request, staged_, message)) return status;
    geometry_t const &g = p.geometry;
    std::size_t const N = staged_.tokens, items = staged_.items, R = staged_.logit_rows.size();
    std::size_t const V = staged_.vector_rows.size(), D = g.dimensions, TW = g.token_width;
    try {
        e_.resize(items * D), z_.resize(items * D), e_norm_.resize(items);
        t_.resize(V * TW), vectors_.resize(V * TW), t_norm_.resize(V), logits_.resize(R * 256);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step's outputs");
    }
    if (uform_status_t status = prepare(stream, p, message)) return status;
    pass_t pass{stream, device, p, buffers_, staged_};
    if (N != 0) embed(pass);
    for (std::size_t l = 0; l != g.depth; ++l) {
        if (poll.fn != nullptr && poll.fn(poll.context)) {
            (void)finish(stream, true, "", message);
            return fail(message, uform_status_cancelled_k, "the trainer was asked to stop");
        }
        if (N == 0) continue;
        std::size_t const slot = std::min(l, slots_ - 1);
        block_forward(pass, l, slot_at(buffers_, g, N, slot));
        holder_[slot] = l, gu_holder_ = l;
    }
    if (N != 0 || items != 0) heads(pass);
    pass.ok = pass.ok && download(e_, buffers_.e, items * D, stream.stream) &&
              download(t_, buffers_.t, V * TW, stream.stream) &&
              download(logits_, buffers_.logits, R * 256, stream.stream);
    if (uform_status_t status = finish(stream, pass.ok, "the GPU refused a step of the trainer's forward", message))
        return status;
    unit_rows();
    out.z = z_.data();
    out.token_vectors = V != 0 ? vectors_.data() : nullptr;
    out.token_vector_offsets = staged_.vector_offsets.data();
    out.logits = R != 0 ? logits_.data() : nullptr;
    out.tokens = N;
    return uform_status_ok_k;
}

uform_status_t device_trunk_t::backward(stream_t &stream, device_parameters_t const &device, parameters_t const &p,
                                        float const *d_z, float const *d_token_vectors, float const *d_logits,
                                        uform::train::poll_t poll, overlapped_sums_t *sums,
                                        char const **message) noexcept {
    if (buffers_.saved == nullptr && staged_.tokens != 0)
        return fail(message, uform_status_invalid_argument_k, "backward without a forward");
    geometry_t const &g = p.geometry;
    std::size_t const N = staged_.tokens, items = staged_.items, R = staged_.logit_rows.size();
    std::size_t const V = staged_.vector_rows.size(), D = g.dimensions, TW = g.token_width, H = g.hidden;
    // The output gradients as the products read them: BF16, zero where not given.
    try {
        d_bits_.assign(items * D + V * TW + R * 256, 0);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step's gradients");
    }
    if (d_z != nullptr)
        for (std::size_t i = 0; i != items; ++i)
            normalize_backward_bits(z_.data() + i * D, d_z + i * D, e_norm_[i], d_bits_.data() + i * D, D);
    if (d_token_vectors != nullptr)
        for (std::size_t r = 0; r != V; ++r)
            normalize_backward_bits(vectors_.data() + r * TW, d_token_vectors + r * TW, t_norm_[r],
                                    d_bits_.data() + items * D + r * TW, TW);
    if (d_logits != nullptr)
        for (std::size_t k = 0; k != R * 256; ++k) d_bits_[items * D + V * TW + k] = f32_to_bf16(d_logits[k]);
    trunk_buffers_t const &b = buffers_;
    cudaStream_t const s = stream.stream;
    pass_t pass{stream, device, p, b, staged_};
    std::uint16_t const *bits = d_bits_.data();
    pass.ok = (items * D == 0 ||
               cudaMemcpyAsync(b.d_embeddings, bits, items * D * 2, cudaMemcpyHostToDevice, s) == cudaSuccess) &&
              (V * TW == 0 ||
               cudaMemcpyAsync(b.d_vectors, bits + items * D, V * TW * 2, cudaMemcpyHostToDevice, s) == cudaSuccess) &&
              (R == 0 || cudaMemcpyAsync(b.d_logits, bits + items * D + V * TW, R * 256 * 2, cudaMemcpyHostToDevice,
                                         s) == cudaSuccess);
    if (N != 0 || items != 0) heads_backward(pass, b.dn);
    if (N != 0) {
        pass.ok = pass.ok && cudaMemsetAsync(b.dx, 0, N * H * sizeof(float), s) == cudaSuccess;
        pass.norm_backward(b.saved + g.depth * N * H, b.dn, "final_norm.weight");
    }
    announce(pass, sums, pass.index("final_norm.weight"));
    for (std::size_t l = g.depth; l-- != 0 && N != 0;) {
        if (poll.fn != nullptr && poll.fn(poll.context)) {
            (void)finish(stream, true, "", message);
            return fail(message, uform_status_cancelled_k, "the trainer was asked to stop");
        }
        std::size_t const slot = std::min(l, slots_ - 1);
        device_slot_t const a = slot_at(b, g, N, slot);
        if (holder_[slot] != l) block_forward(pass, l, a), holder_[slot] = l, gu_holder_ = l;
        if (gu_holder_ != l) pass.linear(a.n2, N, block_name_t{l}("mlp.gate_up.weight"), b.gu, false);
        holder_[slot] = g.depth, gu_holder_ = g.depth;
        block_backward(pass, l, a);
        announce(pass, sums, pass.index(block_name_t{l}("attn_norm.weight")));
    }
    if (N != 0) embed_rows_backward(pass);
    announce(pass, sums, 0);
    return finish(stream, pass.ok, "the GPU refused a step of the trainer's backward", message);
}

} // namespace uform::cuda::train
