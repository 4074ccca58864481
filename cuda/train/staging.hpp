// A training forward's inputs as the CUDA trainer's device trunk reads them, built on the host (no CUDA in here, so
// host tests check it): every item's tokens packed into one token matrix, each token's byte id (or none, for a media
// token), its three RoPE positions and its segment's bounds, the front-ends' rows and patches, the rows of the byte
// logits and of the token vectors. Vectors keep their capacity, so a steady loop allocates nothing after the first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <uform/types.h>

#include "cpp/train/parameters.hpp"
#include "cpp/train/trunk.hpp"

namespace uform::cuda::train {

/// The id of a media token's row: above the byte embedding's 258 rows, which the device kernels skip.
inline constexpr std::uint16_t media_token_k = 0xFFFF;

/// One request's packed inputs.
struct staged_request_t {
    std::size_t items = 0, tokens = 0;
    std::vector<std::uint16_t> ids;                        // [tokens]: bytes 0-255, MASK 256, CHOOSE 257, media
    std::vector<std::uint32_t> positions;                  // [tokens x 3]: (t, h, w); text's and audio's (i, i, i)
    std::vector<std::uint32_t> segment_begin, segment_end; // [tokens]: the token's item's rows
    std::vector<std::uint32_t> item_offsets;               // [items + 1]
    std::vector<std::uint32_t> media_rows[3];              // image, video, audio: their tokens' rows in order
    std::vector<float> media_patches[3];                   // their patch rows, as given (the device rounds them)
    std::size_t media_width[3] = {0, 0, 0};                // each front-end's input width
    std::vector<std::uint32_t> logit_rows;                 // the byte logits' token rows, in request order
    std::vector<std::uint32_t> vector_rows;                // the flagged items' token rows, in item order
    std::vector<std::size_t> vector_offsets;               // [items + 1]: item i's token vectors (0 unflagged)
};

/// The index (0 image, 1 video, 2 audio) of a media modality's front-end.
std::size_t media_index(uform_modality_t modality) noexcept;

/// Packs `request` (checked first with `uform::train::check_request`) into `out`. Answers the check's statuses,
/// `limit-exceeded` past 2^31 tokens, `out-of-memory`.
uform_status_t stage_request(uform::train::parameters_t const &parameters, uform::train::trunk_request_t const &request,
                             staged_request_t &out, char const **message) noexcept;

} // namespace uform::cuda::train
