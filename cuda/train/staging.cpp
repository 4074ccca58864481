// The device trunk's inputs packed on the host: the same rows, positions and segments the CPU trunk builds
// (cpp/train/trunk.cpp), laid out for the kernels of cuda/kernels.hpp and cuda/train/kernels.hpp.
#include "cuda/train/staging.hpp"

#include <algorithm>
#include <new>
#include <string_view>

#include "common/fail.hpp"

namespace uform::cuda::train {
namespace {

/// The front-end weight of media index `m`.
std::string_view media_weight(std::size_t m) noexcept {
    return m == 0 ? "embed.image.weight" : m == 1 ? "embed.video.weight" : "embed.audio.weight";
}

/// Item `i`'s rows: ids, positions, segment bounds, and its front-end's rows and patches for media.
void stage_item(uform::train::segment_t const &segment, std::size_t begin, staged_request_t &out) {
    std::size_t const end = begin + segment.count;
    bool const text = segment.modality == uform_modality_text_k;
    for (std::size_t t = 0; t != segment.count; ++t) {
        std::size_t const row = begin + t;
        out.ids[row] = text ? segment.tokens[t] : media_token_k;
        for (std::size_t axis = 0; axis != 3; ++axis)
            out.positions[3 * row + axis] =
                segment.positions != nullptr ? segment.positions[3 * t + axis] : std::uint32_t(t);
        out.segment_begin[row] = std::uint32_t(begin);
        out.segment_end[row] = std::uint32_t(end);
    }
    if (text) return;
    std::size_t const m = media_index(segment.modality), width = out.media_width[m];
    for (std::size_t t = 0; t != segment.count; ++t) out.media_rows[m].push_back(std::uint32_t(begin + t));
    out.media_patches[m].insert(out.media_patches[m].end(), segment.patches, segment.patches + segment.count * width);
}

} // namespace

std::size_t media_index(uform_modality_t modality) noexcept {
    return modality == uform_modality_image_k ? 0 : modality == uform_modality_video_k ? 1 : 2;
}

uform_status_t stage_request(uform::train::parameters_t const &parameters, uform::train::trunk_request_t const &request,
                             staged_request_t &out, char const **message) noexcept {
    if (uform_status_t status = uform::train::check_request(parameters.geometry, request, message)) return status;
    std::size_t const items = request.segments.size();
    std::size_t tokens = 0;
    for (uform::train::segment_t const &segment : request.segments) tokens += segment.count;
    if (tokens >= (std::size_t(1) << 31))
        return fail(message, uform_status_limit_exceeded_k, "a step on a GPU takes fewer than 2^31 tokens");
    try {
        out.items = items, out.tokens = tokens;
        out.ids.resize(tokens), out.positions.resize(3 * tokens);
        out.segment_begin.resize(tokens), out.segment_end.resize(tokens);
        out.item_offsets.assign(items + 1, 0);
        out.vector_offsets.assign(items + 1, 0);
        out.vector_rows.clear(), out.logit_rows.clear();
        for (std::size_t m = 0; m != 3; ++m) {
            out.media_rows[m].clear(), out.media_patches[m].clear();
            uform::train::tensor_t const *w = parameters.find(media_weight(m));
            out.media_width[m] = w != nullptr ? w->shape[1] : 0;
        }
        for (std::size_t i = 0; i != items; ++i) {
            uform::train::segment_t const &segment = request.segments[i];
            std::size_t const begin = out.item_offsets[i];
            out.item_offsets[i + 1] = std::uint32_t(begin + segment.count);
            stage_item(segment, begin, out);
            bool const flagged = i < request.token_vectors.size() && request.token_vectors[i] != 0;
            out.vector_offsets[i + 1] = out.vector_offsets[i] + (flagged ? segment.count : 0);
            for (std::size_t t = 0; t != (flagged ? segment.count : 0); ++t)
                out.vector_rows.push_back(std::uint32_t(begin + t));
        }
        for (uform::train::logit_row_t const &r : request.logit_rows)
            out.logit_rows.push_back(std::uint32_t(out.item_offsets[r.item] + r.position));
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step's inputs");
    }
    return uform_status_ok_k;
}

} // namespace uform::cuda::train
