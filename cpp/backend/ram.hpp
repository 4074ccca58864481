// What the RAM backend's files share: the model as `c/` holds it, and the bridges from `call_t` to the compute
// core's hooks (its parallel loop, its progress).
#pragma once

#include <cstddef>
#include <vector>

#include "common/backend.hpp"
#include "common/fail.hpp"
#include "cpp/kernels/gemm.hpp"
#include "cpp/media/fft.hpp"
#include "cpp/parallel.hpp"
#include "cpp/weights.hpp"

namespace uform::gpu {
struct model_t; // cpp/backend/gpu.hpp
} // namespace uform::gpu

namespace uform::backend {

/// A front-end's embedding linear: `embed.<modality>.weight` packed for the GEMM, and its bias in F32.
struct front_end_t {
    ram::packed_matrix_t weight; // hidden x input; no columns when the checkpoint lacks the modality
    std::vector<float> bias;     // [hidden]
};

/// A loaded model: the trunk and heads (cpp/weights), and the front-ends the media encoders use. A VRAM model's trunk
/// and heads live on its devices (`vram`); its `weights` then hold only the geometry, the host kernels its front-ends
/// multiply with and the choice temperatures (cpp/backend/gpu.hpp).
struct model_t {
    gpu::model_t *vram = nullptr; // a VRAM model's trunk and heads, else null
    ram::model_weights_t weights;
    front_end_t image, video, audio;
    std::vector<float> mel_filters; // [mel_bins x (n_fft / 2 + 1)], F32 as the checkpoint holds them
    std::vector<float> hann;        // [n_fft]: the periodic Hann window
    mutable media::fft_pool_t ffts; // the log-mel's FFTs, lent to calls
};

} // namespace uform::backend

namespace uform::ram {

/// The compute core's `parallel_t` over a call's `parallel_for`: its workers are the call's.
inline parallel_t parallel_of(call_t &call) noexcept {
    parallel_t parallel;
    parallel.threads = call.width();
    parallel.context = &call;
    parallel.for_n = [](void *context, std::size_t count, void *fn_context, task_fn_t fn) noexcept {
        static_cast<call_t *>(context)->parallel_for_raw(count, fn, fn_context);
    };
    return parallel;
}

/// A progress hook of the compute core reporting through a call: answers true once the call must stop.
inline bool report_to_call(void *context, std::size_t completed, std::size_t total) noexcept {
    return static_cast<call_t *>(context)->report(completed, total);
}

/// A poll hook of the compute core asking a call's handler again: answers true once the call must stop.
inline bool poll_call(void *context, std::size_t completed, std::size_t total) noexcept {
    return static_cast<call_t *>(context)->poll(completed, total);
}

/// Bytes `count` values of `value_type_` take in scratch, rounded up to a cache line.
template <typename value_type_ = float>
constexpr std::size_t scratch_bytes(std::size_t count) noexcept {
    return (count * sizeof(value_type_) + 63) / 64 * 64;
}

} // namespace uform::ram
