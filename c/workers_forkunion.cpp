// `workers_t` over ForkUnion 3's `flat_pool`, in every build but the stub: the calling thread is the
// pool's thread 0, loops are `for_n_dynamic`, and the sleeping mood is ForkUnion's `sleep`, which the next
// dispatch ends, so it is set again once a call is over.
#if !UFORM_WITH_STUB && !defined(__wasi__)

#include <new>

#include <forkunion.hpp>

#include "c/workers.hpp"

namespace uform {

namespace fu = ashvardanian::forkunion;

/// ForkUnion's pool of `threads + 1` (thread 0 is the dispatcher), and whether it was put to sleep.
struct workers_t {
    fu::flat_pool_t pool;
    bool chilling = false; // the pool was put to sleep and no dispatch has woken it since
};

namespace {
/// How long a sleeping worker naps between looks for work: the longest a call waits for its first loop.
constexpr std::size_t nap_microseconds_k = 1000;
} // namespace

workers_t *workers_start(std::size_t threads, worker_start_t start, void const *context) noexcept {
    auto *workers = new (std::nothrow) workers_t;
    if (!workers) return nullptr;
    if (!workers->pool.try_spawn(threads + 1, fu::caller_inclusive_k)) {
        delete workers;
        return nullptr;
    }
    workers->pool.for_threads([&](std::size_t worker) noexcept {
        if (worker != 0) start(context, worker);
    });
    workers->pool.sleep(nap_microseconds_k);
    workers->chilling = true;
    return workers;
}

void workers_stop(workers_t *workers) noexcept { delete workers; }

void workers_for_n(workers_t &workers, std::size_t count, parallel_body_t body, void *context) noexcept {
    workers.chilling = false; // a dispatch turns a sleeping pool back to spinning
    workers.pool.for_n_dynamic(count, [&](fu::prong_t prong) noexcept { body(context, prong.task, prong.thread); });
}

void workers_idle(workers_t &workers, uform_mood_t mood) noexcept {
    // `sleep` writes a field the chilling workers read: only call it while they spin, after a dispatch joined.
    if (mood == uform_mood_sleeping_k && !workers.chilling) {
        workers.pool.sleep(nap_microseconds_k);
        workers.chilling = true;
    } else if (mood == uform_mood_spinning_k && workers.chilling) {
        workers.pool.for_threads([](std::size_t) noexcept {});
        workers.chilling = false;
    }
}

} // namespace uform

#endif // !UFORM_WITH_STUB && !defined(__wasi__)
