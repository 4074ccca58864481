/**
 * @file encode.h
 * @brief The seven verbs of a model: six encoders, one per input form, and the choice scorer.
 *
 * Every verb is a batch. It takes, in order: the model; the executor it runs on (`NULL`: the calling
 * thread); its inputs as tapes; the outputs to keep; its argument struct (`NULL`: all defaults); the arena
 * its outputs land in; the struct that receives views of those outputs; a nullable outcome out-pointer;
 * and a nullable message out-pointer.
 *
 * Tapes: an input tape is `data`, `data_length` (in bytes, or values for samples), `offsets` and `count`:
 * item `i` spans `data[offsets[i]]` up to `data[offsets[i + 1]]`, so `offsets` holds `count + 1` ascending
 * entries not past `data_length`. `data` may be `NULL` only when `data_length` is zero. Paths in a tape
 * are the OS's bytes, without NUL terminators. A `NULL` `data` of nonzero length or `NULL` offsets of nonzero
 * count answer `uform_status_invalid_argument_k`; offsets that fall or pass `data_length` answer
 * `uform_status_shape_mismatch_k`, as do counts that disagree (choices against texts, per-item arrays).
 * Texts are bytes: they are not checked as UTF-8.
 *
 * Receivers: the executor and the arena must compute in the model's residency (RAM and local executors and
 * host arenas for a RAM model; VRAM executors sharing a device with the model, and their arenas, for a VRAM
 * model), else `uform_status_invalid_argument_k`.
 *
 * Blocking and deferred: with a `NULL` outcome the verb runs to its end before returning and touches no
 * outcome table. With an outcome out-pointer it validates its arguments, takes an outcome entry, submits
 * the call and answers `uform_status_deferred_k`; the inputs, the argument struct, the stats, the handler
 * context and the result struct must stay valid until the outcome is final (see types.h). Either way,
 * arguments are checked before anything runs, and a failure leaves the arena's previous rows untouched
 * only when the failure was found before the call started; a call that started and then failed (or was
 * cancelled) publishes nothing: the result struct's views stay empty. A failure found before the call
 * started writes nothing, the result struct included; a call that started empties the result struct first,
 * and fills it and the stats only on success (stats are left untouched by a failure or a cancellation). The
 * one exception is the media verbs' `failed_item`: every failure, found before the call started or after,
 * writes it when the args name a stats struct, so a batch that fails says which item did. A
 * deferred call with a `NULL` executor runs at once on the calling thread, its outcome final on return.
 *
 * The `@uform` lines are the Rust generator's annotations (tools/uform-gen/README.md, "Annotations").
 */
#ifndef UFORM_ENCODE_H
#define UFORM_ENCODE_H

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief The views an encoding verb answers, each empty (`data == NULL`) when its surface was left out.
 */
typedef struct uform_encoded_t {
    /** One unit row of `dimensions` columns per item; an empty item's row is zero. */
    uform_rows_t embeddings;
    /** A rows tape of `hidden` columns, one row per token of each item. */
    uform_rows_t states;
    /** A rows tape of `token_width` unit columns, one row per state. */
    uform_rows_t token_vectors;
} uform_encoded_t;

/* ---------------------------------------------------------------------------------------------------------- */
/* Text                                                                                                        */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief What `uform_text_encode` did, filled once the call is final. */
typedef struct uform_text_encode_stats_t {
    /** Items encoded. */
    size_t items;
    /** Tokens through the trunk, one per byte. */
    size_t tokens;
    /** Wall time of the call in nanoseconds. */
    uint64_t nanoseconds;
} uform_text_encode_stats_t;

/**
 * @brief The knobs of `uform_text_encode`; all-zero is the default.
 * @uform config TextEncode
 */
typedef struct uform_text_encode_args_t {
    /** The scalar every output lands as; `auto` is F32. `i8` and `b1` suit embeddings and token vectors only. */
    uform_scalar_t scalar;
    /** Nullable; receives what the call did. */
    uform_text_encode_stats_t *stats;
    /** Nullable; called with items completed and items in all. */
    uform_progress_t progress;
    /** Passed to `progress` untouched. */
    void *progress_context;
    /**
     * Most bytes of one text; zero takes 16,384. A longer text answers
     * `uform_status_limit_exceeded_k`, since a text's time grows with the square of its length; at most
     * 16,777,216 (`uform_status_invalid_argument_k` beyond). Memory grows linearly: while a text is encoded the
     * call holds about 36 x `hidden` bytes per byte of it (2.3 KB a byte at hidden 64, 9 KB at hidden 256), so the
     * default limit costs at most about 150 MB at hidden 256, and a raised one accordingly (1 MiB: about 9 GB).
     */
    size_t max_bytes;
} uform_text_encode_args_t;

/**
 * @brief Encodes UTF-8 texts, one token per byte.
 * @uform verb EncodeVerbs
 * @uform tape texts
 * @uform result encoded
 */
uform_status_t uform_text_encode(uform_model_t model, uform_executor_t executor, char const *texts, size_t texts_length,
                                 size_t const *texts_offsets, size_t texts_count, uform_outputs_t outputs,
                                 uform_text_encode_args_t const *args, uform_arena_t arena, uform_encoded_t *encoded,
                                 uform_outcome_t *outcome, char const **message);

/* ---------------------------------------------------------------------------------------------------------- */
/* Images                                                                                                      */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief What `uform_image_encode` or `uform_image_encode_pixels` did, filled once the call is final. */
typedef struct uform_image_encode_stats_t {
    /** Items encoded. */
    size_t items;
    /** Patches through the trunk. */
    size_t tokens;
    /** Pixels decoded or read, before resizing. */
    size_t pixels;
    /** The item whose input failed the call; `SIZE_MAX` when none or not item-specific. */
    size_t failed_item;
    /** Wall time of the call in nanoseconds. */
    uint64_t nanoseconds;
} uform_image_encode_stats_t;

/**
 * @brief The knobs of `uform_image_encode` and `uform_image_encode_pixels`; all-zero is the default.
 * @uform config ImageEncode
 */
typedef struct uform_image_encode_args_t {
    /** The scalar every output lands as; `auto` is F32. */
    uform_scalar_t scalar;
    /**
     * Patches per image at most; zero takes the checkpoint's `uform.image.max_patches`, which bounds it (a checkpoint
     * declares at most 65,536). However tall or wide an image, its grid stays within it.
     */
    size_t max_patches;
    /**
     * Decoded pixels per image at most; zero takes 100 million. Larger images fail with `limit-exceeded`. Beyond
     * the pixels themselves, resizing takes memory for the grid alone, not for the image's size.
     */
    size_t max_pixels;
    /** Nullable; receives what the call did. */
    uform_image_encode_stats_t *stats;
    /** Nullable; called with items completed and items in all. */
    uform_progress_t progress;
    /** Passed to `progress` untouched. */
    void *progress_context;
} uform_image_encode_args_t;

/**
 * @brief Encodes JPEG, PNG or WebP files named by a tape of paths.
 * A model without the image front-end answers `uform_status_unsupported_k`; a file in another format
 * `uform_status_corrupt_k`. FFmpeg decodes them and logs nothing (see the README's `UFORM_FFMPEG_LOG`).
 * @uform verb EncodeVerbs
 * @uform tape files paths
 * @uform result encoded
 */
uform_status_t uform_image_encode(uform_model_t model, uform_executor_t executor, char const *files,
                                  size_t files_length, size_t const *files_offsets, size_t files_count,
                                  uform_outputs_t outputs, uform_image_encode_args_t const *args, uform_arena_t arena,
                                  uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message);

/**
 * @brief Encodes interleaved 8-bit RGB pixels: item `i` is `heights[i]` rows of `widths[i]` pixels, so
 * its span of the tape must be `heights[i] * widths[i] * 3` bytes (`uform_status_shape_mismatch_k`
 * otherwise), and a zero height or width is `uform_status_invalid_argument_k`.
 * @uform verb EncodeVerbs
 * @uform tape pixels
 * @uform per-item heights
 * @uform per-item widths
 * @uform result encoded
 */
uform_status_t uform_image_encode_pixels(uform_model_t model, uform_executor_t executor, uint8_t const *pixels,
                                         size_t pixels_length, size_t const *pixels_offsets, size_t pixels_count,
                                         size_t const *heights, size_t const *widths, uform_outputs_t outputs,
                                         uform_image_encode_args_t const *args, uform_arena_t arena,
                                         uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message);

/* ---------------------------------------------------------------------------------------------------------- */
/* Video                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief What `uform_video_encode` did, filled once the call is final. */
typedef struct uform_video_encode_stats_t {
    /** Items encoded. */
    size_t items;
    /** Tubelets through the trunk. */
    size_t tokens;
    /** Frames sampled in all. */
    size_t frames;
    /** The item whose input failed the call; `SIZE_MAX` when none or not item-specific. */
    size_t failed_item;
    /** Wall time of the call in nanoseconds. */
    uint64_t nanoseconds;
} uform_video_encode_stats_t;

/**
 * @brief The knobs of `uform_video_encode`; all-zero is the default.
 * @uform config VideoEncode
 */
typedef struct uform_video_encode_args_t {
    /** The scalar every output lands as; `auto` is F32. */
    uform_scalar_t scalar;
    /** Frames per clip at most; zero takes the checkpoint's `uform.video.max_frames`, which bounds it. */
    size_t max_frames;
    /** Patches per frame at most; zero takes the checkpoint's, which bounds it. */
    size_t max_patches_per_frame;
    /** Nullable; receives what the call did. */
    uform_video_encode_stats_t *stats;
    /** Nullable; called with items completed and items in all. */
    uform_progress_t progress;
    /** Passed to `progress` untouched. */
    void *progress_context;
} uform_video_encode_args_t;

/**
 * @brief Encodes MP4 or WebM clips named by a tape of paths, streaming their frames.
 * A model without the video front-end answers `uform_status_unsupported_k`. Only MP4 (and its QuickTime family)
 * and Matroska/WebM containers are opened, as local files: an image, a playlist or a concatenation list is
 * `uform_status_corrupt_k`.
 * @uform verb EncodeVerbs
 * @uform tape files paths
 * @uform result encoded
 */
uform_status_t uform_video_encode(uform_model_t model, uform_executor_t executor, char const *files,
                                  size_t files_length, size_t const *files_offsets, size_t files_count,
                                  uform_outputs_t outputs, uform_video_encode_args_t const *args, uform_arena_t arena,
                                  uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message);

/* ---------------------------------------------------------------------------------------------------------- */
/* Audio                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief What `uform_audio_encode` or `uform_audio_encode_samples` did, filled once the call is final. */
typedef struct uform_audio_encode_stats_t {
    /** Items encoded. */
    size_t items;
    /** Patches through the trunk. */
    size_t tokens;
    /**
     * Seconds of audio read, at each input's own rate: all of a samples item, and of a file what was decoded, which
     * stops soon after the patch budget (so a truncated file counts little more than the budget's seconds).
     */
    double seconds;
    /** Items truncated to the patch budget: samples past `max_patches * frames_per_patch * hop` were dropped. */
    size_t truncated_items;
    /** The item whose input failed the call; `SIZE_MAX` when none or not item-specific. */
    size_t failed_item;
    /** Wall time of the call in nanoseconds. */
    uint64_t nanoseconds;
} uform_audio_encode_stats_t;

/**
 * @brief The knobs of `uform_audio_encode` and `uform_audio_encode_samples`; all-zero is the default.
 * @uform config AudioEncode
 */
typedef struct uform_audio_encode_args_t {
    /** The scalar every output lands as; `auto` is F32. */
    uform_scalar_t scalar;
    /** Patches per recording at most; zero takes the checkpoint's `uform.audio.max_patches`, which bounds it. */
    size_t max_patches;
    /** Nullable; receives what the call did. */
    uform_audio_encode_stats_t *stats;
    /** Nullable; called with items completed and items in all. */
    uform_progress_t progress;
    /** Passed to `progress` untouched. */
    void *progress_context;
} uform_audio_encode_args_t;

/**
 * @brief Encodes WAV, FLAC, MP3 or Opus (in Ogg) recordings named by a tape of paths.
 * A model without the audio front-end answers `uform_status_unsupported_k`; so does a recording whose sample rate
 * lies outside 1 kHz to 384 kHz. Another container (MP4, a playlist, a concatenation list) is
 * `uform_status_corrupt_k`, and so is a NaN, infinite or huge sample (beyond 2^32). Decoding stops once the patch
 * budget is covered: the rest of a long file is never read (nor checked for truncation).
 * @uform verb EncodeVerbs
 * @uform tape files paths
 * @uform result encoded
 */
uform_status_t uform_audio_encode(uform_model_t model, uform_executor_t executor, char const *files,
                                  size_t files_length, size_t const *files_offsets, size_t files_count,
                                  uform_outputs_t outputs, uform_audio_encode_args_t const *args, uform_arena_t arena,
                                  uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message);

/**
 * @brief Encodes mono `float` samples at `sample_rate` Hz, resampled to the model's rate.
 * A sample rate outside 1 kHz to 384 kHz, or a NaN, infinite or huge sample (its magnitude beyond 2^32, the range of
 * unnormalised 32-bit PCM), is `uform_status_invalid_argument_k`. An empty item is legal and has no tokens; a
 * nonempty one has at least one, however few its samples. Only the samples the patch budget covers are resampled.
 * @uform verb EncodeVerbs
 * @uform tape samples
 * @uform result encoded
 */
uform_status_t uform_audio_encode_samples(uform_model_t model, uform_executor_t executor, float const *samples,
                                          size_t samples_length, size_t const *samples_offsets, size_t samples_count,
                                          size_t sample_rate, uform_outputs_t outputs,
                                          uform_audio_encode_args_t const *args, uform_arena_t arena,
                                          uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message);

/* ---------------------------------------------------------------------------------------------------------- */
/* Choices                                                                                                     */
/* ---------------------------------------------------------------------------------------------------------- */

/** @brief What `uform_text_choose` did, filled once the call is final. */
typedef struct uform_text_choose_stats_t {
    /** Items scored. */
    size_t items;
    /** Tokens through the trunk, the CHOOSE token of each item included. */
    size_t tokens;
    /** Choices scored in all. */
    size_t choices;
    /** Wall time of the call in nanoseconds. */
    uint64_t nanoseconds;
} uform_text_choose_stats_t;

/**
 * @brief The knobs of `uform_text_choose`; all-zero is the default.
 * @uform config TextChoose
 */
typedef struct uform_text_choose_args_t {
    /** Each item's temperature group, below the model's `choice_temperature_groups`; empty puts all in 0. */
    size_t const *temperature_groups;
    /** Entries in `temperature_groups`: zero or the number of items. */
    size_t temperature_groups_count;
    /** Nullable; receives what the call did. */
    uform_text_choose_stats_t *stats;
    /** Nullable; called with items completed and items in all. */
    uform_progress_t progress;
    /** Passed to `progress` untouched. */
    void *progress_context;
    /**
     * Most bytes of one text; zero takes 16,384. A longer text answers
     * `uform_status_limit_exceeded_k`, since a text's time grows with the square of its length; at most
     * 16,777,216 (`uform_status_invalid_argument_k` beyond). Memory grows linearly: while a text is encoded the
     * call holds about 36 x `hidden` bytes per byte of it (2.3 KB a byte at hidden 64, 9 KB at hidden 256), so the
     * default limit costs at most about 150 MB at hidden 256, and a raised one accordingly (1 MiB: about 9 GB).
     */
    size_t max_bytes;
} uform_text_choose_args_t;

/**
 * @brief Scores each text's legal choices, one byte each, through one forward, answering a tape of one F32
 * probability per choice, in the order given, summing to one per item.
 *
 * `choices` is a tape with one item per text; each item's bytes are distinct and at least one
 * (`uform_status_invalid_argument_k` otherwise). A model without the byte head answers
 * `uform_status_unsupported_k`.
 * @uform verb ModelVerbs
 * @uform tape texts
 * @uform tape choices
 * @uform result probabilities
 */
uform_status_t uform_text_choose(uform_model_t model, uform_executor_t executor, char const *texts, size_t texts_length,
                                 size_t const *texts_offsets, size_t texts_count, char const *choices,
                                 size_t choices_length, size_t const *choices_offsets, size_t choices_count,
                                 uform_text_choose_args_t const *args, uform_arena_t arena, uform_tape_t *probabilities,
                                 uform_outcome_t *outcome, char const **message);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UFORM_ENCODE_H */
