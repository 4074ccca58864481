// `workers_t` over the C++ standard library, for the stub, which links nothing else: owned threads
// sleep on a condition variable, and after a `spinning` drain first spin (yielding) for a while on each
// wake-up. A loop's indices are claimed from one shared counter by the calling thread and every worker that
// wakes before it is done.
#if UFORM_WITH_STUB && !defined(__wasi__)

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "c/workers.hpp"

namespace uform {

/// The owned threads, and the one loop they share at a time.
struct workers_t {
    std::vector<std::thread> threads;
    std::mutex mutex;
    std::condition_variable wake; // a loop or the stop was posted
    std::condition_variable done; // the last worker left a loop
    std::atomic<std::uint64_t> signals{0};
    bool stop = false;

    std::uint64_t loop_generation = 0;
    bool loop_open = false;
    std::size_t loop_inside = 0;
    parallel_body_t loop_body = nullptr;
    void *loop_context = nullptr;
    std::size_t loop_count = 0;
    std::atomic<std::size_t> loop_next{0};

    std::atomic<uform_mood_t> mood{uform_mood_sleeping_k};
};

namespace {

constexpr std::size_t spin_yields_k = 4096;

void loop_work(workers_t &workers, std::size_t worker) noexcept {
    for (std::size_t index; (index = workers.loop_next.fetch_add(1, std::memory_order_relaxed)) < workers.loop_count;)
        workers.loop_body(workers.loop_context, index, worker);
}

void worker_main(workers_t *workers, std::size_t worker, worker_start_t start, void const *context) noexcept {
    start(context, worker);
    std::uint64_t loop_seen = 0;
    std::unique_lock lock(workers->mutex);
    for (;;) {
        if (workers->stop) return;
        if (workers->loop_open && workers->loop_generation != loop_seen) {
            loop_seen = workers->loop_generation;
            ++workers->loop_inside;
            lock.unlock();
            loop_work(*workers, worker);
            lock.lock();
            if (--workers->loop_inside == 0) workers->done.notify_all();
            continue;
        }
        std::uint64_t const seen = workers->signals.load(std::memory_order_relaxed);
        if (workers->mood.load(std::memory_order_relaxed) == uform_mood_spinning_k) {
            lock.unlock();
            for (std::size_t i = 0; i != spin_yields_k && workers->signals.load(std::memory_order_acquire) == seen; ++i)
                std::this_thread::yield();
            lock.lock();
            if (workers->signals.load(std::memory_order_relaxed) != seen) continue;
        }
        workers->wake.wait(lock, [&] { return workers->signals.load(std::memory_order_relaxed) != seen; });
    }
}

/// Posts the stop, wakes every worker, and joins those that started.
void join_all(workers_t &workers) noexcept {
    {
        std::lock_guard lock(workers.mutex);
        workers.stop = true;
        workers.signals.fetch_add(1, std::memory_order_relaxed);
    }
    workers.wake.notify_all();
    for (auto &thread : workers.threads)
        if (thread.joinable()) thread.join();
}

} // namespace

workers_t *workers_start(std::size_t threads, worker_start_t start, void const *context) noexcept {
    auto *workers = new (std::nothrow) workers_t;
    if (!workers) return nullptr;
    try {
        workers->threads.reserve(threads);
        for (std::size_t i = 0; i != threads; ++i)
            workers->threads.emplace_back(worker_main, workers, i + 1, start, context);
    } catch (...) {
        join_all(*workers);
        delete workers;
        return nullptr;
    }
    return workers;
}

void workers_stop(workers_t *workers) noexcept {
    if (!workers) return;
    join_all(*workers);
    delete workers;
}

void workers_for_n(workers_t &workers, std::size_t count, parallel_body_t body, void *context) noexcept {
    {
        std::lock_guard lock(workers.mutex);
        workers.loop_body = body;
        workers.loop_context = context;
        workers.loop_count = count;
        workers.loop_next.store(0, std::memory_order_relaxed);
        ++workers.loop_generation;
        workers.loop_open = true;
        workers.signals.fetch_add(1, std::memory_order_relaxed);
    }
    workers.wake.notify_all();
    loop_work(workers, 0);
    std::unique_lock lock(workers.mutex);
    workers.loop_open = false;
    workers.done.wait(lock, [&] { return workers.loop_inside == 0; });
}

void workers_idle(workers_t &workers, uform_mood_t mood) noexcept {
    workers.mood.store(mood, std::memory_order_relaxed);
}

} // namespace uform

#endif // UFORM_WITH_STUB && !defined(__wasi__)
