// The trunk forward of docs/model.md on the CPU: every item of a call packed into one token matrix, each GEMM run over
// all of its tokens, attention block-diagonal per item, and only the surfaces asked for computed.
#pragma once

#include <cstddef>
#include <cstdint>

#include <uform/types.h>

#include "cpp/parallel.hpp"
#include "cpp/scratch.hpp"
#include "cpp/weights.hpp"

namespace uform::ram {

/// A call's tokens, of every modality, for the trunk. Texts: item `i` is `bytes[offsets[i]]` up to
/// `bytes[offsets[i + 1]]`, one token per byte, followed by one CHOOSE token (row 257 of the byte embedding) when
/// `append_choose` is set. The other modalities' front-ends hand the trunk their tokens already embedded: then
/// `embedded` holds one row of `hidden` floats per token (`embedded_stride` floats apart, token `t` of the call at row
/// `t - offsets[0]`, since `offsets` then count tokens), `bytes` is unused, and `positions` holds each token's `(t, h,
/// w)` (three per token, each below its item's token count); null positions are text's `(i, i, i)`. Neither goes with
/// `append_choose`.
struct token_batch_t {
    std::uint8_t const *bytes = nullptr;
    std::size_t const *offsets = nullptr; // `count + 1` ascending entries
    std::size_t count = 0;
    bool append_choose = false;
    float const *embedded = nullptr;
    std::size_t embedded_stride = 0;
    std::uint32_t const *positions = nullptr;
};

/// Where the surfaces go, as F32 rows; a null pointer is a surface not asked for, and never computed.
/// Token rows are packed: item `i`'s rows start at `offsets[i] + i * append_choose` (see `token_row_offset`).
struct trunk_outputs_t {
    float *states = nullptr; // [tokens x hidden]
    std::size_t states_stride = 0;
    float *token_vectors = nullptr; // [tokens x token_width], unit rows; needs the token head
    std::size_t token_vectors_stride = 0;
    float *embeddings = nullptr; // [count x dimensions], unit rows (an empty item's is zero)
    std::size_t embeddings_stride = 0;
    float *choose_logits = nullptr; // [count x 256]: the byte head at each item's CHOOSE token; needs both
    std::size_t choose_logits_stride = 0;
};

/// The parts of a forward a profile times apart (`forward_hooks_t::phases`): the linears' products (trunk and heads),
/// attention per head (its two products, the softmax and their BF16 conversions), packing each head's keys and
/// values, the RMS norms, RoPE with the rounding of q, k and v, and the MLP's gate. The rest (embedding, pooling,
/// normalizing the outputs, the groups' bookkeeping) is the call's time less theirs.
enum class forward_phase_t : unsigned char { linears, attention, key_packing, norms, rope, gate, count };

/// A phase's name in reports.
char const *forward_phase_name(forward_phase_t phase) noexcept;

/// The executor's hooks for one call.
struct forward_hooks_t {
    /// Threads to run on.
    parallel_t parallel{};
    /// Nullable; called on the calling thread with items completed and items in all; true stops the call.
    bool (*progress)(void *context, std::size_t completed, std::size_t total) noexcept = nullptr;
    /// Nullable; called on the calling thread within long groups, at least every ~50 ms of work, to ask again
    /// whether to go on; true stops the call.
    bool (*poll)(void *context, std::size_t completed, std::size_t total) noexcept = nullptr;
    /// Passed to `progress` and `poll` untouched.
    void *progress_context = nullptr;
    /// Nullable: `forward_phase_t::count` seconds, to which each phase's wall time (read on the calling thread around
    /// each of its steps) is added; for profiles, which pay two clock reads a step.
    double *phases = nullptr;
};

/// The first token row of item `item` (and, for `item == batch.count`, the number of token rows).
inline std::size_t token_row_offset(token_batch_t const &batch, std::size_t item) noexcept {
    return batch.offsets[item] - batch.offsets[0] + (batch.append_choose ? item : 0);
}

/// Useful FLOPs of the trunk over `batch`: its linears on every token and attention's two products per item.
double trunk_flops(geometry_t const &geometry, token_batch_t const &batch) noexcept;

/// Runs the trunk and the heads asked for, on `hooks.parallel`'s threads, or on the calling thread alone when the call
/// is too small to pay for them (under 16 MFLOP of `trunk_flops` a thread). `scratch` grows to the call's high-water
/// mark (a steady loop of same-shaped calls allocates nothing after the first). Answers `unsupported` for token vectors
/// without a token head or logits without a byte head, `invalid-argument` for logits without `append_choose`,
/// `out-of-memory` when the scratch cannot grow, `cancelled` when `progress` asked to stop (outputs are then partial).
uform_status_t trunk_forward(model_weights_t const &weights, token_batch_t const &batch, trunk_outputs_t const &outputs,
                             scratch_t &scratch, forward_hooks_t const &hooks, char const **message) noexcept;

} // namespace uform::ram
