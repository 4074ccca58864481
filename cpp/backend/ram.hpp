// What the RAM backend's files share: the model as `c/` holds it, and the bridges from `call_t` to the compute
// core's hooks (its parallel loop, its progress, its activation scratch).
#pragma once

#include <atomic>
#include <cstddef>

#include "../../c/backend.hpp"
#include "../parallel.hpp"
#include "../scratch.hpp"
#include "../weights.hpp"

namespace uform::backend {

/// A loaded RAM model: its packed weights, and a hint of the activation scratch its calls need.
struct model_t {
    ram::model_weights_t weights;
    /// The most activation scratch a call of this model asked for so far: the first reservation of the next call,
    /// so that a steady loop reserves once (see `ram::forward_scratch_t`).
    mutable std::atomic<std::size_t> scratch_hint{0};
};

} // namespace uform::backend

namespace uform::ram {

/// Writes `text` through a nullable message out-pointer and answers `status`.
inline uform_status_t backend_fail(char const **message, uform_status_t status, char const *text) noexcept {
    if (message != nullptr) *message = text;
    return status;
}

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

/// Bytes `count` floats take in scratch, rounded up to a cache line.
inline constexpr std::size_t scratch_floats_bytes(std::size_t count) noexcept {
    return (count * sizeof(float) + 63) / 64 * 64;
}

} // namespace uform::ram
