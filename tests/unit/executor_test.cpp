// The RAM executor's threads in the RAM build: the width zero threads take, every owned thread (the loop
// workers and the host thread of deferred calls) configured by NumKong before it computes, loops spread over
// distinct threads with the calling one as worker 0, nested loops staying on their worker, and loops after
// drains in each mood.
//
// Prints "N passed, M failed" and exits nonzero on a failure. Links the RAM archive; ctest builds it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "c/handles.hpp"
#include "cpp/kernels/cpu_class.hpp"

namespace {

int passed = 0, failed = 0;

void check(bool ok, char const *what, int line) {
    if (ok) ++passed;
    else {
        ++failed;
        std::fprintf(stderr, "executor_test.cpp:%d: failed: %s\n", line, what);
    }
}
#define CHECK(condition) check((condition), #condition, __LINE__)

/// What one loop index saw: its worker, its thread, and that thread's NumKong configuration.
struct seen_t {
    std::size_t worker = SIZE_MAX;
    std::thread::id thread;
    std::uint64_t configuration = 0;
    bool nested_on_same_worker = false;
};

/// Runs a loop of `width` indices whose bodies wait for one another, so that each runs on its own thread, and
/// answers what each saw. Each body also runs a nested loop, which must stay on its worker and thread.
std::vector<seen_t> spread(uform::call_t &call) {
    std::size_t const width = call.width();
    std::vector<seen_t> seen(width);
    std::atomic<std::size_t> arrived{0};
    call.parallel_for(width, [&](std::size_t index, std::size_t worker) {
        seen_t &mine = seen[index];
        mine.worker = worker;
        mine.thread = std::this_thread::get_id();
        mine.configuration = uform::ram::cpu_class_thread_configuration();
        bool nested_ok = true;
        call.parallel_for(3, [&](std::size_t, std::size_t inner) {
            nested_ok = nested_ok && inner == worker && std::this_thread::get_id() == mine.thread;
        });
        mine.nested_on_same_worker = nested_ok;
        arrived.fetch_add(1);
        auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (arrived.load() < width && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    });
    return seen;
}

/// Checks that a spread loop ran on `width` distinct, configured threads, worker 0 on `dispatcher`.
void check_spread(std::vector<seen_t> const &seen, std::thread::id dispatcher, bool dispatcher_configured) {
    std::vector<bool> workers(seen.size(), false);
    for (seen_t const &one : seen) {
        CHECK(one.worker < seen.size());
        if (one.worker >= seen.size()) continue;
        CHECK(!workers[one.worker]);
        workers[one.worker] = true;
        CHECK(one.nested_on_same_worker);
        if (one.worker == 0) CHECK(one.thread == dispatcher);
        if (one.worker != 0 || dispatcher_configured) CHECK(one.configuration != 0);
        for (seen_t const &other : seen)
            if (&other != &one) CHECK(other.thread != one.thread);
    }
}

/// The parameters of a deferred job that spreads a loop from the executor's host thread.
struct host_seen_t {
    std::thread::id thread;
    std::uint64_t configuration = 0;
    std::vector<seen_t> seen;
};
host_seen_t *host_seen = nullptr;

uform_status_t run_on_host(uform::job_t &job, char const **) noexcept {
    host_seen->thread = std::this_thread::get_id();
    host_seen->configuration = uform::ram::cpu_class_thread_configuration();
    uform::call_t call(job.holds.executor, nullptr, uform_residency_ram_k, {}, nullptr, nullptr);
    host_seen->seen = spread(call);
    return uform_status_ok_k;
}

void check_executor(uform_executor_t executor, std::size_t threads) {
    std::size_t width = 0;
    CHECK(uform_executor_width(executor, &width, nullptr) == uform_status_ok_k);
    CHECK(width == threads);

    // A blocking call: the caller's thread is worker 0, and the owned workers were configured before it.
    {
        uform::call_t call(executor, nullptr, uform_residency_ram_k, {}, nullptr, nullptr);
        CHECK(call.width() == threads + 1);
        check_spread(spread(call), std::this_thread::get_id(), false);
    }

    // A deferred call runs on the host thread, configured too, which is worker 0 of the call's loops.
    host_seen_t seen;
    host_seen = &seen;
    uform::job_t *job = nullptr;
    uform_outcome_t outcome = nullptr;
    CHECK(uform::executor_acquire(executor, false, nullptr) == uform_status_ok_k);
    CHECK(uform::outcome_take(job, &outcome, nullptr) == uform_status_ok_k);
    job->run = run_on_host;
    job->holds = uform::holds_t{};
    job->holds.executor = executor;
    uform::executor_submit(executor, job);
    CHECK(uform_outcome_wait(outcome, nullptr) == uform_status_ok_k);
    uform_outcome_release(outcome);
    CHECK(seen.thread != std::this_thread::get_id());
    CHECK(seen.configuration != 0);
    check_spread(seen.seen, seen.thread, true);
    host_seen = nullptr;

    // Loops after drains in each mood, and again after a second drain in the same mood.
    for (uform_mood_t mood : {uform_mood_spinning_k, uform_mood_spinning_k, uform_mood_sleeping_k,
                              uform_mood_sleeping_k, uform_mood_spinning_k}) {
        CHECK(uform_executor_drain(executor, mood, nullptr) == uform_status_ok_k);
        uform::call_t call(executor, nullptr, uform_residency_ram_k, {}, nullptr, nullptr);
        check_spread(spread(call), std::this_thread::get_id(), false);
    }
}

/// Checks that arena memory is 256-byte aligned, as common/call.hpp promises, in the first block and past it.
void check_arena_alignment() {
    uform_arena_t arena = nullptr;
    CHECK(uform_arena_init(nullptr, &arena, nullptr) == uform_status_ok_k);
    if (!arena) return;
    uform::arena_rewind(arena);
    for (std::size_t bytes : {std::size_t(1), std::size_t(3), std::size_t(100), std::size_t(70000), std::size_t(0)}) {
        void *pointer = uform::arena_allocate(arena, bytes);
        CHECK(pointer != nullptr && reinterpret_cast<std::uintptr_t>(pointer) % 256 == 0);
    }
    uform_arena_free(arena);
}

} // namespace

int main() {
    check_arena_alignment();

    uform_executor_t executor = nullptr;

    // Zero threads take 7/8 of the cores, at least one.
    std::size_t const cores = std::thread::hardware_concurrency();
    std::size_t const default_threads = std::max<std::size_t>(1, cores * 7 / 8);
    CHECK(uform_executor_init_ram(nullptr, 0, uform_cpu_class_auto_k, 0, &executor, nullptr) == uform_status_ok_k);
    if (executor) check_executor(executor, default_threads);
    uform_executor_free(executor);

    // Three threads, interleaved over NUMA node 0.
    std::size_t const node = 0;
    executor = nullptr;
    CHECK(uform_executor_init_ram(&node, 1, uform_cpu_class_auto_k, 3, &executor, nullptr) == uform_status_ok_k);
    if (executor) check_executor(executor, 3);
    uform_executor_free(executor);

    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
