// The text verbs of the RAM residency: `text_encode` and `text_choose` through cpp/forward's packed text forward,
// with every temporary in the call's scratch and every output in the call's arena (see encode.hpp).
#include <algorithm>
#include <cmath>

#include "cpp/backend/encode.hpp"
#include "cpp/backend/gpu.hpp"

namespace uform::backend {

uform_status_t text_encode(model_t const &model, call_t &call, tape_view_t<char> texts, encode_request_t request,
                           uform_encoded_t &encoded, uform_text_encode_stats_t &stats, char const **message) noexcept {
    ram::encode_job_t job;
    job.batch = {reinterpret_cast<std::uint8_t const *>(texts.data), texts.offsets, texts.count, false};
    if (uform_status_t status = ram::encode_tokens(model, call, job, request, encoded, message)) return status;
    stats.items = texts.count;
    stats.tokens = texts.count ? texts.offsets[texts.count] - texts.offsets[0] : 0;
    return uform_status_ok_k;
}

uform_status_t text_choose(model_t const &model, call_t &call, tape_view_t<char> texts, tape_view_t<char> choices,
                           std::span<std::size_t const> groups, uform_tape_t &probabilities,
                           uform_text_choose_stats_t &stats, char const **message) noexcept {
    ram::model_weights_t const &weights = model.weights;
    std::size_t const count = texts.count;
    std::size_t const values = count ? choices.offsets[count] - choices.offsets[0] : 0;
    if ((model.vram == nullptr && weights.byte_head.columns() == 0) || weights.temperatures.empty())
        return fail(message, uform_status_unsupported_k, "the model has no byte head to score choices");

    uform_tape_t result{};
    if (!call.allocate_tape(result, values, count, uform_scalar_f32_k))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the probabilities");
    auto *offsets = const_cast<std::size_t *>(result.offsets);
    auto *out = static_cast<float *>(result.data);

    // The byte head's 256 logits at each item's CHOOSE token. A VRAM model's land in host scratch, beside the
    // probabilities and offsets, which are copied into its device arena once computed.
    ram::token_batch_t const batch{reinterpret_cast<std::uint8_t const *>(texts.data), texts.offsets, count, true};
    float *logits = nullptr;
    if (model.vram != nullptr) {
        std::size_t const logits_bytes = ram::scratch_bytes(count * 256), values_bytes = ram::scratch_bytes(values);
        if (!call.reserve_scratch(0, logits_bytes + values_bytes + ram::scratch_bytes<std::size_t>(count + 1)))
            return fail(message, uform_status_out_of_memory_k, "out of memory for the call's scratch");
        auto *block = static_cast<std::byte *>(call.shared_scratch());
        logits = reinterpret_cast<float *>(block);
        out = reinterpret_cast<float *>(block + logits_bytes);
        offsets = reinterpret_cast<std::size_t *>(block + logits_bytes + values_bytes);
        if (uform_status_t status = gpu::forward_choose_logits(*model.vram, call, batch, logits, message))
            return status;
    } else if (uform_status_t status = ram::forward_choose_logits(model, call, batch, logits, message)) return status;
    offsets[0] = 0;
    for (std::size_t i = 1; i <= count; ++i) offsets[i] = choices.offsets[i] - choices.offsets[0];

    // Each item's legal bytes: logits over the group's temperature, softmax over those bytes alone.
    call.parallel_for(count, [&](std::size_t i, std::size_t) noexcept {
        float const *row = logits + i * 256;
        std::span<char const> const legal = choices.item(i);
        double const temperature = weights.temperatures[groups.empty() ? 0 : groups[i]];
        auto scaled = [&](char byte) noexcept { return double(row[static_cast<unsigned char>(byte)]) / temperature; };
        double peak = -INFINITY, sum = 0;
        for (char byte : legal) peak = std::max(peak, scaled(byte));
        for (char byte : legal) sum += std::exp(scaled(byte) - peak);
        for (std::size_t j = 0; j != legal.size(); ++j)
            out[offsets[i] + j] = float(std::exp(scaled(legal[j]) - peak) / sum);
    });
    if (model.vram != nullptr) {
        if (uform_status_t status = gpu::copy_to_arena(call, result.data, out, values * sizeof(float), message))
            return status;
        if (uform_status_t status = gpu::copy_to_arena(call, const_cast<std::size_t *>(result.offsets), offsets,
                                                       (count + 1) * sizeof(std::size_t), message))
            return status;
    }
    if (call.cancelled()) return fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    stats.items = count;
    stats.tokens = (count ? texts.offsets[count] - texts.offsets[0] : 0) + count;
    stats.choices = values;
    probabilities = result;
    return uform_status_ok_k;
}

} // namespace uform::backend
