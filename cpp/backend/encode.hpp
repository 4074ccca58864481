// The part every encoding verb of the RAM residency shares: outputs in the arena, one reservation of the call's
// scratch for staging, the front-end's work and the forward's activations, the forward, and the conversion of F32
// rows into the scalar asked for.
#pragma once

#include "cpp/forward.hpp"
#include "cpp/backend/ram.hpp"

namespace uform::ram {

/// Fills the `prefix_bytes` of scratch at `prefix` (a front-end's work, its embedded tokens and positions) and
/// completes `batch` (`embedded`, `positions`); runs once the call's scratch is reserved. Answers a status.
using prepare_fn_t = uform_status_t (*)(void *context, std::byte *prefix, token_batch_t &batch,
                                        char const **message) noexcept;

/// One encoding call as the shared part sees it.
struct encode_job_t {
    /// The items: `offsets` count their tokens (and bytes, for text); the rest is completed by `prepare`.
    token_batch_t batch;
    /// Scratch bytes `prepare` needs, 64-byte aligned; zero for text.
    std::size_t prefix_bytes = 0;
    /// Nullable: text needs no preparation.
    prepare_fn_t prepare = nullptr;
    void *prepare_context = nullptr;
};

/// Encodes the job's items: the surfaces asked for land in the arena as `request.scalar` rows (rows tapes offset as
/// the batch's tokens), computed by one forward over the call's scratch. Fills `encoded` on success only.
uform_status_t encode_tokens(backend::model_t const &model, call_t &call, encode_job_t const &job,
                             backend::encode_request_t request, uform_encoded_t &encoded,
                             char const **message) noexcept;

/// Runs `batch` (texts, CHOOSE appended) for the byte head's logits at each CHOOSE token: `count x 256` F32 values
/// at `logits`, in the call's scratch, valid until the scratch is reserved again.
uform_status_t forward_choose_logits(backend::model_t const &model, call_t &call, token_batch_t const &batch,
                                     float *&logits, char const **message) noexcept;

} // namespace uform::ram
