// The allocation rules of the ABI layer: a steady loop of same-shaped blocking calls allocates nothing
// after its first call, deferred calls reuse their outcome entries, and refusals allocate nothing at all.
//
// Every `operator new` (and, on glibc builds without a sanitizer, `malloc`, `calloc`, `realloc`) is replaced
// by a counting one; the library's arenas, scratch and outcome table all allocate through them.
// Prints "N passed, M failed" and exits nonzero on a failure. Links the stub archive:
//     clang++-22 -std=c++23 -Iinclude tests/unit/allocations_test.cpp build/stub/libuform_static.a -pthread
// and runs from the repository root, or with `UFORM_TEST_DATA` naming the directory of tiny.safetensors.
// Under ThreadSanitizer, whose runtime defines `operator new` itself, it checks everything but the counts.
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include <uform/uform.h>

/* ---------------------------------------------------------------------------------------------------------- */
/* Counting allocations                                                                                        */
/* ---------------------------------------------------------------------------------------------------------- */

namespace {
std::atomic<std::size_t> allocations{0};
} // namespace

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define UFORM_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UFORM_TEST_SANITIZED 1
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UFORM_TEST_NO_NEW 1 // ThreadSanitizer's runtime defines operator new itself: count nothing, check the rest
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define UFORM_TEST_NO_NEW 1
#endif

#if defined(__GLIBC__) && !defined(UFORM_TEST_SANITIZED)
#define UFORM_TEST_COUNTS_MALLOC 1
extern "C" {
void *__libc_malloc(std::size_t);
void *__libc_calloc(std::size_t, std::size_t);
void *__libc_realloc(void *, std::size_t);
void __libc_free(void *);

void *malloc(std::size_t size) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_malloc(size);
}
void *calloc(std::size_t count, std::size_t size) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_calloc(count, size);
}
void *realloc(void *pointer, std::size_t size) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_realloc(pointer, size);
}
void free(void *pointer) { __libc_free(pointer); }
}
#define UFORM_RAW_MALLOC __libc_malloc
#define UFORM_RAW_FREE __libc_free
#else
#define UFORM_RAW_MALLOC std::malloc
#define UFORM_RAW_FREE std::free
#endif

#if !defined(UFORM_TEST_NO_NEW)
namespace {

void *counted(std::size_t size) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    return UFORM_RAW_MALLOC(size ? size : 1);
}

void *counted_aligned(std::size_t size, std::size_t alignment) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    void *pointer = nullptr;
    if (alignment < sizeof(void *)) alignment = sizeof(void *);
    if (posix_memalign(&pointer, alignment, size ? size : 1) != 0) return nullptr;
    return pointer;
}

} // namespace

constexpr bool counting = true;
void *operator new(std::size_t size) {
    if (void *pointer = counted(size)) return pointer;
    throw std::bad_alloc();
}
void *operator new[](std::size_t size) { return operator new(size); }
void *operator new(std::size_t size, std::nothrow_t const &) noexcept { return counted(size); }
void *operator new[](std::size_t size, std::nothrow_t const &) noexcept { return counted(size); }
void *operator new(std::size_t size, std::align_val_t alignment) {
    if (void *pointer = counted_aligned(size, std::size_t(alignment))) return pointer;
    throw std::bad_alloc();
}
void *operator new[](std::size_t size, std::align_val_t alignment) { return operator new(size, alignment); }
void *operator new(std::size_t size, std::align_val_t alignment, std::nothrow_t const &) noexcept {
    return counted_aligned(size, std::size_t(alignment));
}
void *operator new[](std::size_t size, std::align_val_t alignment, std::nothrow_t const &) noexcept {
    return counted_aligned(size, std::size_t(alignment));
}
void operator delete(void *pointer) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete[](void *pointer) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete(void *pointer, std::size_t) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete[](void *pointer, std::size_t) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete(void *pointer, std::align_val_t) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete[](void *pointer, std::align_val_t) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete(void *pointer, std::size_t, std::align_val_t) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete[](void *pointer, std::size_t, std::align_val_t) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete(void *pointer, std::nothrow_t const &) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete[](void *pointer, std::nothrow_t const &) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete(void *pointer, std::align_val_t, std::nothrow_t const &) noexcept { UFORM_RAW_FREE(pointer); }
void operator delete[](void *pointer, std::align_val_t, std::nothrow_t const &) noexcept { UFORM_RAW_FREE(pointer); }
#else
constexpr bool counting = false;
#endif

/* ---------------------------------------------------------------------------------------------------------- */
/* Checks                                                                                                      */
/* ---------------------------------------------------------------------------------------------------------- */

namespace {

int passed = 0, failed = 0;

bool check(bool ok, char const *what, int line) {
    if (ok) ++passed;
    else {
        ++failed;
        std::fprintf(stderr, "allocations_test.cpp:%d: FAILED: %s\n", line, what);
    }
    return ok;
}
#define CHECK(condition) check((condition), #condition, __LINE__)

/// Allocations made by `body`, run once.
template <typename body_type_>
std::size_t allocations_of(body_type_ &&body) {
    std::size_t const before = allocations.load(std::memory_order_relaxed);
    body();
    return allocations.load(std::memory_order_relaxed) - before;
}

/// Checks that `body` allocates nothing across `rounds` runs, printing how much it did otherwise.
template <typename body_type_>
void check_steady(char const *what, int rounds, body_type_ &&body, int line) {
    std::size_t const made = allocations_of([&] {
        for (int i = 0; i != rounds; ++i) body();
    });
    if (made) std::fprintf(stderr, "    %s: %zu allocations in %d rounds\n", what, made, rounds);
    if (counting) check(made == 0, what, line);
}

char const texts_data[] = "a cat on a matthe second text, a little longerx";
std::size_t const texts_offsets[] = {0, 14, 45, 45, 46};
std::size_t const texts_count = 4;

std::string tiny_path() {
    char const *directory = std::getenv("UFORM_TEST_DATA");
    return std::string(directory && *directory ? directory : "tests/data") + "/tiny.safetensors";
}

/// Steady loops of every verb that reads no files, on one receiver.
void steady_verbs(uform_model_t model, uform_executor_t executor, uform_arena_t arena, char const *receiver) {
    uform_encoded_t encoded{};
    uform_text_encode_stats_t stats{};
    uform_text_encode_args_t args{};
    args.scalar = uform_scalar_bf16_k;
    args.stats = &stats;
    auto const all = static_cast<uform_outputs_t>(uform_outputs_embeddings_k | uform_outputs_states_k |
                                                  uform_outputs_token_vectors_k);
    auto encode = [&](std::size_t count) {
        return uform_text_encode(model, executor, texts_data, sizeof(texts_data) - 1, texts_offsets, count, all, &args,
                                 arena, &encoded, nullptr, nullptr);
    };
    std::string what = std::string("text_encode, same shape, ") + receiver;
    CHECK(encode(texts_count) == uform_status_ok_k); // the first call grows the arena and the scratch
    check_steady(what.c_str(), 50, [&] { CHECK(encode(texts_count) == uform_status_ok_k); }, __LINE__);
    what = std::string("text_encode, smaller shapes, ") + receiver;
    check_steady(
        what.c_str(), 20,
        [&] {
            CHECK(encode(2) == uform_status_ok_k);
            CHECK(encode(0) == uform_status_ok_k);
            CHECK(encode(texts_count) == uform_status_ok_k);
        },
        __LINE__);

    // Choices.
    char const choices_data[] = "ynABCDxyz01";
    std::size_t const choices_offsets[] = {0, 2, 6, 9, 11};
    std::size_t const groups[] = {0, 1, 0, 1};
    uform_text_choose_args_t choose{};
    choose.temperature_groups = groups;
    choose.temperature_groups_count = 4;
    uform_tape_t probabilities{};
    auto choose_call = [&] {
        return uform_text_choose(model, executor, texts_data, sizeof(texts_data) - 1, texts_offsets, texts_count,
                                 choices_data, sizeof(choices_data) - 1, choices_offsets, 4, &choose, arena,
                                 &probabilities, nullptr, nullptr);
    };
    CHECK(choose_call() == uform_status_ok_k);
    what = std::string("text_choose, ") + receiver;
    check_steady(what.c_str(), 30, [&] { CHECK(choose_call() == uform_status_ok_k); }, __LINE__);

    // Pixels and samples.
    static std::uint8_t pixels[2 * 24 * 16 * 3];
    std::size_t const pixels_offsets[] = {0, 24 * 16 * 3, 2 * 24 * 16 * 3};
    std::size_t const heights[] = {24, 16}, widths[] = {16, 24};
    auto pixels_call = [&] {
        return uform_image_encode_pixels(model, executor, pixels, sizeof(pixels), pixels_offsets, 2, heights, widths,
                                         all, nullptr, arena, &encoded, nullptr, nullptr);
    };
    CHECK(pixels_call() == uform_status_ok_k);
    what = std::string("image_encode_pixels, ") + receiver;
    check_steady(what.c_str(), 20, [&] { CHECK(pixels_call() == uform_status_ok_k); }, __LINE__);

    // At the model's rate: another rate goes through libswresample, whose contexts allocate per item.
    static float samples[8000];
    std::size_t const samples_offsets[] = {0, 3000, 3000, 8000};
    auto samples_call = [&] {
        return uform_audio_encode_samples(model, executor, samples, 8000, samples_offsets, 3, 16000, all, nullptr,
                                          arena, &encoded, nullptr, nullptr);
    };
    CHECK(samples_call() == uform_status_ok_k);
    what = std::string("audio_encode_samples, ") + receiver;
    check_steady(what.c_str(), 20, [&] { CHECK(samples_call() == uform_status_ok_k); }, __LINE__);
}

/// Deferred calls reuse their outcome entries: after the table grew, submitting allocates nothing.
void steady_deferred(uform_model_t model, uform_executor_t executor, uform_arena_t arena, char const *receiver) {
    uform_encoded_t encoded{};
    auto submit_wait_release = [&] {
        uform_outcome_t outcome = nullptr;
        CHECK(uform_text_encode(model, executor, texts_data, sizeof(texts_data) - 1, texts_offsets, texts_count,
                                uform_outputs_states_k, nullptr, arena, &encoded, &outcome,
                                nullptr) == uform_status_deferred_k);
        CHECK(uform_outcome_wait(outcome, nullptr) == uform_status_ok_k);
        uform_outcome_release(outcome);
    };
    submit_wait_release();
    std::string const what = std::string("deferred text_encode, ") + receiver;
    check_steady(what.c_str(), 30, submit_wait_release, __LINE__);
}

/// Refusals allocate nothing, whatever they refuse.
void refusals(uform_model_t model, uform_executor_t local, uform_arena_t arena) {
    uform_encoded_t encoded{};
    std::size_t const falling[] = {0, 14, 10, 45, 46};
    std::size_t const leaving[] = {0, 14, 45, 45, 99};
    std::size_t const heights[] = {0}, widths[] = {4};
    std::size_t one_offsets[] = {0, 12};
    float const nan_samples[] = {0.0f, __builtin_nanf("")};
    std::size_t const nan_offsets[] = {0, 2};
    uform_text_encode_args_t bad_scalar{};
    bad_scalar.scalar = static_cast<uform_scalar_t>(42);
    uform_text_encode_args_t packed{};
    packed.scalar = uform_scalar_b1_k;
    char const *message = nullptr;
    uform_status_t status = uform_status_ok_k;
    auto const n = sizeof(texts_data) - 1;

    std::size_t const made = allocations_of([&] {
        status = uform_text_encode(nullptr, nullptr, texts_data, n, texts_offsets, 4, uform_outputs_embeddings_k,
                                   nullptr, arena, &encoded, nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_text_encode(model, nullptr, texts_data, n, falling, 4, uform_outputs_embeddings_k, nullptr,
                                   arena, &encoded, nullptr, &message);
        CHECK(status == uform_status_shape_mismatch_k);
        status = uform_text_encode(model, nullptr, texts_data, n, leaving, 4, uform_outputs_embeddings_k, nullptr,
                                   arena, &encoded, nullptr, &message);
        CHECK(status == uform_status_shape_mismatch_k);
        status = uform_text_encode(model, nullptr, nullptr, n, texts_offsets, 4, uform_outputs_embeddings_k, nullptr,
                                   arena, &encoded, nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_text_encode(model, nullptr, texts_data, n, texts_offsets, 4, static_cast<uform_outputs_t>(8),
                                   nullptr, arena, &encoded, nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_text_encode(model, nullptr, texts_data, n, texts_offsets, 4, uform_outputs_states_k, &packed,
                                   arena, &encoded, nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_text_encode(model, nullptr, texts_data, n, texts_offsets, 4, uform_outputs_embeddings_k,
                                   &bad_scalar, arena, &encoded, nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_image_encode_pixels(model, nullptr, reinterpret_cast<std::uint8_t const *>(texts_data), 12,
                                           one_offsets, 1, heights, widths, uform_outputs_embeddings_k, nullptr, arena,
                                           &encoded, nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_audio_encode_samples(model, nullptr, nan_samples, 2, nan_offsets, 1, 16000,
                                            uform_outputs_embeddings_k, nullptr, arena, &encoded, nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_audio_encode_samples(model, nullptr, nan_samples, 1, nan_offsets, 0, 0,
                                            uform_outputs_embeddings_k, nullptr, arena, &encoded, nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_text_choose(model, nullptr, texts_data, n, texts_offsets, 4, "yn", 2, one_offsets, 1, nullptr,
                                   arena, nullptr, nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_executor_drain(local, static_cast<uform_mood_t>(7), &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_outcome_status(nullptr, &message);
        CHECK(status == uform_status_invalid_argument_k);
        status = uform_outcome_wait(reinterpret_cast<uform_outcome_t>(std::uintptr_t(0x7777)), &message);
        CHECK(status == uform_status_invalid_argument_k);
    });
    if (made) std::fprintf(stderr, "    refusals: %zu allocations\n", made);
    CHECK(made == 0);

    // Contention: a local executor holding a deferred call on `arena` refuses a second deferred call on the
    // executor, and a blocking call elsewhere refuses the arena, without allocating or taking an outcome.
    uform_outcome_t held = nullptr;
    CHECK(uform_text_encode(model, local, texts_data, n, texts_offsets, 4, uform_outputs_embeddings_k, nullptr, arena,
                            &encoded, &held, nullptr) == uform_status_deferred_k);
    uform_encoded_t other{};
    uform_outcome_t refused = nullptr;
    std::size_t const contended = allocations_of([&] {
        CHECK(uform_text_encode(model, local, texts_data, n, texts_offsets, 4, uform_outputs_embeddings_k, nullptr,
                                arena, &other, &refused, nullptr) == uform_status_contended_k);
        CHECK(uform_text_encode(model, nullptr, texts_data, n, texts_offsets, 4, uform_outputs_embeddings_k, nullptr,
                                arena, &other, nullptr, nullptr) == uform_status_contended_k);
        CHECK(uform_outcome_status(held, nullptr) == uform_status_deferred_k);
    });
    CHECK(refused == nullptr);
    if (contended) std::fprintf(stderr, "    contention: %zu allocations\n", contended);
    CHECK(contended == 0);
    CHECK(uform_outcome_wait(held, nullptr) == uform_status_ok_k);
    uform_outcome_release(held);
}

} // namespace

int main() {
    std::string const path = tiny_path();
    uform_model_load_ram_args_t load{};
    load.path = path.c_str();
    load.path_length = path.size();
    uform_model_t model = nullptr;
    if (!CHECK(uform_model_load_ram(&load, &model, nullptr) == uform_status_ok_k)) {
        std::fprintf(stderr, "cannot load %s: set UFORM_TEST_DATA to the directory of tiny.safetensors\n",
                     path.c_str());
        std::printf("%d passed, %d failed\n", passed, failed);
        return EXIT_FAILURE;
    }
    uform_executor_t ram = nullptr, local = nullptr;
    uform_arena_t arena = nullptr;
    CHECK(uform_executor_init_ram(nullptr, 0, uform_cpu_class_auto_k, 2, &ram, nullptr) == uform_status_ok_k);
    CHECK(uform_executor_init_local(&local, nullptr) == uform_status_ok_k);
    CHECK(uform_arena_init(nullptr, &arena, nullptr) == uform_status_ok_k);

    // The counter counts: the first call into a fresh arena allocates its block.
    uform_encoded_t first{};
    CHECK(!counting || allocations_of([&] {
                           CHECK(uform_text_encode(model, nullptr, texts_data, sizeof(texts_data) - 1, texts_offsets,
                                                   texts_count, uform_outputs_embeddings_k, nullptr, arena, &first,
                                                   nullptr, nullptr) == uform_status_ok_k);
                       }) > 0);

    refusals(model, local, arena);
    steady_verbs(model, nullptr, arena, "on the calling thread");
    steady_verbs(model, ram, arena, "on a RAM executor");
    steady_verbs(model, local, arena, "on a local executor");
    steady_deferred(model, ram, arena, "on a RAM executor");
    steady_deferred(model, local, arena, "on a local executor");
    // An int8 model: its products quantize rows into the executor's scratch, never into fresh memory.
    uform_model_load_ram_args_t int8_load = load;
    int8_load.quantization = uform_scalar_i8_k;
    uform_model_t int8_model = nullptr;
    if (CHECK(uform_model_load_ram(&int8_load, &int8_model, nullptr) == uform_status_ok_k)) {
        steady_verbs(int8_model, nullptr, arena, "int8 model on the calling thread");
        steady_verbs(int8_model, ram, arena, "int8 model on a RAM executor");
        uform_model_free(int8_model);
    }
    // VRAM: a model on a simulated (stub) or real device, its executor and a device arena.
    std::size_t gpus = 0;
    CHECK(uform_gpu_devices(nullptr, 0, &gpus, nullptr) == uform_status_ok_k);
    if (gpus) {
        std::size_t device = 0;
        uform_executor_t vram = nullptr;
        uform_arena_t device_arena = nullptr;
        uform_model_t device_model = nullptr;
        uform_model_load_vram_args_t vram_load{};
        vram_load.path = path.c_str();
        vram_load.path_length = path.size();
        CHECK(uform_executor_init_vram(&device, 1, uform_gpu_class_auto_k, nullptr, 0, nullptr, nullptr, 0, 0, &vram,
                                       nullptr) == uform_status_ok_k);
        vram_load.executor = vram;
        CHECK(uform_model_load_vram(&vram_load, &device_model, nullptr) == uform_status_ok_k);
        CHECK(uform_arena_init(vram, &device_arena, nullptr) == uform_status_ok_k);
        steady_verbs(device_model, vram, device_arena, "on a VRAM executor");
        steady_deferred(device_model, vram, device_arena, "on a VRAM executor");
        uform_arena_free(device_arena);
        uform_model_free(device_model);
        uform_executor_free(vram);
    }
    check_steady(
        "drain", 10, [&] { CHECK(uform_executor_drain(ram, uform_mood_sleeping_k, nullptr) == uform_status_ok_k); },
        __LINE__);

    uform_arena_free(arena);
    uform_executor_free(local);
    uform_executor_free(ram);
    uform_model_free(model);
#if !defined(UFORM_TEST_COUNTS_MALLOC)
    std::fprintf(stderr, "note: malloc is not counted in this build (sanitizers or not glibc); operator new is\n");
#endif
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
