// `uform::call_t`: what the ABI layer hands a backend for one call: the progress hook, a parallel-for
// over the executor's threads, per-worker scratch, and the arena the outputs land in.
//
// A call_t lives on the stack of the thread that runs the call (the caller's for a blocking call, one of
// the executor's for a deferred one). Its methods are `noexcept` and allocate nothing but the executor's
// scratch and the arena's pages, both grown to a high-water mark and reused.
#ifndef UFORM_COMMON_CALL_HPP
#define UFORM_COMMON_CALL_HPP

#include <atomic>
#include <cstddef>
#include <span>
#include <type_traits>

#include <uform/uform.h>

#include "common/lock.hpp"

namespace uform {

/// What a call holds while it runs, released when it ends.
struct holds_t {
    uform_executor_s *executor = nullptr;
    uform_arena_s *arena = nullptr;
    uform_model_s *model = nullptr;
    uform_trainer_s *trainer = nullptr;
};

struct job_t;
struct handler_frame_t;

/// Marks the calling thread as running one call, which holds `holds` (and is `job`, when deferred), for the
/// scope's life. The call's `call_t`, made on the same thread, keeps a pointer to it, so that whatever the call's
/// progress handler calls (on any worker) can tell what the call holds, and what the calls it runs inside hold.
struct running_t {
    running_t(holds_t const &holds, job_t const *job) noexcept;
    ~running_t() noexcept;
    running_t(running_t const &) = delete;
    running_t &operator=(running_t const &) = delete;

    holds_t const &holds;
    job_t const *job;
    running_t const *outer; // the call this thread ran before, if this one runs inside its handler
    /// The progress handlers running on this thread when the call began, innermost first: the call runs inside
    /// them, and they wait for it, so they outlive it. Its own handler, on whichever worker, checks them too.
    handler_frame_t const *enclosing;
};

/// One progress handler running on a thread, on behalf of `call`.
struct handler_frame_t {
    running_t const *call;
    handler_frame_t const *outer; // the handler this thread ran before, which this one runs inside
};

/// Answers `contended` when a progress handler running on this thread belongs to a call that holds one of the
/// non-null handles of `probe`, or is `job`, or runs inside the handler of such a call (on any thread, as a blocking
/// call a handler makes may run its own handler on its executor's workers): freeing, draining or waiting on them
/// there would wait for the handler itself. Answers `ok` otherwise, and outside handlers.
uform_status_t refuse_inside_handler(holds_t const &probe, job_t const *job, char const **message) noexcept;

/// Calls nest at most this deep inside progress handlers; each depth has scratch of its own on a thread.
inline constexpr std::size_t handler_depth_max_k = 8;

/// Answers `contended` when `handler_depth_max_k` progress handlers run on this thread, one inside another's call,
/// so that a call made from the innermost would nest too deep; `ok` otherwise.
uform_status_t refuse_nesting_too_deep(char const **message) noexcept;

/// A type-erased body of a parallel loop: `body(context, index, worker)`.
using parallel_body_t = void (*)(void *context, std::size_t index, std::size_t worker);

class call_t {
  public:
    /// @param executor The executor the call holds, or `nullptr` for the calling thread alone.
    /// @param arena The arena the call holds, or `nullptr` when it writes no outputs.
    /// @param residency Where the call computes: the model's or the trainer's residency.
    /// @param devices The device ordinals the call computes on (VRAM), or empty.
    call_t(uform_executor_s *executor, uform_arena_s *arena, uform_residency_t residency,
           std::span<std::size_t const> devices, uform_progress_t progress, void *progress_context) noexcept;
    call_t(call_t const &) = delete;
    call_t &operator=(call_t const &) = delete;

    /* Progress and cancellation ------------------------------------------------------------------------ */

    /// Adds `units` to the units completed and reports them to the handler, if any, answering `true`
    /// once the call must stop. Safe from any worker; the handler runs on one thread at a time, and sees
    /// `completed` never fall.
    bool advance(std::size_t units, std::size_t total) noexcept;
    /// Reports an absolute count of completed units (monotonic); answers `true` once the call must stop.
    bool report(std::size_t completed, std::size_t total) noexcept;
    /// Calls the handler even when `completed` did not grow (never below what it saw), so that it can stop a
    /// long item; answers `true` once the call must stop.
    bool poll(std::size_t completed, std::size_t total) noexcept;
    /// Whether a handler has asked to stop.
    bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }

    /* Threads ------------------------------------------------------------------------------------------ */

    /// Workers a parallel loop may run on, at least one; the `worker` argument is below this.
    std::size_t width() const noexcept;
    /// Runs `body(index, worker)` for every `index` below `count`, across the executor's threads and
    /// the calling one, returning when all are done. Nested loops run serially on the calling worker.
    template <typename body_type_>
    void parallel_for(std::size_t count, body_type_ &&body) noexcept {
        using body_t = std::remove_reference_t<body_type_>;
        parallel_for_raw(
            count,
            [](void *context, std::size_t index, std::size_t worker) {
                (*static_cast<body_t *>(context))(index, worker);
            },
            const_cast<void *>(static_cast<void const *>(&body)));
    }
    void parallel_for_raw(std::size_t count, parallel_body_t body, void *context) noexcept;

    /// Reserves `bytes` of scratch per worker plus `shared` bytes for the whole call (each 64-byte
    /// aligned), discarding what scratch held; answers `false` when memory ran out. Call it from the calling
    /// worker, outside parallel loops.
    bool reserve_scratch(std::size_t bytes, std::size_t shared = 0) noexcept;
    /// The scratch of one worker, as last reserved.
    void *scratch(std::size_t worker) const noexcept;
    /// The scratch shared by the whole call, as last reserved.
    void *shared_scratch() const noexcept;

    /* Where the call computes ------------------------------------------------------------------------- */

    uform_residency_t residency() const noexcept { return residency_; }
    std::span<std::size_t const> devices() const noexcept { return devices_; }
    /// The backend's state of a VRAM executor (its streams), or `nullptr`.
    void *device_state() const noexcept;

    /* Outputs ----------------------------------------------------------------------------------------- */

    /// Whether the call has an arena to write outputs into.
    bool has_arena() const noexcept { return arena_ != nullptr; }
    /// `bytes` of the arena, 256-byte aligned and never `nullptr` for zero bytes; `nullptr` when memory
    /// ran out or there is no arena. Call it from the calling worker, outside parallel loops.
    void *allocate(std::size_t bytes) noexcept;
    /// `bytes` of host memory that lives as the arena's outputs do (until the arena's next call): the arena's own pages
    /// for a RAM arena, host pages beside a VRAM arena's device memory; the same alignment and failures as `allocate`.
    void *allocate_host(std::size_t bytes) noexcept;
    /// Where the arena's memory lives, and on which device.
    uform_residency_t output_residency() const noexcept;
    std::size_t output_device() const noexcept;
    /// Fills `rows` with a view of `count` fresh rows of `columns` values of `scalar` in the arena,
    /// plus `items + 1` offsets when `tape` (left for the caller to fill), else `items == count`.
    /// Answers `false` when memory ran out.
    bool allocate_rows(uform_rows_t &rows, std::size_t count, std::size_t items, std::size_t columns,
                       uform_scalar_t scalar, bool tape) noexcept;
    /// Fills `tape` with `values` fresh values of `scalar` and `items + 1` offsets in the arena.
    bool allocate_tape(uform_tape_t &tape, std::size_t values, std::size_t items, uform_scalar_t scalar) noexcept;

  private:
    /// Reports `completed` (never below what the handler saw) unless it did not grow and `repeat` is false; answers
    /// `true` once the call must stop.
    bool deliver(std::size_t completed, std::size_t total, bool repeat) noexcept;
    /// Runs the handler under `progress_mutex_`, marking this thread as inside it.
    bool invoke(std::size_t completed, std::size_t total) noexcept;

    uform_executor_s *executor_;
    uform_arena_s *arena_;
    uform_residency_t residency_;
    std::span<std::size_t const> devices_;
    uform_progress_t progress_;
    void *progress_context_;
    running_t const *running_;           // what the call holds, recorded by the thread running it
    std::atomic<bool> cancelled_{false}; // a handler answered `true`
    std::atomic<std::size_t> completed_{0};
    std::size_t reported_ = 0;
    bool reported_any_ = false;
    mutex_t progress_mutex_;
    std::byte *scratch_ = nullptr;
    std::size_t scratch_stride_ = 0;
};

} // namespace uform

#endif // UFORM_COMMON_CALL_HPP
