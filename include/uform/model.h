/**
 * @file model.h
 * @brief Loading a UForm checkpoint into host memory or onto GPUs, and describing it.
 *
 * A model is immutable once loaded and may be shared by any number of threads and executors of its
 * residency at once. Freeing it waits for the calls reading it, and runs deferred calls that a local
 * executor still holds for it.
 */
#ifndef UFORM_MODEL_H
#define UFORM_MODEL_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief An opaque loaded model. */
typedef struct uform_model_s *uform_model_t;

/**
 * @brief The knobs of `uform_model_load_ram` and `uform_model_load_ram_buffer`; all-zero is the default.
 * @uform config ModelLoadRam
 */
typedef struct uform_model_load_ram_args_t {
    /** The checkpoint's path, as the OS's bytes (not NUL-terminated); read by `uform_model_load_ram`.
     *  @uform path path_length */
    char const *path;
    /** Bytes in `path`. */
    size_t path_length;
    /** The checkpoint's bytes, read by `uform_model_load_ram_buffer`; copied, so they may be freed once the
     *  call returns. @uform bytes buffer_length */
    void const *buffer;
    /** Bytes in `buffer`. */
    size_t buffer_length;
    /** The executor whose threads load and pack the weights; `NULL` loads on the calling thread. */
    uform_executor_t executor;
    /** NUMA nodes to place the weights on, interleaved; empty places them where the loading thread runs. */
    size_t const *numa_nodes;
    /** Entries in `numa_nodes`. */
    size_t numa_nodes_count;
    /** The CPU class to pin; `uform_cpu_class_auto_k` takes the executor's, else the hardware's own. */
    uform_cpu_class_t cpu_class;
    /** Weight blocks: `auto` and `bf16` keep the checkpoint's BF16; `e4m3` quantizes the trunk's linears to FP8
     *  E4M3 in 128 x 128 blocks; `i8` quantizes them to symmetric int8 in 128 x 128 blocks (one F32 scale each,
     *  `max|w| / 127`) and multiplies them by activations quantized to int8 at run time with a scale per row and
     *  block of 128 depths, on VNNI where the CPU class has it (embedding cosine about 0.999 of BF16's; see
     *  docs/decisions.md). Other scalars answer `uform_status_invalid_argument_k`. */
    uform_scalar_t quantization;
    /** Nullable; called with bytes loaded and bytes in all. */
    uform_progress_t progress;
    /** Passed to `progress` untouched. */
    void *progress_context;
} uform_model_load_ram_args_t;

/**
 * @brief The knobs of `uform_model_load_vram` and `uform_model_load_vram_buffer`; all-zero is the default.
 * @uform config ModelLoadVram
 */
typedef struct uform_model_load_vram_args_t {
    /** The checkpoint's path, as the OS's bytes (not NUL-terminated); read by `uform_model_load_vram`.
     *  @uform path path_length */
    char const *path;
    /** Bytes in `path`. */
    size_t path_length;
    /** The checkpoint's bytes, read by `uform_model_load_vram_buffer`; copied, so they may be freed once the
     *  call returns. @uform bytes buffer_length */
    void const *buffer;
    /** Bytes in `buffer`. */
    size_t buffer_length;
    /** The VRAM executor whose streams upload the weights; `NULL` uses a temporary stream per device. */
    uform_executor_t executor;
    /** Device ordinals to place the weights on (replicated); empty takes the executor's, else device 0. */
    size_t const *devices;
    /** Entries in `devices`. */
    size_t devices_count;
    /** The GPU class to pin; `uform_gpu_class_auto_k` takes the executor's, else the devices' own. */
    uform_gpu_class_t gpu_class;
    /** Weight blocks: `auto` and `bf16` keep the checkpoint's BF16, `e4m3` quantizes the trunk's linears; `i8`
     *  is for the RAM residency only and answers `uform_status_unsupported_k`. */
    uform_scalar_t quantization;
    /** Nullable; called with bytes loaded and bytes in all. */
    uform_progress_t progress;
    /** Passed to `progress` untouched. */
    void *progress_context;
} uform_model_load_vram_args_t;

/**
 * @brief Loads a safetensors checkpoint from `args->path` into host memory; the buffer fields are ignored.
 *
 * Fails with `not-found` or `io` for an unreadable file, `corrupt` for a malformed header, tensor table
 * or metadata, `unsupported` for an unknown `format` or `uform.version`, and `shape-mismatch` for a
 * tensor disagreeing with the metadata. A progress handler answering `true` fails it with `cancelled`.
 * @param args The knobs; the path is required.
 * @param model Receives the model; freed with `uform_model_free`.
 * @param message Nullable; receives a static message on failure.
 */
uform_status_t uform_model_load_ram(uform_model_load_ram_args_t const *args, uform_model_t *model,
                                    char const **message);

/**
 * @brief Loads a checkpoint from its bytes, `args->buffer` and `args->buffer_length`, into host memory; the
 * bytes are copied, so the buffer may be freed once this returns. The path is ignored.
 *
 * Fails with `invalid-argument` for a `NULL` buffer of nonzero length, and otherwise as
 * `uform_model_load_ram` does for a file of those bytes: `corrupt` for an empty or truncated buffer.
 * @param args The knobs; required.
 * @param model Receives the model; freed with `uform_model_free`.
 * @param message Nullable; receives a static message on failure.
 */
uform_status_t uform_model_load_ram_buffer(uform_model_load_ram_args_t const *args, uform_model_t *model,
                                           char const **message);

/**
 * @brief Loads a safetensors checkpoint from `args->path` onto GPUs; the buffer fields are ignored. Builds
 * without a GPU residency answer `uform_status_unsupported_k`. Fails otherwise as `uform_model_load_ram` does.
 */
uform_status_t uform_model_load_vram(uform_model_load_vram_args_t const *args, uform_model_t *model,
                                     char const **message);

/**
 * @brief Loads a checkpoint from its bytes, `args->buffer` and `args->buffer_length`, onto GPUs; the bytes
 * are copied. The path is ignored. Fails as `uform_model_load_ram_buffer` and `uform_model_load_vram` do.
 */
uform_status_t uform_model_load_vram_buffer(uform_model_load_vram_args_t const *args, uform_model_t *model,
                                            char const **message);

/**
 * @brief What a model is: its geometry from the checkpoint's metadata, where it lives, what it
 * dispatches as, and which heads and front-ends it carries.
 */
typedef struct uform_model_description_t {
    /** The checkpoint's `uform.version`. */
    uint32_t version;
    /** Trunk blocks. */
    size_t depth;
    /** Width of the token vectors flowing through the trunk. */
    size_t hidden;
    /** Attention heads. */
    size_t heads;
    /** Width of one head. */
    size_t head_dim;
    /** Width of the feed-forward hidden layer. */
    size_t ffn_hidden;
    /** The epsilon of every RMSNorm. */
    float norm_eps;
    /** RoPE's base. */
    float rope_theta;
    /** Rotary pairs given to the time, height and width positions. */
    size_t rope_sections[3];
    /** Columns of an embedding. */
    size_t dimensions;
    /** Columns of a token vector; zero without the token head. */
    size_t token_width;
    /** Temperature groups of the choice scorer; zero without the byte head. */
    size_t choice_temperature_groups;
    /** Patch side of images; zero without the image front-end. */
    size_t image_patch_side;
    /** Channels of images. */
    size_t image_channels;
    /** Patch budget of an image. */
    size_t image_max_patches;
    /** Frames per video tubelet; zero without the video front-end. */
    size_t video_tubelet_frames;
    /** Frames sampled per second of video. */
    float video_fps;
    /** Frames sampled per clip at most. */
    size_t video_max_frames;
    /** Patch budget of one video frame. */
    size_t video_max_patches_per_frame;
    /** Sample rate audio is resampled to; zero without the audio front-end. */
    size_t audio_sample_rate;
    /** Mel bins per log-mel frame. */
    size_t audio_mel_bins;
    /** Log-mel frames per audio patch. */
    size_t audio_frames_per_patch;
    /** Patch budget of a recording. */
    size_t audio_max_patches;
    /** Where the weights live. */
    uform_residency_t residency;
    /** NUMA nodes (RAM) or device ordinals (VRAM) holding the weights; the first `placement_count`. */
    size_t placement[16];
    /** Entries of `placement` in use. */
    size_t placement_count;
    /** The CPU class a RAM model dispatches as; `auto` for VRAM models. */
    uform_cpu_class_t cpu_class;
    /** The GPU class a VRAM model dispatches as; `auto` for RAM models. */
    uform_gpu_class_t gpu_class;
    /** How the trunk's linear weights are held: `bf16`, `e4m3` or `i8`. */
    uform_scalar_t quantization;
    /** Bytes the weights take where they live. */
    size_t weight_bytes;
} uform_model_description_t;

/** @brief Describes a model. */
uform_status_t uform_model_describe(uform_model_t model, uform_model_description_t *description, char const **message);

/**
 * @brief Waits for the calls reading a model, then frees it. Answers `uform_status_contended_k`, freeing
 * nothing, when called from a progress handler of a call reading it (see `uform_progress_t`).
 */
uform_status_t uform_model_free(uform_model_t model);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UFORM_MODEL_H */
