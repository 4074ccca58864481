// Temperature calibration of the choice groups (docs/model.md, "Training", Choices; docs/decisions.md, "Calibration"),
// as tools/reference/train_calibrate.py fits it: per group the T_g minimising its held-out items' cross-entropy.
#pragma once

#include <cstddef>

#include <uform/types.h>

namespace uform::train {

/// Held-out choice items: item i's legal bytes' logits at CHOOSE (temperature 1) and its targets are entries
/// `offsets[i] .. offsets[i + 1]` of `logits` and `targets`; `groups[i]` its temperature group.
struct calibration_items_t {
    /// Legal logits, F32.
    float const *logits = nullptr;
    /// Targets, one per legal logit.
    float const *targets = nullptr;
    /// One per item plus one.
    std::size_t const *offsets = nullptr;
    /// Each item's group, below the groups fitted.
    std::size_t const *groups = nullptr;
    /// Items.
    std::size_t items = 0;
};

/// Fits `temperatures[g]` for every group `g < groups` by bisecting the cross-entropy's derivative in log(1 / T) over
/// [ln 0.01, ln 100] in double (200 halvings; an end when the sign holds), answered as F32 in [0.01, 100]; a group
/// without items gets 1. A group id at or above `groups` is invalid-argument; else ok.
uform_status_t fit_temperatures(calibration_items_t const &items, std::size_t groups, float *temperatures,
                                char const **message) noexcept;

} // namespace uform::train
