// The trunk forward: groups of whole items through embedding, trunk, final norm and heads, on scratch memory.
#include "cpp/forward.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>

#include "cpp/kernels/amx_product.hpp"
#include "cpp/kernels/gemm.hpp"
#include "common/fail.hpp"
#include "common/scalars.hpp"

namespace uform::ram {
namespace {

/// Token rows a group of items aims at: enough for the GEMMs to tile well, few enough to keep scratch small.
constexpr std::size_t group_rows_k = 1024;
/// Fewest and most rows of one MLP chunk, which bounds the `2 * ffn_hidden`-wide intermediate of a long item.
constexpr std::size_t mlp_rows_min_k = 128, mlp_rows_max_k = 1024;
/// Rows per task of the row-wise passes (norms, RoPE).
constexpr std::size_t row_task_k = 16;
/// FLOPs a call needs per thread before it runs on more than the calling thread: ~100 us of one core, where the
/// fork and join of each step (tens of them a call) stop mattering (docs/decisions.md, "Small calls run on the
/// calling thread").
constexpr double parallel_flops_per_thread_k = 16e6;
/// Floats of attention scores one thread holds for one block of queries.
constexpr std::size_t score_budget_k = 64 * 1024;
/// Most query rows of one attention task.
constexpr std::size_t query_rows_max_k = 48;
/// Most rows of one linear's product between two polls of the handler (a long item's GEMMs run in such chunks).
constexpr std::size_t poll_rows_k = 4096;
/// Work between two polls of the handler within a group: well under the ~50 ms the headers promise.
constexpr std::chrono::milliseconds poll_interval_k{20};
/// Most tokens of one item through the trunk, which keeps every size of the plan far from overflowing.
constexpr std::size_t item_tokens_max_k = (std::size_t(1) << 24) + 1;
/// Most rotary pairs per head when tokens carry their own `(t, h, w)` positions (angles assembled on the stack).
constexpr std::size_t rope_pairs_max_k = 512;

/// `value` rounded up to a multiple of `step`.
constexpr std::size_t round_up(std::size_t value, std::size_t step) noexcept {
    return (value + step - 1) / step * step;
}

/// Tokens of item `item`: its bytes, plus CHOOSE when appended.
std::size_t item_tokens(token_batch_t const &batch, std::size_t item) noexcept {
    return batch.offsets[item + 1] - batch.offsets[item] + (batch.append_choose ? 1 : 0);
}

/// The item after the last one of the group starting at `first`: whole items up to `group_rows_k` rows, at least one.
std::size_t group_end(token_batch_t const &batch, std::size_t first) noexcept {
    std::size_t rows = item_tokens(batch, first), end = first + 1;
    while (end != batch.count && rows + item_tokens(batch, end) <= group_rows_k) rows += item_tokens(batch, end++);
    return end;
}

/// Rows of one MLP chunk: the intermediate it writes about four times the BF16 MLP weights it streams, so reading
/// them again per chunk stays cheap while a small model's chunk stays small (docs/decisions.md, "MLP chunks"), a
/// multiple of 16.
std::size_t mlp_rows(geometry_t const &geometry) noexcept {
    std::size_t const weights = 3 * geometry.ffn_hidden * geometry.hidden * sizeof(std::uint16_t);
    std::size_t const row = gemm_padded_stride(2 * geometry.ffn_hidden) * sizeof(float);
    return std::clamp<std::size_t>(4 * weights / row / 16 * 16, mlp_rows_min_k, mlp_rows_max_k);
}

/// The row stride of an item's attention scores: its keys, padded.
std::size_t score_stride(std::size_t keys) noexcept { return gemm_padded_stride(std::max<std::size_t>(keys, 1)); }

/// Query rows per attention task for `keys` keys: whole micro panels within the score budget.
std::size_t query_rows(std::size_t keys) noexcept {
    std::size_t const rows = score_budget_k / score_stride(keys) / gemm_micro_rows_k * gemm_micro_rows_k;
    return std::clamp<std::size_t>(rows, gemm_micro_rows_k, query_rows_max_k);
}

/// How attention's two products run: on F32 panels, or on BF16 pair words (classes with `gemm_micro_pairs`, and
/// kernels on AMX tiles, where `product` multiplies them in tiles). Every path multiplies the same BF16-rounded values
/// and sums in F32.
enum class attention_path_t { f32, pairs };

/// The path `weights`' attention takes on their class.
attention_path_t attention_path(model_weights_t const &weights) noexcept {
    kernels_t const &kernels = *weights.kernels;
    bool const pairs = kernels.gemm_micro_pairs != nullptr || kernels.tiles != tiles_t::none;
    return pairs ? attention_path_t::pairs : attention_path_t::f32;
}

/// Floats of one head's packed keys and values of an item of `keys` tokens. F32: 64-key panels of `head_dim` rows
/// (the values are read in place). Pairs: 64-key panels of `head_dim / 2` pair words, then the values as pair words
/// of two keys each, in 64-column panels of the head's dimensions.
std::size_t head_key_floats(std::size_t keys, geometry_t const &geometry, attention_path_t path) noexcept {
    if (keys == 0) return 0;
    std::size_t const head_dim = geometry.head_dim;
    if (path == attention_path_t::f32) return round_up(keys, gemm_panel_columns_k) * head_dim;
    return round_up(keys, gemm_panel_columns_k) * (head_dim / 2) +
           panel_count(head_dim) * ((keys + 1) / 2) * gemm_panel_columns_k;
}

/// Floats holding `count` BF16 values, whole cache lines.
std::size_t bf16_floats(std::size_t count) noexcept { return round_up(count, 32) / 2; }

/// Floats of one thread's attention scratch for an item of `keys` tokens. F32: the scores, their packed
/// probabilities and the packed queries. Pairs: the queries' pair words, the scores, the probabilities' pair words,
/// then on AMX tiles the tile product's scratch.
std::size_t attention_floats(std::size_t keys, geometry_t const &geometry, attention_path_t path, bool tiles) noexcept {
    std::size_t const queries = query_rows(keys), stride = score_stride(keys), head_dim = geometry.head_dim;
    if (path == attention_path_t::f32) return 2 * queries * stride + queries * head_dim;
    return bf16_floats(queries * head_dim) + queries * stride + queries * stride / 2 +
           (tiles ? amx_product_scratch_floats(std::max(keys, head_dim)) : 0);
}

/// The sizes one call needs, found by walking its groups.
struct plan_t {
    std::size_t group_rows = 0;  // most rows of a group
    std::size_t group_items = 0; // most items of a group
    std::size_t key_floats = 0;  // most key-panel floats of a group
    std::size_t longest = 0;     // most tokens of an item
    std::size_t attention = 0;   // floats of per-thread attention scratch
    std::size_t bytes = 0;       // scratch bytes in all
};

/// Where one call's scratch lives.
struct buffers_t {
    float *x, *normed, *qkv, *attention_out, *mlp, *keys, *states, *gathered, *rope, *gemm, *attention;
    std::size_t *item_keys, *item_tasks; // per item of a group: key-panel offsets, attention-task prefix sums
    std::size_t attention_floats;        // floats of `attention` per thread
};

/// Without `scratch`: walks the groups and sizes the plan. With it: carves `buffers` along the plan.
void plan_call(model_weights_t const &weights, token_batch_t const &batch, trunk_outputs_t const &outputs,
               std::size_t threads, plan_t &plan, scratch_t *scratch, buffers_t *buffers) noexcept {
    geometry_t const &geometry = weights.geometry;
    attention_path_t const path = attention_path(weights);
    if (scratch == nullptr) {
        for (std::size_t first = 0; first != batch.count;) {
            std::size_t const end = group_end(batch, first);
            std::size_t rows = 0, keys = 0;
            for (std::size_t item = first; item != end; ++item) {
                std::size_t const tokens = item_tokens(batch, item);
                rows += tokens;
                keys += geometry.heads * head_key_floats(tokens, geometry, path);
                plan.longest = std::max(plan.longest, tokens);
                plan.attention = std::max(plan.attention, attention_floats(tokens, geometry, path, weights.amx));
            }
            plan.group_rows = std::max(plan.group_rows, rows);
            plan.group_items = std::max(plan.group_items, end - first);
            plan.key_floats = std::max(plan.key_floats, keys);
            first = end;
        }
    }
    std::size_t const hidden = geometry.hidden, attention_width = geometry.heads * geometry.head_dim;
    std::size_t const x_stride = gemm_padded_stride(hidden), qkv_stride = gemm_padded_stride(3 * attention_width);
    std::size_t const out_stride = gemm_padded_stride(attention_width);
    std::size_t const mlp_stride = gemm_padded_stride(2 * geometry.ffn_hidden);
    std::size_t const rows = plan.group_rows, items = plan.group_items;
    std::size_t const chunk_rows = std::min(rows, mlp_rows(geometry));
    std::size_t const extra_positions =
        plan.longest > weights.rope_positions ? plan.longest - weights.rope_positions : 0;
    bool const scratch_states = outputs.states == nullptr;
    struct slice_t {
        float **target;
        std::size_t floats;
    };
    slice_t const slices[] = {
        {buffers ? &buffers->x : nullptr, rows * x_stride},
        {buffers ? &buffers->normed : nullptr, rows * x_stride},
        {buffers ? &buffers->qkv : nullptr, rows * qkv_stride},
        {buffers ? &buffers->attention_out : nullptr, rows * out_stride},
        {buffers ? &buffers->mlp : nullptr, chunk_rows * mlp_stride},
        {buffers ? &buffers->keys : nullptr, plan.key_floats},
        {buffers ? &buffers->states : nullptr, scratch_states ? rows * x_stride : 0},
        {buffers ? &buffers->gathered : nullptr, items * x_stride},
        {buffers ? &buffers->rope : nullptr, extra_positions * geometry.head_dim},
        {buffers ? &buffers->gemm : nullptr, threads * weights.scratch_floats},
        {buffers ? &buffers->attention : nullptr, threads * plan.attention},
    };
    if (scratch == nullptr) {
        plan.bytes = 2 * scratch_t::bytes_for<std::size_t>(items + 1);
        for (slice_t const &slice : slices) plan.bytes += scratch_t::bytes_for<float>(slice.floats);
        return;
    }
    for (slice_t const &slice : slices) *slice.target = scratch->take<float>(slice.floats);
    buffers->attention_floats = plan.attention;
    buffers->item_keys = scratch->take<std::size_t>(items + 1);
    buffers->item_tasks = scratch->take<std::size_t>(items + 1);
}

/// One call's state: the weights, the batch, the outputs, the buffers, and the current group.
class forward_t {
  public:
    forward_t(model_weights_t const &weights, token_batch_t const &batch, trunk_outputs_t const &outputs,
              buffers_t const &buffers, parallel_t const &parallel, forward_hooks_t const &hooks,
              std::size_t longest) noexcept
        : weights_(weights), kernels_(*weights.kernels), geometry_(weights.geometry), batch_(batch), outputs_(outputs),
          buffers_(buffers), parallel_(parallel), hooks_(hooks), path_(attention_path(weights)), longest_(longest),
          polled_(std::chrono::steady_clock::now()) {}

    /// Whether the handler asked to stop, in a group or between groups.
    bool stopped() const noexcept { return stopped_.load(std::memory_order_relaxed); }

    /// Asks the handler again once `poll_interval_k` passed since the last time, from worker 0 (the calling thread)
    /// only; answers whether to go on. Other workers only read the answer.
    bool keep_going(std::size_t worker) noexcept {
        if (worker == 0 && hooks_.poll != nullptr) {
            auto const now = std::chrono::steady_clock::now();
            if (now - polled_ >= poll_interval_k) {
                polled_ = now;
                if (hooks_.poll(hooks_.progress_context, first_, batch_.count))
                    stopped_.store(true, std::memory_order_relaxed);
            }
        }
        return !stopped();
    }

    /// Runs `body`, adding its wall time to `phase` when the caller profiles the call.
    template <typename body_t>
    void timed(forward_phase_t phase, body_t &&body) noexcept {
        if (hooks_.phases == nullptr) return body();
        auto const start = std::chrono::steady_clock::now();
        body();
        std::chrono::duration<double> const seconds = std::chrono::steady_clock::now() - start;
        hooks_.phases[static_cast<std::size_t>(phase)] += seconds.count();
    }

    /// Restarts the poll clock, after the handler saw a group's end.
    void reported() noexcept { polled_ = std::chrono::steady_clock::now(); }

    /// Fills the RoPE angles of positions past the weights' tables, once per call.
    void prepare_rope() noexcept {
        std::size_t const half = geometry_.head_dim / 2;
        for (std::size_t position = weights_.rope_positions; position < longest_; ++position) {
            float *row = buffers_.rope + (position - weights_.rope_positions) * 2 * half;
            weights_.rope_angles(position, row, row + half);
        }
    }

    /// Runs items [first, end) through the whole model.
    void run_group(std::size_t first, std::size_t end) noexcept {
        first_ = first;
        end_ = end;
        row_base_ = token_row_offset(batch_, first);
        rows_ = token_row_offset(batch_, end) - row_base_;
        if (rows_ != 0) {
            embed();
            for (block_weights_t const &block : weights_.blocks) {
                attention(block);
                if (!keep_going(0)) return;
                mlp(block);
                if (!keep_going(0)) return;
            }
            final_norm();
            if (outputs_.token_vectors != nullptr) token_vectors();
            if (outputs_.choose_logits != nullptr) choose_logits();
        }
        if (outputs_.embeddings != nullptr) embeddings();
    }

  private:
    std::size_t hidden() const noexcept { return geometry_.hidden; }
    std::size_t attention_width() const noexcept { return geometry_.heads * geometry_.head_dim; }
    /// Row strides of the scratch buffers, padded off L1-aliasing multiples.
    std::size_t x_stride() const noexcept { return gemm_padded_stride(hidden()); }
    std::size_t qkv_stride() const noexcept { return gemm_padded_stride(3 * attention_width()); }
    std::size_t out_stride() const noexcept { return gemm_padded_stride(attention_width()); }
    std::size_t mlp_stride() const noexcept { return gemm_padded_stride(2 * geometry_.ffn_hidden); }
    /// The first row of item `item` within the group.
    std::size_t item_row(std::size_t item) const noexcept { return token_row_offset(batch_, item) - row_base_; }
    /// The final states of the group: the caller's rows, or scratch.
    float *states() const noexcept {
        return outputs_.states != nullptr ? outputs_.states + row_base_ * outputs_.states_stride : buffers_.states;
    }
    std::size_t states_stride() const noexcept {
        return outputs_.states != nullptr ? outputs_.states_stride : x_stride();
    }
    /// The item of the group holding row `row`.
    std::size_t item_of(std::size_t row) const noexcept {
        std::size_t low = first_, high = end_; // the answer is in [low, high)
        while (high - low > 1) {
            std::size_t const middle = low + (high - low) / 2;
            if (item_row(middle) <= row) low = middle;
            else high = middle;
        }
        return low;
    }
    /// Runs `body(row_begin, row_end)` over [0, rows) in tasks of `row_task_k` rows.
    template <typename body_t>
    void for_rows(std::size_t rows, body_t &&body) const noexcept {
        parallel_((rows + row_task_k - 1) / row_task_k, [&](std::size_t task, std::size_t) noexcept {
            std::size_t const begin = task * row_task_k;
            body(begin, std::min(rows, begin + row_task_k));
        });
    }
    /// The cosines and sines of the RoPE angles of `position`: the weights' tables, or this call's extra rows.
    void angles(std::size_t position, float const *&cos, float const *&sin) const noexcept {
        std::size_t const half = geometry_.head_dim / 2;
        if (position < weights_.rope_positions) {
            cos = weights_.rope_cos.data() + position * half;
            sin = weights_.rope_sin.data() + position * half;
        } else {
            cos = buffers_.rope + (position - weights_.rope_positions) * 2 * half;
            sin = cos + half;
        }
    }
    /// A linear's product over this call's threads and scratch, in chunks of `poll_rows_k` rows with a poll between.
    void multiply(float const *a, std::size_t lda, std::size_t rows, linear_t const &b, float *c, std::size_t ldc,
                  unsigned flags) noexcept {
        timed(forward_phase_t::linears, [&] {
            for (std::size_t row = 0; row < rows && keep_going(0); row += poll_rows_k)
                b.multiply(kernels_, parallel_, a + row * lda, lda, std::min(poll_rows_k, rows - row), c + row * ldc,
                           ldc, flags, buffers_.gemm);
        });
    }

    /// Byte embeddings (CHOOSE after each item when appended) into the residual stream.
    void embed() noexcept {
        std::size_t const width = hidden(), stride = x_stride();
        parallel_(end_ - first_, [&](std::size_t index, std::size_t) noexcept {
            std::size_t const item = first_ + index;
            float *row = buffers_.x + item_row(item) * stride;
            for (std::size_t offset = batch_.offsets[item]; offset != batch_.offsets[item + 1]; ++offset, row += stride)
                std::memcpy(row,
                            batch_.embedded != nullptr
                                ? batch_.embedded + (offset - batch_.offsets[0]) * batch_.embedded_stride
                                : weights_.byte_embedding.data() + batch_.bytes[offset] * width,
                            width * sizeof(float));
            if (batch_.append_choose)
                std::memcpy(row, weights_.byte_embedding.data() + 257 * width, width * sizeof(float));
        });
    }

    /// `x += Out(Attention(RoPE(Q(n1)), RoPE(K(n1)), V(n1)))` with `n1 = RMSNorm(x) * attn_norm`.
    void attention(block_weights_t const &block) noexcept {
        std::size_t const width = hidden(), stride = x_stride();
        timed(forward_phase_t::norms, [&] {
            for_rows(rows_, [&](std::size_t begin, std::size_t end) noexcept {
                for (std::size_t row = begin; row != end; ++row)
                    kernels_.rms_norm(buffers_.x + row * stride, block.attn_norm.data(), width, geometry_.norm_eps,
                                      buffers_.normed + row * stride, true);
            });
        });
        multiply(buffers_.normed, stride, rows_, block.qkv, buffers_.qkv, qkv_stride(), 0);
        timed(forward_phase_t::rope, [&] { rope(); });
        attend_heads();
        multiply(buffers_.attention_out, out_stride(), rows_, block.out, buffers_.x, stride, gemm_accumulate_k);
    }

    /// RoPE on q and k (then BF16, as they only feed q.k^T), BF16 on v (it only feeds softmax.v).
    void rope() noexcept {
        std::size_t const heads = geometry_.heads, head_dim = geometry_.head_dim, half = head_dim / 2;
        std::size_t const qkv = qkv_stride(), attention = attention_width();
        for_rows(rows_, [&](std::size_t begin, std::size_t end) noexcept {
            std::size_t item = item_of(begin);
            for (std::size_t row = begin; row != end; ++row) {
                while (item + 1 != end_ && item_row(item + 1) <= row) ++item;
                std::size_t const position = row - item_row(item);
                float const *cos, *sin;
                angles(position, cos, sin);
                float assembled[2 * rope_pairs_max_k];
                if (batch_.positions != nullptr) {
                    // Pairs of section `axis` rotate by the token's position on that axis: (t, h, w).
                    std::uint32_t const *axes = batch_.positions + 3 * (row_base_ + row);
                    for (std::size_t axis = 0, pair = 0; axis != 3; ++axis) {
                        float const *axis_cos, *axis_sin;
                        angles(axes[axis], axis_cos, axis_sin);
                        for (std::size_t end = pair + geometry_.rope_sections[axis]; pair != end; ++pair)
                            assembled[pair] = axis_cos[pair], assembled[half + pair] = axis_sin[pair];
                    }
                    cos = assembled, sin = assembled + half;
                }
                float *q = buffers_.qkv + row * qkv;
                kernels_.rope_round(q, heads, head_dim, cos, sin);
                kernels_.rope_round(q + attention, heads, head_dim, cos, sin);
                kernels_.round_bf16(q + 2 * attention, q + 2 * attention, attention);
            }
        });
    }

    /// Every head of every item of the group: its keys and values packed, then its blocks of queries attended.
    void attend_heads() noexcept {
        std::size_t const heads = geometry_.heads, items = end_ - first_;
        // Per item: key panels of every head, and the attention tasks' prefix sums.
        buffers_.item_keys[0] = buffers_.item_tasks[0] = 0;
        for (std::size_t index = 0; index != items; ++index) {
            std::size_t const tokens = item_tokens(batch_, first_ + index);
            buffers_.item_keys[index + 1] =
                buffers_.item_keys[index] + heads * head_key_floats(tokens, geometry_, path_);
            std::size_t const blocks = tokens == 0 ? 0 : (tokens + query_rows(tokens) - 1) / query_rows(tokens);
            buffers_.item_tasks[index + 1] = buffers_.item_tasks[index] + blocks * heads;
        }
        timed(forward_phase_t::key_packing, [&] {
            parallel_(items * heads, [&](std::size_t task, std::size_t thread) noexcept {
                if (!keep_going(thread)) return;
                if (path_ == attention_path_t::f32) pack_keys(task / heads, task % heads);
                else pack_keys_pairs(task / heads, task % heads);
            });
        });
        timed(forward_phase_t::attention, [&] {
            parallel_(buffers_.item_tasks[items], [&](std::size_t task, std::size_t thread) noexcept {
                if (!keep_going(thread)) return;
                std::size_t const index = std::upper_bound(buffers_.item_tasks, buffers_.item_tasks + items + 1, task) -
                                          buffers_.item_tasks - 1;
                std::size_t const local = task - buffers_.item_tasks[index];
                if (path_ == attention_path_t::f32) attend(index, local % heads, local / heads, thread);
                else attend_pairs(index, local % heads, local / heads, thread);
            });
        });
    }

    /// Transposes head `head`'s keys of the group's item `index` into 64-key panels of `head_dim` rows.
    void pack_keys(std::size_t index, std::size_t head) noexcept {
        std::size_t const item = first_ + index, tokens = item_tokens(batch_, item), head_dim = geometry_.head_dim;
        std::size_t const panels = panel_count(tokens);
        float *target = buffers_.keys + buffers_.item_keys[index] + head * panels * head_dim * gemm_panel_columns_k;
        float const *keys = buffers_.qkv + item_row(item) * qkv_stride() + attention_width() + head * head_dim;
        for (std::size_t panel = 0; panel != panels; ++panel) {
            float *block = target + panel * head_dim * gemm_panel_columns_k;
            for (std::size_t column = 0; column != gemm_panel_columns_k; ++column) {
                std::size_t const key = panel * gemm_panel_columns_k + column;
                float const *source = keys + key * qkv_stride();
                for (std::size_t dim = 0; dim != head_dim; ++dim)
                    block[dim * gemm_panel_columns_k + column] = key < tokens ? source[dim] : 0.0f;
            }
        }
    }

    /// One block of queries of one head of one item: scores, softmax, and the weighted values.
    void attend(std::size_t index, std::size_t head, std::size_t query_block, std::size_t thread) noexcept {
        std::size_t const item = first_ + index, tokens = item_tokens(batch_, item), head_dim = geometry_.head_dim;
        std::size_t const queries = query_rows(tokens), stride = score_stride(tokens);
        std::size_t const begin = query_block * queries, count = std::min(queries, tokens - begin);
        std::size_t const panels = panel_count(tokens);
        float *scores = buffers_.attention + thread * buffers_.attention_floats;
        float *probabilities = scores + queries * stride;
        float *query_panel = probabilities + queries * stride;
        std::size_t const row = item_row(item) + begin;
        // q . k^T over the key panels, into `count` rows of scores.
        kernels_.pack_a(buffers_.qkv + row * qkv_stride() + head * head_dim, qkv_stride(), count, head_dim,
                        query_panel);
        gemm_b_t const keys{buffers_.keys + buffers_.item_keys[index] + head * panels * head_dim * gemm_panel_columns_k,
                            head_dim, tokens, head_dim * gemm_panel_columns_k, gemm_panel_columns_k};
        gemm_packed(kernels_, query_panel, count, keys, scores, stride, 0);
        float const scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        for (std::size_t r = 0; r != count; ++r) kernels_.softmax_round(scores + r * stride, tokens, scale);
        // softmax . v, rounded for the output projection.
        kernels_.pack_a(scores, stride, count, tokens, probabilities);
        float const *values = buffers_.qkv + item_row(item) * qkv_stride() + 2 * attention_width() + head * head_dim;
        gemm_b_t const value_view{values, tokens, head_dim, gemm_panel_columns_k, qkv_stride()};
        gemm_packed(kernels_, probabilities, count, value_view,
                    buffers_.attention_out + row * out_stride() + head * head_dim, out_stride(), gemm_round_output_k);
    }

    /// Head `head`'s packed keys and values of the group's item `index` (`head_key_floats`).
    float *head_keys(std::size_t index, std::size_t head) const noexcept {
        std::size_t const tokens = item_tokens(batch_, first_ + index);
        return buffers_.keys + buffers_.item_keys[index] + head * head_key_floats(tokens, geometry_, path_);
    }

    /// Packs head `head`'s keys and values of the group's item `index` as BF16 pair words: key panels whose pair q of
    /// key n is its dimensions 2q and 2q + 1, then value panels whose pair p of dimension d is keys 2p and 2p + 1.
    /// Both are BF16 values already (RoPE and the rounding after the QKV product), so packing only moves bits.
    void pack_keys_pairs(std::size_t index, std::size_t head) noexcept {
        std::size_t const item = first_ + index, tokens = item_tokens(batch_, item), head_dim = geometry_.head_dim;
        if (tokens == 0) return;
        std::size_t const half = head_dim / 2, panels = panel_count(tokens), pairs = (tokens + 1) / 2;
        auto *target = reinterpret_cast<std::uint32_t *>(head_keys(index, head));
        float const *keys = buffers_.qkv + item_row(item) * qkv_stride() + attention_width() + head * head_dim;
        float const *values = keys + attention_width();
        for (std::size_t panel = 0; panel != panels; ++panel)
            for (std::size_t column = 0; column != gemm_panel_columns_k; ++column) {
                std::size_t const key = panel * gemm_panel_columns_k + column;
                std::uint32_t *words = target + panel * half * gemm_panel_columns_k + column;
                if (key >= tokens) {
                    for (std::size_t pair = 0; pair != half; ++pair) words[pair * gemm_panel_columns_k] = 0;
                    continue;
                }
                auto const *bits = reinterpret_cast<std::uint32_t const *>(keys + key * qkv_stride());
                for (std::size_t pair = 0; pair != half; ++pair)
                    words[pair * gemm_panel_columns_k] = (bits[2 * pair] >> 16) | (bits[2 * pair + 1] & 0xFFFF0000u);
            }
        std::uint32_t *value_words = target + panels * half * gemm_panel_columns_k;
        for (std::size_t panel = 0; panel != panel_count(head_dim); ++panel) {
            std::size_t const column = panel * gemm_panel_columns_k;
            std::size_t const columns = std::min(gemm_panel_columns_k, head_dim - column);
            for (std::size_t pair = 0; pair != pairs; ++pair) {
                std::uint32_t *words = value_words + (panel * pairs + pair) * gemm_panel_columns_k;
                float const *low = values + 2 * pair * qkv_stride() + column;
                float const *high = 2 * pair + 1 < tokens ? low + qkv_stride() : nullptr;
                kernels_.interleave_bf16(low, high, words, columns);
                std::fill(words + columns, words + gemm_panel_columns_k, 0u);
            }
        }
    }

    /// One block of queries of one head of one item on BF16 pair words: scores, softmax in F32, weighted values.
    void attend_pairs(std::size_t index, std::size_t head, std::size_t query_block, std::size_t thread) noexcept {
        std::size_t const item = first_ + index, tokens = item_tokens(batch_, item), head_dim = geometry_.head_dim;
        std::size_t const queries = query_rows(tokens), stride = score_stride(tokens), half = head_dim / 2;
        std::size_t const begin = query_block * queries, count = std::min(queries, tokens - begin);
        float *scratch = buffers_.attention + thread * buffers_.attention_floats;
        auto *query_words = reinterpret_cast<std::uint32_t *>(scratch);
        float *scores = scratch + bf16_floats(queries * head_dim);
        auto *probabilities = reinterpret_cast<std::uint32_t *>(scores + queries * stride);
        float *tile_scratch = scores + queries * stride + queries * stride / 2;
        std::size_t const row = item_row(item) + begin;
        auto const *keys = reinterpret_cast<std::uint32_t const *>(head_keys(index, head));
        for (std::size_t r = 0; r != count; ++r)
            kernels_.convert_bf16(buffers_.qkv + (row + r) * qkv_stride() + head * head_dim,
                                  reinterpret_cast<std::uint16_t *>(query_words + r * half), head_dim);
        pair_product(query_words, half, count, {keys, head_dim, tokens, true}, scores, stride, 0, tile_scratch);
        float const scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        for (std::size_t r = 0; r != count; ++r) {
            kernels_.softmax_round(scores + r * stride, tokens, scale);
            auto *halves = reinterpret_cast<std::uint16_t *>(probabilities + r * (stride / 2));
            kernels_.convert_bf16(scores + r * stride, halves, tokens);
            if (tokens % 2 != 0) halves[tokens] = 0;
        }
        std::uint32_t const *values = keys + panel_count(tokens) * half * gemm_panel_columns_k;
        pair_product(probabilities, stride / 2, count, {values, tokens, head_dim, true},
                     buffers_.attention_out + row * out_stride() + head * head_dim, out_stride(), gemm_round_output_k,
                     tile_scratch);
    }

    /// C[count x b.columns] (+)= A B over BF16 pair words, A's rows `a_words` words apart: `product` in tiles (on its
    /// `tile_scratch`, this thread alone) where the kernels run on AMX, else the pair micro-kernel over B's panels.
    void pair_product(std::uint32_t const *a, std::size_t a_words, std::size_t count, panels_t const &b, float *c,
                      std::size_t ldc, unsigned flags, float *tile_scratch) const noexcept {
        if (kernels_.tiles != tiles_t::none) {
            operand_t const bits = operand_t::bf16(reinterpret_cast<std::uint16_t const *>(a), 2 * a_words);
            return product(kernels_, parallel_t{}, bits, count, b, c, ldc, flags, tile_scratch);
        }
        std::size_t const half = (b.depth + 1) / 2;
        auto const *words = static_cast<std::uint32_t const *>(b.data);
        for (std::size_t panel = 0; panel != panel_count(b.columns); ++panel) {
            std::size_t const column = panel * gemm_panel_columns_k;
            std::size_t const columns = std::min(gemm_panel_columns_k, b.columns - column);
            for (std::size_t r = 0; r < count; r += gemm_micro_rows_k)
                kernels_.gemm_micro_pairs(half, a + r * a_words, a_words, 1,
                                          words + panel * half * gemm_panel_columns_k, c + r * ldc + column, ldc,
                                          std::min(gemm_micro_rows_k, count - r), columns, flags);
        }
    }

    /// `x += Down(silu(Gate(n2)) * Up(n2))` with `n2 = RMSNorm(x) * mlp_norm`, in chunks of rows.
    void mlp(block_weights_t const &block) noexcept {
        std::size_t const width = hidden(), ffn = geometry_.ffn_hidden, stride = x_stride(), mlp = mlp_stride();
        std::size_t const chunk_rows = mlp_rows(geometry_);
        for (std::size_t chunk = 0; chunk < rows_; chunk += chunk_rows) {
            std::size_t const rows = std::min(chunk_rows, rows_ - chunk);
            float *x = buffers_.x + chunk * stride;
            timed(forward_phase_t::norms, [&] {
                for_rows(rows, [&](std::size_t begin, std::size_t end) noexcept {
                    for (std::size_t row = begin; row != end; ++row)
                        kernels_.rms_norm(x + row * stride, block.mlp_norm.data(), width, geometry_.norm_eps,
                                          buffers_.normed + row * stride, true);
                });
            });
            multiply(buffers_.normed, stride, rows, block.gate_up, buffers_.mlp, mlp, 0);
            timed(forward_phase_t::gate, [&] {
                for_rows(rows, [&](std::size_t begin, std::size_t end) noexcept {
                    for (std::size_t row = begin; row != end; ++row) {
                        float *gate = buffers_.mlp + row * mlp;
                        kernels_.silu_mul_round(gate, gate + ffn, gate, ffn);
                    }
                });
            });
            multiply(buffers_.mlp, mlp, rows, block.down, x, stride, gemm_accumulate_k);
        }
    }

    /// `h = RMSNorm(x) * final_norm`: the states.
    void final_norm() noexcept {
        std::size_t const width = hidden(), x = x_stride();
        float *states = this->states();
        std::size_t const stride = states_stride();
        timed(forward_phase_t::norms, [&] {
            for_rows(rows_, [&](std::size_t begin, std::size_t end) noexcept {
                for (std::size_t row = begin; row != end; ++row)
                    kernels_.rms_norm(buffers_.x + row * x, weights_.final_norm.data(), width, geometry_.norm_eps,
                                      states + row * stride, false);
            });
        });
    }

    /// `normalize(head.token . h_i)` for every state.
    void token_vectors() noexcept {
        float *target = outputs_.token_vectors + row_base_ * outputs_.token_vectors_stride;
        multiply(states(), states_stride(), rows_, weights_.token_head, target, outputs_.token_vectors_stride, 0);
        for_rows(rows_, [&](std::size_t begin, std::size_t end) noexcept {
            for (std::size_t row = begin; row != end; ++row)
                kernels_.l2_normalize(target + row * outputs_.token_vectors_stride, geometry_.token_width);
        });
    }

    /// `head.byte . h` at each item's CHOOSE token (its last).
    void choose_logits() noexcept {
        std::size_t const width = hidden(), items = end_ - first_;
        float const *states = this->states();
        for (std::size_t index = 0; index != items; ++index)
            std::memcpy(buffers_.gathered + index * x_stride(),
                        states + (item_row(first_ + index + 1) - 1) * states_stride(), width * sizeof(float));
        multiply(buffers_.gathered, x_stride(), items, weights_.byte_head,
                 outputs_.choose_logits + first_ * outputs_.choose_logits_stride, outputs_.choose_logits_stride, 0);
    }

    /// `normalize(head.embedding . mean(h))` per item; an empty item's mean and embedding are zero.
    void embeddings() noexcept {
        std::size_t const width = hidden(), items = end_ - first_;
        float const *states = this->states();
        parallel_(items, [&](std::size_t index, std::size_t) noexcept {
            std::size_t const item = first_ + index, tokens = item_tokens(batch_, item);
            float *pooled = buffers_.gathered + index * x_stride();
            std::memset(pooled, 0, width * sizeof(float));
            if (tokens == 0) return;
            std::size_t const row = item_row(item);
            for (std::size_t t = 0; t != tokens; ++t) kernels_.add(pooled, states + (row + t) * states_stride(), width);
            kernels_.scale(pooled, width, 1.0f / static_cast<float>(tokens));
        });
        float *target = outputs_.embeddings + first_ * outputs_.embeddings_stride;
        multiply(buffers_.gathered, x_stride(), items, weights_.embedding_head, target, outputs_.embeddings_stride, 0);
        for (std::size_t index = 0; index != items; ++index)
            kernels_.l2_normalize(target + index * outputs_.embeddings_stride, geometry_.dimensions);
    }

    model_weights_t const &weights_;
    kernels_t const &kernels_;
    geometry_t const &geometry_;
    token_batch_t const &batch_;
    trunk_outputs_t const &outputs_;
    buffers_t const &buffers_;
    parallel_t const &parallel_;
    forward_hooks_t const &hooks_;
    attention_path_t path_;
    std::size_t longest_;
    std::chrono::steady_clock::time_point polled_; // worker 0's last poll of the handler
    std::atomic<bool> stopped_{false};
    std::size_t first_ = 0, end_ = 0, row_base_ = 0, rows_ = 0;
};

} // namespace

// The names the bench prints.
char const *forward_phase_name(forward_phase_t phase) noexcept {
    switch (phase) {
    case forward_phase_t::linears: return "linears";
    case forward_phase_t::attention: return "attention";
    case forward_phase_t::key_packing: return "key_packing";
    case forward_phase_t::norms: return "norms";
    case forward_phase_t::rope: return "rope";
    case forward_phase_t::gate: return "gate";
    case forward_phase_t::count: break;
    }
    return "?";
}

// Every item's tokens through the linears, and attention's two products over each item's square.
double trunk_flops(geometry_t const &geometry, token_batch_t const &batch) noexcept {
    double const attention = double(geometry.heads * geometry.head_dim), hidden = double(geometry.hidden);
    double const ffn = double(geometry.ffn_hidden);
    double const per_token = 2 * hidden * (3 * attention + 2 * ffn) + 2 * attention * hidden + 2 * ffn * hidden;
    double tokens = 0, products = 0;
    for (std::size_t item = 0; item != batch.count; ++item) {
        double const count = double(item_tokens(batch, item));
        tokens += count;
        products += 4 * count * count * attention;
    }
    return double(geometry.depth) * (tokens * per_token + products);
}

// Checks the request, sizes and carves the scratch, then runs the groups in order.
uform_status_t trunk_forward(model_weights_t const &weights, token_batch_t const &batch, trunk_outputs_t const &outputs,
                             scratch_t &scratch, forward_hooks_t const &hooks, char const **message) noexcept {
    if (weights.kernels == nullptr)
        return fail(message, uform_status_invalid_argument_k, "the model's weights are not loaded");
    if (outputs.token_vectors != nullptr && weights.token_head.columns() == 0)
        return fail(message, uform_status_unsupported_k, "the model has no token head for token vectors");
    if (outputs.choose_logits != nullptr && weights.byte_head.columns() == 0)
        return fail(message, uform_status_unsupported_k, "the model has no byte head to score choices");
    if (outputs.choose_logits != nullptr && !batch.append_choose)
        return fail(message, uform_status_invalid_argument_k, "byte logits at CHOOSE need the CHOOSE token appended");
    if ((batch.embedded != nullptr || batch.positions != nullptr) && batch.append_choose)
        return fail(message, uform_status_invalid_argument_k,
                    "embedded tokens and positions are not text: no CHOOSE token");
    if (batch.positions != nullptr && weights.geometry.head_dim / 2 > rope_pairs_max_k)
        return fail(message, uform_status_unsupported_k, "heads this wide take text positions only");
    if (batch.count == 0) return uform_status_ok_k;

    // A call too small to pay for a fork and a join per step runs on the calling thread.
    parallel_t parallel = hooks.parallel;
    if (trunk_flops(weights.geometry, batch) < parallel_flops_per_thread_k * double(parallel.threads))
        parallel = parallel_t{};
    std::size_t const threads = std::max<std::size_t>(1, parallel.threads);
    plan_t plan;
    plan_call(weights, batch, outputs, threads, plan, nullptr, nullptr);
    if (plan.longest > item_tokens_max_k)
        return fail(message, uform_status_limit_exceeded_k, "an item has more than 16,777,217 tokens");
    if (!scratch.reset(plan.bytes))
        return fail(message, uform_status_out_of_memory_k, "out of memory for activation scratch");
    buffers_t buffers{};
    plan_call(weights, batch, outputs, threads, plan, &scratch, &buffers);

    forward_t forward(weights, batch, outputs, buffers, parallel, hooks, plan.longest);
    forward.prepare_rope();
    for (std::size_t first = 0; first != batch.count;) {
        std::size_t const end = group_end(batch, first);
        forward.run_group(first, end);
        first = end;
        if (forward.stopped() ||
            (hooks.progress != nullptr && hooks.progress(hooks.progress_context, first, batch.count)))
            return fail(message, uform_status_cancelled_k, "the progress handler stopped the call");
        forward.reported();
    }
    return uform_status_ok_k;
}

} // namespace uform::ram
