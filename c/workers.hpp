// The threads that run a call's parallel loops beside the thread running the call: one small interface,
// implemented over ForkUnion 3 in the RAM build (workers_forkunion.cpp) and over the C++ standard library in
// the stub (workers_std.cpp), chosen at build time by `UFORM_WITH_STUB`; WASI, without threads, owns none and runs
// loops on the calling thread (workers_serial.cpp). See docs/decisions.md, "Executors".
//
// Worker 0 is whichever thread dispatches a loop; workers 1 up to `threads` are owned. One thread dispatches at
// a time (the one holding the executor), and never from inside a loop body.
#ifndef UFORM_C_WORKERS_HPP
#define UFORM_C_WORKERS_HPP

#include <cstddef>

#include <uform/uform.h>

#include "common/call.hpp"

namespace uform {

/// Owned worker threads, opaque outside their implementation.
struct workers_t;

/// Runs first on every owned worker, before any loop: `start(context, worker)`, `worker` from 1.
using worker_start_t = void (*)(void const *context, std::size_t worker);

/// Starts `threads` workers (at least one), each running `start` before its first loop, idle in the
/// sleeping mood; answers `nullptr` when memory ran out or the OS refused a thread.
workers_t *workers_start(std::size_t threads, worker_start_t start, void const *context) noexcept;

/// Joins the workers and frees them; no loop may be in flight. Ignores `nullptr`.
void workers_stop(workers_t *workers) noexcept;

/// Runs `body(context, index, worker)` for every `index` below `count` across the owned workers and the
/// calling thread (worker 0), returning when all are done. Allocates nothing.
void workers_for_n(workers_t &workers, std::size_t count, parallel_body_t body, void *context) noexcept;

/// What idle workers do until the next loop: spin, or sleep. Called by the dispatching side only.
void workers_idle(workers_t &workers, uform_mood_t mood) noexcept;

} // namespace uform

#endif // UFORM_C_WORKERS_HPP
