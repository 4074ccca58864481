// The schedule, the gradient norm and clipping, and AdamW's step (train_optim.py, torch.optim.AdamW foreach=False).
#include "cpp/train/optimizer.hpp"

// torch rounds each product and sum of its AdamW separately: no contraction into fused multiply-adds here.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include <algorithm>
#include <atomic>
#include <cmath>

#include "cpp/train/maths.hpp"

namespace uform::train {
namespace {

/// Elements per parallel task of the element-wise loops.
constexpr std::size_t chunk = 1 << 16;

/// Runs `body(view, begin, end)` over every view's elements in chunks, through `parallel`.
template <typename body_t>
void for_chunks(std::span<adamw_view_t const> views, ram::parallel_t const &parallel, body_t &&body) noexcept {
    std::size_t tasks = 0;
    for (auto const &view : views) tasks += (view.count + chunk - 1) / chunk;
    parallel(tasks, [&](std::size_t task, std::size_t) {
        for (auto const &view : views) {
            std::size_t const here = (view.count + chunk - 1) / chunk;
            if (task < here) {
                body(view, task * chunk, std::min(view.count, (task + 1) * chunk));
                return;
            }
            task -= here;
        }
    });
}

} // namespace

double gradient_norm(std::span<adamw_view_t const> views) noexcept {
    double total = 0;
    for (auto const &view : views) {
        double sum = 0;
        for (std::size_t e = 0; e != view.count; ++e) sum += double(view.grad[e]) * double(view.grad[e]);
        total += sum;
    }
    return std::sqrt(total);
}

double clip_factor(double norm, double clip_norm) noexcept { return norm <= clip_norm ? 1.0 : clip_norm / norm; }

void scale_gradients(std::span<adamw_view_t const> views, double factor, ram::parallel_t const &parallel) noexcept {
    if (factor == 1.0) return;
    float const f = static_cast<float>(factor);
    for_chunks(views, parallel, [f](adamw_view_t const &view, std::size_t begin, std::size_t end) {
        for (std::size_t e = begin; e != end; ++e) view.grad[e] *= f;
    });
}

namespace {

using maths::adamw_element;
using maths::adamw_element_t;
using maths::adamw_scalars_t;

/// AdamW's per-step scalars in F32, from step `k`, rate `lr` and decay `weight_decay`.
adamw_scalars_t adamw_scalars(std::size_t k, double lr, double weight_decay, adamw_t const &constants) noexcept {
    return maths::adamw_scalars(k, lr, weight_decay, constants.beta1, constants.beta2, constants.eps);
}

/// AdamW over elements `begin` to `end` of `view`: with `apply`, the new masters and moments written; without, only
/// whether every one stays finite. Branch-free bodies, so that they vectorise.
template <bool apply>
[[gnu::always_inline]] inline bool adamw_elements(adamw_scalars_t const &c, adamw_view_t const &view, std::size_t begin,
                                                  std::size_t end) noexcept {
    float *__restrict master = view.master, *__restrict moment1 = view.moment1, *__restrict moment2 = view.moment2;
    float const *__restrict grad = view.grad;
    int finite = 1;
    for (std::size_t e = begin; e != end; ++e) {
        adamw_element_t const next = adamw_element(c, view.decays, master[e], grad[e], moment1[e], moment2[e]);
        if constexpr (apply) {
            moment1[e] = next.m;
            moment2[e] = next.v;
            master[e] = next.theta;
        } else finite &= int(std::isfinite(next.theta)) & int(std::isfinite(next.m)) & int(std::isfinite(next.v));
    }
    return finite != 0;
}

/// `adamw_elements` as the build's baseline compiles it.
template <bool apply>
bool adamw_baseline(adamw_scalars_t const &c, adamw_view_t const &view, std::size_t begin, std::size_t end) noexcept {
    return adamw_elements<apply>(c, view, begin, end);
}

#if defined(__x86_64__) && defined(__clang__)
/// `adamw_elements` with AVX2's vectors and the FMA instruction (the same roundings as the baseline's `fmaf`).
template <bool apply>
[[gnu::target("avx2,fma")]] bool adamw_avx2(adamw_scalars_t const &c, adamw_view_t const &view, std::size_t begin,
                                            std::size_t end) noexcept {
    return adamw_elements<apply>(c, view, begin, end);
}
#endif

/// The widest `adamw_elements` this CPU runs.
template <bool apply>
auto adamw_kernel() noexcept -> bool (*)(adamw_scalars_t const &, adamw_view_t const &, std::size_t, std::size_t) {
#if defined(__x86_64__) && defined(__clang__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &adamw_avx2<apply>;
#endif
    return &adamw_baseline<apply>;
}

} // namespace

bool adamw_stays_finite(std::span<adamw_view_t const> views, std::size_t k, double lr, double weight_decay,
                        adamw_t const &constants, ram::parallel_t const &parallel) noexcept {
    adamw_scalars_t const c = adamw_scalars(k, lr, weight_decay, constants);
    auto const kernel = adamw_kernel<false>();
    std::atomic<bool> finite{true};
    for_chunks(views, parallel, [&](adamw_view_t const &view, std::size_t begin, std::size_t end) {
        if (!kernel(c, view, begin, end)) finite.store(false, std::memory_order_relaxed);
    });
    return finite.load(std::memory_order_relaxed);
}

void adamw_step(std::span<adamw_view_t const> views, std::size_t k, double lr, double weight_decay,
                adamw_t const &constants, ram::parallel_t const &parallel) noexcept {
    adamw_scalars_t const c = adamw_scalars(k, lr, weight_decay, constants);
    auto const kernel = adamw_kernel<true>();
    for_chunks(views, parallel,
               [&](adamw_view_t const &view, std::size_t begin, std::size_t end) { kernel(c, view, begin, end); });
}

} // namespace uform::train
