/**
 * @file checkpoint_fuzz.cpp
 * @brief libFuzzer target of the checkpoint reader: the input as a whole file, then as a header alone.
 *
 * Besides crashes and sanitizer reports, it aborts when a result breaks the reader's promises: a failure
 * without a static "checkpoint: " message or with a status the reader never answers, or a success whose
 * tensors leave the file, overlap, disagree with their byte spans, or cannot be found by name.
 * Build and run: tests/fuzz/run.sh checkpoint SECONDS
 */
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "common/checkpoint.hpp"

namespace {

/** @brief Aborts, so that libFuzzer keeps the input, unless `condition` holds. */
void require(bool condition) {
    if (!condition) std::abort();
}

/** @brief Checks a status, its message and, on success, the invariants of the checkpoint. */
void check(uform_status_t status, char const *message, uform::checkpoint_t const &c, std::uint64_t file_size) {
    if (status != uform_status_ok_k) {
        require(status == uform_status_corrupt_k || status == uform_status_unsupported_k ||
                status == uform_status_shape_mismatch_k || status == uform_status_out_of_memory_k);
        require(message != nullptr && std::string_view(message).starts_with("checkpoint: "));
        return;
    }
    require(c.file_size == file_size && c.data_offset >= 9 && c.data_offset <= file_size);
    std::uint64_t const data_size = file_size - c.data_offset;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
    for (uform::tensor_entry_t const &t : c.tensors) {
        require(c.find(t.name) == &t);
        require(t.begin <= t.end && t.end <= data_size);
        std::uint64_t bytes = uform::dtype_size(t.dtype);
        for (std::size_t d : t.shape) bytes *= d; // cannot overflow: the reader checked it
        require(t.end - t.begin == bytes);
        spans.emplace_back(t.begin, t.end);
    }
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) require(spans[i - 1].second <= spans[i].first);
    uform::geometry_t const &g = c.geometry;
    require(g.version == 1 && g.depth >= 1 && g.hidden >= 1 && g.heads >= 1 && g.head_dim % 2 == 0);
    require(g.rope_sections[0] + g.rope_sections[1] + g.rope_sections[2] == g.head_dim / 2);
    require(g.has_token_head == (g.token_width != 0) && (g.has_byte_head || g.choice_groups == 0));
    require(c.find("embed.byte.weight") && c.find("final_norm.weight") && c.find("head.embedding.weight"));
    require(g.has_image == (c.find("embed.image.weight") != nullptr));
    require(g.has_audio == (c.find("frontend.audio.mel_filters") != nullptr));
}

} // namespace

/** @brief One input: `checkpoint_read_buffer` over it, then `checkpoint_parse` of it as a header. */
extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const *data, std::size_t size) {
    uform::checkpoint_t whole{};
    char const *message = nullptr;
    uform_status_t status = uform::checkpoint_read_buffer(data, size, whole, &message);
    check(status, message, whole, size);

    // The header alone in a file large enough for any offsets, to reach the validation behind them.
    uform::checkpoint_t header{};
    message = nullptr;
    std::uint64_t const file_size = 8 + std::uint64_t(size) + (std::uint64_t(1) << 40);
    status = uform::checkpoint_parse(std::string_view(reinterpret_cast<char const *>(data), size), file_size, header,
                                     &message);
    check(status, message, header, file_size);
    return 0;
}
