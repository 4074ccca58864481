// The host pages of an arena (`arena_allocate_host`, behind `call_t::allocate_host`): a RAM arena answers its own
// pages; a VRAM arena answers host pages of its own beside its device memory, never device memory, writable, grown to
// a high-water mark and coalesced at the next rewind (so a steady loop allocates nothing), reported nowhere in the
// arena's device capacity, and freed with the arena. Runs in every build: no device memory is asked for.
//
// Prints "N passed, M failed" and exits nonzero on a failure.
#include <cstdio>
#include <cstring>

#include "c/handles.hpp"

namespace {

int passed = 0, failed = 0;

void check(bool ok, char const *what, int line) {
    if (ok) ++passed;
    else {
        ++failed;
        std::fprintf(stderr, "arena_host_test.cpp:%d: failed: %s\n", line, what);
    }
}
#define CHECK(condition) check((condition), #condition, __LINE__)

/// Three calls' worth of host allocations on `arena`, as a front-end makes them: answers the first pointer of each.
void calls(uform_arena_s *arena, void *(&first)[3]) {
    for (void *&pointer : first) {
        uform::arena_rewind(arena);
        pointer = uform::arena_allocate_host(arena, 1000);
        void *second = uform::arena_allocate_host(arena, 200 * 1024); // past the first block: the arena grows
        CHECK(pointer != nullptr && second != nullptr);
        if (pointer && second) {
            std::memset(pointer, 1, 1000); // host memory: writable from here
            std::memset(second, 2, 200 * 1024);
        }
    }
}

} // namespace

int main() {
    // A RAM arena's host pages are the arena's own.
    auto *ram = new uform_arena_s;
    void *first[3] = {};
    calls(ram, first);
    CHECK(ram->host == nullptr);
    std::size_t capacity = 0;
    CHECK(uform_arena_capacity(ram, &capacity, nullptr) == uform_status_ok_k && capacity >= 200 * 1024);
    CHECK(first[1] == first[2]); // coalesced after the first call: the same block from then on
    uform_arena_free(ram);

    // A VRAM arena's host pages live beside its (here untouched) device memory.
    auto *vram = new uform_arena_s;
    vram->residency = uform_residency_vram_k;
    calls(vram, first);
    CHECK(vram->host != nullptr && vram->blocks_count == 0);
    CHECK(uform_arena_capacity(vram, &capacity, nullptr) == uform_status_ok_k && capacity == 0);
    CHECK(first[1] == first[2]);
    uform_arena_free(vram); // frees the host pages too (AddressSanitizer's leak check would say otherwise)

    std::printf("arena_host_test: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
