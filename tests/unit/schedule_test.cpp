// `uform::learning_rate` (common/schedule.hpp), the one schedule of every trainer, at the points where it turns:
// step 0, the last warm-up step, the end of the warm-up, the middle of the decay, steps - 1, steps and past it, and
// the edge configurations (no warm-up, a warm-up as long as the schedule), against values worked out by hand from
// docs/model.md's schedule (tools/reference/train_optim.py computes the same).
//
// Prints "N passed, M failed" and exits nonzero on a failure. Runs in every build (the header needs no residency).
#include <cmath>
#include <cstdio>
#include <numbers>

#include <uform/train.h>

#include "common/schedule.hpp"

namespace {

int passed = 0, failed = 0;

void check(bool ok, char const *what, double got, double expected) {
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    std::printf("FAILED: %s: %.17g, expected %.17g\n", what, got, expected);
}

/// Checks `got` within a relative 1e-12 of `expected`.
void near(double got, double expected, char const *what) {
    check(std::fabs(got - expected) <= 1e-12 * std::fabs(expected), what, got, expected);
}

uform_schedule_t schedule_of(std::size_t steps, std::size_t warmup, float lr, float lo) {
    uform_schedule_t s{};
    s.steps = steps;
    s.warmup_steps = warmup;
    s.learning_rate = lr;
    s.min_learning_rate = lo;
    return s;
}

} // namespace

int main() {
    // lr 1e-3 to 1e-5 over 10 steps, 2 of them warm-up: the decay spans 8 steps, from step 2 to step 9.
    uform_schedule_t const s = schedule_of(10, 2, 1e-3f, 1e-5f);
    double const lr = double(1e-3f), lo = double(1e-5f);
    near(uform::learning_rate(s, 0), lr / 2, "step 0: lr * 1 / warmup");
    near(uform::learning_rate(s, 1), lr, "the last warm-up step: lr");
    near(uform::learning_rate(s, 2), lr, "the end of the warm-up: the cosine's start, lr");
    near(uform::learning_rate(s, 6), (lr + lo) / 2, "the middle of the decay: halfway between lr and min");
    near(uform::learning_rate(s, 9), lo + (lr - lo) * (1 + std::cos(std::numbers::pi * 7 / 8)) / 2,
         "steps - 1: 7/8 of the way");
    check(uform::learning_rate(s, 10) == lo, "steps: min exactly", uform::learning_rate(s, 10), lo);
    check(uform::learning_rate(s, 15) == lo, "steps + 5: min exactly", uform::learning_rate(s, 15), lo);
    // The rate never rises after the warm-up and never leaves [min, lr].
    bool monotone = true;
    for (std::size_t k = 2; k != 16; ++k)
        monotone = monotone && uform::learning_rate(s, k + 1) <= uform::learning_rate(s, k) &&
                   uform::learning_rate(s, k) >= lo && uform::learning_rate(s, k) <= lr;
    check(monotone, "after the warm-up: falling, within [min, lr]", 0, 0);

    // No warm-up: step 0 is the cosine's start.
    uform_schedule_t const cold = schedule_of(4, 0, 1e-2f, 1e-4f);
    near(uform::learning_rate(cold, 0), double(1e-2f), "no warm-up: step 0 is lr");
    near(uform::learning_rate(cold, 2), (double(1e-2f) + double(1e-4f)) / 2, "no warm-up: the middle");
    check(uform::learning_rate(cold, 4) == double(1e-4f), "no warm-up: min at steps", uform::learning_rate(cold, 4),
          double(1e-4f));

    // A warm-up as long as the schedule: the ramp, then min.
    uform_schedule_t const ramp = schedule_of(3, 3, 1e-3f, 1e-5f);
    near(uform::learning_rate(ramp, 2), lr, "all warm-up: the last step is lr");
    check(uform::learning_rate(ramp, 3) == lo, "all warm-up: min at steps", uform::learning_rate(ramp, 3), lo);

    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
