// docs/model.md's optimiser (docs/decisions.md, "Optimiser and schedule"): the rate schedule, the gradient norm and its
// clipping, and torch.optim.AdamW's arithmetic (foreach=False), as tools/reference/train_optim.py runs them.
#pragma once

#include <cstddef>
#include <span>

#include <uform/train.h>

#include "common/schedule.hpp"
#include "cpp/parallel.hpp"

namespace uform::train {

/// One trained tensor as the optimiser sees it: its F32 master, gradient and moments, `count` values each.
struct adamw_view_t {
    /// The master weights, updated in place.
    float *master = nullptr;
    /// The gradient (clipped in place).
    float *grad = nullptr;
    /// Adam's first moment.
    float *moment1 = nullptr;
    /// Adam's second moment.
    float *moment2 = nullptr;
    /// Values in each array.
    std::size_t count = 0;
    /// Whether decoupled weight decay applies (every 2-D tensor but `embed.byte.weight`).
    bool decays = false;
};

/// AdamW's constants (docs/model.md).
struct adamw_t {
    /// First-moment decay.
    double beta1 = 0.9;
    /// Second-moment decay.
    double beta2 = 0.95;
    /// Added to the denominator.
    double eps = 1e-8;
};

/// Step k's learning rate: the one schedule every trainer follows (common/schedule.hpp).
using uform::learning_rate;

/// The L2 norm of all gradients: each tensor's squares summed in double, tensor by tensor in order.
double gradient_norm(std::span<adamw_view_t const> views) noexcept;

/// The clip factor `min(1, clip_norm / norm)` in double (1 for a zero norm).
double clip_factor(double norm, double clip_norm) noexcept;

/// Multiplies every gradient by the F32 of `factor` (nothing when it is 1).
void scale_gradients(std::span<adamw_view_t const> views, double factor, ram::parallel_t const &parallel) noexcept;

/// Whether `adamw_step` with the same arguments would leave every master value and moment finite; computes the same
/// values without writing any, so a step can be refused before anything changes.
bool adamw_stays_finite(std::span<adamw_view_t const> views, std::size_t k, double lr, double weight_decay,
                        adamw_t const &constants, ram::parallel_t const &parallel) noexcept;

/// One AdamW step, step count `t = k + 1`, at rate `lr`: decayed tensors `θ ← θ (1 − lr wd)` first, then the moments
/// and the bias-corrected update, torch's arithmetic in F32 with the corrections in double. Every element is
/// independent, so any thread count gives the same bits.
void adamw_step(std::span<adamw_view_t const> views, std::size_t k, double lr, double weight_decay,
                adamw_t const &constants, ram::parallel_t const &parallel) noexcept;

} // namespace uform::train
