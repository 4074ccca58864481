// The text verbs of the RAM residency: `text_encode` and `text_choose` through cpp/forward's packed text forward,
// with every temporary in the call's scratch and every output in the call's arena.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../../c/scalars.hpp"
#include "../forward.hpp"
#include "ram.hpp"

namespace uform::backend {
namespace {

using ram::backend_fail;
using ram::scratch_floats_bytes;

/// Rows per task when converting F32 rows into the output scalar.
constexpr std::size_t convert_rows_k = 64;

/**
 * Runs the text forward with its activation scratch carved out of the call's shared scratch, after `staging`
 * bytes the caller keeps for its own F32 rows. `place(staging)` points `outputs` into the staging block (or
 * elsewhere) and runs again whenever the scratch moves. The scratch is reserved once at the model's hint, and once
 * more, larger, when the forward asks for more than that (the first call of a new shape): a steady loop of
 * same-shaped calls reserves once and allocates nothing.
 */
template <typename place_type_>
uform_status_t run_forward(model_t const &model, call_t &call, ram::text_batch_t const &batch,
                           ram::text_outputs_t &outputs, std::size_t staging, place_type_ &&place,
                           char const **message) noexcept {
    ram::forward_hooks_t hooks;
    hooks.parallel = ram::parallel_of(call);
    hooks.progress = ram::report_to_call;
    hooks.progress_context = &call;
    std::size_t activations = model.scratch_hint.load(std::memory_order_relaxed);
    for (int attempt = 0;; ++attempt) {
        if (activations > SIZE_MAX - staging || !call.reserve_scratch(0, staging + activations))
            return backend_fail(message, uform_status_out_of_memory_k, "out of memory for the call's scratch");
        auto *shared = static_cast<std::byte *>(call.shared_scratch());
        place(shared);
        ram::scratch_t scratch;
        scratch.borrow(shared + staging, activations);
        uform_status_t const status = ram::text_forward(model.weights, batch, outputs, scratch, hooks, message);
        if (status == uform_status_cancelled_k)
            return backend_fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
        if (status != uform_status_out_of_memory_k || scratch.requested() <= activations || attempt != 0) return status;
        // The forward needs more than the hint: raise the hint for every later call, then reserve that much.
        activations = scratch.requested();
        std::size_t hint = model.scratch_hint.load(std::memory_order_relaxed);
        while (hint < activations &&
               !model.scratch_hint.compare_exchange_weak(hint, activations, std::memory_order_relaxed)) {
        }
    }
}

/// Converts `rows` F32 rows of `columns` values (`source_stride` floats apart) into `target`'s scalar and stride.
void convert_rows(call_t &call, float const *source, std::size_t source_stride, std::size_t rows, std::size_t columns,
                  uform_rows_t const &target) noexcept {
    std::size_t const tasks = (rows + convert_rows_k - 1) / convert_rows_k;
    call.parallel_for(tasks, [&](std::size_t task, std::size_t) noexcept {
        std::size_t const begin = task * convert_rows_k, end = std::min(rows, begin + convert_rows_k);
        for (std::size_t row = begin; row != end; ++row)
            convert_row(source + row * source_stride, columns, target.scalar,
                        static_cast<std::byte *>(target.data) + row * target.stride);
    });
}

/// Fills a rows tape's offsets from a text tape: one row per byte.
void fill_token_offsets(uform_rows_t &rows, tape_view_t<char> const &texts) noexcept {
    auto *offsets = const_cast<std::size_t *>(rows.offsets);
    offsets[0] = 0;
    for (std::size_t i = 1; i <= texts.count; ++i) offsets[i] = texts.offsets[i] - texts.offsets[0];
}

/// One surface of `text_encode`: its arena rows, and where the forward writes its F32 rows.
struct surface_t {
    bool wanted = false;
    std::size_t rows = 0, columns = 0;
    uform_rows_t view{};
    std::size_t staging_offset = 0; // bytes into the staging block, when staged
};

} // namespace

uform_status_t text_encode(model_t const &model, call_t &call, tape_view_t<char> texts, encode_request_t request,
                           uform_encoded_t &encoded, uform_text_encode_stats_t &stats, char const **message) noexcept {
    geometry_t const &g = model.weights.geometry;
    std::size_t const count = texts.count;
    std::size_t const tokens = count ? texts.offsets[count] - texts.offsets[0] : 0;
    bool const direct = request.scalar == uform_scalar_f32_k; // F32 rows land in the arena as the forward writes them

    surface_t embeddings, states, vectors;
    embeddings.wanted = request.outputs & uform_outputs_embeddings_k;
    states.wanted = request.outputs & uform_outputs_states_k;
    vectors.wanted = request.outputs & uform_outputs_token_vectors_k;
    embeddings.rows = count, embeddings.columns = g.dimensions;
    states.rows = tokens, states.columns = g.hidden;
    vectors.rows = tokens, vectors.columns = g.token_width;

    uform_encoded_t result{};
    if (embeddings.wanted && !call.allocate_rows(result.embeddings, count, count, g.dimensions, request.scalar, false))
        return backend_fail(message, uform_status_out_of_memory_k, "out of memory for the embeddings");
    if (states.wanted) {
        if (!call.allocate_rows(result.states, tokens, count, g.hidden, request.scalar, true))
            return backend_fail(message, uform_status_out_of_memory_k, "out of memory for the states");
        fill_token_offsets(result.states, texts);
    }
    if (vectors.wanted) {
        if (!call.allocate_rows(result.token_vectors, tokens, count, g.token_width, request.scalar, true))
            return backend_fail(message, uform_status_out_of_memory_k, "out of memory for the token vectors");
        fill_token_offsets(result.token_vectors, texts);
    }
    embeddings.view = result.embeddings, states.view = result.states, vectors.view = result.token_vectors;

    // Staging for the F32 rows of every surface that lands in another scalar.
    std::size_t staging = 0;
    for (surface_t *surface : {&embeddings, &states, &vectors})
        if (surface->wanted && !direct) {
            surface->staging_offset = staging;
            staging += scratch_floats_bytes(surface->rows * surface->columns);
        }

    ram::text_batch_t const batch{reinterpret_cast<std::uint8_t const *>(texts.data), texts.offsets, count, false};
    ram::text_outputs_t outputs;
    auto place = [&](std::byte *block) noexcept {
        auto target = [&](surface_t const &surface, float *&data, std::size_t &stride) noexcept {
            if (!surface.wanted) return;
            if (direct) {
                data = static_cast<float *>(surface.view.data);
                stride = surface.view.stride / sizeof(float);
            } else {
                data = reinterpret_cast<float *>(block + surface.staging_offset);
                stride = surface.columns;
            }
        };
        target(embeddings, outputs.embeddings, outputs.embeddings_stride);
        target(states, outputs.states, outputs.states_stride);
        target(vectors, outputs.token_vectors, outputs.token_vectors_stride);
    };
    if (uform_status_t status = run_forward(model, call, batch, outputs, staging, place, message)) return status;

    if (!direct) {
        if (embeddings.wanted)
            convert_rows(call, outputs.embeddings, outputs.embeddings_stride, count, g.dimensions, result.embeddings);
        if (states.wanted) convert_rows(call, outputs.states, outputs.states_stride, tokens, g.hidden, result.states);
        if (vectors.wanted)
            convert_rows(call, outputs.token_vectors, outputs.token_vectors_stride, tokens, g.token_width,
                         result.token_vectors);
    }
    if (call.cancelled()) return backend_fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    stats.items = count;
    stats.tokens = tokens;
    encoded = result;
    return uform_status_ok_k;
}

uform_status_t text_choose(model_t const &model, call_t &call, tape_view_t<char> texts, tape_view_t<char> choices,
                           std::span<std::size_t const> groups, uform_tape_t &probabilities,
                           uform_text_choose_stats_t &stats, char const **message) noexcept {
    ram::model_weights_t const &weights = model.weights;
    std::size_t const count = texts.count;
    std::size_t const values = count ? choices.offsets[count] - choices.offsets[0] : 0;
    if (weights.byte_head.columns() == 0 || weights.temperatures.empty())
        return backend_fail(message, uform_status_unsupported_k, "the model has no byte head to score choices");

    uform_tape_t result{};
    if (!call.allocate_tape(result, values, count, uform_scalar_f32_k))
        return backend_fail(message, uform_status_out_of_memory_k, "out of memory for the probabilities");
    auto *offsets = const_cast<std::size_t *>(result.offsets);
    for (std::size_t i = 0; i <= count; ++i) offsets[i] = count ? choices.offsets[i] - choices.offsets[0] : 0;

    // The byte head's 256 logits at each item's CHOOSE token, in staging.
    constexpr std::size_t logits_stride = 256;
    ram::text_batch_t const batch{reinterpret_cast<std::uint8_t const *>(texts.data), texts.offsets, count, true};
    ram::text_outputs_t outputs;
    auto place = [&](std::byte *block) noexcept {
        outputs.choose_logits = reinterpret_cast<float *>(block);
        outputs.choose_logits_stride = logits_stride;
    };
    std::size_t const staging = scratch_floats_bytes(count * logits_stride);
    if (uform_status_t status = run_forward(model, call, batch, outputs, staging, place, message)) return status;

    // Each item's legal bytes: logits over the group's temperature, softmax over those bytes alone.
    auto *out = static_cast<float *>(result.data);
    call.parallel_for(count, [&](std::size_t i, std::size_t) noexcept {
        float const *logits = outputs.choose_logits + i * logits_stride;
        std::span<char const> const legal = choices.item(i);
        double const temperature = weights.temperatures[groups.empty() ? 0 : groups[i]];
        double peak = -INFINITY;
        for (char byte : legal) peak = std::max(peak, double(logits[static_cast<unsigned char>(byte)]) / temperature);
        double sum = 0;
        float *row = out + offsets[i];
        for (std::size_t j = 0; j != legal.size(); ++j) {
            double const scaled = double(logits[static_cast<unsigned char>(legal[j])]) / temperature;
            sum += std::exp(scaled - peak);
        }
        for (std::size_t j = 0; j != legal.size(); ++j) {
            double const scaled = double(logits[static_cast<unsigned char>(legal[j])]) / temperature;
            row[j] = float(std::exp(scaled - peak) / sum);
        }
    });
    if (call.cancelled()) return backend_fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    stats.items = count;
    stats.tokens = (count ? texts.offsets[count] - texts.offsets[0] : 0) + count;
    stats.choices = values;
    probabilities = result;
    return uform_status_ok_k;
}

} // namespace uform::backend
