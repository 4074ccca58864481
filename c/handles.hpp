// The ABI layer's handles: the structs behind the opaque pointers (executor, arena, model, mesh, trainer),
// deferred jobs, and the functions each of c/'s sources offers the others. Nothing here is seen by a backend
// but through `call_t`; the argument checks the backends share too are in common/checks.hpp.
#ifndef UFORM_C_HANDLES_HPP
#define UFORM_C_HANDLES_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include <uform/uform.h>

#include "common/backend.hpp"
#include "common/checkpoint.hpp"
#include "common/checks.hpp"
#include "common/lock.hpp"
#include "common/fail.hpp"

namespace uform {

/// A grow-only buffer taken through `operator new`, kept at its high-water mark.
struct buffer_t {
    std::byte *data = nullptr;
    std::size_t size = 0;

    buffer_t() noexcept = default;
    buffer_t(buffer_t const &) = delete;
    buffer_t &operator=(buffer_t const &) = delete;
    ~buffer_t() { release(); }

    /// Ensures `bytes` (discarding the contents when it grows); `false` when memory ran out.
    bool reserve(std::size_t bytes) noexcept {
        if (bytes <= size) return true;
        release();
        data = static_cast<std::byte *>(::operator new(bytes, std::align_val_t{64}, std::nothrow));
        if (!data) return false;
        size = bytes;
        return true;
    }
    void release() noexcept {
        if (data) ::operator delete(data, std::align_val_t{64});
        data = nullptr;
        size = 0;
    }
};

/// Rounds `bytes` up to a multiple of 64; saturates near `SIZE_MAX`.
inline std::size_t round_up_64(std::size_t bytes) noexcept {
    return bytes > SIZE_MAX - 63 ? SIZE_MAX & ~std::size_t(63) : (bytes + 63) & ~std::size_t(63);
}

inline constexpr std::uint32_t executor_magic_k = 0x55455845u; // "EXEU"
inline constexpr std::uint32_t arena_magic_k = 0x55524e41u;    // "ANRU"
inline constexpr std::uint32_t model_magic_k = 0x55444f4du;    // "MODU"
inline constexpr std::uint32_t trainer_magic_k = 0x554e5254u;  // "TRNU"
inline constexpr std::uint32_t mesh_magic_k = 0x5548534du;     // "MSHU"

enum class executor_kind_t : std::uint8_t { local, ram, vram };

struct pool_t;

/// The largest argument pack a deferred job stores.
inline constexpr std::size_t job_params_bytes_k = 320;

/// A deferred call: its verb's body, what it holds, and its arguments, inside an outcome entry.
struct job_t {
    uform_status_t (*run)(job_t &job, char const **message) noexcept = nullptr;
    holds_t holds;
    void *owner = nullptr; // the outcome entry holding the job
    alignas(std::max_align_t) std::byte params[job_params_bytes_k];
};

} // namespace uform

/// An executor: threads (RAM), streams (VRAM), or nothing (local), and its scratch.
struct uform_executor_s {
    std::uint32_t magic = uform::executor_magic_k;
    uform::executor_kind_t kind = uform::executor_kind_t::local;
    uform_cpu_class_t cpu_class = uform_cpu_class_auto_k;
    uform_gpu_class_t gpu_class = uform_gpu_class_auto_k;
    std::vector<std::size_t> numa_nodes; // RAM
    std::vector<std::size_t> devices;    // VRAM
    std::size_t threads = 0;             // owned loop workers (RAM), one per stream (VRAM); zero for local
    void *device_state = nullptr;        // the backend's, for VRAM

    std::atomic<bool> busy{false};          // a call holds the executor
    uform::mutex_t mutex;                   // guards `held` and the waits on `busy`
    uform::condition_t idle;                // notified, under `mutex`, when `busy` falls
    uform::job_t *held = nullptr;           // local: the deferred call held until its wait, drain, ...
    uform::pool_t *pool = nullptr;          // RAM and VRAM: the owned workers and host thread
    std::atomic<std::size_t> references{1}; // the handle plus each VRAM arena made by it
    uform::buffer_t scratch;                // per-worker scratch, grown to a high-water mark

    uform_executor_s *registry_previous = nullptr; // local executors, for frees that run held calls
    uform_executor_s *registry_next = nullptr;
};

/// An arena: blocks of memory that a call's outputs land in, coalesced into one at the next rewind.
struct uform_arena_s {
    static constexpr std::size_t max_blocks_k = 40;
    struct block_t {
        std::byte *data;
        std::size_t size;
    };

    std::uint32_t magic = uform::arena_magic_k;
    uform_residency_t residency = uform_residency_ram_k;
    std::size_t device = 0;
    uform_executor_s *executor = nullptr; // VRAM arenas keep their executor alive

    std::atomic<bool> busy{false};
    uform::mutex_t mutex;
    uform::condition_t idle;

    block_t blocks[max_blocks_k] = {};
    std::size_t blocks_count = 0;
    std::size_t used = 0; // bytes used of the last block
    std::atomic<std::size_t> capacity{0};
    uform_arena_s *host = nullptr; // a VRAM arena's host pages for its calls' host-side work, made on first use
};

/// A loaded model: the backend's, its geometry, and the calls reading it.
struct uform_model_s {
    std::uint32_t magic = uform::model_magic_k;
    uform::backend::model_t *backend = nullptr;
    uform::geometry_t geometry{};
    uform_residency_t residency = uform_residency_ram_k;
    std::size_t placement[16] = {};
    std::size_t placement_count = 0;
    uform_cpu_class_t cpu_class = uform_cpu_class_auto_k;
    uform_gpu_class_t gpu_class = uform_gpu_class_auto_k;
    uform_scalar_t quantization = uform_scalar_bf16_k;
    std::size_t weight_bytes = 0;

    std::size_t uses = 0; // calls reading the model, guarded by `mutex`
    uform::mutex_t mutex;
    uform::condition_t idle;
};

/// A joined mesh.
struct uform_mesh_s {
    std::uint32_t magic = uform::mesh_magic_k;
    uform::backend::mesh_t *backend = nullptr;
    uform_mesh_description_t description{};
    uform_residency_t residency = uform_residency_vram_k; // the executor's it was joined over: RAM or VRAM
    std::vector<std::size_t> devices;                     // VRAM: this host's devices; RAM: empty
    std::atomic<std::size_t> references{1};               // the handle plus each trainer made over it
};

/// A trainer: the backend's, its resolved configuration, and the call it serves.
struct uform_trainer_s {
    std::uint32_t magic = uform::trainer_magic_k;
    uform::backend::trainer_t *backend = nullptr;
    uform_trainer_init_vram_args_t args{}; // defaults resolved
    uform::geometry_t geometry{};
    uform_residency_t residency = uform_residency_vram_k;
    std::vector<std::size_t> numa_nodes; // RAM: the executor's at init, which every later call must name
    std::vector<std::size_t> devices;    // VRAM: the executor's at init, which every later call must name
    uform_cpu_class_t cpu_class = uform_cpu_class_auto_k; // RAM: resolved from the executor at init
    uform_gpu_class_t gpu_class = uform_gpu_class_auto_k; // VRAM
    uform_mesh_s *mesh = nullptr;
    std::size_t world_devices = 1;

    std::atomic<bool> busy{false}; // a trainer serves one call at a time
    std::size_t uses = 0;          // guarded by `mutex`
    uform::mutex_t mutex;
    uform::condition_t idle;
};

namespace uform {

/* executor.cpp ------------------------------------------------------------------------------------------- */

inline bool executor_valid(uform_executor_s const *executor) noexcept {
    return executor && executor->magic == executor_magic_k;
}
/// Takes the executor for one call, or answers `contended`. A blocking call on a local executor first
/// runs the deferred call it holds, inheriting the hold.
uform_status_t executor_acquire(uform_executor_s *executor, bool blocking, char const **message) noexcept;
/// Releases the executor a call held, after `executor_rest`.
void executor_release(uform_executor_s *executor) noexcept;
/// Puts the executor's idle workers in the last drain's mood; the call holding it runs this as it ends.
void executor_rest(uform_executor_s *executor) noexcept;
/// Hands a job to an executor the job already holds: its host thread, or (local) held until waited.
void executor_submit(uform_executor_s *executor, job_t *job) noexcept;
/// Takes the held job of a local executor, if it is `specific` (or any, when `nullptr`).
job_t *executor_take_held(uform_executor_s *executor, job_t const *specific) noexcept;
/// Runs every deferred call held by a local executor that names `model` or `arena`.
void executor_run_held_naming(uform_model_s const *model, uform_arena_s const *arena) noexcept;
/// Drops one reference; the last destroys the executor (threads joined, device side closed).
void executor_unreference(uform_executor_s *executor) noexcept;
/// Parallel-for over an executor's workers plus the calling thread (worker 0); a loop nested in one of
/// the executor's loop bodies runs serially on that body's worker.
void executor_parallel_for(uform_executor_s *executor, std::size_t count, parallel_body_t body, void *context) noexcept;
/// Workers of calls on `executor` (its threads plus the caller), one without an executor.
inline std::size_t executor_width(uform_executor_s const *executor) noexcept {
    return executor && executor->pool ? executor->threads + 1 : 1;
}

/* arena.cpp ---------------------------------------------------------------------------------------------- */

inline bool arena_valid(uform_arena_s const *arena) noexcept { return arena && arena->magic == arena_magic_k; }
uform_status_t arena_acquire(uform_arena_s *arena, char const **message) noexcept;
void arena_release(uform_arena_s *arena) noexcept;
/// Rewinds the arena for a new call, coalescing its blocks into one at the high-water mark.
void arena_rewind(uform_arena_s *arena) noexcept;
/// `bytes` (256-byte aligned, never `nullptr` for zero) from the arena, or `nullptr` when memory ran out.
void *arena_allocate(uform_arena_s *arena, std::size_t bytes) noexcept;
/// `bytes` of host memory from the arena: its own pages (RAM), or its host pages beside the device memory (VRAM).
void *arena_allocate_host(uform_arena_s *arena, std::size_t bytes) noexcept;

/* model.cpp ---------------------------------------------------------------------------------------------- */

inline bool model_valid(uform_model_s const *model) noexcept { return model && model->magic == model_magic_k; }
void model_enter(uform_model_s *model) noexcept;
void model_leave(uform_model_s *model) noexcept;

/* train.cpp ---------------------------------------------------------------------------------------------- */

inline bool trainer_valid(uform_trainer_s const *trainer) noexcept {
    return trainer && trainer->magic == trainer_magic_k;
}
inline bool mesh_valid(uform_mesh_s const *mesh) noexcept { return mesh && mesh->magic == mesh_magic_k; }
void trainer_enter(uform_trainer_s *trainer) noexcept;
void trainer_leave(uform_trainer_s *trainer) noexcept;

/// Releases an executor a call acquired when the scope ends.
struct executor_release_t {
    uform_executor_s *executor;
    ~executor_release_t() { executor_release(executor); }
};

/* mesh.cpp ----------------------------------------------------------------------------------------------- */

/// Checks the executor a mesh or trainer is made on: live, and of `kind` (a local one, or one of the other residency,
/// answers `unsupported`: that residency's constructor, or its mesh, is another call or not built yet).
uform_status_t check_training_executor(uform_executor_s const *executor, executor_kind_t kind,
                                       char const **message) noexcept;
/// Drops one reference to a mesh (its own, or a trainer's made over it); the last frees it.
void mesh_unreference(uform_mesh_s *mesh) noexcept;

/* outcome.cpp -------------------------------------------------------------------------------------------- */

/// Takes a free outcome entry for a job and writes its handle; `out-of-memory` when the table can't grow.
uform_status_t outcome_take(job_t *&job, uform_outcome_t *handle, char const **message) noexcept;
/// Returns an entry taken for a job that was never submitted.
void outcome_give_back(job_t *job) noexcept;
/// Runs a job, releases what it holds (its executor too, when `release_executor`), and publishes its
/// status to its outcome. Answers the status, and its message through `message`.
uform_status_t job_execute(job_t *job, bool release_executor, char const **message) noexcept;

/// Releases what a call held: trainer, arena, model; and the executor when asked.
inline void holds_release(holds_t const &holds, bool release_executor) noexcept {
    if (holds.trainer) {
        holds.trainer->busy.store(false, std::memory_order_release);
        trainer_leave(holds.trainer);
    }
    if (holds.arena) arena_release(holds.arena);
    if (holds.model) model_leave(holds.model);
    if (release_executor && holds.executor) executor_release(holds.executor);
}

/// Runs a checked verb: blocking (`outcome == nullptr`) on the calling thread, or deferred through an
/// outcome entry. `params_type_` is trivially copyable and has
/// `static uform_status_t run(params_type_ const &, holds_t const &, char const **) noexcept`.
/// Contention is answered before anything is touched; a deferred call finding its executor or arena busy
/// takes no outcome entry.
template <typename params_type_>
uform_status_t dispatch(params_type_ const &params, holds_t const &holds, uform_outcome_t *outcome,
                        char const **message) noexcept {
    static_assert(sizeof(params_type_) <= job_params_bytes_k);
    static_assert(std::is_trivially_copyable_v<params_type_>);
    bool const deferred = outcome != nullptr;
    if (uform_status_t status = refuse_nesting_too_deep(message)) return status;
    if (holds.executor)
        if (uform_status_t status = executor_acquire(holds.executor, !deferred, message)) return status;
    if (holds.arena)
        if (uform_status_t status = arena_acquire(holds.arena, message)) {
            if (holds.executor) executor_release(holds.executor);
            return status;
        }
    if (holds.trainer && holds.trainer->busy.exchange(true, std::memory_order_acquire)) {
        if (holds.arena) arena_release(holds.arena);
        if (holds.executor) executor_release(holds.executor);
        return fail(message, uform_status_contended_k, "the trainer serves another call");
    }
    if (holds.model) model_enter(holds.model);
    if (holds.trainer) trainer_enter(holds.trainer);

    if (!deferred) {
        uform_status_t status;
        {
            running_t const running(holds, nullptr);
            status = params_type_::run(params, holds, message);
        }
        holds_release(holds, true);
        return status;
    }

    job_t *job = nullptr;
    if (uform_status_t status = outcome_take(job, outcome, message)) {
        holds_release(holds, true);
        return status;
    }
    ::new (static_cast<void *>(job->params)) params_type_(params);
    job->holds = holds;
    job->run = [](job_t &job, char const **message) noexcept {
        return params_type_::run(*std::launder(reinterpret_cast<params_type_ const *>(job.params)), job.holds, message);
    };
    if (holds.executor) executor_submit(holds.executor, job);
    else job_execute(job, false, nullptr); // no executor: the calling thread runs it at once
    return fail(message, uform_status_deferred_k, "the call was submitted and is not final yet");
}

} // namespace uform

#endif // UFORM_C_HANDLES_HPP
