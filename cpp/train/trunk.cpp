// The trainer's trunk: the forward keeps each block's input and, within a bound, its activations (BF16 product inputs
// as bits); the backward recomputes what was not kept (docs/decisions.md, "The trunk's memory"), then runs each block's
// backward by hand.
#include "cpp/train/trunk.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <new>
#include <vector>

#include "common/fail.hpp"
#include "common/scalars.hpp"
#include "cpp/kernels/product.hpp"
#include "cpp/train/maths.hpp"
#include "cpp/train/phases.hpp"

namespace uform::train {
namespace {

using ram::operand_t;

/// Rows of one chunk of a row-wise reduction (norm weights, biases): fixed, so sums never depend on the threads.
constexpr std::size_t reduce_rows_k = 64;
/// Tokens per chunk of a weight gradient's product (`dW += dY^T X`), which bounds the packed `X` scratch.
constexpr std::size_t weight_chunk_rows_k = 1536;

/// `(x, y)` rows in blocks of `rows`, per task.
template <typename body_t>
void for_chunks(ram::parallel_t const &parallel, std::size_t count, std::size_t rows, body_t &&body) noexcept {
    parallel((count + rows - 1) / rows, [&](std::size_t task, std::size_t thread) noexcept {
        body(task * rows, std::min(count, (task + 1) * rows), thread);
    });
}

/// `1 / sqrt(mean(x^2) + eps)` of one row.
float rms_inverse(float const *x, std::size_t width, float eps) noexcept {
    float sum = 0;
    for (std::size_t j = 0; j != width; ++j) sum += x[j] * x[j];
    return 1.0f / std::sqrt(sum / static_cast<float>(width) + eps);
}

} // namespace

/// The name `blocks.{l}.{suffix}` of a block's tensor, written on the stack so that a step allocates no string; the
/// answer is valid until the next call.
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

/// Everything one forward keeps for its backward, and the backward's scratch; grown, never shrunk.
struct trunk_state_t {
    // The request, copied.
    std::size_t items = 0, tokens = 0;
    std::vector<std::size_t> item_rows;       // [items + 1]
    std::vector<uform_modality_t> modalities; // [items]
    std::vector<std::uint16_t> byte_ids;      // [tokens]: text tokens (others unused)
    std::vector<float> cos, sin;              // [tokens x head_dim / 2]
    std::vector<double> frequency;            // [head_dim / 2]: RoPE's frequencies
    std::vector<std::size_t> media_rows[3];   // per image/video/audio: token rows in order
    std::vector<float> media_patches[3];      // their patch vectors, rounded to BF16
    std::vector<std::uint8_t> flagged;        // [items]
    std::vector<std::size_t> vector_offsets;  // [items + 1]
    std::vector<logit_row_t> logit_rows;
    // Activations.
    std::vector<float> saved;             // [(depth + 1) x tokens x hidden]: each block's input
    std::vector<std::uint16_t> kept_bits; // [slots x tokens x slot_bits_per_token]: `slot_t`'s BF16 values
    std::vector<float> kept_floats;       // [slots x tokens x hidden]: `slot_t::xm`
    std::vector<std::size_t> holder;      // [slots]: the block whose activations a slot holds; depth: none
    std::size_t slots = 0;                // block l in slot min(l, slots - 1)
    std::vector<float> gu;                // [tokens x 2 ffn]: one block's gate and up, F32
    std::size_t gu_holder = 0;            // the block whose gate and up `gu` holds; depth: none
    std::vector<float> wide;              // [tokens x max(4 A, ffn)]: F32 products before rounding, gradients
    std::vector<float> h, hr, pooled, e, e_norm, z, t, t_norm, vectors, gathered, logits;
    // Backward.
    std::vector<float> dx, dy, dnarrow, panels, small, partial, attention, gemm;
    std::vector<std::uint16_t> dbits; // [tokens x max(hidden, 2 ffn, 3 A)]: a block gradient rounded once
    std::size_t attention_floats = 0;
};

/// One block's kept activations: the BF16-rounded product inputs as bits (n1, q and k after RoPE with v, the attention
/// output, n2, the SwiGLU product m) and the F32 `xm` (x plus attention) the MLP norm's backward reads. Attention's
/// probabilities are recomputed per head from q and k; gate and up from n2.
struct slot_t {
    std::uint16_t *n1, *qkv, *ao, *n2, *m;
    float *xm;
};

namespace {

/// The per-call view: parameters, state, threads.
struct pass_t {
    parameters_t const &p;
    trunk_state_t &s;
    ram::parallel_t const &parallel;
    ram::kernels_t const &k;
    geometry_t const &g;
    /// Nullable: the step's profile (cpp/train/phases.hpp), and whether this pass is the backward's.
    double *phases = nullptr;
    bool backward = false;

    /// The timer of the pass's products (`linears`) or of its attention.
    phase_timer_t time(bool linears) const noexcept {
        if (linears) return {phases, backward ? step_phase_t::backward_linears : step_phase_t::forward_linears};
        return {phases, backward ? step_phase_t::backward_attention : step_phase_t::forward_attention};
    }

    std::size_t hidden() const noexcept { return g.hidden; }
    std::size_t width() const noexcept { return g.heads * g.head_dim; }
    tensor_t const &tensor(std::string_view name) const noexcept { return *p.find(name); }
    std::size_t index(std::string_view name) const noexcept {
        return static_cast<std::size_t>(p.find(name) - p.tensors.data());
    }

    /// BF16 values per token of a slot.
    std::size_t slot_bits() const noexcept { return 2 * hidden() + 4 * width() + g.ffn_hidden; }
    /// Block `l`'s slot.
    std::size_t slot_index(std::size_t l) const noexcept { return std::min(l, s.slots - 1); }
    slot_t slot(std::size_t l) const noexcept {
        std::size_t const N = s.tokens, H = hidden(), A = width(), i = slot_index(l);
        std::uint16_t *bits = s.kept_bits.data() + i * N * slot_bits();
        std::uint16_t *qkv = bits + N * H, *ao = qkv + N * 3 * A, *n2 = ao + N * A, *m = n2 + N * H;
        return {bits, qkv, ao, n2, m, s.kept_floats.data() + i * N * H};
    }
    /// `out = bits(in)` of `count` BF16-rounded floats.
    void to_bits(float const *in, std::uint16_t *out, std::size_t count) const noexcept {
        if (k.convert_bf16 != nullptr) return k.convert_bf16(in, out, count);
        for (std::size_t i = 0; i != count; ++i) out[i] = f32_to_bf16(in[i]);
    }

    /// C = A W^T (or +=), A rounded as it is packed.
    void linear(ram::operand_t a, std::size_t rows, std::string_view name, float *c, std::size_t ldc,
                unsigned flags) noexcept {
        phase_timer_t const timer = time(true);
        ram::product(k, parallel, a, rows, p.panels[index(name)], c, ldc, flags, s.gemm.data());
    }
    /// dX (+)= dY W: the complete `dY` (row-major) rounded as packed, the master row-major as B (rounded as packed:
    /// the copy).
    void input_grad(ram::operand_t dy, std::size_t rows, std::string_view name, float *dx, unsigned flags) noexcept {
        phase_timer_t const timer = time(true);
        tensor_t const &w = tensor(name);
        ram::panels_t const b =
            ram::pack_panels(k, parallel, {w.master.data(), w.shape[1]}, w.shape[0], w.shape[1], s.panels.data());
        ram::product(k, parallel, dy, rows, b, dx, w.shape[1], flags, s.gemm.data());
    }
    /// dW += dY^T X over `rows` tokens in chunks: dY (row-major) read transposed as A, X's BF16 values packed as B.
    void weight_grad(ram::operand_t dy, ram::operand_t x, std::size_t rows, std::string_view name,
                     parameters_t &target) noexcept {
        phase_timer_t const timer = time(true);
        tensor_t &w = target.tensors[index(name)];
        std::size_t const out = w.shape[0], in = w.shape[1];
        for (std::size_t row = 0; row < rows; row += weight_chunk_rows_k) {
            std::size_t const count = std::min(weight_chunk_rows_k, rows - row);
            ram::panels_t const b = ram::pack_panels(k, parallel, x.advanced(row), count, in, s.panels.data());
            ram::operand_t a = dy.advanced(row);
            a.transposed = true;
            ram::product(k, parallel, a, out, b, w.grad.data(), in, ram::gemm_accumulate_k, s.gemm.data());
        }
    }
    /// A block's gradient `d` [tokens x width] rounded once into `s.dbits`, for both of its products.
    ram::operand_t gradient_bits(float const *d, std::size_t width) noexcept {
        for_chunks(parallel, s.tokens, 64, [&](std::size_t begin, std::size_t end, std::size_t) noexcept {
            for (std::size_t r = begin; r != end; ++r)
                if (k.convert_bf16 != nullptr) k.convert_bf16(d + r * width, s.dbits.data() + r * width, width);
                else
                    for (std::size_t j = 0; j != width; ++j) s.dbits[r * width + j] = f32_to_bf16(d[r * width + j]);
        });
        return ram::operand_t::bf16(s.dbits.data(), width);
    }
    /// `out = RMSNorm(x) * weight` over the tokens, rounded to BF16.
    void norm(float const *x, std::string_view name, float *out, bool round) noexcept {
        float const *w = tensor(name).copy.data();
        for_chunks(parallel, s.tokens, 64, [&](std::size_t begin, std::size_t end, std::size_t) noexcept {
            for (std::size_t r = begin; r != end; ++r)
                k.rms_norm(x + r * hidden(), w, hidden(), g.norm_eps, out + r * hidden(), round);
        });
    }
    /// `out = bits(bf16(RMSNorm(x) * weight))` over the tokens, through `wide`.
    void norm_bits(float const *x, std::string_view name, std::uint16_t *out) noexcept {
        float const *w = tensor(name).copy.data();
        std::size_t const H = hidden();
        for_chunks(parallel, s.tokens, 64, [&](std::size_t begin, std::size_t end, std::size_t) noexcept {
            for (std::size_t r = begin; r != end; ++r) {
                float *row = s.wide.data() + r * H;
                k.rms_norm(x + r * H, w, H, g.norm_eps, row, true);
                to_bits(row, out + r * H, H);
            }
        });
    }
    /// The backward of `y = RMSNorm(x) * w`: `dx += ...`, `grad(w) += sum over tokens` in fixed chunks.
    void norm_backward(float const *x, float const *dy, std::string_view name, float *dx,
                       parameters_t &target) noexcept {
        std::size_t const H = hidden(), chunks = (s.tokens + reduce_rows_k - 1) / reduce_rows_k;
        float const *w = tensor(name).copy.data();
        float *partial = s.partial.data();
        for_chunks(parallel, s.tokens, reduce_rows_k, [&](std::size_t begin, std::size_t end, std::size_t) noexcept {
            float *sum = partial + begin / reduce_rows_k * H;
            std::fill(sum, sum + H, 0.0f);
            for (std::size_t r = begin; r != end; ++r) {
                float const *xr = x + r * H, *dyr = dy + r * H;
                float *dxr = dx + r * H;
                float const inv = rms_inverse(xr, H, g.norm_eps);
                float dot = 0;
                for (std::size_t j = 0; j != H; ++j) dot += dyr[j] * w[j] * xr[j], sum[j] += dyr[j] * xr[j] * inv;
                float const c = inv * inv * inv * dot / static_cast<float>(H);
                for (std::size_t j = 0; j != H; ++j) dxr[j] += maths::rms_norm_backward(xr[j], dyr[j], w[j], inv, c);
            }
        });
        float *grad = target.tensors[index(name)].grad.data();
        for (std::size_t c = 0; c != chunks; ++c)
            for (std::size_t j = 0; j != H; ++j) grad[j] += partial[c * H + j];
    }

    /// Block `l` from `saved[l]` into its slot, `gu` and `saved[l + 1]`.
    void block_forward(std::size_t l) noexcept {
        std::size_t const H = hidden(), A = width(), N = s.tokens, F = g.ffn_hidden, hd = g.head_dim;
        block_name_t const prefix{l};
        float const *x = s.saved.data() + l * N * H;
        float *next = s.saved.data() + (l + 1) * N * H, *wide = s.wide.data();
        slot_t const a = slot(l);
        s.holder[slot_index(l)] = l;
        norm_bits(x, prefix("attn_norm.weight"), a.n1);
        linear(ram::operand_t::bf16(a.n1, H), N, prefix("attn.qkv.weight"), wide, 3 * A, 0);
        for_chunks(parallel, N, 64, [&](std::size_t begin, std::size_t end, std::size_t) noexcept {
            for (std::size_t r = begin; r != end; ++r) {
                float *q = wide + r * 3 * A;
                float const *c = s.cos.data() + r * hd / 2, *sn = s.sin.data() + r * hd / 2;
                k.rope_round(q, g.heads, hd, c, sn);
                k.rope_round(q + A, g.heads, hd, c, sn);
                k.round_bf16(q + 2 * A, q + 2 * A, A);
                to_bits(q, a.qkv + r * 3 * A, 3 * A);
            }
        });
        attention_forward(a);
        std::memcpy(a.xm, x, N * H * sizeof(float));
        linear(ram::operand_t::bf16(a.ao, A), N, prefix("attn.out.weight"), a.xm, H, ram::gemm_accumulate_k);
        norm_bits(a.xm, prefix("mlp_norm.weight"), a.n2);
        gate_up(l);
        for_chunks(parallel, N, 64, [&](std::size_t begin, std::size_t end, std::size_t) noexcept {
            for (std::size_t r = begin; r != end; ++r) {
                float *row = wide + r * F;
                k.silu_mul_round(s.gu.data() + r * 2 * F, s.gu.data() + r * 2 * F + F, row, F);
                to_bits(row, a.m + r * F, F);
            }
        });
        std::memcpy(next, a.xm, N * H * sizeof(float));
        linear(ram::operand_t::bf16(a.m, F), N, prefix("mlp.down.weight"), next, H, ram::gemm_accumulate_k);
    }

    /// Block `l`'s gate and up into `gu` from its slot's n2.
    void gate_up(std::size_t l) noexcept {
        block_name_t const prefix{l};
        s.gu_holder = l;
        linear(ram::operand_t::bf16(slot(l).n2, hidden()), s.tokens, prefix("mlp.gate_up.weight"), s.gu.data(),
               2 * g.ffn_hidden, 0);
    }

    /// One (item, head)'s scratch on `thread`: B panels, the product's A scratch, then `floats` more.
    struct head_scratch_t {
        float *panels, *gemm, *rest;
    };
    head_scratch_t head_scratch(std::size_t thread, std::size_t n) const noexcept {
        float *base = s.attention.data() + thread * s.attention_floats;
        std::size_t const wide = std::max(n, g.head_dim);
        float *gemm = base + ram::panels_floats(k, wide, wide);
        return {base, gemm, gemm + ram::product_scratch_floats(wide)};
    }

    /// One (item, head)'s `P = softmax(q k^T / sqrt(head_dim))` in F32 into `P` [n x n], q and k from the slot.
    void probabilities(slot_t const &a, std::size_t row, std::size_t n, std::size_t head, head_scratch_t const &scratch,
                       float *P) const noexcept {
        std::size_t const A = width(), hd = g.head_dim;
        float const scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
        ram::parallel_t const serial{};
        std::uint16_t const *q = a.qkv + row * 3 * A + head * hd;
        ram::panels_t const keys =
            ram::pack_panels(k, serial, ram::operand_t::bf16(q + A, 3 * A, true), hd, n, scratch.panels);
        ram::product(k, serial, ram::operand_t::bf16(q, 3 * A), n, keys, P, n, 0, scratch.gemm);
        for (std::size_t i = 0; i != n; ++i) k.softmax(P + i * n, n, scale);
    }

    /// Per (item, head): `ao = bf16(bf16(P) v)` into `wide`, then the slot's `ao` as bits.
    void attention_forward(slot_t const &a) noexcept {
        phase_timer_t const timer = time(false);
        std::size_t const A = width(), hd = g.head_dim, heads = g.heads;
        ram::parallel_t const serial{};
        float *ao = s.wide.data();
        parallel(s.items * heads, [&](std::size_t task, std::size_t thread) noexcept {
            std::size_t const item = task / heads, head = task % heads;
            std::size_t const row = s.item_rows[item], n = s.item_rows[item + 1] - row;
            if (n == 0) return;
            head_scratch_t const scratch = head_scratch(thread, n);
            float *P = scratch.rest;
            probabilities(a, row, n, head, scratch, P);
            std::uint16_t const *v = a.qkv + row * 3 * A + 2 * A + head * hd;
            ram::panels_t const values =
                ram::pack_panels(k, serial, ram::operand_t::bf16(v, 3 * A), n, hd, scratch.panels);
            ram::product(k, serial, {P, n}, n, values, ao + row * A + head * hd, A, ram::gemm_round_output_k,
                         scratch.gemm);
        });
        for_chunks(parallel, s.tokens, 64, [&](std::size_t begin, std::size_t end, std::size_t) noexcept {
            to_bits(ao + begin * A, a.ao + begin * A, (end - begin) * A);
        });
    }

    /// The backward of block `l` (its slot holding it): `dx` holds dL/d saved[l + 1] and becomes dL/d saved[l]. The
    /// gradients of m, gate and up, the attention output and qkv are F32 in `wide` and `gu` (dgate_up over gate_up).
    void block_backward(std::size_t l, parameters_t &target) noexcept {
        std::size_t const H = hidden(), A = width(), N = s.tokens, F = g.ffn_hidden;
        block_name_t const prefix{l};
        slot_t const a = slot(l);
        float *dx = s.dx.data();
        if (s.gu_holder != l) gate_up(l);
        s.holder[slot_index(l)] = g.depth, s.gu_holder = g.depth;
        // MLP.
        float *dm = s.wide.data(), *dgu = s.gu.data();
        ram::operand_t dy = gradient_bits(dx, H);
        weight_grad(dy, ram::operand_t::bf16(a.m, F), N, prefix("mlp.down.weight"), target);
        input_grad(dy, N, prefix("mlp.down.weight"), dm, 0);
        for_chunks(parallel, N, 64, [&](std::size_t begin, std::size_t end, std::size_t) noexcept {
            constexpr std::size_t run = 256;
            float sigmoid[run];
            for (std::size_t r = begin; r != end; ++r) {
                float *gate = dgu + r * 2 * F, *up = gate + F;
                float const *d = dm + r * F;
                for (std::size_t j0 = 0; j0 < F; j0 += run) {
                    std::size_t const count = std::min(run, F - j0);
                    k.sigmoid(gate + j0, sigmoid, count);
                    for (std::size_t j = j0; j != j0 + count; ++j) {
                        maths::silu_gate_backward(gate[j], up[j], sigmoid[j - j0], d[j], gate[j], up[j]);
                    }
                }
            }
        });
        float *dn = s.dy.data();
        dy = gradient_bits(dgu, 2 * F);
        input_grad(dy, N, prefix("mlp.gate_up.weight"), dn, 0);
        weight_grad(dy, ram::operand_t::bf16(a.n2, H), N, prefix("mlp.gate_up.weight"), target);
        norm_backward(a.xm, dn, prefix("mlp_norm.weight"), dx, target);
        // Attention.
        float *dao = s.wide.data(), *dqkv = dao + N * A;
        dy = gradient_bits(dx, H);
        weight_grad(dy, ram::operand_t::bf16(a.ao, A), N, prefix("attn.out.weight"), target);
        input_grad(dy, N, prefix("attn.out.weight"), dao, 0);
        attention_backward(a, dao, dqkv);
        dy = gradient_bits(dqkv, 3 * A);
        input_grad(dy, N, prefix("attn.qkv.weight"), dn, 0);
        weight_grad(dy, ram::operand_t::bf16(a.n1, H), N, prefix("attn.qkv.weight"), target);
        norm_backward(s.saved.data() + l * N * H, dn, prefix("attn_norm.weight"), dx, target);
    }

    /// Per (item, head): P recomputed, dP = bf16(dO) v^T, dV = bf16(P)^T bf16(dO), the softmax's backward in F32, then
    /// dq and dk through the scores' product and RoPE's inverse rotation, into `dqkv` [tokens x 3A].
    void attention_backward(slot_t const &a, float const *dao, float *dqkv) noexcept {
        phase_timer_t const timer = time(false);
        std::size_t const A = width(), hd = g.head_dim, heads = g.heads, half = hd / 2;
        float const scale = static_cast<float>(std::sqrt(static_cast<double>(hd)));
        ram::parallel_t const serial{};
        parallel(s.items * heads, [&](std::size_t task, std::size_t thread) noexcept {
            std::size_t const item = task / heads, head = task % heads;
            std::size_t const row = s.item_rows[item], n = s.item_rows[item + 1] - row;
            if (n == 0) return;
            head_scratch_t const scratch = head_scratch(thread, n);
            float *P = scratch.rest, *dp = P + n * n, *rotated_q = dp + n * n, *rotated_k = rotated_q + n * hd;
            probabilities(a, row, n, head, scratch, P);
            std::uint16_t const *q = a.qkv + row * 3 * A + head * hd;
            float *dq = dqkv + row * 3 * A + head * hd;
            float const *d_o = dao + row * A + head * hd;
            // dP = dO v^T, then dV = P^T dO.
            ram::panels_t b =
                ram::pack_panels(k, serial, ram::operand_t::bf16(q + 2 * A, 3 * A, true), hd, n, scratch.panels);
            ram::product(k, serial, {d_o, A}, n, b, dp, n, 0, scratch.gemm);
            b = ram::pack_panels(k, serial, {d_o, A}, n, hd, scratch.panels);
            ram::product(k, serial, {P, n, true}, n, b, dq + 2 * A, 3 * A, 0, scratch.gemm);
            // dS = P (dP - sum(dP P)) / sqrt(head_dim), in place.
            for (std::size_t i = 0; i != n; ++i) {
                float const *pr = P + i * n;
                float *d = dp + i * n, dot = 0;
                for (std::size_t j = 0; j != n; ++j) dot += d[j] * pr[j];
                for (std::size_t j = 0; j != n; ++j) d[j] = pr[j] * (d[j] - dot) / scale;
            }
            // dq = dS k, dk = dS^T q (k and q are the rotated, rounded values), then both unrotated.
            b = ram::pack_panels(k, serial, ram::operand_t::bf16(q + A, 3 * A), n, hd, scratch.panels);
            ram::product(k, serial, {dp, n}, n, b, rotated_q, hd, 0, scratch.gemm);
            b = ram::pack_panels(k, serial, ram::operand_t::bf16(q, 3 * A), n, hd, scratch.panels);
            ram::product(k, serial, {dp, n, true}, n, b, rotated_k, hd, 0, scratch.gemm);
            for (std::size_t i = 0; i != n; ++i) {
                unrotate(rotated_q + i * hd, row + i, dq + i * 3 * A, half);
                unrotate(rotated_k + i * hd, row + i, dq + i * 3 * A + A, half);
            }
        });
    }

    /// RoPE's backward of one head's row: `out = R(-angle) d`.
    void unrotate(float const *d, std::size_t token, float *out, std::size_t half) const noexcept {
        float const *c = s.cos.data() + token * half, *sn = s.sin.data() + token * half;
        for (std::size_t j = 0; j != half; ++j) {
            maths::unrotate_pair(d[j], d[half + j], c[j], sn[j], out[j], out[half + j]);
        }
    }
};

/// Rounds `count` floats to BF16 into `out`.
void round_into(float const *in, float *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i) out[i] = round_bf16(in[i]);
}

/// The front-end tensor names of a media modality.
std::string_view media_weight(std::size_t m) noexcept {
    return m == 0 ? "embed.image.weight" : m == 1 ? "embed.video.weight" : "embed.audio.weight";
}
std::string_view media_bias(std::size_t m) noexcept {
    return m == 0 ? "embed.image.bias" : m == 1 ? "embed.video.bias" : "embed.audio.bias";
}

/// `x / |x|` of a row, answering `|x|`; a zero row stays zero.
float normalize_into(float const *x, float *out, std::size_t count) noexcept {
    float sum = 0;
    for (std::size_t i = 0; i != count; ++i) sum += x[i] * x[i];
    float const length = std::sqrt(sum);
    for (std::size_t i = 0; i != count; ++i) out[i] = length > 0 ? x[i] / length : 0.0f;
    return length;
}

/// The backward of `y = x / |x|`: `dx = (dy - y (y . dy)) / |x|` (zero for a zero row).
void normalize_backward(float const *y, float const *dy, float length, float *dx, std::size_t count) noexcept {
    float dot = 0;
    for (std::size_t i = 0; i != count; ++i) dot += y[i] * dy[i];
    for (std::size_t i = 0; i != count; ++i) dx[i] = length > 0 ? (dy[i] - y[i] * dot) / length : 0.0f;
}

/// Resizes `v` to at least `count` values (never shrinks, so a steady loop allocates nothing).
template <typename value_type_>
void grow(std::vector<value_type_> &v, std::size_t count) {
    if (v.size() < count) v.resize(count);
}

} // namespace

uform_status_t check_request(geometry_t const &g, trunk_request_t const &request, char const **message) noexcept {
    std::size_t const items = request.segments.size();
    for (segment_t const &segment : request.segments) {
        bool const text = segment.modality == uform_modality_text_k;
        bool const known = segment.modality == uform_modality_image_k   ? g.has_image
                           : segment.modality == uform_modality_video_k ? g.has_video
                           : segment.modality == uform_modality_audio_k ? g.has_audio
                                                                        : text;
        if (!known) return fail(message, uform_status_invalid_argument_k, "a segment's modality the model lacks");
        if (segment.count != 0 && (text ? segment.tokens == nullptr : segment.patches == nullptr))
            return fail(message, uform_status_invalid_argument_k, "a segment without its tokens");
        if (text)
            for (std::size_t i = 0; i != segment.count; ++i)
                if (segment.tokens[i] > 257) return fail(message, uform_status_invalid_argument_k, "a token above 257");
    }
    for (std::size_t i = 0; i != std::min(items, request.token_vectors.size()); ++i)
        if (request.token_vectors[i] != 0 && !g.has_token_head)
            return fail(message, uform_status_unsupported_k, "token vectors need the token head");
    if (!request.logit_rows.empty() && !g.has_byte_head)
        return fail(message, uform_status_unsupported_k, "byte logits need the byte head");
    for (logit_row_t const &r : request.logit_rows)
        if (r.item >= items || r.position >= request.segments[r.item].count)
            return fail(message, uform_status_invalid_argument_k, "a logit row outside its item");
    return uform_status_ok_k;
}

trunk_t::trunk_t() noexcept = default;
trunk_t::~trunk_t() noexcept = default;

namespace {

/// Copies the request's shape into the state: item rows, modalities, which items want token vectors, the logit rows.
void index_request(trunk_request_t const &request, trunk_state_t &s) {
    std::size_t const items = request.segments.size();
    s.items = items;
    s.item_rows.assign(items + 1, 0);
    s.modalities.resize(items);
    for (std::size_t i = 0; i != items; ++i)
        s.item_rows[i + 1] = s.item_rows[i] + request.segments[i].count, s.modalities[i] = request.segments[i].modality;
    s.tokens = s.item_rows[items];
    s.flagged.assign(items, 0);
    for (std::size_t i = 0; i != std::min(items, request.token_vectors.size()); ++i)
        s.flagged[i] = request.token_vectors[i] != 0;
    s.vector_offsets.assign(items + 1, 0);
    for (std::size_t i = 0; i != items; ++i)
        s.vector_offsets[i + 1] = s.vector_offsets[i] + (s.flagged[i] ? request.segments[i].count : 0);
    s.logit_rows.assign(request.logit_rows.begin(), request.logit_rows.end());
}

/// Whether any item of the indexed request wants token vectors.
bool wants_vectors(trunk_state_t const &s) noexcept {
    return std::find(s.flagged.begin(), s.flagged.end(), 1) != s.flagged.end();
}

/// Grows every buffer of the state to the indexed request: the largest item's attention scratch, the kept slots within
/// `kept_bytes`, the activations and the heads' rows.
void size_state(pass_t const &pass, std::size_t kept_bytes, trunk_state_t &s) {
    parameters_t const &p = pass.p;
    geometry_t const &g = pass.g;
    ram::kernels_t const &k = pass.k;
    std::size_t const items = s.items, N = s.tokens, R = s.logit_rows.size(), H = g.hidden, A = g.heads * g.head_dim;
    std::size_t const F = g.ffn_hidden, hd = g.head_dim, half = hd / 2, D = g.dimensions, TW = g.token_width;
    bool const any_vectors = wants_vectors(s);
    std::size_t longest = 0;
    for (std::size_t i = 0; i != items; ++i) longest = std::max(longest, s.item_rows[i + 1] - s.item_rows[i]);
    std::size_t const wide = std::max(longest, hd);
    s.attention_floats = ram::panels_floats(k, wide, wide) + ram::product_scratch_floats(wide) + 2 * longest * longest +
                         2 * longest * hd;
    std::size_t const threads = std::max<std::size_t>(1, pass.parallel.threads);
    std::size_t depth_max = std::max({H, A, F, 2 * F, 3 * A, D, TW, std::size_t(256), weight_chunk_rows_k});
    for (std::size_t m = 0; m != 3; ++m)
        if (tensor_t const *w = p.find(media_weight(m))) depth_max = std::max(depth_max, w->shape[1]);
    grow(s.gemm, threads * ram::product_scratch_floats(depth_max));
    grow(s.attention, threads * s.attention_floats);
    grow(s.saved, (g.depth + 1) * N * H);
    std::size_t const slot_bytes = N * (2 * pass.slot_bits() + 4 * H);
    s.slots = std::clamp<std::size_t>(kept_bytes / std::max<std::size_t>(slot_bytes, 1), 1,
                                      std::max<std::size_t>(g.depth, 1));
    grow(s.kept_bits, s.slots * N * pass.slot_bits()), grow(s.kept_floats, s.slots * N * H);
    s.holder.assign(s.slots, g.depth), s.gu_holder = g.depth;
    grow(s.gu, N * 2 * F), grow(s.wide, N * std::max({4 * A, F, H})), grow(s.dbits, N * std::max({H, 2 * F, 3 * A}));
    grow(s.h, N * H), grow(s.hr, N * H), grow(s.pooled, items * H), grow(s.e, items * D);
    grow(s.e_norm, items), grow(s.z, items * D);
    if (any_vectors) grow(s.t, N * TW), grow(s.t_norm, N), grow(s.vectors, s.vector_offsets[items] * TW);
    grow(s.gathered, std::max(R, items) * H), grow(s.logits, R * 256);
    grow(s.dx, N * H), grow(s.dy, N * H), grow(s.dnarrow, std::max({any_vectors ? N * TW : 0, R * H, items * H}));
    std::size_t const outs = std::max({H, A, F, 2 * F, 3 * A, D, TW, std::size_t(256)});
    std::size_t const chunk = std::min(std::max(N, R), weight_chunk_rows_k);
    std::size_t panel_floats = 0;
    for (tensor_t const &t : p.tensors)
        if (t.rank == 2)
            panel_floats = std::max({panel_floats, ram::panels_floats(k, t.shape[0], t.shape[1]),
                                     ram::panels_floats(k, chunk, t.shape[1])});
    grow(s.panels, panel_floats), grow(s.small, outs * items);
    grow(s.partial, ((N + reduce_rows_k - 1) / reduce_rows_k + 1) * std::max<std::size_t>(H, 1));
    grow(s.cos, N * half), grow(s.sin, N * half), grow(s.byte_ids, N), grow(s.frequency, half);
}

/// Positions and inputs: RoPE's cosines and sines per token (angles in F64, rounded once), text bytes, and each media
/// modality's patches (BF16-rounded) with the rows they embed into.
void place_inputs(parameters_t const &p, trunk_request_t const &request, trunk_state_t &s) {
    geometry_t const &g = p.geometry;
    std::size_t const hd = g.head_dim, half = hd / 2;
    double *frequency = s.frequency.data();
    for (std::size_t j = 0; j != half; ++j)
        frequency[j] = std::pow(static_cast<double>(g.rope_theta), -2.0 * static_cast<double>(j) / double(hd));
    for (std::size_t m = 0; m != 3; ++m) s.media_rows[m].clear(), s.media_patches[m].clear();
    for (std::size_t i = 0; i != s.items; ++i) {
        segment_t const &segment = request.segments[i];
        for (std::size_t t = 0; t != segment.count; ++t) {
            std::size_t const row = s.item_rows[i] + t;
            for (std::size_t j = 0, axis = 0, bound = g.rope_sections[0]; j != half; ++j) {
                while (j >= bound && axis != 2) bound += g.rope_sections[++axis];
                double const position = segment.positions ? double(segment.positions[3 * t + axis]) : double(t);
                double const angle = position * frequency[j];
                s.cos[row * half + j] = static_cast<float>(std::cos(angle));
                s.sin[row * half + j] = static_cast<float>(std::sin(angle));
            }
        }
        if (segment.modality == uform_modality_text_k) {
            std::copy(segment.tokens, segment.tokens + segment.count, s.byte_ids.begin() + s.item_rows[i]);
            continue;
        }
        std::size_t const m = segment.modality == uform_modality_image_k   ? 0
                              : segment.modality == uform_modality_video_k ? 1
                                                                           : 2;
        std::size_t const input = p.find(media_weight(m))->shape[1], at = s.media_patches[m].size();
        s.media_patches[m].resize(at + segment.count * input);
        round_into(segment.patches, s.media_patches[m].data() + at, segment.count * input);
        for (std::size_t t = 0; t != segment.count; ++t) s.media_rows[m].push_back(s.item_rows[i] + t);
    }
}

/// The embedding into the first saved state: byte rows, media patches through their linears plus bias.
void embed(pass_t &pass) noexcept {
    trunk_state_t &s = pass.s;
    std::size_t const H = pass.g.hidden;
    float *x0 = s.saved.data();
    float const *bytes = pass.p.find("embed.byte.weight")->copy.data();
    for (std::size_t i = 0; i != s.items; ++i)
        if (s.modalities[i] == uform_modality_text_k)
            for (std::size_t row = s.item_rows[i]; row != s.item_rows[i + 1]; ++row)
                std::memcpy(x0 + row * H, bytes + s.byte_ids[row] * H, H * sizeof(float));
    for (std::size_t m = 0; m != 3; ++m) {
        std::size_t const rows = s.media_rows[m].size();
        if (rows == 0) continue;
        tensor_t const &w = *pass.p.find(media_weight(m));
        float *embedded = s.dy.data();
        pass.linear({s.media_patches[m].data(), w.shape[1]}, rows, media_weight(m), embedded, H, 0);
        float const *bias = pass.p.find(media_bias(m))->copy.data();
        for (std::size_t r = 0; r != rows; ++r)
            for (std::size_t j = 0; j != H; ++j) x0[s.media_rows[m][r] * H + j] = embedded[r * H + j] + bias[j];
    }
}

/// After the last block: the final norm, pooled embeddings, token vectors, byte logits.
void run_heads(pass_t &pass) noexcept {
    trunk_state_t &s = pass.s;
    geometry_t const &g = pass.g;
    std::size_t const items = s.items, N = s.tokens, R = s.logit_rows.size(), H = g.hidden, D = g.dimensions;
    std::size_t const TW = g.token_width;
    float const *xl = s.saved.data() + g.depth * N * H;
    if (N != 0) pass.norm(xl, "final_norm.weight", s.h.data(), false);
    round_into(s.h.data(), s.hr.data(), N * H);
    for (std::size_t i = 0; i != items; ++i) {
        float *pooled = s.pooled.data() + i * H;
        std::fill(pooled, pooled + H, 0.0f);
        std::size_t const n = s.item_rows[i + 1] - s.item_rows[i];
        for (std::size_t row = s.item_rows[i]; row != s.item_rows[i + 1]; ++row)
            for (std::size_t j = 0; j != H; ++j) pooled[j] += s.h[row * H + j];
        for (std::size_t j = 0; j != H && n != 0; ++j) pooled[j] /= static_cast<float>(n);
    }
    if (items != 0) pass.linear({s.pooled.data(), H}, items, "head.embedding.weight", s.e.data(), D, 0);
    for (std::size_t i = 0; i != items; ++i) s.e_norm[i] = normalize_into(s.e.data() + i * D, s.z.data() + i * D, D);
    if (wants_vectors(s) && N != 0) {
        pass.linear({s.h.data(), H}, N, "head.token.weight", s.t.data(), TW, 0);
        for (std::size_t i = 0; i != items; ++i) {
            if (!s.flagged[i]) continue;
            for (std::size_t row = s.item_rows[i]; row != s.item_rows[i + 1]; ++row)
                s.t_norm[row] = normalize_into(
                    s.t.data() + row * TW, s.vectors.data() + (s.vector_offsets[i] + row - s.item_rows[i]) * TW, TW);
        }
    }
    for (std::size_t r = 0; r != R; ++r)
        std::memcpy(s.gathered.data() + r * H,
                    s.hr.data() + (s.item_rows[s.logit_rows[r].item] + s.logit_rows[r].position) * H,
                    H * sizeof(float));
    if (R != 0) pass.linear({s.gathered.data(), H}, R, "head.byte.weight", s.logits.data(), 256, 0);
}

} // namespace

// Copies the request, sizes the state, embeds, runs every block, then the final norm and the heads asked for.
uform_status_t trunk_t::forward(parameters_t const &p, trunk_request_t const &request, ram::parallel_t const &parallel,
                                poll_t poll, trunk_outputs_t &out, char const **message) noexcept {
    if (p.kernels == nullptr || p.panels.size() != p.tensors.size())
        return fail(message, uform_status_invalid_argument_k, "the parameters were never refreshed");
    if (uform_status_t status = check_request(p.geometry, request, message)) return status;
    try {
        if (!state_) state_ = std::make_unique<trunk_state_t>();
        trunk_state_t &s = *state_;
        pass_t pass{p, s, parallel, *p.kernels, p.geometry, phases_};
        index_request(request, s);
        size_state(pass, kept_bytes_, s);
        place_inputs(p, request, s);
        embed(pass);
        for (std::size_t l = 0; l != p.geometry.depth; ++l) {
            if (poll.fn != nullptr && poll.fn(poll.context))
                return fail(message, uform_status_cancelled_k, "the trainer was asked to stop");
            if (s.tokens != 0) pass.block_forward(l);
        }
        run_heads(pass);
        out.z = s.z.data();
        out.token_vectors = wants_vectors(s) ? s.vectors.data() : nullptr;
        out.token_vector_offsets = s.vector_offsets.data();
        out.logits = s.logit_rows.empty() ? nullptr : s.logits.data();
        out.tokens = s.tokens;
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the trainer's activations");
    }
}

namespace {

/// The embedding head's backward: de per non-empty item, d pooled = de W spread over the item's tokens into `dh`, and
/// the head's gradient de^T pooled.
void embedding_head_backward(pass_t &pass, parameters_t &p, float const *d_z, float *dh) noexcept {
    trunk_state_t &s = pass.s;
    std::size_t const items = s.items, H = pass.g.hidden, D = pass.g.dimensions;
    float *de = s.small.data();
    for (std::size_t i = 0; i != items; ++i)
        normalize_backward(s.z.data() + i * D, d_z + i * D, s.e_norm[i], de + i * D, D);
    float *dpooled = s.dnarrow.data();
    pass.input_grad({de, D}, items, "head.embedding.weight", dpooled, 0);
    float *pooled_rounded = s.gathered.data();
    round_into(s.pooled.data(), pooled_rounded, items * H);
    // de^T pooled: a small product, done directly (items rows).
    tensor_t &w = p.tensors[pass.index("head.embedding.weight")];
    for (std::size_t o = 0; o != D; ++o)
        for (std::size_t i = 0; i != items; ++i) {
            float const d = round_bf16(de[i * D + o]);
            if (d == 0) continue;
            for (std::size_t j = 0; j != H; ++j) w.grad[o * H + j] += d * pooled_rounded[i * H + j];
        }
    for (std::size_t i = 0; i != items; ++i) {
        std::size_t const n = s.item_rows[i + 1] - s.item_rows[i];
        for (std::size_t row = s.item_rows[i]; row != s.item_rows[i + 1]; ++row)
            for (std::size_t j = 0; j != H; ++j) dh[row * H + j] += dpooled[i * H + j] / static_cast<float>(n);
    }
}

/// The token head's backward: dt per flagged token (zero elsewhere), dh += dt W, grad += dt^T hr.
void token_head_backward(pass_t &pass, parameters_t &p, float const *d_token_vectors, float *dh) noexcept {
    trunk_state_t &s = pass.s;
    std::size_t const N = s.tokens, H = pass.g.hidden, TW = pass.g.token_width;
    float *dt = s.dnarrow.data();
    std::fill(dt, dt + N * TW, 0.0f);
    for (std::size_t i = 0; i != s.items; ++i) {
        if (!s.flagged[i]) continue;
        for (std::size_t row = s.item_rows[i]; row != s.item_rows[i + 1]; ++row) {
            std::size_t const at = (s.vector_offsets[i] + row - s.item_rows[i]) * TW;
            normalize_backward(s.vectors.data() + at, d_token_vectors + at, s.t_norm[row], dt + row * TW, TW);
        }
    }
    pass.input_grad({dt, TW}, N, "head.token.weight", dh, ram::gemm_accumulate_k);
    pass.weight_grad({dt, TW}, {s.hr.data(), H}, N, "head.token.weight", p);
}

/// The byte head's backward at the logit rows, added to `dh` in row order, and its gradient.
void byte_head_backward(pass_t &pass, parameters_t &p, float const *d_logits, float *dh) noexcept {
    trunk_state_t &s = pass.s;
    std::size_t const R = s.logit_rows.size(), H = pass.g.hidden;
    float *dgathered = s.dnarrow.data();
    pass.input_grad({d_logits, 256}, R, "head.byte.weight", dgathered, 0);
    for (std::size_t r = 0; r != R; ++r) {
        float *target = dh + (s.item_rows[s.logit_rows[r].item] + s.logit_rows[r].position) * H;
        for (std::size_t j = 0; j != H; ++j) target[j] += dgathered[r * H + j];
    }
    for (std::size_t r = 0; r != R; ++r)
        std::memcpy(s.gathered.data() + r * H,
                    s.hr.data() + (s.item_rows[s.logit_rows[r].item] + s.logit_rows[r].position) * H,
                    H * sizeof(float));
    pass.weight_grad({d_logits, 256}, {s.gathered.data(), H}, R, "head.byte.weight", p);
}

/// The embeddings' backward from `dx`: byte rows scatter-added in token order; media weights and biases.
void embed_backward(pass_t &pass, parameters_t &p) noexcept {
    trunk_state_t &s = pass.s;
    std::size_t const H = pass.g.hidden;
    float const *dx = s.dx.data();
    float *byte_grad = p.tensors[pass.index("embed.byte.weight")].grad.data();
    for (std::size_t i = 0; i != s.items; ++i)
        if (s.modalities[i] == uform_modality_text_k)
            for (std::size_t row = s.item_rows[i]; row != s.item_rows[i + 1]; ++row)
                for (std::size_t j = 0; j != H; ++j) byte_grad[s.byte_ids[row] * H + j] += dx[row * H + j];
    for (std::size_t m = 0; m != 3; ++m) {
        std::size_t const rows = s.media_rows[m].size();
        if (rows == 0) continue;
        float *dy = s.dy.data();
        float *bias = p.tensors[pass.index(media_bias(m))].grad.data();
        for (std::size_t r = 0; r != rows; ++r) {
            std::memcpy(dy + r * H, dx + s.media_rows[m][r] * H, H * sizeof(float));
            for (std::size_t j = 0; j != H; ++j) bias[j] += dy[r * H + j];
        }
        tensor_t const &w = *p.find(media_weight(m));
        pass.weight_grad({dy, H}, {s.media_patches[m].data(), w.shape[1]}, rows, media_weight(m), p);
    }
}

} // namespace

// The heads' backward into dL/dh, the final norm's, each block's (recomputed first when its slot was shared or spent),
// then the embeddings'.
uform_status_t trunk_t::backward(parameters_t &p, float const *d_z, float const *d_token_vectors, float const *d_logits,
                                 ram::parallel_t const &parallel, poll_t poll, char const **message) noexcept {
    if (!state_) return fail(message, uform_status_invalid_argument_k, "backward without a forward");
    phase_timer_t const timer(phases_, step_phase_t::backward);
    trunk_state_t &s = *state_;
    geometry_t const &g = p.geometry;
    std::size_t const N = s.tokens, H = g.hidden;
    pass_t pass{p, s, parallel, *p.kernels, g, phases_, true};
    float *dh = s.dy.data();
    std::fill(dh, dh + N * H, 0.0f);
    if (d_z != nullptr && s.items != 0) embedding_head_backward(pass, p, d_z, dh);
    if (d_token_vectors != nullptr && s.vector_offsets[s.items] != 0) token_head_backward(pass, p, d_token_vectors, dh);
    if (d_logits != nullptr && !s.logit_rows.empty()) byte_head_backward(pass, p, d_logits, dh);
    if (N == 0) return uform_status_ok_k;
    // Final norm, then the blocks from the last.
    std::fill(s.dx.begin(), s.dx.begin() + N * H, 0.0f);
    pass.norm_backward(s.saved.data() + g.depth * N * H, dh, "final_norm.weight", s.dx.data(), p);
    for (std::size_t l = g.depth; l-- != 0;) {
        if (poll.fn != nullptr && poll.fn(poll.context))
            return fail(message, uform_status_cancelled_k, "the trainer was asked to stop");
        if (s.holder[pass.slot_index(l)] != l) pass.block_forward(l);
        pass.block_backward(l, p);
    }
    embed_backward(pass, p);
    return uform_status_ok_k;
}

} // namespace uform::train
