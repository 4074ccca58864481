/**
 * @file types.h
 * @brief UForm's shared vocabulary: statuses, enumerations, executors, arenas, rows and outcomes.
 *
 * Lifetime rules, shared by every header:
 * - A handle (`uform_executor_t`, `uform_arena_t`, `uform_model_t`, `uform_outcome_t`, ...) is owned by
 *   whoever received it from an `*_init*` / `*_load*` / `*_bootstrap` function and is released exactly once
 *   with the matching `*_free` / `*_release` function. Freeing `NULL` does nothing.
 * - Messages written through a `char const **message` out-pointer are static strings: never freed, never
 *   overwritten, valid for the life of the process. The out-pointer itself may be `NULL`.
 * - A blocking call (a verb called with a `NULL` outcome out-pointer) reads its inputs only while it runs.
 *   A deferred call (a non-`NULL` outcome out-pointer) reads its inputs, argument struct, handler context
 *   and writes its result struct until its outcome is final: the caller keeps all of them alive and
 *   unchanged until `uform_outcome_status` stops answering `uform_status_deferred_k`, or until
 *   `uform_outcome_wait` or `uform_outcome_release` returns.
 * - An executor and an arena serve one call at a time; a call finding another one holding either finishes
 *   at once with `uform_status_contended_k`, touching nothing.
 */
#ifndef UFORM_TYPES_H
#define UFORM_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------------------- */
/* Statuses                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

/**
 * @brief What a fallible function answers; zero is success.
 * @uform enum skip=ok
 */
typedef enum uform_status_t {
    /** Success. */
    uform_status_ok_k = 0,
    /** A deferred call was submitted or is not final yet; never a failure. */
    uform_status_deferred_k = 1,
    /** The executor or the arena named by the call serves another call. */
    uform_status_contended_k = 2,
    /** A progress handler asked to stop; nothing was published. */
    uform_status_cancelled_k = 3,
    /** The memory lives on a device and cannot be read from the host, or a device failed. */
    uform_status_device_k = 4,
    /** The build, the model or the residency lacks what the call asks for. */
    uform_status_unsupported_k = 5,
    /** Sizes disagree: offsets against data, pixels against heights and widths, tensors against metadata. */
    uform_status_shape_mismatch_k = 6,
    /** A null handle or pointer, a count out of range, an unknown enumerator, an edge outside the batch. */
    uform_status_invalid_argument_k = 7,
    /** An allocation failed. */
    uform_status_out_of_memory_k = 8,
    /** Reading or writing a file failed. */
    uform_status_io_k = 9,
    /** A checkpoint or a media file is malformed. */
    uform_status_corrupt_k = 10,
    /** A file, a tensor or a device does not exist. */
    uform_status_not_found_k = 11,
    /** The input exceeds a documented limit, such as the pixel limit of decoded images. */
    uform_status_limit_exceeded_k = 12,
    /** Waiting for peers, as in a mesh bootstrap, ran out of time. */
    uform_status_timeout_k = 13,
    /** A bug in UForm: please report it with the message. */
    uform_status_internal_k = 14,
} uform_status_t;

/** @brief The kebab-case name of a status, such as `"shape-mismatch"`; `NULL` for an unknown value. */
char const *uform_status_name(uform_status_t status);
/** @brief Parses a status name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_status_parse(char const *name, uform_status_t *status);

/* ---------------------------------------------------------------------------------------------------------- */
/* Scalars                                                                                                     */
/* ---------------------------------------------------------------------------------------------------------- */

/**
 * @brief The type of the values of a row, of weights at load, or of an output.
 * @uform enum
 */
typedef enum uform_scalar_t {
    /** Derived: F32 for outputs, BF16 for weights at load. */
    uform_scalar_auto_k = 0,
    /** IEEE 754 binary32. @uform rust=F32 */
    uform_scalar_f32_k = 1,
    /** IEEE 754 binary16. @uform rust=F16 */
    uform_scalar_f16_k = 2,
    /** Brain float 16, rounded to nearest even. @uform rust=BF16 */
    uform_scalar_bf16_k = 3,
    /** OCP FP8 E4M3 (`float8_e4m3fn`), saturating. @uform rust=E4M3 */
    uform_scalar_e4m3_k = 4,
    /** OCP FP8 E5M2, saturating. @uform rust=E5M2 */
    uform_scalar_e5m2_k = 5,
    /** Signed 8-bit `round(127 * x)`, saturating; only for unit rows (embeddings, token vectors). @uform rust=I8 */
    uform_scalar_i8_k = 6,
    /** Packed sign bits, one per column (`x > 0`), least significant bit first; only for unit rows. @uform rust=B1 */
    uform_scalar_b1_k = 7,
} uform_scalar_t;

/** @brief The name of a scalar, such as `"bf16"`; `NULL` for an unknown value. */
char const *uform_scalar_name(uform_scalar_t scalar);
/** @brief Parses a scalar name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_scalar_parse(char const *name, uform_scalar_t *scalar);
/** @brief Bytes taken by `columns` values of `scalar` (rounded up to whole bytes for `b1`); 0 for `auto`. */
size_t uform_scalar_bytes(uform_scalar_t scalar, size_t columns);

/* ---------------------------------------------------------------------------------------------------------- */
/* Moods, classes, modalities                                                                                  */
/* ---------------------------------------------------------------------------------------------------------- */

/**
 * @brief What an executor's idle threads do after a drain.
 * @uform enum
 */
typedef enum uform_mood_t {
    /** Idle threads keep spinning, for the lowest latency of the next call. */
    uform_mood_spinning_k = 0,
    /** Idle threads sleep on the OS until the next call wakes them. */
    uform_mood_sleeping_k = 1,
} uform_mood_t;

/** @brief The name of a mood, such as `"spinning"`; `NULL` for an unknown value. */
char const *uform_mood_name(uform_mood_t mood);
/** @brief Parses a mood name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_mood_parse(char const *name, uform_mood_t *mood);

/**
 * @brief The CPU kernels a RAM model dispatches as, named after NumKong's capability levels.
 * @uform enum
 */
typedef enum uform_cpu_class_t {
    /** Derived from the hardware the process runs on. */
    uform_cpu_class_auto_k = 0,
    /** The portable floor: plain C++, no SIMD intrinsics. */
    uform_cpu_class_serial_k = 1,
    /** x86-64 with AVX2 and FMA. */
    uform_cpu_class_intel_haswell_k = 2,
    /** x86-64 with AVX-512 F, BW, DQ, VL. */
    uform_cpu_class_intel_skylake_k = 3,
    /** x86-64 with AVX-512 VNNI, VBMI and friends. */
    uform_cpu_class_intel_icelake_k = 4,
    /** x86-64 with AVX-512 FP16. */
    uform_cpu_class_intel_sapphire_rapids_k = 5,
    /** x86-64 with AVX-512 BF16. */
    uform_cpu_class_amd_genoa_k = 6,
    /** x86-64 with AVX-512 VP2INTERSECT and AVX-512 BF16. */
    uform_cpu_class_amd_turin_k = 7,
    /** AArch64 with NEON. */
    uform_cpu_class_arm_neon_k = 8,
    /** AArch64 with SVE. */
    uform_cpu_class_arm_sve_k = 9,
    /** AArch64 with SVE2. */
    uform_cpu_class_arm_sve2_k = 10,
    /** AArch64 with SME. */
    uform_cpu_class_arm_sme_k = 11,
    /** WebAssembly with relaxed 128-bit SIMD. */
    uform_cpu_class_wasm_v128_relaxed_k = 12,
    /** WebAssembly with 128-bit SIMD (`-msimd128`), the class of the wasm32-wasip1 build. */
    uform_cpu_class_wasm_simd128_k = 13,
} uform_cpu_class_t;

/** @brief The name of a CPU class, such as `"intel-haswell"`; `NULL` for an unknown value. */
char const *uform_cpu_class_name(uform_cpu_class_t cpu_class);
/** @brief Parses a CPU class name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_cpu_class_parse(char const *name, uform_cpu_class_t *cpu_class);

/**
 * @brief The GPU kernels a VRAM model or a trainer dispatches as.
 * @uform enum
 */
typedef enum uform_gpu_class_t {
    /** Derived from the devices named. */
    uform_gpu_class_auto_k = 0,
    /** NVIDIA compute capability 8.0 and 8.6. */
    uform_gpu_class_nvidia_ampere_k = 1,
    /** NVIDIA compute capability 8.9. */
    uform_gpu_class_nvidia_ada_k = 2,
    /** NVIDIA compute capability 9.0. */
    uform_gpu_class_nvidia_hopper_k = 3,
    /** NVIDIA compute capability 10.0 and 12.0. */
    uform_gpu_class_nvidia_blackwell_k = 4,
    /** AMD CDNA 3 (MI300: gfx942). */
    uform_gpu_class_amd_cdna3_k = 5,
    /** AMD CDNA 2 (MI200: gfx90a). */
    uform_gpu_class_amd_cdna2_k = 6,
} uform_gpu_class_t;

/** @brief The name of a GPU class, such as `"nvidia-hopper"`; `NULL` for an unknown value. */
char const *uform_gpu_class_name(uform_gpu_class_t gpu_class);
/** @brief Parses a GPU class name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_gpu_class_parse(char const *name, uform_gpu_class_t *gpu_class);

/**
 * @brief Where memory and compute live.
 * @uform enum
 */
typedef enum uform_residency_t {
    /** Host memory and CPU threads. */
    uform_residency_ram_k = 0,
    /** Device memory and GPU streams. */
    uform_residency_vram_k = 1,
} uform_residency_t;

/** @brief The name of a residency, such as `"vram"`; `NULL` for an unknown value. */
char const *uform_residency_name(uform_residency_t residency);
/** @brief Parses a residency name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_residency_parse(char const *name, uform_residency_t *residency);

/**
 * @brief The kind of content an item holds.
 * @uform enum
 */
typedef enum uform_modality_t {
    /** UTF-8 text, one token per byte. */
    uform_modality_text_k = 0,
    /** A JPEG, PNG or WebP image. */
    uform_modality_image_k = 1,
    /** An MP4 or WebM clip. */
    uform_modality_video_k = 2,
    /** A WAV, FLAC, MP3 or Opus recording. */
    uform_modality_audio_k = 3,
} uform_modality_t;

/** @brief The name of a modality, such as `"image"`; `NULL` for an unknown value. */
char const *uform_modality_name(uform_modality_t modality);
/** @brief Parses a modality name; answers `uform_status_invalid_argument_k` for an unknown name. */
uform_status_t uform_modality_parse(char const *name, uform_modality_t *modality);

/**
 * @brief The surfaces an encoding verb keeps; a surface left out is never computed.
 * @uform flags
 */
typedef enum uform_outputs_t {
    /** Pooled unit embeddings, one row per item. Zero outputs mean this one. */
    uform_outputs_embeddings_k = 1,
    /** The final-normed trunk outputs, one row per token, as a rows tape. */
    uform_outputs_states_k = 2,
    /** The token head's unit rows, one per state, as a rows tape. */
    uform_outputs_token_vectors_k = 4,
} uform_outputs_t;

/* ---------------------------------------------------------------------------------------------------------- */
/* Handlers                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

/**
 * @brief A progress handler: called with the units completed so far and the total.
 *
 * Answers `false` to continue and `true` to stop the call, which then fails with
 * `uform_status_cancelled_k` and publishes nothing. It runs on one of the executor's threads, never on two
 * at once for one call; `context` is the argument struct's `progress_context`, passed through untouched.
 * A handler must not unwind (throw or panic) into the library. Within one long item (a text of many bytes) it is
 * called again with the same `completed`, at least every ~50 ms of work, so that it can stop that item too.
 *
 * A handler may call the library: a verb it calls runs with scratch of its own (calls nest up to 8 deep; deeper
 * ones answer `uform_status_contended_k`), and naming the executor, arena or trainer of the call it runs inside
 * answers `uform_status_contended_k` at once, as any contention does. What would wait for the handler itself
 * answers `uform_status_contended_k` at once and changes nothing: draining or freeing that call's executor,
 * freeing its arena, model or trainer, and waiting on or releasing its own outcome or one queued on its
 * executor. Free them after the call. One nesting stays outside what the library can see: a handler that submits a
 * deferred call to another executor and waits on it there; that call's own handler runs on the other executor's
 * threads, and must not drain, free or wait on what the calls enclosing it hold, or the wait never ends.
 */
typedef bool (*uform_progress_t)(void *context, size_t completed, size_t total);

/* ---------------------------------------------------------------------------------------------------------- */
/* Executors                                                                                                   */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief An opaque executor: the threads or streams calls run on, with their scratch memory. */
typedef struct uform_executor_s *uform_executor_t;

/**
 * @brief Makes an executor of host threads for the RAM residency.
 * @param numa_nodes NUMA nodes to interleave threads across; `NULL` with a zero count takes the process's.
 * @param numa_nodes_count Entries in `numa_nodes`.
 * @param cpu_class The CPU class to dispatch as; `uform_cpu_class_auto_k` derives the hardware's own.
 *        A class the hardware lacks answers `uform_status_unsupported_k`.
 * @param threads Threads to own, the caller's excluded; zero takes 7/8 of the cores (at least one).
 * @param executor Receives the executor; freed with `uform_executor_free`.
 * @param message Nullable; receives a static message on failure.
 */
uform_status_t uform_executor_init_ram(size_t const *numa_nodes, size_t numa_nodes_count, uform_cpu_class_t cpu_class,
                                       size_t threads, uform_executor_t *executor, char const **message);

/**
 * @brief Makes an executor of device streams for the VRAM residency, one stream per device.
 * @param devices Device ordinals, positions in `uform_gpu_devices`' answer; at least one.
 * @param devices_count Entries in `devices`.
 * @param gpu_class The GPU class to dispatch as; `uform_gpu_class_auto_k` derives it from the devices.
 * @param streams Borrowed streams (`cudaStream_t` or `hipStream_t`), one per device, or `NULL` to own new ones.
 *        Borrowing answers `uform_status_unsupported_k` until it is designed.
 * @param streams_count Entries in `streams`: zero or `devices_count`.
 * @param memory_pool A borrowed device memory pool (`cudaMemPool_t`) to take memory from, or `NULL`.
 *        Borrowing answers `uform_status_unsupported_k` until it is designed.
 * @param scratch_bytes Activation scratch to reserve per device up front; `NULL` grows it on demand.
 * @param scratch_bytes_count Entries in `scratch_bytes`: zero or `devices_count`.
 * @param pinned_bytes Pinned host staging to reserve up front; zero grows it on demand.
 * @param executor Receives the executor; freed with `uform_executor_free`.
 * @param message Nullable; receives a static message on failure.
 * Builds without a GPU residency answer `uform_status_unsupported_k`.
 */
uform_status_t uform_executor_init_vram(size_t const *devices, size_t devices_count, uform_gpu_class_t gpu_class,
                                        void *const *streams, size_t streams_count, void *memory_pool,
                                        size_t const *scratch_bytes, size_t scratch_bytes_count, size_t pinned_bytes,
                                        uform_executor_t *executor, char const **message);

/**
 * @brief Makes an executor over a borrowed ForkUnion pool (`fu_pool_t *`), which must outlive it.
 * @param numa_nodes NUMA nodes the pool's threads span; `NULL` with a zero count for all.
 * @param numa_nodes_count Entries in `numa_nodes`.
 * @param cpu_class The CPU class to dispatch as; `uform_cpu_class_auto_k` derives the hardware's own.
 * @param pool The borrowed pool.
 * @param threads Threads of the pool to use; zero takes all.
 * @param executor Receives the executor.
 * @param message Nullable; receives a static message on failure.
 * Answers `uform_status_unsupported_k` until borrowing pools is designed.
 */
uform_status_t uform_executor_init_pool(size_t const *numa_nodes, size_t numa_nodes_count, uform_cpu_class_t cpu_class,
                                        void *pool, size_t threads, uform_executor_t *executor, char const **message);

/**
 * @brief Makes an executor that owns no threads and runs calls on the calling thread.
 *
 * A deferred call submitted to it is held until its `uform_outcome_wait`, the executor's next
 * `uform_executor_drain` or blocking call, or the free of the executor, model or arena it names, whichever
 * comes first; `uform_outcome_status` alone never runs it. The held call holds the executor, so another
 * deferred call submitted meanwhile finishes at once with `uform_status_contended_k`.
 */
uform_status_t uform_executor_init_local(uform_executor_t *executor, char const **message);

/** @brief The residency an executor computes in. */
uform_status_t uform_executor_residency(uform_executor_t executor, uform_residency_t *residency, char const **message);

/** @brief The threads (RAM) or devices (VRAM) an executor owns; zero for a local executor. */
uform_status_t uform_executor_width(uform_executor_t executor, size_t *width, char const **message);

/**
 * @brief Waits until no call holds the executor (running held deferred calls first), then idles in `mood`.
 * Answers the failure of a held deferred call it ran, if any, which its outcome reports too. From a progress
 * handler of a call holding the executor it answers `uform_status_contended_k` at once.
 */
uform_status_t uform_executor_drain(uform_executor_t executor, uform_mood_t mood, char const **message);

/**
 * @brief Drains and frees an executor. If a VRAM arena made by it is still alive, the executor is freed
 * when the last such arena is, and this call returns at once. Answers `uform_status_contended_k`, freeing
 * nothing, when called from a progress handler of a call that holds the executor (see `uform_progress_t`).
 */
uform_status_t uform_executor_free(uform_executor_t executor);

/**
 * @brief One GPU the process can drive.
 */
typedef struct uform_gpu_device_t {
    /** The device's name, NUL-terminated. */
    char name[128];
    /** The class the device dispatches as. */
    uform_gpu_class_t gpu_class;
    /** Device memory in bytes. */
    size_t memory_bytes;
    /** Streaming multiprocessors or compute units. */
    size_t multiprocessors;
    /** PCI bus identifier, such as `"0000:1b:00.0"`, NUL-terminated. */
    char pci_bus_id[32];
} uform_gpu_device_t;

/**
 * @brief Fills up to `capacity` entries of `devices` and answers in `count` how many GPUs the process can
 * drive, which may exceed `capacity`. A device's position is the ordinal `for_vram` and `load_vram` take.
 * Builds without a GPU residency answer zero devices.
 * @uform slice devices capacity
 */
uform_status_t uform_gpu_devices(uform_gpu_device_t *devices, size_t capacity, size_t *count, char const **message);

/* ---------------------------------------------------------------------------------------------------------- */
/* Arenas and rows                                                                                             */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief An opaque arena: the memory that outputs of calls land in, rewound by each call. */
typedef struct uform_arena_s *uform_arena_t;

/**
 * @brief Makes an arena where `executor` computes, or host pages when `executor` is `NULL`.
 *
 * An arena allocates only when a call writes into it, growing to a high-water mark; each call rewinds it,
 * so the previous call's rows die. An arena of a VRAM executor holds device memory and keeps its
 * executor alive until the arena is freed.
 */
uform_status_t uform_arena_init(uform_executor_t executor, uform_arena_t *arena, char const **message);

/** @brief The residency of an arena's memory. */
uform_status_t uform_arena_residency(uform_arena_t arena, uform_residency_t *residency, char const **message);

/** @brief Bytes an arena holds now, its high-water mark. */
uform_status_t uform_arena_capacity(uform_arena_t arena, size_t *bytes, char const **message);

/**
 * @brief Waits for the calls writing into an arena, then frees it. Answers `uform_status_contended_k`, freeing
 * nothing, when called from a progress handler of the call writing into it (see `uform_progress_t`).
 */
uform_status_t uform_arena_free(uform_arena_t arena);

/**
 * @brief A view of rows an arena holds: `count` rows of `columns` values of `scalar`, `stride` bytes apart.
 *
 * For a rows tape, `offsets` holds `items + 1` ascending row indices: item `i` spans rows `offsets[i]` up to
 * `offsets[i + 1]`. For rows of one per item, `offsets` is `NULL` and `items == count`. When `residency` is
 * `uform_residency_vram_k`, `data` and `offsets` point into device memory of device `device`.
 * A view is valid until the arena's next call or free. A surface not computed has `data == NULL` and zero
 * `count`, `columns` and `items`.
 */
typedef struct uform_rows_t {
    /** The first row. */
    void *data;
    /** Row indices bounding each item, `items + 1` of them; `NULL` for one row per item. */
    size_t const *offsets;
    /** Rows in all. */
    size_t count;
    /** Items the rows belong to. */
    size_t items;
    /** Values per row. */
    size_t columns;
    /** Bytes between the starts of consecutive rows. */
    size_t stride;
    /** The type of the values. */
    uform_scalar_t scalar;
    /** Where `data` and `offsets` live. */
    uform_residency_t residency;
    /** The device ordinal for VRAM rows, zero for RAM rows. */
    size_t device;
} uform_rows_t;

/**
 * @brief A view of a tape an arena holds: `items` runs of values of `scalar`, item `i` spanning values
 * `offsets[i]` up to `offsets[i + 1]`. Valid until the arena's next call or free.
 */
typedef struct uform_tape_t {
    /** The first value. */
    void *data;
    /** Value indices bounding each item, `items + 1` of them. */
    size_t const *offsets;
    /** Items in the tape. */
    size_t items;
    /** The type of the values. */
    uform_scalar_t scalar;
    /** Where `data` and `offsets` live. */
    uform_residency_t residency;
    /** The device ordinal for VRAM tapes, zero for RAM tapes. */
    size_t device;
} uform_tape_t;

/* ---------------------------------------------------------------------------------------------------------- */
/* Outcomes of deferred calls                                                                                  */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief An opaque outcome of a deferred call, taken from the library's outcome table. */
typedef struct uform_outcome_s *uform_outcome_t;

/**
 * @brief Polls a deferred call without blocking: `uform_status_deferred_k` while it is not final, then its
 * final status and message (success as `uform_status_ok_k`). Never runs a held call.
 */
uform_status_t uform_outcome_status(uform_outcome_t outcome, char const **message);

/**
 * @brief Blocks without spinning until a deferred call is final (running it on the calling thread if its
 * executor holds it), then answers its final status and message. From a progress handler of that call, or of
 * a call holding its executor, it answers `uform_status_contended_k` at once (see `uform_progress_t`).
 */
uform_status_t uform_outcome_wait(uform_outcome_t outcome, char const **message);

/**
 * @brief Waits for a deferred call, then returns its entry to the outcome table. Answers
 * `uform_status_contended_k`, releasing nothing, where `uform_outcome_wait` would.
 */
uform_status_t uform_outcome_release(uform_outcome_t outcome);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UFORM_TYPES_H */
