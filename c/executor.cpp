// Executors: RAM and VRAM executors over owned workers and a host thread for deferred calls, the local
// executor that holds deferred calls, contention, moods, drains, frees, and the GPU device list.
//
// A RAM executor owns `threads` workers (a VRAM executor one per device) that run a call's parallel loops beside
// the thread running the call, which is loop worker 0: the caller's thread for a blocking call, or the
// executor's host thread for a deferred one. The workers are ForkUnion's in the RAM build and the standard
// library's in the stub (c/workers.hpp). Every owned thread runs `backend::worker_start` first. Idle threads
// sleep, or spin after a `spinning` drain; the call holding the executor sets the workers' mood as it ends. WASI has
// no threads: there a RAM executor owns none (width 0), its loops run on the calling thread (c/workers_serial.cpp),
// and a deferred call runs at once on the thread that submits it.
#include <algorithm>
#if !defined(__wasi__)
#include <thread>
#endif

#include "c/handles.hpp"
#include "c/workers.hpp"

namespace uform {

/// What a RAM or VRAM executor owns: the workers of its loops, and the thread its deferred calls run on.
struct pool_t {
    workers_t *workers = nullptr;
#if !defined(__wasi__)
    std::thread host; // WASI has none: a deferred call runs at once (executor_submit)
#endif
    mutex_t mutex;    // guards the host's waits
    condition_t wake; // a job, the stop or a mood was posted
    std::atomic<job_t *> job{nullptr};
    std::atomic<bool> stop{false};
    std::atomic<uform_mood_t> mood{uform_mood_sleeping_k}; // the last drain's
};

namespace {

constexpr std::size_t max_threads_k = 1024;

/// The pool whose loop body the calling thread runs, if any, and its worker index there.
thread_local pool_t const *loop_pool = nullptr;
thread_local std::size_t loop_worker = 0;

/// A loop's body, and the pool it runs on so that a nested loop can tell.
struct loop_t {
    pool_t const *pool;
    parallel_body_t body;
    void *context;
};

void loop_index(void *context, std::size_t index, std::size_t worker) noexcept {
    auto const &loop = *static_cast<loop_t const *>(context);
    pool_t const *const outer_pool = loop_pool;
    std::size_t const outer_worker = loop_worker;
    loop_pool = loop.pool;
    loop_worker = worker;
    loop.body(loop.context, index, worker);
    loop_pool = outer_pool;
    loop_worker = outer_worker;
}

uform_residency_t residency_of(uform_executor_s const &executor) noexcept {
    return executor.kind == executor_kind_t::vram ? uform_residency_vram_k : uform_residency_ram_k;
}

/// `backend::worker_start` for an owned thread: worker 0 is the host thread, the workers count from 1.
void worker_started(void const *context, std::size_t worker) noexcept {
    auto const &executor = *static_cast<uform_executor_s const *>(context);
    backend::worker_start(residency_of(executor), executor.numa_nodes, worker, executor.threads);
}

#if !defined(__wasi__)
/// The host thread: runs each deferred call submitted, and idles in the last drain's mood between.
void host_main(pool_t *pool, uform_executor_s const *executor) noexcept {
    worker_started(executor, 0);
    for (;;) {
        job_t *job = pool->job.load(std::memory_order_relaxed) ? pool->job.exchange(nullptr, std::memory_order_acquire)
                                                               : nullptr; // spinning, look before taking
        if (job) {
            job_execute(job, true, nullptr);
            continue;
        }
        if (pool->stop.load(std::memory_order_acquire)) return;
        if (pool->mood.load(std::memory_order_relaxed) == uform_mood_spinning_k) {
            std::this_thread::yield();
            continue;
        }
        std::unique_lock lock(pool->mutex);
        pool->wake.wait(lock, [&] {
            return pool->job.load(std::memory_order_relaxed) || pool->stop.load(std::memory_order_relaxed) ||
                   pool->mood.load(std::memory_order_relaxed) == uform_mood_spinning_k;
        });
    }
}
#endif

/// Wakes the host thread after a change its wait looks at.
void host_notify(pool_t &pool) noexcept {
    // Taking the lock orders the change before a host's check-then-wait, so the notification cannot fall between.
    std::lock_guard lock(pool.mutex);
    pool.wake.notify_all();
}

/// Starts the executor's workers and host thread; answers `nullptr` when memory ran out or the OS refused.
pool_t *pool_start(uform_executor_s const *executor) noexcept {
    pool_t *pool = new (std::nothrow) pool_t;
    if (!pool) return nullptr;
    pool->workers = workers_start(executor->threads, worker_started, executor);
    if (!pool->workers) {
        delete pool;
        return nullptr;
    }
#if !defined(__wasi__)
    try {
        pool->host = std::thread(host_main, pool, executor);
    } catch (...) {
        workers_stop(pool->workers);
        delete pool;
        return nullptr;
    }
#endif
    return pool;
}

/// Joins the host thread and the workers; no call may hold the executor.
void pool_stop(pool_t *pool) noexcept {
    if (!pool) return;
    pool->stop.store(true, std::memory_order_release);
    host_notify(*pool);
#if !defined(__wasi__)
    pool->host.join();
#endif
    workers_stop(pool->workers);
    delete pool;
}

/* The local executors alive, so that freeing a model or an arena can run the calls they hold. */
mutex_t registry_mutex;
uform_executor_s *registry_head = nullptr;

void registry_add(uform_executor_s *executor) noexcept {
    std::lock_guard lock(registry_mutex);
    executor->registry_next = registry_head;
    if (registry_head) registry_head->registry_previous = executor;
    registry_head = executor;
}

void registry_remove(uform_executor_s *executor) noexcept {
    std::lock_guard lock(registry_mutex);
    if (executor->registry_previous) executor->registry_previous->registry_next = executor->registry_next;
    else registry_head = executor->registry_next;
    if (executor->registry_next) executor->registry_next->registry_previous = executor->registry_previous;
    executor->registry_previous = executor->registry_next = nullptr;
}

uform_status_t executor_settle(uform_executor_s *executor, char const **message) noexcept;

/// Drains, then destroys: threads joined, device side closed.
void executor_destroy(uform_executor_s *executor) noexcept {
    executor_settle(executor, nullptr);
    pool_stop(executor->pool);
    executor->pool = nullptr;
    if (executor->kind == executor_kind_t::vram) backend::vram_close(executor->device_state);
    if (executor->kind == executor_kind_t::local) registry_remove(executor);
    executor->magic = 0;
    delete executor;
}

/// Runs a held job if there is one; waits until no call holds the executor.
uform_status_t executor_settle(uform_executor_s *executor, char const **message) noexcept {
    uform_status_t status = uform_status_ok_k;
    if (executor->kind == executor_kind_t::local)
        if (job_t *held = executor_take_held(executor, nullptr)) status = job_execute(held, true, message);
    std::unique_lock lock(executor->mutex);
    executor->idle.wait(lock, [&] { return !executor->busy.load(std::memory_order_acquire); });
    return status;
}

bool has_duplicates(std::size_t const *values, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i)
        for (std::size_t j = 0; j != i; ++j)
            if (values[i] == values[j]) return true;
    return false;
}

} // namespace

uform_status_t executor_acquire(uform_executor_s *executor, bool blocking, char const **message) noexcept {
    if (blocking && executor->kind == executor_kind_t::local)
        if (job_t *held = executor_take_held(executor, nullptr)) {
            job_execute(held, false, nullptr); // the hold passes from the held call to this one
            return uform_status_ok_k;
        }
    if (executor->busy.exchange(true, std::memory_order_acquire))
        return fail(message, uform_status_contended_k, "the executor serves another call");
    return uform_status_ok_k;
}

void executor_rest(uform_executor_s *executor) noexcept {
    if (pool_t *pool = executor->pool) workers_idle(*pool->workers, pool->mood.load(std::memory_order_relaxed));
}

void executor_release(uform_executor_s *executor) noexcept {
    executor_rest(executor);
    std::lock_guard lock(executor->mutex);
    executor->busy.store(false, std::memory_order_release);
    executor->idle.notify_all(); // under the lock: a drain may free the executor right after
}

void executor_submit(uform_executor_s *executor, job_t *job) noexcept {
    if (executor->kind == executor_kind_t::local) {
        std::lock_guard lock(executor->mutex);
        executor->held = job;
        return;
    }
#if defined(__wasi__)
    job_execute(job, true, nullptr); // no host thread on WASI: the submitting thread runs the call at once
    return;
#endif
    executor->pool->job.store(job, std::memory_order_release);
    host_notify(*executor->pool);
}

job_t *executor_take_held(uform_executor_s *executor, job_t const *specific) noexcept {
    std::lock_guard lock(executor->mutex);
    job_t *job = executor->held;
    if (!job || (specific && job != specific)) return nullptr;
    executor->held = nullptr;
    return job;
}

void executor_run_held_naming(uform_model_s const *model, uform_arena_s const *arena) noexcept {
    for (;;) {
        job_t *found = nullptr;
        {
            std::lock_guard registry(registry_mutex);
            for (uform_executor_s *executor = registry_head; executor && !found; executor = executor->registry_next) {
                std::lock_guard lock(executor->mutex);
                job_t *job = executor->held;
                if (job && ((model && job->holds.model == model) || (arena && job->holds.arena == arena))) {
                    executor->held = nullptr;
                    found = job;
                }
            }
        }
        if (!found) return;
        job_execute(found, true, nullptr);
    }
}

void executor_unreference(uform_executor_s *executor) noexcept {
    if (executor->references.fetch_sub(1, std::memory_order_acq_rel) == 1) executor_destroy(executor);
}

void executor_parallel_for(uform_executor_s *executor, std::size_t count, parallel_body_t body,
                           void *context) noexcept {
    pool_t *pool = executor ? executor->pool : nullptr;
    if (pool && loop_pool == pool) { // nested: a pool never re-enters, so its loop body runs this one alone
        for (std::size_t i = 0; i != count; ++i) body(context, i, loop_worker);
        return;
    }
    if (!pool || count < 2) {
        for (std::size_t i = 0; i != count; ++i) body(context, i, 0);
        return;
    }
    loop_t loop{pool, body, context};
    workers_for_n(*pool->workers, count, loop_index, &loop);
}

} // namespace uform

using namespace uform;

extern "C" {

uform_status_t uform_executor_init_ram(size_t const *numa_nodes, size_t numa_nodes_count, uform_cpu_class_t cpu_class,
                                       size_t threads, uform_executor_t *executor, char const **message) {
    if (!executor) return fail(message, uform_status_invalid_argument_k, "the executor out-pointer is null");
    if (!numa_nodes && numa_nodes_count)
        return fail(message, uform_status_invalid_argument_k, "NUMA nodes are null but counted");
    if (!known_enum(cpu_class, uform_cpu_class_wasm_simd128_k))
        return fail(message, uform_status_invalid_argument_k, "unknown CPU class");
    if (threads > max_threads_k)
        return fail(message, uform_status_invalid_argument_k, "more than 1024 threads asked for");
    if (has_duplicates(numa_nodes, numa_nodes_count))
        return fail(message, uform_status_invalid_argument_k, "a NUMA node is named twice");
    for (std::size_t i = 0; i != numa_nodes_count; ++i)
        if (numa_nodes[i] >= backend::numa_nodes())
            return fail(message, uform_status_not_found_k, "a NUMA node does not exist");
    if (cpu_class != uform_cpu_class_auto_k && !backend::cpu_class_available(cpu_class))
        return fail(message, uform_status_unsupported_k, "this machine or build cannot dispatch as that CPU class");
#if defined(__wasi__)
    threads = 0; // no threads on WASI: the calling thread, worker 0, runs every loop (c/workers_serial.cpp)
#else
    if (threads == 0) {
        std::size_t const cores = std::thread::hardware_concurrency();
        threads = std::max<std::size_t>(1, cores * 7 / 8);
    }
#endif
    auto *made = new (std::nothrow) uform_executor_s;
    if (!made) return fail(message, uform_status_out_of_memory_k, "out of memory making an executor");
    made->kind = executor_kind_t::ram;
    made->cpu_class = cpu_class == uform_cpu_class_auto_k ? backend::cpu_class_native() : cpu_class;
    made->threads = threads;
    try {
        made->numa_nodes.assign(numa_nodes, numa_nodes + numa_nodes_count);
    } catch (...) {
        delete made;
        return fail(message, uform_status_out_of_memory_k, "out of memory making an executor");
    }
    made->pool = pool_start(made);
    if (!made->pool) {
        delete made;
        return fail(message, uform_status_out_of_memory_k, "the OS refused to start the executor's threads");
    }
    *executor = made;
    return uform_status_ok_k;
}

uform_status_t uform_executor_init_vram(size_t const *devices, size_t devices_count, uform_gpu_class_t gpu_class,
                                        void *const *streams, size_t streams_count, void *memory_pool,
                                        size_t const *scratch_bytes, size_t scratch_bytes_count, size_t pinned_bytes,
                                        uform_executor_t *executor, char const **message) {
    if (!executor) return fail(message, uform_status_invalid_argument_k, "the executor out-pointer is null");
    if (!devices || devices_count == 0)
        return fail(message, uform_status_invalid_argument_k, "a VRAM executor needs at least one device");
    if (!known_enum(gpu_class, uform_gpu_class_amd_cdna2_k))
        return fail(message, uform_status_invalid_argument_k, "unknown GPU class");
    if (streams_count != 0 && streams_count != devices_count)
        return fail(message, uform_status_shape_mismatch_k, "streams must be zero or one per device");
    if (!streams && streams_count)
        return fail(message, uform_status_invalid_argument_k, "streams are null but counted");
    if (scratch_bytes_count != 0 && scratch_bytes_count != devices_count)
        return fail(message, uform_status_shape_mismatch_k, "scratch sizes must be zero or one per device");
    if (!scratch_bytes && scratch_bytes_count)
        return fail(message, uform_status_invalid_argument_k, "scratch sizes are null but counted");
    if (devices_count > max_threads_k)
        return fail(message, uform_status_invalid_argument_k, "more than 1024 devices named");
    if (has_duplicates(devices, devices_count))
        return fail(message, uform_status_invalid_argument_k, "a device is named twice");
    if (backend::gpu_count() == 0)
        return fail(message, uform_status_unsupported_k, "no GPU is present that this build drives");
    if (streams) return fail(message, uform_status_unsupported_k, "borrowing streams is not designed yet");
    if (memory_pool) return fail(message, uform_status_unsupported_k, "borrowing memory pools is not designed yet");
    for (std::size_t i = 0; i != devices_count; ++i)
        if (devices[i] >= backend::gpu_count())
            return fail(message, uform_status_not_found_k, "a device does not exist");
    std::span<std::size_t const> const named{devices, devices_count};
    if (gpu_class == uform_gpu_class_auto_k) {
        uform_gpu_device_t device;
        backend::gpu_describe(devices[0], device);
        gpu_class = device.gpu_class;
        if (!backend::gpu_class_available(gpu_class, named))
            return fail(message, uform_status_unsupported_k, "the devices named dispatch as different classes");
    } else if (!backend::gpu_class_available(gpu_class, named))
        return fail(message, uform_status_unsupported_k, "the devices cannot dispatch as that GPU class");

    auto *made = new (std::nothrow) uform_executor_s;
    if (!made) return fail(message, uform_status_out_of_memory_k, "out of memory making an executor");
    made->kind = executor_kind_t::vram;
    made->gpu_class = gpu_class;
    made->threads = devices_count;
    try {
        made->devices.assign(devices, devices + devices_count);
    } catch (...) {
        delete made;
        return fail(message, uform_status_out_of_memory_k, "out of memory making an executor");
    }
    std::span<std::size_t const> const scratch{scratch_bytes, scratch_bytes ? scratch_bytes_count : 0};
    if (uform_status_t status = backend::vram_open(named, scratch, pinned_bytes, made->device_state, message)) {
        delete made;
        return status;
    }
    made->pool = pool_start(made);
    if (!made->pool) {
        backend::vram_close(made->device_state);
        delete made;
        return fail(message, uform_status_out_of_memory_k, "the OS refused to start the executor's threads");
    }
    *executor = made;
    return uform_status_ok_k;
}

uform_status_t uform_executor_init_pool(size_t const *numa_nodes, size_t numa_nodes_count, uform_cpu_class_t cpu_class,
                                        void *pool, size_t threads, uform_executor_t *executor, char const **message) {
    (void)threads;
    if (!executor) return fail(message, uform_status_invalid_argument_k, "the executor out-pointer is null");
    if (!pool) return fail(message, uform_status_invalid_argument_k, "the pool is null");
    if (!numa_nodes && numa_nodes_count)
        return fail(message, uform_status_invalid_argument_k, "NUMA nodes are null but counted");
    if (!known_enum(cpu_class, uform_cpu_class_wasm_simd128_k))
        return fail(message, uform_status_invalid_argument_k, "unknown CPU class");
    return fail(message, uform_status_unsupported_k, "borrowing a ForkUnion pool is not designed yet");
}

uform_status_t uform_executor_init_local(uform_executor_t *executor, char const **message) {
    if (!executor) return fail(message, uform_status_invalid_argument_k, "the executor out-pointer is null");
    auto *made = new (std::nothrow) uform_executor_s;
    if (!made) return fail(message, uform_status_out_of_memory_k, "out of memory making an executor");
    made->kind = executor_kind_t::local;
    made->cpu_class = backend::cpu_class_native();
    registry_add(made);
    *executor = made;
    return uform_status_ok_k;
}

uform_status_t uform_executor_residency(uform_executor_t executor, uform_residency_t *residency, char const **message) {
    if (!executor_valid(executor)) return fail(message, uform_status_invalid_argument_k, "the executor is null");
    if (!residency) return fail(message, uform_status_invalid_argument_k, "the residency out-pointer is null");
    *residency = executor->kind == executor_kind_t::vram ? uform_residency_vram_k : uform_residency_ram_k;
    return uform_status_ok_k;
}

uform_status_t uform_executor_width(uform_executor_t executor, size_t *width, char const **message) {
    if (!executor_valid(executor)) return fail(message, uform_status_invalid_argument_k, "the executor is null");
    if (!width) return fail(message, uform_status_invalid_argument_k, "the width out-pointer is null");
    *width = executor->threads;
    return uform_status_ok_k;
}

uform_status_t uform_executor_drain(uform_executor_t executor, uform_mood_t mood, char const **message) {
    if (!executor_valid(executor)) return fail(message, uform_status_invalid_argument_k, "the executor is null");
    if (!known_enum(mood, uform_mood_sleeping_k)) return fail(message, uform_status_invalid_argument_k, "unknown mood");
    if (uform_status_t status = refuse_inside_handler(holds_t{executor, nullptr, nullptr, nullptr}, nullptr, message))
        return status;
    uform_status_t const status = executor_settle(executor, message);
    if (pool_t *pool = executor->pool) {
        pool->mood.store(mood, std::memory_order_relaxed);
        host_notify(*pool);
        // The workers' mood changes from the side holding the executor: take it for a moment, as a call would.
        {
            std::unique_lock lock(executor->mutex);
            executor->idle.wait(lock, [&] { return !executor->busy.exchange(true, std::memory_order_acquire); });
        }
        executor_release(executor);
    }
    return status;
}

uform_status_t uform_executor_free(uform_executor_t executor) {
    if (!executor_valid(executor)) return uform_status_ok_k;
    if (uform_status_t status = refuse_inside_handler(holds_t{executor, nullptr, nullptr, nullptr}, nullptr, nullptr))
        return status;
    executor_unreference(executor); // the last VRAM arena made by it drains and frees it otherwise
    return uform_status_ok_k;
}

uform_status_t uform_gpu_devices(uform_gpu_device_t *devices, size_t capacity, size_t *count, char const **message) {
    if (!count) return fail(message, uform_status_invalid_argument_k, "the count out-pointer is null");
    if (!devices && capacity) return fail(message, uform_status_invalid_argument_k, "devices are null but counted");
    std::size_t const available = backend::gpu_count();
    for (std::size_t i = 0; i < available && i < capacity; ++i) backend::gpu_describe(i, devices[i]);
    *count = available;
    return uform_status_ok_k;
}

} // extern "C"
