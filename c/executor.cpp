/**
 * @file executor.cpp
 * @brief Executors: the RAM pool of owned threads, VRAM executors over a backend's streams, the local
 * executor that holds deferred calls, contention, drains, frees, and the GPU device list.
 *
 * RAM and VRAM executors own `threads` (one per device for VRAM) host threads. A deferred call submitted to
 * one runs on one of those threads; a blocking call runs on the caller's thread. Either way, the call's
 * parallel loops spread over every owned thread that is not running the call, plus the thread that is.
 * Idle threads sleep on a condition variable; after a `spinning` drain they first spin (yielding) for a
 * short while on each wake-up before sleeping again.
 */
#include <algorithm>
#include <cstdlib>
#include <thread>

#include "internal.hpp"

namespace uform {

/** @brief The threads an executor owns, and the loop they share at a time. */
struct pool_t {
    std::vector<std::thread> threads;
    std::mutex mutex;
    std::condition_variable wake; // something was posted: a job, a loop, or the stop
    std::condition_variable done; // the last helper left a loop
    std::atomic<std::uint64_t> signals{0};
    bool stop = false;
    job_t *job = nullptr; // a deferred call waiting for a thread

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

thread_local pool_t const *current_pool = nullptr;
thread_local std::size_t current_worker = 0;
thread_local bool inside_loop = false;

constexpr std::size_t spin_yields_k = 4096;
constexpr std::size_t max_threads_k = 1024;

void loop_work(pool_t &pool, std::size_t worker) noexcept {
    bool const was_inside = inside_loop;
    inside_loop = true;
    for (std::size_t index; (index = pool.loop_next.fetch_add(1, std::memory_order_relaxed)) < pool.loop_count;)
        pool.loop_body(pool.loop_context, index, worker);
    inside_loop = was_inside;
}

void worker_main(pool_t *pool, std::size_t worker, uform_executor_s const *executor) noexcept {
    current_pool = pool;
    current_worker = worker;
    backend::worker_start(executor->kind == executor_kind_t::vram ? uform_residency_vram_k : uform_residency_ram_k,
                          executor->numa_nodes, worker, executor->threads);
    std::uint64_t loop_seen = 0;
    std::unique_lock lock(pool->mutex);
    for (;;) {
        if (pool->stop) return;
        if (pool->job) {
            job_t *job = pool->job;
            pool->job = nullptr;
            lock.unlock();
            job_execute(job, true, nullptr);
            lock.lock();
            continue;
        }
        if (pool->loop_open && pool->loop_generation != loop_seen) {
            loop_seen = pool->loop_generation;
            ++pool->loop_inside;
            lock.unlock();
            loop_work(*pool, worker);
            lock.lock();
            if (--pool->loop_inside == 0) pool->done.notify_all();
            continue;
        }
        std::uint64_t const seen = pool->signals.load(std::memory_order_relaxed);
        if (pool->mood.load(std::memory_order_relaxed) == uform_mood_spinning_k) {
            lock.unlock();
            for (std::size_t i = 0; i != spin_yields_k && pool->signals.load(std::memory_order_acquire) == seen; ++i)
                std::this_thread::yield();
            lock.lock();
            if (pool->signals.load(std::memory_order_relaxed) != seen) continue;
        }
        pool->wake.wait(lock, [&] { return pool->signals.load(std::memory_order_relaxed) != seen; });
    }
}

/** @brief Starts `threads` workers, numbered from 1; answers `nullptr` when the OS refused. */
pool_t *pool_start(uform_executor_s const *executor) noexcept {
    std::size_t const threads = executor->threads;
    pool_t *pool = new (std::nothrow) pool_t;
    if (!pool) return nullptr;
    try {
        pool->threads.reserve(threads);
        for (std::size_t i = 0; i != threads; ++i) pool->threads.emplace_back(worker_main, pool, i + 1, executor);
    } catch (...) {
        {
            std::lock_guard lock(pool->mutex);
            pool->stop = true;
            pool->signals.fetch_add(1, std::memory_order_relaxed);
        }
        pool->wake.notify_all();
        for (auto &thread : pool->threads) thread.join();
        delete pool;
        return nullptr;
    }
    return pool;
}

void pool_stop(pool_t *pool) noexcept {
    if (!pool) return;
    {
        std::lock_guard lock(pool->mutex);
        pool->stop = true;
        pool->signals.fetch_add(1, std::memory_order_relaxed);
    }
    pool->wake.notify_all();
    for (auto &thread : pool->threads)
        if (thread.joinable()) thread.join();
    delete pool;
}

/* The local executors alive, so that freeing a model or an arena can run the calls they hold. */
std::mutex registry_mutex;
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

/** @brief Drains, then destroys: threads joined, device side closed. */
void executor_destroy(uform_executor_s *executor) noexcept {
    executor_settle(executor, nullptr);
    pool_stop(executor->pool);
    executor->pool = nullptr;
    if (executor->kind == executor_kind_t::vram) backend::vram_close(executor->device_state);
    if (executor->kind == executor_kind_t::local) registry_remove(executor);
    executor->magic = 0;
    delete executor;
}

/** @brief Runs a held job if there is one; waits until no call holds the executor. */
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

void executor_release(uform_executor_s *executor) noexcept {
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
    pool_t *pool = executor->pool;
    {
        std::lock_guard lock(pool->mutex);
        pool->job = job;
        pool->signals.fetch_add(1, std::memory_order_relaxed);
    }
    pool->wake.notify_all();
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

std::size_t executor_self(uform_executor_s const *executor) noexcept {
    return executor && executor->pool && current_pool == executor->pool ? current_worker : 0;
}

void executor_parallel_for(uform_executor_s *executor, std::size_t self, std::size_t count, parallel_body_t body,
                           void *context) noexcept {
    pool_t *pool = executor ? executor->pool : nullptr;
    if (!pool || count < 2 || inside_loop) {
        for (std::size_t i = 0; i != count; ++i) body(context, i, self);
        return;
    }
    {
        std::lock_guard lock(pool->mutex);
        pool->loop_body = body;
        pool->loop_context = context;
        pool->loop_count = count;
        pool->loop_next.store(0, std::memory_order_relaxed);
        ++pool->loop_generation;
        pool->loop_open = true;
        pool->signals.fetch_add(1, std::memory_order_relaxed);
    }
    pool->wake.notify_all();
    loop_work(*pool, self);
    std::unique_lock lock(pool->mutex);
    pool->loop_open = false;
    pool->done.wait(lock, [&] { return pool->loop_inside == 0; });
}

} // namespace uform

using namespace uform;

extern "C" {

uform_status_t uform_executor_init_ram(size_t const *numa_nodes, size_t numa_nodes_count, uform_cpu_class_t cpu_class,
                                       size_t threads, uform_executor_t *executor, char const **message) {
    if (!executor) return fail(message, uform_status_invalid_argument_k, "the executor out-pointer is null");
    if (!numa_nodes && numa_nodes_count)
        return fail(message, uform_status_invalid_argument_k, "NUMA nodes are null but counted");
    if (!known_enum(cpu_class, uform_cpu_class_wasm_v128_relaxed_k))
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
    if (threads == 0) {
        std::size_t const cores = std::thread::hardware_concurrency();
        threads = std::max<std::size_t>(1, cores * 7 / 8);
    }
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
    if (!known_enum(gpu_class, uform_gpu_class_amd_cdna3_k))
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
    if (backend::gpu_count() == 0) return fail(message, uform_status_unsupported_k, "this build drives no GPUs");
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
    if (!known_enum(cpu_class, uform_cpu_class_wasm_v128_relaxed_k))
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
    uform_status_t const status = executor_settle(executor, message);
    if (executor->pool) executor->pool->mood.store(mood, std::memory_order_relaxed);
    return status;
}

void uform_executor_free(uform_executor_t executor) {
    if (!executor_valid(executor)) return;
    executor_unreference(executor); // the last VRAM arena made by it drains and frees it otherwise
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
