// The outcome table of deferred calls: entries reused from a free list, grown in chunks to a
// high-water mark and never moved or freed, so a handle stays safe to look at after its release.
//
// A handle encodes a slot and a generation; releasing an entry bumps its generation, so a stale handle
// answers `invalid-argument` instead of reading another call's entry. Each entry holds the job of its
// call (verb, holds and arguments), so a deferred call allocates nothing once the table has grown.
// Waiting blocks on the entry's status word (`std::atomic::wait`), never spinning until completion.
#include "c/handles.hpp"

namespace uform {

namespace {

struct entry_t {
    std::atomic<std::uint32_t> generation{1};
    std::atomic<std::uint32_t> status{uform_status_ok_k};
    std::atomic<char const *> message{nullptr}; // stored before `status` is published
    entry_t *next_free = nullptr;
    std::uint32_t slot = 0;
    job_t job;
};

constexpr std::size_t chunk_entries_k = 256;
#if UINTPTR_MAX > 0xFFFFFFFFu
constexpr std::size_t directory_chunks_k = 4096; // a million outcomes in flight at most
constexpr unsigned generation_shift_k = 32;
constexpr std::uintptr_t slot_mask_k = 0xFFFFFFFFu;
#else
constexpr std::size_t directory_chunks_k = 255; // 65280 slots fit in 16 bits
constexpr unsigned generation_shift_k = 16;
constexpr std::uintptr_t slot_mask_k = 0xFFFFu;
#endif

struct table_t {
    mutex_t mutex;
    entry_t *free_list = nullptr;
    std::size_t chunks = 0;
    std::atomic<entry_t *> directory[directory_chunks_k] = {};
};

table_t &table() noexcept {
    static table_t instance;
    return instance;
}

uform_outcome_t encode(entry_t const *entry) noexcept {
    std::uintptr_t const generation = entry->generation.load(std::memory_order_relaxed);
    std::uintptr_t const handle = (generation << generation_shift_k) | (std::uintptr_t(entry->slot) + 1);
    return reinterpret_cast<uform_outcome_t>(handle);
}

/// The live entry a handle names, or `nullptr` for a null, unknown or stale handle.
entry_t *decode(uform_outcome_t outcome) noexcept {
    std::uintptr_t const handle = reinterpret_cast<std::uintptr_t>(outcome);
    std::uintptr_t const slot_plus_one = handle & slot_mask_k;
    if (slot_plus_one == 0) return nullptr;
    std::size_t const slot = slot_plus_one - 1;
    std::size_t const chunk = slot / chunk_entries_k;
    if (chunk >= directory_chunks_k) return nullptr;
    entry_t *entries = table().directory[chunk].load(std::memory_order_acquire);
    if (!entries) return nullptr;
    entry_t *entry = entries + slot % chunk_entries_k;
    std::uint32_t const generation = std::uint32_t(handle >> generation_shift_k);
    std::uint32_t current = entry->generation.load(std::memory_order_acquire);
    if (generation_shift_k < 32) current &= std::uint32_t(slot_mask_k);
    if (current != generation) return nullptr;
    return entry;
}

entry_t *entry_of(job_t *job) noexcept { return static_cast<entry_t *>(job->owner); }

void publish(entry_t *entry, uform_status_t status, char const *message) noexcept {
    entry->message.store(message, std::memory_order_relaxed);
    entry->status.store(status, std::memory_order_release);
    entry->status.notify_all();
}

/// Waits for a call to be final, running it here when a local executor holds it.
uform_status_t settle(entry_t *entry, char const **message) noexcept {
    if (entry->status.load(std::memory_order_acquire) == uform_status_deferred_k) {
        uform_executor_s *executor = entry->job.holds.executor;
        if (executor && executor->kind == executor_kind_t::local)
            if (job_t *job = executor_take_held(executor, &entry->job)) job_execute(job, true, nullptr);
        std::uint32_t status;
        while ((status = entry->status.load(std::memory_order_acquire)) == uform_status_deferred_k)
            entry->status.wait(status, std::memory_order_acquire);
    }
    uform_status_t const status = static_cast<uform_status_t>(entry->status.load(std::memory_order_acquire));
    if (status != uform_status_ok_k && message) *message = entry->message.load(std::memory_order_relaxed);
    return status;
}

/// A call that is not final cannot become so while a handler of its own, or of a call holding its executor,
/// waits on this thread.
uform_status_t refuse_waiting_inside_handler(entry_t *entry, char const **message) noexcept {
    if (entry->status.load(std::memory_order_acquire) != uform_status_deferred_k) return uform_status_ok_k;
    return refuse_inside_handler(holds_t{entry->job.holds.executor, nullptr, nullptr, nullptr}, &entry->job, message);
}

} // namespace

uform_status_t outcome_take(job_t *&job, uform_outcome_t *handle, char const **message) noexcept {
    table_t &t = table();
    entry_t *entry;
    {
        std::lock_guard lock(t.mutex);
        if (!t.free_list) {
            if (t.chunks == directory_chunks_k)
                return fail(message, uform_status_limit_exceeded_k, "too many deferred calls are unreleased");
            auto *entries = new (std::nothrow) entry_t[chunk_entries_k];
            if (!entries) return fail(message, uform_status_out_of_memory_k, "out of memory growing the outcomes");
            for (std::size_t i = chunk_entries_k; i-- != 0;) {
                entries[i].slot = std::uint32_t(t.chunks * chunk_entries_k + i);
                entries[i].job.owner = entries + i;
                entries[i].next_free = t.free_list;
                t.free_list = entries + i;
            }
            t.directory[t.chunks].store(entries, std::memory_order_release);
            ++t.chunks;
        }
        entry = t.free_list;
        t.free_list = entry->next_free;
        entry->next_free = nullptr;
    }
    entry->message.store(nullptr, std::memory_order_relaxed);
    entry->status.store(uform_status_deferred_k, std::memory_order_relaxed);
    job = &entry->job;
    *handle = encode(entry);
    return uform_status_ok_k;
}

void outcome_give_back(job_t *job) noexcept {
    entry_t *entry = entry_of(job);
    entry->generation.fetch_add(1, std::memory_order_acq_rel);
    table_t &t = table();
    std::lock_guard lock(t.mutex);
    entry->next_free = t.free_list;
    t.free_list = entry;
}

uform_status_t job_execute(job_t *job, bool release_executor, char const **message) noexcept {
    char const *text = nullptr;
    uform_status_t status;
    {
        running_t const running(job->holds, job);
        status = job->run(*job, &text);
    }
    holds_release(job->holds, false);
    uform_executor_s *executor = job->holds.executor;
    if (release_executor && executor) {
        executor_rest(executor);
        // The executor falls idle and the outcome turns final at once for every observer: a waiter sees the
        // executor free (so its next call is not contended), and a drain sees the outcome final.
        std::lock_guard lock(executor->mutex);
        executor->busy.store(false, std::memory_order_release);
        publish(entry_of(job), status, text);
        executor->idle.notify_all();
    } else publish(entry_of(job), status, text);
    if (status != uform_status_ok_k && message) *message = text;
    return status;
}

} // namespace uform

using namespace uform;

extern "C" {

uform_status_t uform_outcome_status(uform_outcome_t outcome, char const **message) {
    entry_t *entry = decode(outcome);
    if (!entry) return fail(message, uform_status_invalid_argument_k, "the outcome is null, unknown or released");
    std::uint32_t const generation = entry->generation.load(std::memory_order_acquire);
    auto const status = static_cast<uform_status_t>(entry->status.load(std::memory_order_acquire));
    char const *text = status == uform_status_deferred_k ? nullptr : entry->message.load(std::memory_order_relaxed);
    if (entry->generation.load(std::memory_order_acquire) != generation)
        return fail(message, uform_status_invalid_argument_k, "the outcome was released meanwhile");
    if (status == uform_status_deferred_k) return fail(message, uform_status_deferred_k, "the call is not final yet");
    if (status != uform_status_ok_k && message) *message = text;
    return status;
}

uform_status_t uform_outcome_wait(uform_outcome_t outcome, char const **message) {
    entry_t *entry = decode(outcome);
    if (!entry) return fail(message, uform_status_invalid_argument_k, "the outcome is null, unknown or released");
    if (uform_status_t status = refuse_waiting_inside_handler(entry, message)) return status;
    return settle(entry, message);
}

uform_status_t uform_outcome_release(uform_outcome_t outcome) {
    entry_t *entry = decode(outcome);
    if (!entry) return uform_status_ok_k;
    if (uform_status_t status = refuse_waiting_inside_handler(entry, nullptr)) return status;
    settle(entry, nullptr);
    outcome_give_back(&entry->job);
    return uform_status_ok_k;
}

} // extern "C"
