// `workers_t` for WASI (wasm32-wasip1), which has no threads: a pool owns no workers, and the calling thread runs
// every index of a loop in turn as worker 0. The other builds use workers_forkunion.cpp or workers_std.cpp.
#if defined(__wasi__)

#include <new>

#include "c/workers.hpp"

namespace uform {

/// No owned threads: nothing to start, stop or idle.
struct workers_t {};

workers_t *workers_start(std::size_t, worker_start_t, void const *) noexcept { return new (std::nothrow) workers_t; }

void workers_stop(workers_t *workers) noexcept { delete workers; }

void workers_for_n(workers_t &, std::size_t count, parallel_body_t body, void *context) noexcept {
    for (std::size_t index = 0; index != count; ++index) body(context, index, 0);
}

void workers_idle(workers_t &, uform_mood_t) noexcept {}

} // namespace uform

#endif // defined(__wasi__)
