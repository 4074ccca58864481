// The optimiser's learning-rate schedule, one definition for every trainer (the stand-in's and the RAM one), pinned
// to the PyTorch reference (tools/reference/train_optim.py, `Schedule.learning_rate`).
#ifndef UFORM_COMMON_SCHEDULE_HPP
#define UFORM_COMMON_SCHEDULE_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>

#include <uform/train.h>

namespace uform {

/// Step k's learning rate (from 0), in double: `lr (k + 1) / warmup` while `k < warmup`, `min` from step `steps` on,
/// else cosine from lr to min over `max(1, steps - warmup)` steps. `schedule` has its zeros resolved already.
inline double learning_rate(uform_schedule_t const &schedule, std::size_t k) noexcept {
    double const lr = schedule.learning_rate, lo = schedule.min_learning_rate;
    if (k < schedule.warmup_steps) return lr * double(k + 1) / double(schedule.warmup_steps);
    if (k >= schedule.steps) return lo;
    double const span = double(std::max<std::size_t>(1, schedule.steps - schedule.warmup_steps));
    return lo + (lr - lo) * (1 + std::cos(std::numbers::pi * double(k - schedule.warmup_steps) / span)) / 2;
}

} // namespace uform

#endif // UFORM_COMMON_SCHEDULE_HPP
