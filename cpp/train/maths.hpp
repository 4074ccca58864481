// The trainer's per-element and per-row maths, written once for both residencies: plain C++ that the CPU trainer
// compiles, and `__host__ __device__` functions that cuda/train/kernels.cu runs on the GPU. Products and sums are
// separate roundings (`mul`, `add`: no contraction into fused multiply-adds on either side), and fused ones are
// written as `fma`, so both residencies compute the same bits from the same inputs (under HIP, whose kernels compile
// with -ffp-contract=on, the plain expressions below are already single roundings).
#pragma once

#include <cmath>
#include <cstddef>

#if defined(__CUDACC__) || defined(__HIP__)
#define UFORM_HOST_DEVICE __host__ __device__
#else
#define UFORM_HOST_DEVICE
#endif

namespace uform::train::maths {

/// `a * b` rounded once, never fused with a neighbouring sum.
UFORM_HOST_DEVICE inline float mul(float a, float b) noexcept {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

/// `a + b` rounded once, never fused with a neighbouring product.
UFORM_HOST_DEVICE inline float add(float a, float b) noexcept {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

/// `a / b` rounded once (IEEE on both sides).
UFORM_HOST_DEVICE inline float divide(float a, float b) noexcept {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

/// `a * b + c` rounded once.
UFORM_HOST_DEVICE inline float fused(float a, float b, float c) noexcept {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}

/// `sqrt(x)` correctly rounded (on a CPU with Clang, the instruction, which sets no `errno`, so that loops vectorise).
UFORM_HOST_DEVICE inline float root(float x) noexcept {
#if defined(__CUDA_ARCH__)
    return __fsqrt_rn(x);
#elif defined(__clang__) && !defined(__HIP_DEVICE_COMPILE__)
    return __builtin_elementwise_sqrt(x);
#else
    return std::sqrt(x);
#endif
}

/// AdamW's per-step scalars in F32 (docs/model.md, torch.optim.AdamW foreach=False): the decoupled decay factor, one
/// minus each beta, beta2, eps, the signed bias-corrected rate and the root of the second correction.
struct adamw_scalars_t {
    float decay, keep1, beta2, keep2, eps, step, root2;
};

/// The scalars of step count `k + 1` at rate `lr`, decay `weight_decay` and the betas and eps given, the corrections
/// in double (host side).
inline adamw_scalars_t adamw_scalars(std::size_t k, double lr, double weight_decay, double beta1, double beta2,
                                     double eps) noexcept {
    double const t = double(k + 1);
    double const correction1 = 1 - std::pow(beta1, t), correction2 = 1 - std::pow(beta2, t);
    return {static_cast<float>(1 - lr * weight_decay),
            static_cast<float>(1 - beta1),
            static_cast<float>(beta2),
            static_cast<float>(1 - beta2),
            static_cast<float>(eps),
            static_cast<float>(-(lr / correction1)),
            static_cast<float>(std::sqrt(correction2))};
}

/// One element's update: its new master value and moments.
struct adamw_element_t {
    float theta, m, v;
};

/// AdamW on one element: decayed tensors `θ ← θ (1 − lr wd)` first, then torch's lerp and addcmul (fused
/// multiply-adds, as its vectorised kernels run them) and the bias-corrected step.
UFORM_HOST_DEVICE inline adamw_element_t adamw_element(adamw_scalars_t const &c, bool decays, float theta, float g,
                                                       float m0, float v0) noexcept {
    if (decays) theta = mul(theta, c.decay);
    float const m = fused(c.keep1, add(g, -m0), m0);
    float const v = fused(mul(c.keep2, g), g, mul(v0, c.beta2));
    float const denom = add(divide(root(v), c.root2), c.eps);
    return {add(theta, divide(mul(c.step, m), denom)), m, v};
}

/// SiLU-gate's backward of one element: from the gate `x`, the up value `y`, `sigmoid(x)` and `d` = dL/d(silu(x) y),
/// dL/dx into `d_gate` and dL/dy into `d_up`.
UFORM_HOST_DEVICE inline void silu_gate_backward(float x, float y, float sig, float d, float &d_gate,
                                                 float &d_up) noexcept {
    d_up = d * x * sig;
    d_gate = d * y * sig * (1.0f + x * (1.0f - sig));
}

/// RoPE's backward on one pair `(d[j], d[half + j])` with the token's cosine `c` and sine `s`: the inverse rotation.
UFORM_HOST_DEVICE inline void unrotate_pair(float low, float high, float c, float s, float &out_low,
                                            float &out_high) noexcept {
    out_low = low * c + high * s;
    out_high = high * c - low * s;
}

/// RMSNorm's backward of one element, given the row's `inverse` = 1 / rms and `c` = inverse^3 (dy . w x) / width:
/// dL/dx of `y = x inverse w`.
UFORM_HOST_DEVICE inline float rms_norm_backward(float x, float dy, float w, float inverse, float c) noexcept {
    return inverse * dy * w - x * c;
}

} // namespace uform::train::maths
