// docs/model.md's masking of a text (docs/decisions.md, "Masking"), drawn exactly as train_batch.sample_mask does, so
// the C++ trainer and the PyTorch reference mask the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <uform/types.h>

namespace uform::train {

/// The input token of a masked position that shows MASK.
inline constexpr std::uint16_t mask_token = 256;

/// One text's masked positions, ascending, and the token each feeds the forward (MASK, a random byte, or the
/// original byte); the targets are the text's bytes at `positions`.
struct mask_t {
    /// Chosen positions, ascending.
    std::vector<std::size_t> positions;
    /// The input token per position: `mask_token` or a byte.
    std::vector<std::uint16_t> tokens;
    /// Which bytes the spans chose, kept between texts so that a steady loop allocates nothing.
    std::vector<char> chosen;
};

/// Masks `text` from the stream (seed, "mask/{step}/{item}"): `max(1, floor(ratio * n))` positions in spans of
/// geometric length with mean `mean_span`, then per position MASK (0.8), a random byte (0.1) or the byte (0.1). An
/// empty text has no positions. `ratio` must be in (0, 1] and `mean_span` finite and at least 1, else
/// invalid-argument; out-of-memory; else ok.
uform_status_t sample_mask(std::uint64_t seed, std::size_t step, std::size_t item, std::string_view text, float ratio,
                           float mean_span, mask_t &mask, char const **message) noexcept;

} // namespace uform::train
