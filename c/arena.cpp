// Arenas: host pages or (through the backend) device memory that outputs land in. A VRAM arena also keeps host pages
// for its calls' host-side work (a media front-end's arrays), grown and rewound alike.
//
// An arena is a short list of blocks. A call allocates from the last block and, when it runs out, adds a
// block at least as large as all the others together; the next call's rewind coalesces the blocks into
// one of their total size. So the arena settles at a single block at the high-water mark, and a steady loop
// of same-shaped calls allocates nothing after the first.
#include <algorithm>

#include "c/handles.hpp"

namespace uform {

namespace {

constexpr std::size_t alignment_k = 256; // what device memory guarantees, and plenty for host rows
constexpr std::size_t first_block_k = 64 * 1024;

std::byte *block_allocate(uform_arena_s const *arena, std::size_t bytes) noexcept {
    if (arena->residency == uform_residency_vram_k)
        return static_cast<std::byte *>(backend::vram_allocate(arena->device, bytes));
    return static_cast<std::byte *>(::operator new(bytes, std::align_val_t{alignment_k}, std::nothrow));
}

void block_free(uform_arena_s const *arena, uform_arena_s::block_t const &block) noexcept {
    if (arena->residency == uform_residency_vram_k) backend::vram_free(arena->device, block.data, block.size);
    else ::operator delete(block.data, std::align_val_t{alignment_k});
}

void blocks_free(uform_arena_s *arena) noexcept {
    for (std::size_t i = 0; i != arena->blocks_count; ++i) block_free(arena, arena->blocks[i]);
    arena->blocks_count = 0;
    arena->used = 0;
    arena->capacity.store(0, std::memory_order_relaxed);
}

} // namespace

uform_status_t arena_acquire(uform_arena_s *arena, char const **message) noexcept {
    if (arena->busy.exchange(true, std::memory_order_acquire))
        return fail(message, uform_status_contended_k, "the arena serves another call");
    return uform_status_ok_k;
}

void arena_release(uform_arena_s *arena) noexcept {
    std::lock_guard lock(arena->mutex);
    arena->busy.store(false, std::memory_order_release);
    arena->idle.notify_all(); // under the lock: a free may destroy the arena right after
}

void arena_rewind(uform_arena_s *arena) noexcept {
    if (arena->host) arena_rewind(arena->host);
    arena->used = 0;
    if (arena->blocks_count <= 1) return;
    std::size_t const total = arena->capacity.load(std::memory_order_relaxed);
    blocks_free(arena);
    if (std::byte *data = block_allocate(arena, total)) {
        arena->blocks[0] = {data, total};
        arena->blocks_count = 1;
        arena->capacity.store(total, std::memory_order_relaxed);
    }
}

void *arena_allocate(uform_arena_s *arena, std::size_t bytes) noexcept {
    std::size_t const rounded = (bytes + alignment_k - 1) & ~(alignment_k - 1);
    if (rounded < bytes) return nullptr;
    if (arena->blocks_count) {
        uform_arena_s::block_t const &last = arena->blocks[arena->blocks_count - 1];
        if (last.size - arena->used >= rounded) {
            void *result = last.data + arena->used;
            arena->used += rounded;
            return result;
        }
    }
    if (arena->blocks_count == uform_arena_s::max_blocks_k) return nullptr;
    std::size_t const capacity = arena->capacity.load(std::memory_order_relaxed);
    std::size_t size = std::max({rounded, capacity, first_block_k});
    std::byte *data = block_allocate(arena, size);
    if (!data && size > rounded) data = block_allocate(arena, size = std::max(rounded, alignment_k));
    if (!data) return nullptr;
    arena->blocks[arena->blocks_count++] = {data, size};
    arena->capacity.store(capacity + size, std::memory_order_relaxed);
    arena->used = rounded;
    return data;
}

void *arena_allocate_host(uform_arena_s *arena, std::size_t bytes) noexcept {
    if (arena->residency == uform_residency_ram_k) return arena_allocate(arena, bytes);
    if (!arena->host) arena->host = new (std::nothrow) uform_arena_s; // a RAM arena of its own
    return arena->host ? arena_allocate(arena->host, bytes) : nullptr;
}

} // namespace uform

using namespace uform;

extern "C" {

uform_status_t uform_arena_init(uform_executor_t executor, uform_arena_t *arena, char const **message) {
    if (!arena) return fail(message, uform_status_invalid_argument_k, "the arena out-pointer is null");
    if (executor && !executor_valid(executor))
        return fail(message, uform_status_invalid_argument_k, "the executor is not a live executor");
    auto *made = new (std::nothrow) uform_arena_s;
    if (!made) return fail(message, uform_status_out_of_memory_k, "out of memory making an arena");
    if (executor && executor->kind == executor_kind_t::vram) {
        made->residency = uform_residency_vram_k;
        made->device = executor->devices.front();
        made->executor = executor;
        executor->references.fetch_add(1, std::memory_order_relaxed);
    }
    *arena = made;
    return uform_status_ok_k;
}

uform_status_t uform_arena_residency(uform_arena_t arena, uform_residency_t *residency, char const **message) {
    if (!arena_valid(arena)) return fail(message, uform_status_invalid_argument_k, "the arena is null");
    if (!residency) return fail(message, uform_status_invalid_argument_k, "the residency out-pointer is null");
    *residency = arena->residency;
    return uform_status_ok_k;
}

uform_status_t uform_arena_capacity(uform_arena_t arena, size_t *bytes, char const **message) {
    if (!arena_valid(arena)) return fail(message, uform_status_invalid_argument_k, "the arena is null");
    if (!bytes) return fail(message, uform_status_invalid_argument_k, "the bytes out-pointer is null");
    *bytes = arena->capacity.load(std::memory_order_relaxed);
    return uform_status_ok_k;
}

uform_status_t uform_arena_free(uform_arena_t arena) {
    if (!arena_valid(arena)) return uform_status_ok_k;
    if (uform_status_t status = refuse_inside_handler(holds_t{nullptr, arena, nullptr, nullptr}, nullptr, nullptr))
        return status;
    executor_run_held_naming(nullptr, arena);
    {
        std::unique_lock lock(arena->mutex);
        arena->idle.wait(lock, [&] { return !arena->busy.load(std::memory_order_acquire); });
    }
    blocks_free(arena);
    if (arena->host) {
        blocks_free(arena->host);
        delete arena->host;
    }
    uform_executor_s *executor = arena->executor;
    arena->magic = 0;
    delete arena;
    if (executor) executor_unreference(executor);
    return uform_status_ok_k;
}

} // extern "C"
