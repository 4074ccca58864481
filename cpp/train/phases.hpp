// A profile of the trainer's step by phase: a nullable array the step adds each phase's process CPU time to, so that a
// bench can show where a step's time goes (tools/bench/train_bench.cpp --profile). Null costs one branch a phase.
#pragma once

#include <cstddef>

#include <time.h>

namespace uform::train {

/// The parts of a step a profile times apart. `forward` is the trunk's forward with the outputs' gathers, and
/// `forward_linears` and `forward_attention` its products (attention: both products per head, the softmax and the
/// rounding); `losses` every term with the gradients' zeroing; `backward` the trunk's backward, its `_linears` the
/// input and weight gradients' products (the gate and up recomputed included) and its `_attention` attention recomputed
/// and differentiated; `sums` the rest of the backward phase (the gradients' sums over a mesh); `clip` the gradient
/// norm and the scale, `adamw` the update with its finiteness check, `refresh` the masters' BF16 copies and panels.
enum class step_phase_t : unsigned char {
    forward,
    forward_linears,
    forward_attention,
    losses,
    backward,
    backward_linears,
    backward_attention,
    sums,
    clip,
    adamw,
    refresh,
    count
};

/// A phase's name in reports.
constexpr char const *step_phase_name(step_phase_t phase) noexcept {
    constexpr char const *names[] = {"forward",
                                     "forward_linears",
                                     "forward_attention",
                                     "losses",
                                     "backward",
                                     "backward_linears",
                                     "backward_attention",
                                     "sums",
                                     "clip",
                                     "adamw",
                                     "refresh"};
    return phase < step_phase_t::count ? names[static_cast<std::size_t>(phase)] : "unknown";
}

/// Seconds of CPU time of the whole process, every thread's. WASI has no process clock (wasi-libc's emulation reads
/// zero under Wasmtime); its one thread runs everything, so the monotonic clock stands in.
inline double process_cpu_seconds() noexcept {
    timespec now{};
#if defined(__wasi__)
    clock_gettime(CLOCK_MONOTONIC, &now);
#else
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
#endif
    return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

/// Adds the process CPU time since `start` to `phases[phase]` when `phases` is not null, and answers the time now (the
/// next phase's start; 0 when null).
inline double lap(double *phases, step_phase_t phase, double start) noexcept {
    if (!phases) return 0;
    double const now = process_cpu_seconds();
    phases[static_cast<std::size_t>(phase)] += now - start;
    return now;
}

/// Adds the process CPU time from its construction to its destruction to `phases[phase]`; nothing when null.
class phase_timer_t {
  public:
    phase_timer_t(double *phases, step_phase_t phase) noexcept
        : phases_(phases), phase_(phase), start_(phases ? process_cpu_seconds() : 0) {}
    ~phase_timer_t() noexcept {
        if (phases_) phases_[static_cast<std::size_t>(phase_)] += process_cpu_seconds() - start_;
    }
    phase_timer_t(phase_timer_t const &) = delete;
    phase_timer_t &operator=(phase_timer_t const &) = delete;

  private:
    double *phases_;
    step_phase_t phase_;
    double start_;
};

} // namespace uform::train
