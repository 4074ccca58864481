// The benches' thread pool: a ForkUnion pool behind the core's `parallel_t` hook, as the RAM executor wires it.
#pragma once

#include <cstddef>

#include <forkunion.hpp>

#include "cpp/kernels/cpu_class.hpp"
#include "cpp/parallel.hpp"

namespace uform::bench {

/// `threads` threads (the caller's included) running `parallel`'s loops; one thread, or a pool that cannot start,
/// runs them on the caller. Every thread is configured for the machine's CPU class.
struct pool_t {
    ashvardanian::forkunion::flat_pool_t pool;
    ram::parallel_t parallel;

    explicit pool_t(std::size_t threads) {
        if (threads > 1 && pool.try_spawn(threads)) {
            parallel.threads = threads;
            parallel.context = this;
            parallel.for_n = &for_n;
            pool.for_threads([](std::size_t) noexcept { ram::cpu_class_configure_thread(uform_cpu_class_auto_k); });
        }
        ram::cpu_class_configure_thread(uform_cpu_class_auto_k);
    }
    /// Uneven tasks (attention of varied items), so dynamic scheduling.
    static void for_n(void *context, std::size_t count, void *fn_context, ram::task_fn_t fn) noexcept {
        static_cast<pool_t *>(context)->pool.for_n_dynamic(
            count, [=](ashvardanian::forkunion::prong_t prong) noexcept { fn(fn_context, prong.task, prong.thread); });
    }
};

} // namespace uform::bench
