// The thread-pool hook the compute core runs its parallel loops through.
#pragma once

#include <cstddef>

namespace uform::ram {

/// One parallel loop body: called once per task index, with the index of the thread running it.
using task_fn_t = void (*)(void *context, std::size_t task, std::size_t thread) noexcept;

/// A `parallel_for(count, fn)` the executor provides; the default runs every task on the calling thread.
struct parallel_t {
    /// Threads that may run tasks at once (the caller's included); task bodies see `thread < threads`.
    std::size_t threads = 1;
    /// Passed to `for_n` untouched.
    void *context = nullptr;
    /// Runs `fn(fn_context, task, thread)` for every `task < count` and returns when all are done.
    /// Null runs the tasks in order on the calling thread, as thread 0.
    void (*for_n)(void *context, std::size_t count, void *fn_context, task_fn_t fn) noexcept = nullptr;

    /// Runs `body(task, thread)` for every task below `count`, through `for_n` when there is one.
    template <typename body_t>
    void operator()(std::size_t count, body_t &&body) const noexcept {
        if (count == 0) return;
        auto trampoline = [](void *fn_context, std::size_t task, std::size_t thread) noexcept {
            (*static_cast<body_t *>(fn_context))(task, thread);
        };
        if (for_n == nullptr || threads <= 1 || count == 1)
            for (std::size_t task = 0; task != count; ++task) body(task, 0);
        else for_n(context, count, static_cast<void *>(&body), trampoline);
    }
};

} // namespace uform::ram
