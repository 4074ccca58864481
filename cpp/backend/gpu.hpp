// The seam between the RAM backend (cpp/backend/) and a GPU residency (cuda/). A VRAM model is a `backend::model_t`
// whose `vram` holds the GPU's trunk and heads, while its host half keeps what the host front-ends read (geometry,
// image/video/audio embedding linears, mel filters, choice temperatures); the media verbs decode and embed on the
// host as for RAM (their arrays in the arena's host pages, `call_t::allocate_host`), then hand the tokens to
// `encode_tokens` here, which runs the trunk on the device. Builds without a GPU residency link no_gpu.cpp, whose
// functions answer `unsupported`; `c/` never reaches them there, since `gpu_count` is zero.
#pragma once

#include <cstddef>
#include <span>

#include "common/backend.hpp"
#include "cpp/mapped_file.hpp"
#include "cpp/backend/encode.hpp"

namespace uform::gpu {

/// A model's trunk and heads on its devices; opaque outside the GPU residency.
struct model_t;

/// Loads the trunk and heads of the validated `checkpoint` onto `request.placement` (device ordinals, never empty) in
/// `request.quantization`, reading tensors from `file` (the whole checkpoint, fetched through `source` first when it
/// is non-null), reporting progress in bytes through `call`. Answers `weight_bytes`, the device bytes of one copy.
uform_status_t model_load(backend::model_load_t const &request, checkpoint_t const &checkpoint,
                          std::span<std::byte const> file, ram::mapped_file_t const *source, call_t &call,
                          model_t *&model, std::size_t &weight_bytes, char const **message) noexcept;

/// Frees a model's device memory once no call reads it.
void model_free(model_t *model) noexcept;

/// `ram::encode_tokens` for a VRAM model: prepares a media job's tokens on the host (`job.prepare` into the call's host
/// scratch), copies the tokens to the device once, runs the trunk there, and writes the surfaces asked for into the
/// call's VRAM arena as `request.scalar` rows.
uform_status_t encode_tokens(model_t const &model, call_t &call, ram::encode_job_t const &job,
                             backend::encode_request_t request, uform_encoded_t &encoded,
                             char const **message) noexcept;

/// `ram::forward_choose_logits` for a VRAM model: the byte head's `batch.count x 256` F32 logits at each CHOOSE token,
/// copied into `logits`, host memory of the caller's.
uform_status_t forward_choose_logits(model_t const &model, call_t &call, ram::token_batch_t const &batch, float *logits,
                                     char const **message) noexcept;

/// Copies `bytes` of host memory to `target`, device memory of the call's VRAM arena, before answering.
uform_status_t copy_to_arena(call_t &call, void *target, void const *source, std::size_t bytes,
                             char const **message) noexcept;

} // namespace uform::gpu
