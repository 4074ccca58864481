// The CUDA trainer's staged inputs (cuda/train/staging.hpp), on the host, in a CUDA build (the include below marks
// the test as the CUDA residency's; it needs no device): the golden mixed batch of tests/data/train (texts with masks
// and choices, an image, a video, an audio) packed as the device trunk reads it, each field against what the CPU
// trunk reads from the same segments (cpp/train/trunk.cpp): byte ids and media markers, RoPE positions (given, or
// (i, i, i)), segment bounds, item offsets, the front-ends' rows and patches, the byte-logit rows, the token-vector
// rows; a second, smaller request reuses the buffers; and the refusals the CPU trunk answers, before any device work.
//
// Run from the repository root (or with UFORM_TEST_DATA naming tests/data).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/checkpoint.hpp"
#include "cuda/train/staging.hpp"
#include "tests/unit/train_goldens.hpp"

namespace {

int failures = 0;

void check(bool ok, std::string const &what) {
    if (!ok) {
        ++failures;
        std::printf("FAIL %s\n", what.c_str());
    }
}

/// Checks every field of `st` against `request`'s segments, item by item.
void check_staged(uform::train::trunk_request_t const &request, uform::cuda::train::staged_request_t const &st,
                  std::size_t const media_width[3]) {
    namespace ct = uform::cuda::train;
    std::size_t row = 0, media[3] = {0, 0, 0}, vectors = 0;
    check(st.items == request.segments.size(), "the items");
    for (std::size_t i = 0; i != request.segments.size(); ++i) {
        uform::train::segment_t const &s = request.segments[i];
        bool const text = s.modality == uform_modality_text_k, flagged = request.token_vectors[i] != 0;
        std::string const item = "item " + std::to_string(i);
        check(st.item_offsets[i] == row && st.vector_offsets[i] == vectors, item + ": its offsets");
        std::size_t const m = text ? 0 : ct::media_index(s.modality);
        for (std::size_t t = 0; t != s.count; ++t, ++row) {
            check(st.ids[row] == (text ? s.tokens[t] : ct::media_token_k), item + ": a token's id");
            for (std::size_t axis = 0; axis != 3; ++axis)
                check(st.positions[3 * row + axis] == (s.positions ? s.positions[3 * t + axis] : t),
                      item + ": a token's position");
            check(st.segment_begin[row] == st.item_offsets[i] && st.segment_end[row] == st.item_offsets[i] + s.count,
                  item + ": a token's segment");
            if (flagged) check(st.vector_rows[vectors++] == row, item + ": a token-vector row");
            if (text) continue;
            check(st.media_rows[m][media[m]] == row, item + ": a front-end row");
            for (std::size_t j = 0; j != media_width[m]; ++j)
                check(st.media_patches[m][media[m] * media_width[m] + j] == s.patches[t * media_width[m] + j],
                      item + ": a patch value");
            ++media[m];
        }
    }
    check(st.tokens == row && st.item_offsets.back() == row && st.vector_offsets.back() == vectors &&
              st.vector_rows.size() == vectors,
          "the totals");
    for (std::size_t m = 0; m != 3; ++m)
        check(st.media_rows[m].size() == media[m] && st.media_patches[m].size() == media[m] * media_width[m],
              "front-end " + std::to_string(m) + "'s rows");
    check(st.logit_rows.size() == request.logit_rows.size(), "the logit rows");
    for (std::size_t r = 0; r != request.logit_rows.size(); ++r)
        check(st.logit_rows[r] == st.item_offsets[request.logit_rows[r].item] + request.logit_rows[r].position,
              "a logit row");
}

} // namespace

int main() {
    goldens::json_t const batch = goldens::batch();
    auto const t = goldens::read_safetensors(goldens::directory() + "/train.safetensors");
    goldens::batch_t const data = goldens::golden_batch(batch, t);
    std::string const path = goldens::directory() + "/../tiny.safetensors";
    char const *message = nullptr;
    uform::checkpoint_t checkpoint;
    uform::train::parameters_t p;
    if (uform::checkpoint_read_file(path.data(), path.size(), checkpoint, &message) ||
        uform::train::parameters_load(path.data(), path.size(), checkpoint, uform_pair_loss_form_info_nce_k, p,
                                      &message)) {
        std::printf("cannot load %s: %s\n", path.c_str(), message);
        return 1;
    }
    std::size_t widths[3] = {0, 0, 0};
    char const *names[3] = {"embed.image.weight", "embed.video.weight", "embed.audio.weight"};
    for (std::size_t m = 0; m != 3; ++m)
        if (auto const *w = p.find(names[m])) widths[m] = w->shape[1];

    // The golden batch: every item's tokens, the masked rows and each choice item's CHOOSE as logit rows, token
    // vectors for the late-interaction sides.
    std::vector<uform::train::logit_row_t> rows = data.mask_rows;
    std::vector<std::uint8_t> flags;
    for (std::size_t i = 0; i != data.segments.size(); ++i) {
        if (data.choice_offsets[i + 1] != data.choice_offsets[i]) rows.push_back({i, data.segments[i].count - 1});
        flags.push_back(data.sides[i] != uform_late_interaction_side_none_k);
    }
    uform::train::trunk_request_t request{data.segments, flags, rows};
    uform::cuda::train::staged_request_t staged;
    check(uform::cuda::train::stage_request(p, request, staged, &message) == uform_status_ok_k, "the batch stages");
    check_staged(request, staged, widths);
    std::size_t media = 0;
    for (auto const &r : staged.media_rows) media += r.empty() ? 0 : 1;
    check(media == 3, "the batch has an image, a video and an audio");

    // A smaller request into the same buffers: the first two items, no heads.
    uform::train::trunk_request_t const small{{data.segments.data(), 2}, {}, {}};
    std::vector<std::uint8_t> const none(2, 0);
    check(uform::cuda::train::stage_request(p, small, staged, &message) == uform_status_ok_k, "a smaller request");
    check_staged({small.segments, none, {}}, staged, widths);

    // The CPU trunk's refusals.
    std::uint16_t const high[2] = {'a', 258};
    uform::train::segment_t const bad{uform_modality_text_k, high, nullptr, nullptr, 2};
    check(uform::cuda::train::stage_request(p, {{&bad, 1}, {}, {}}, staged, &message) ==
              uform_status_invalid_argument_k,
          "a token above 257 is refused");
    uform::train::logit_row_t const outside{0, 2};
    std::uint16_t const two[2] = {'a', 'b'};
    uform::train::segment_t const text{uform_modality_text_k, two, nullptr, nullptr, 2};
    check(uform::cuda::train::stage_request(p, {{&text, 1}, {}, {&outside, 1}}, staged, &message) ==
              uform_status_invalid_argument_k,
          "a logit row outside its item is refused");
    uform::train::segment_t const missing{uform_modality_image_k, nullptr, nullptr, nullptr, 3};
    check(uform::cuda::train::stage_request(p, {{&missing, 1}, {}, {}}, staged, &message) ==
              uform_status_invalid_argument_k,
          "an image without its patches is refused");
    if (failures) std::printf("%d failures\n", failures);
    else std::printf("vram_train_staging: the golden batch staged as the CPU trunk reads it\n");
    return failures ? 1 : 0;
}
