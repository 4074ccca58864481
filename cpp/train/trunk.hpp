// The trainer's trunk: the forward of docs/model.md on the BF16 copies of the masters, keeping what its backward needs,
// and the backward of the whole model into the tensors' gradients (docs/decisions.md, "Training").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include <uform/types.h>

#include "cpp/parallel.hpp"
#include "cpp/train/parameters.hpp"

namespace uform::train {

/// One item's tokens. Text: `tokens` (bytes 0-255, 256 MASK, 257 CHOOSE; masked and with CHOOSE appended by the
/// caller). Image, video, audio: `patches`, `count` rows of the front-end's input width (normalised, as
/// cpp/backend/patches.hpp makes them), and `positions` (t, h, w) per token (null: text's (i, i, i), as audio).
struct segment_t {
    uform_modality_t modality = uform_modality_text_k;
    std::uint16_t const *tokens = nullptr;
    float const *patches = nullptr;
    std::uint32_t const *positions = nullptr;
    std::size_t count = 0;
};

/// A row of byte logits to compute: token `position` of item `item`.
struct logit_row_t {
    std::size_t item = 0, position = 0;
};

/// What one forward computes.
struct trunk_request_t {
    std::span<segment_t const> segments;
    std::span<std::uint8_t const> token_vectors; // per item: 1 = compute its token vectors; empty: none
    std::span<logit_row_t const> logit_rows;     // byte logits [rows x 256] at these tokens
};

/// The forward's outputs, owned by the trunk and valid until its next forward.
struct trunk_outputs_t {
    float const *z = nullptr;                          // [items x dimensions], unit rows; an empty item's zero
    float const *token_vectors = nullptr;              // [rows x token_width] of the flagged items, in item order
    std::size_t const *token_vector_offsets = nullptr; // [items + 1]: item i's rows (0 when not flagged)
    float const *logits = nullptr;                     // [logit rows x 256]
    std::size_t tokens = 0;                            // tokens of the whole request
};

/// A nullable stop hook, asked on the calling thread between units of work: true stops with `cancelled`.
struct poll_t {
    bool (*fn)(void *context) noexcept = nullptr;
    void *context = nullptr;
};

/// Checks `request` against the model before any work, for every residency: `invalid-argument` for a modality the
/// model lacks, a segment without its tokens or patches, a token above 257, a logit row outside its item;
/// `unsupported` for token vectors or byte logits without their head.
uform_status_t check_request(geometry_t const &geometry, trunk_request_t const &request, char const **message) noexcept;

struct trunk_state_t;

/// The training forward and backward. Owns its activations and scratch, grown to a high-water mark, so a steady
/// loop of same-shaped steps allocates nothing after the first.
class trunk_t {
  public:
    trunk_t() noexcept;
    ~trunk_t() noexcept;
    trunk_t(trunk_t const &) = delete;
    trunk_t &operator=(trunk_t const &) = delete;

    /// Runs the model over `request` on `parameters`' BF16 copies (after `parameters_refresh`), keeping each block's
    /// input for the backward. Answers `invalid-argument` for a token outside 0-257 or a modality the model lacks,
    /// `out-of-memory`, `cancelled`.
    uform_status_t forward(parameters_t const &parameters, trunk_request_t const &request,
                           ram::parallel_t const &parallel, poll_t poll, trunk_outputs_t &out,
                           char const **message) noexcept;

    /// Adds the gradient of every trained tensor but `trainer.*` into `parameters.tensors[..].grad` (the caller zeroes
    /// them) from the last forward, given dL/dz [items x dimensions], dL/d token vectors (laid out as the forward's)
    /// and dL/d logits [logit rows x 256]; each may be null for zero.
    uform_status_t backward(parameters_t &parameters, float const *d_z, float const *d_token_vectors,
                            float const *d_logits, ram::parallel_t const &parallel, poll_t poll,
                            char const **message) noexcept;

    /// Most bytes of block activations a forward keeps for the backward by default (docs/decisions.md, "The trunk's
    /// memory").
    static constexpr std::size_t kept_bytes_default = std::size_t(2) << 30;

    /// Bounds the block activations the next forwards keep: blocks past the bound share one slot and the backward
    /// recomputes them from their inputs, with the same bits. Tests lower it to run that path.
    void bound_kept_bytes(std::size_t bytes) noexcept { kept_bytes_ = bytes; }

    /// Adds each later pass's phases (cpp/train/phases.hpp: the products, attention, the backward) to `phases`, an
    /// array of `step_phase_t::count` seconds; null (the default) times nothing.
    void time_phases(double *phases) noexcept { phases_ = phases; }

  private:
    std::unique_ptr<trunk_state_t> state_;
    std::size_t kept_bytes_ = kept_bytes_default;
    double *phases_ = nullptr;
};

} // namespace uform::train
