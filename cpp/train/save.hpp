// Saving a trainer: docs/model.md's checkpoint of its parameters (BF16 weights, the F32 mel filters and fitted
// temperatures, the `trainer.*` scalars as F32 [1]) and the step it reached, written atomically.
#pragma once

#include <cstddef>

#include <uform/types.h>

#include "common/checkpoint.hpp"
#include "cpp/train/parameters.hpp"

namespace uform::train {

/// Name of the F32 [1] tensor that records how many optimiser steps the saved weights took, so that a trainer started
/// from the checkpoint continues the schedule where it stopped.
inline constexpr char const step_tensor_name_k[] = "trainer.step";

/// Writes `parameters` as a checkpoint (docs/model.md) to `path` (the OS's bytes), through a temporary file renamed
/// into place: the masters rounded to BF16 (nearest even), the mel filters and temperatures in F32, each `trainer.*`
/// scalar and `steps` (as `trainer.step`) as F32 [1]. Answers `io` when the file cannot be written.
uform_status_t save_checkpoint(parameters_t const &parameters, std::size_t steps, char const *path,
                               std::size_t path_length, char const **message) noexcept;

/// The optimiser steps a checkpoint's weights took: its `trainer.step` (zero when absent, as in a checkpoint not
/// written by a trainer). `corrupt` for a value that is not a whole number of steps, `io` when the file fails.
uform_status_t saved_steps(char const *path, std::size_t path_length, checkpoint_t const &checkpoint,
                           std::size_t &steps, char const **message) noexcept;

} // namespace uform::train
