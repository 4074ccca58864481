// `call_t`: progress reporting, parallel loops, scratch and arena allocation for one call.
#include "common/call.hpp"

#include <algorithm>

#include "c/handles.hpp"
#include "common/scalars.hpp"

namespace uform {

namespace {

/// Scratch of calls without an executor: per calling thread, one buffer per handler depth (a call a progress
/// handler makes must not reuse the scratch of the call it runs inside), each grown to its high-water mark.
thread_local buffer_t thread_scratch[handler_depth_max_k + 1];
/// The call this thread runs now, innermost first.
thread_local running_t const *thread_running = nullptr;

/// The progress handlers running on this thread, innermost first, and how many.
thread_local handler_frame_t const *thread_handlers = nullptr;
thread_local std::size_t thread_handler_depth = 0;

/// Whether the non-null handles of `probe` include one that `holds` names.
bool holds_any(holds_t const &holds, holds_t const &probe) noexcept {
    return (probe.executor && probe.executor == holds.executor) || (probe.arena && probe.arena == holds.arena) ||
           (probe.model && probe.model == holds.model) || (probe.trainer && probe.trainer == holds.trainer);
}

/// Whether a call of `frames`, or a call that one of them runs inside (on any thread), holds `probe` or is `job`.
bool frames_hold(handler_frame_t const *frames, holds_t const &probe, job_t const *job) noexcept {
    for (handler_frame_t const *frame = frames; frame; frame = frame->outer) {
        if (!frame->call) continue;
        if (holds_any(frame->call->holds, probe) || (job && frame->call->job == job)) return true;
        // A call begun on this thread inside the handlers below this frame has them as its enclosing ones: walk
        // another thread's only.
        if (frame->call->enclosing != frame->outer && frames_hold(frame->call->enclosing, probe, job)) return true;
    }
    return false;
}

} // namespace

running_t::running_t(holds_t const &holds, job_t const *job) noexcept
    : holds(holds), job(job), outer(thread_running), enclosing(thread_handlers) {
    thread_running = this;
}

running_t::~running_t() noexcept { thread_running = outer; }

uform_status_t refuse_inside_handler(holds_t const &probe, job_t const *job, char const **message) noexcept {
    if (frames_hold(thread_handlers, probe, job))
        return fail(message, uform_status_contended_k,
                    "called from a progress handler of the call that holds it, it would wait for itself");
    return uform_status_ok_k;
}

uform_status_t refuse_nesting_too_deep(char const **message) noexcept {
    if (thread_handler_depth >= handler_depth_max_k)
        return fail(message, uform_status_contended_k, "progress handlers nest calls more than 8 deep");
    return uform_status_ok_k;
}

call_t::call_t(uform_executor_s *executor, uform_arena_s *arena, uform_residency_t residency,
               std::span<std::size_t const> devices, uform_progress_t progress, void *progress_context) noexcept
    : executor_(executor), arena_(arena), residency_(residency), devices_(devices), progress_(progress),
      progress_context_(progress_context), running_(thread_running) {}

bool call_t::invoke(std::size_t completed, std::size_t total) noexcept {
    handler_frame_t const frame{running_, thread_handlers};
    thread_handlers = &frame;
    ++thread_handler_depth;
    bool const stop = progress_(progress_context_, completed, total);
    --thread_handler_depth;
    thread_handlers = frame.outer;
    if (stop) cancelled_.store(true, std::memory_order_relaxed);
    return cancelled_.load(std::memory_order_relaxed);
}

bool call_t::deliver(std::size_t completed, std::size_t total, bool repeat) noexcept {
    if (cancelled_.load(std::memory_order_relaxed)) return true;
    if (!progress_) return false;
    std::lock_guard lock(progress_mutex_);
    if (cancelled_.load(std::memory_order_relaxed)) return true;
    if (!repeat && reported_any_ && completed <= reported_) return false;
    reported_any_ = true;
    reported_ = std::max(reported_, completed);
    return invoke(reported_, total);
}

bool call_t::poll(std::size_t completed, std::size_t total) noexcept { return deliver(completed, total, true); }

bool call_t::report(std::size_t completed, std::size_t total) noexcept { return deliver(completed, total, false); }

bool call_t::advance(std::size_t units, std::size_t total) noexcept {
    std::size_t const completed = completed_.fetch_add(units, std::memory_order_relaxed) + units;
    if (cancelled_.load(std::memory_order_relaxed)) return true;
    if (!progress_) return false;
    std::lock_guard lock(progress_mutex_);
    if (cancelled_.load(std::memory_order_relaxed)) return true;
    std::size_t const now = std::max(completed, completed_.load(std::memory_order_relaxed));
    if (reported_any_ && now <= reported_) return false;
    reported_any_ = true;
    reported_ = now;
    return invoke(now, total);
}

std::size_t call_t::width() const noexcept { return executor_width(executor_); }

void call_t::parallel_for_raw(std::size_t count, parallel_body_t body, void *context) noexcept {
    executor_parallel_for(executor_, count, body, context);
}

bool call_t::reserve_scratch(std::size_t bytes, std::size_t shared) noexcept {
    std::size_t const stride = round_up_64(bytes);
    std::size_t total;
    if (!multiply(stride, width(), total)) return false;
    if (total > SIZE_MAX - round_up_64(shared)) return false;
    total += round_up_64(shared);
    buffer_t &buffer =
        executor_ ? executor_->scratch : thread_scratch[std::min(thread_handler_depth, handler_depth_max_k)];
    if (!buffer.reserve(total)) return false;
    scratch_ = buffer.data;
    scratch_stride_ = stride;
    return true;
}

void *call_t::scratch(std::size_t worker) const noexcept { return scratch_ + worker * scratch_stride_; }

void *call_t::shared_scratch() const noexcept { return scratch_ + width() * scratch_stride_; }

void *call_t::device_state() const noexcept { return executor_ ? executor_->device_state : nullptr; }

void *call_t::allocate(std::size_t bytes) noexcept { return arena_ ? arena_allocate(arena_, bytes) : nullptr; }

void *call_t::allocate_host(std::size_t bytes) noexcept {
    return arena_ ? arena_allocate_host(arena_, bytes) : nullptr;
}

uform_residency_t call_t::output_residency() const noexcept {
    return arena_ ? arena_->residency : uform_residency_ram_k;
}

std::size_t call_t::output_device() const noexcept { return arena_ ? arena_->device : 0; }

bool call_t::allocate_rows(uform_rows_t &rows, std::size_t count, std::size_t items, std::size_t columns,
                           uform_scalar_t scalar, bool tape) noexcept {
    std::size_t const stride = scalar_bytes(scalar, columns);
    std::size_t bytes;
    if (stride == SIZE_MAX || !multiply(stride, count, bytes)) return false;
    void *data = allocate(bytes);
    if (!data) return false;
    std::size_t *offsets = nullptr;
    if (tape) {
        std::size_t offsets_bytes;
        if (!multiply(items + 1, sizeof(std::size_t), offsets_bytes)) return false;
        offsets = static_cast<std::size_t *>(allocate(offsets_bytes));
        if (!offsets) return false;
    }
    rows.data = data;
    rows.offsets = offsets;
    rows.count = count;
    rows.items = tape ? items : count;
    rows.columns = columns;
    rows.stride = stride;
    rows.scalar = scalar;
    rows.residency = output_residency();
    rows.device = output_device();
    return true;
}

bool call_t::allocate_tape(uform_tape_t &tape, std::size_t values, std::size_t items, uform_scalar_t scalar) noexcept {
    std::size_t const bytes = scalar_bytes(scalar, values);
    std::size_t offsets_bytes;
    if (bytes == SIZE_MAX || !multiply(items + 1, sizeof(std::size_t), offsets_bytes)) return false;
    void *data = allocate(bytes);
    auto *offsets = static_cast<std::size_t *>(allocate(offsets_bytes));
    if (!data || !offsets) return false;
    tape.data = data;
    tape.offsets = offsets;
    tape.items = items;
    tape.scalar = scalar;
    tape.residency = output_residency();
    tape.device = output_device();
    return true;
}

} // namespace uform
