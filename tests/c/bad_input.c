/**
 * @file bad_input.c
 * @brief Every class of bad input a caller can pass, each asserting the exact status the headers document.
 *
 * Where the headers leave the status open, these tests choose, and the ABI layer (`c/`) aligns. The rule
 * (the one `common/checks.hpp` states): null handles, pointers and counted arrays, unknown enumerators and single
 * values out of range are `invalid-argument`; offsets that fall or leave their data, and counts that disagree
 * with each other, are `shape-mismatch` (types.h: "sizes disagree"). In detail:
 *  1. Tape offsets that fall (descend) are `shape-mismatch`, as are offsets past `data_length`: both are
 *     "offsets against data" (types.h, `uform_status_shape_mismatch_k`).
 *  2. A `NULL` `data` with a nonzero `data_length`, and `NULL` offsets with a nonzero count, are
 *     `invalid-argument` (null pointers).
 *  3. An empty batch (`count == 0`, offsets `{0}`) is legal and answers empty rows; offsets need not start at
 *     zero (a tape may skip a prefix of its data). (text.c)
 *  4. A zero height or width whose span is consistent (zero bytes) is `invalid-argument`, as encode.h says;
 *     a span disagreeing with `heights[i] * widths[i] * 3` is `shape-mismatch`.
 *  5. Unknown `outputs` bits, unknown scalars, and `i8` or `b1` for STATES are `invalid-argument`, as are
 *     paths that are empty or hold a NUL byte.
 *  6. Counts that disagree are `shape-mismatch`: `choices_count` against `texts_count`, temperature groups
 *     neither zero nor one per item, an edge set's `offsets_count` neither zero nor items + 1, `weights_count`
 *     neither zero nor `ids_count`, `ids_count` against the last offset, bags, sides and choices counts
 *     neither zero nor the step's items, choice targets shaped unlike the choices (another count, other
 *     offsets, or targets without choices), streams or scratch sizes neither zero nor one per device.
 *  7. Single values out of range are `invalid-argument`: a temperature group at or past the model's, an edge
 *     id at or past the step's items, a self loop, a weight not finite and positive, an unknown side or
 *     modality, an empty or repeated choice byte, choice targets negative, NaN or not summing to one
 *     (within 1e-3).
 *  8. Falling edge offsets are `shape-mismatch`, as for tapes.
 *  9. Receivers outside the model's residency are `invalid-argument` (encode.h, "Receivers"), as are choices
 *     on a step's item that is not text.
 * 10. A refusal found before a call starts leaves the arena's previous rows untouched, and a deferred
 *     call refused that way answers the status itself, writing no outcome.
 * 11. A trainer step refused before it starts does not count as a step.
 * 12. A failure found before the call started writes nothing: neither the result struct nor the stats.
 */
#include "common.h"

#include <float.h>

static uform_model_t model = NULL;
static uform_executor_t ram = NULL;
static uform_arena_t arena = NULL;
static uform_encoded_t encoded;
static char const *const texts[] = {"a cat on a mat", "a dog in the fog", "", "x"};
static test_tape_t tape;

/* ---------------------------------------------------------------------------------------------------------- */
/* Encoding verbs                                                                                              */
/* ---------------------------------------------------------------------------------------------------------- */

static uform_status_t text(char const *data, size_t length, size_t const *offsets, size_t count,
                           uform_outputs_t outputs, uform_scalar_t scalar) {
    uform_text_encode_args_t args;
    memset(&args, 0, sizeof(args));
    args.scalar = scalar;
    return uform_text_encode(model, ram, data, length, offsets, count, outputs, &args, arena, &encoded, NULL, MSG);
}

static void null_handles(void) {
    uform_tape_t probabilities;
    uform_outcome_t outcome = NULL;
    size_t h = 1, w = 1, pixel_offsets[2] = {0, 3}, sample_offsets[2] = {0, 2};
    float samples[2] = {0.1f, 0.2f};
    char const *path = tiny_path();
    size_t path_offsets[2];
    path_offsets[0] = 0;
    path_offsets[1] = strlen(path);

    /* The model, the arena and the result are required; the executor and the arguments are not. */
    CHECK_STATUS(uform_text_encode(NULL, ram, tape.data, tape.length, tape.offsets, tape.count,
                                   uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, tape.count,
                                   uform_outputs_embeddings_k, NULL, NULL, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, tape.count,
                                   uform_outputs_embeddings_k, NULL, arena, NULL, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_text_encode(NULL, ram, tape.data, tape.length, tape.offsets, tape.count,
                                   uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, NULL),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_text_encode(NULL, ram, tape.data, tape.length, tape.offsets, tape.count,
                                   uform_outputs_embeddings_k, NULL, arena, &encoded, &outcome, MSG),
                 uform_status_invalid_argument_k);
    CHECK(outcome == NULL);

    CHECK_STATUS(uform_image_encode_pixels(NULL, NULL, (uint8_t const *)"abc", 3, pixel_offsets, 1, &h, &w,
                                           uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_image_encode_pixels(model, NULL, (uint8_t const *)"abc", 3, pixel_offsets, 1, &h, &w,
                                           uform_outputs_embeddings_k, NULL, NULL, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_image_encode_pixels(model, NULL, (uint8_t const *)"abc", 3, pixel_offsets, 1, &h, &w,
                                           uform_outputs_embeddings_k, NULL, arena, NULL, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_audio_encode_samples(NULL, NULL, samples, 2, sample_offsets, 1, 16000,
                                            uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_audio_encode_samples(model, NULL, samples, 2, sample_offsets, 1, 16000,
                                            uform_outputs_embeddings_k, NULL, NULL, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_audio_encode_samples(model, NULL, samples, 2, sample_offsets, 1, 16000,
                                            uform_outputs_embeddings_k, NULL, arena, NULL, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_image_encode(NULL, NULL, path, path_offsets[1], path_offsets, 1, uform_outputs_embeddings_k,
                                    NULL, arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_video_encode(NULL, NULL, path, path_offsets[1], path_offsets, 1, uform_outputs_embeddings_k,
                                    NULL, arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_audio_encode(NULL, NULL, path, path_offsets[1], path_offsets, 1, uform_outputs_embeddings_k,
                                    NULL, arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_image_encode(model, NULL, path, path_offsets[1], path_offsets, 1, uform_outputs_embeddings_k,
                                    NULL, NULL, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_video_encode(model, NULL, path, path_offsets[1], path_offsets, 1, uform_outputs_embeddings_k,
                                    NULL, arena, NULL, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_text_choose(NULL, NULL, tape.data, tape.length, tape.offsets, tape.count, tape.data, tape.length,
                                   tape.offsets, tape.count, NULL, arena, &probabilities, NULL, MSG),
                 uform_status_invalid_argument_k);

    /* Other handles. */
    {
        uform_model_description_t description;
        uform_residency_t residency;
        size_t bytes;
        CHECK_STATUS(uform_model_describe(NULL, &description, MSG), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_executor_drain(NULL, uform_mood_spinning_k, MSG), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_executor_residency(NULL, &residency, MSG), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_arena_residency(NULL, &residency, MSG), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_arena_capacity(NULL, &bytes, MSG), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_outcome_status(NULL, MSG), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_outcome_wait(NULL, MSG), uform_status_invalid_argument_k);
    }
}

/** Offsets that fall or leave the data, and null pointers, for the text tape. */
static void text_tapes(void) {
    size_t falling[5] = {0, 14, 10, 30, 31};
    size_t leaving_end[5] = {0, 14, 30, 30, 32};
    size_t leaving_middle[5] = {0, 14, 40, 40, 31};

    CHECK_STATUS(text(tape.data, tape.length, falling, 4, uform_outputs_embeddings_k, uform_scalar_f32_k),
                 uform_status_shape_mismatch_k);
    CHECK_STATUS(text(tape.data, tape.length, leaving_end, 4, uform_outputs_embeddings_k, uform_scalar_f32_k),
                 uform_status_shape_mismatch_k);
    CHECK_STATUS(text(tape.data, tape.length, leaving_middle, 4, uform_outputs_embeddings_k, uform_scalar_f32_k),
                 uform_status_shape_mismatch_k);
    /* The data shorter than the offsets say. */
    CHECK_STATUS(text(tape.data, tape.length - 1, tape.offsets, 4, uform_outputs_embeddings_k, uform_scalar_f32_k),
                 uform_status_shape_mismatch_k);
    /* Null pointers with nonzero sizes. */
    CHECK_STATUS(text(NULL, tape.length, tape.offsets, 4, uform_outputs_embeddings_k, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(text(tape.data, tape.length, NULL, 4, uform_outputs_embeddings_k, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
}

static void outputs_and_scalars(int with_success) {
    /* Unknown outputs bits. */
    CHECK_STATUS(text(tape.data, tape.length, tape.offsets, 4, (uform_outputs_t)8, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(text(tape.data, tape.length, tape.offsets, 4, (uform_outputs_t)(uform_outputs_embeddings_k | 16),
                      uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(text(tape.data, tape.length, tape.offsets, 4, (uform_outputs_t)0x40000000, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    /* Unknown scalars. */
    CHECK_STATUS(text(tape.data, tape.length, tape.offsets, 4, uform_outputs_embeddings_k, (uform_scalar_t)8),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(text(tape.data, tape.length, tape.offsets, 4, uform_outputs_embeddings_k, (uform_scalar_t)99),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(text(tape.data, tape.length, tape.offsets, 4, uform_outputs_embeddings_k, (uform_scalar_t)-1),
                 uform_status_invalid_argument_k);
    /* Scalars a surface cannot take: i8 and b1 suit unit rows only, never STATES. */
    CHECK_STATUS(text(tape.data, tape.length, tape.offsets, 4, uform_outputs_states_k, uform_scalar_i8_k),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(text(tape.data, tape.length, tape.offsets, 4, uform_outputs_states_k, uform_scalar_b1_k),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(
        text(tape.data, tape.length, tape.offsets, 4,
             (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k | uform_outputs_token_vectors_k),
             uform_scalar_b1_k),
        uform_status_invalid_argument_k);
    /* ... while unit rows take them. */
    if (with_success)
        CHECK_OK(text(tape.data, tape.length, tape.offsets, 4,
                      (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_token_vectors_k),
                      uform_scalar_i8_k));
}

static uform_status_t pixels_call(uint8_t const *data, size_t length, size_t const *offsets, size_t count,
                                  size_t const *heights, size_t const *widths, uform_outputs_t outputs,
                                  uform_scalar_t scalar) {
    uform_image_encode_args_t args;
    memset(&args, 0, sizeof(args));
    args.scalar = scalar;
    return uform_image_encode_pixels(model, ram, data, length, offsets, count, heights, widths, outputs, &args, arena,
                                     &encoded, NULL, MSG);
}

static void pixels(void) {
    static uint8_t data[2 * 3 * 3 + 4 * 4 * 3];
    size_t offsets[3] = {0, 18, 66};
    size_t heights[2] = {2, 4}, widths[2] = {3, 4};
    size_t zero_offsets[3] = {0, 0, 48};
    size_t zero_h[2] = {0, 4}, zero_w[2] = {3, 4};
    size_t falling[3] = {0, 18, 10};
    size_t leaving[3] = {0, 18, 67};
    uform_outputs_t e = uform_outputs_embeddings_k;
    size_t i;
    for (i = 0; i != sizeof(data); ++i) data[i] = (uint8_t)(i * 7);

    CHECK_OK(pixels_call(data, sizeof(data), offsets, 2, heights, widths, e, uform_scalar_f32_k));
    /* Heights and widths against the pixel bytes. */
    heights[0] = 3;
    CHECK_STATUS(pixels_call(data, sizeof(data), offsets, 2, heights, widths, e, uform_scalar_f32_k),
                 uform_status_shape_mismatch_k);
    heights[0] = 1;
    CHECK_STATUS(pixels_call(data, sizeof(data), offsets, 2, heights, widths, e, uform_scalar_f32_k),
                 uform_status_shape_mismatch_k);
    heights[0] = 2;
    widths[1] = 3;
    CHECK_STATUS(pixels_call(data, sizeof(data), offsets, 2, heights, widths, e, uform_scalar_f32_k),
                 uform_status_shape_mismatch_k);
    widths[1] = 4;
    /* Six bytes as 2x1 RGB is fine; as 1x1 it is not, nor as two grey pixels. */
    {
        size_t six[2] = {0, 6}, h2 = 2, w1 = 1, h1 = 1;
        CHECK_OK(pixels_call(data, 6, six, 1, &h2, &w1, e, uform_scalar_f32_k));
        CHECK_STATUS(pixels_call(data, 6, six, 1, &h1, &w1, e, uform_scalar_f32_k), uform_status_shape_mismatch_k);
    }
    /* Zero sizes. */
    CHECK_STATUS(pixels_call(data, 48, zero_offsets, 2, zero_h, zero_w, e, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    zero_h[0] = 2;
    zero_w[0] = 0;
    CHECK_STATUS(pixels_call(data, 48, zero_offsets, 2, zero_h, zero_w, e, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    /* Missing per-item arrays. */
    CHECK_STATUS(pixels_call(data, sizeof(data), offsets, 2, NULL, widths, e, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(pixels_call(data, sizeof(data), offsets, 2, heights, NULL, e, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    /* Offsets. */
    CHECK_STATUS(pixels_call(data, sizeof(data), falling, 2, heights, widths, e, uform_scalar_f32_k),
                 uform_status_shape_mismatch_k);
    CHECK_STATUS(pixels_call(data, sizeof(data), leaving, 2, heights, widths, e, uform_scalar_f32_k),
                 uform_status_shape_mismatch_k);
    CHECK_STATUS(pixels_call(NULL, sizeof(data), offsets, 2, heights, widths, e, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(pixels_call(data, sizeof(data), NULL, 2, heights, widths, e, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    /* Outputs and scalars. */
    CHECK_STATUS(pixels_call(data, sizeof(data), offsets, 2, heights, widths, (uform_outputs_t)8, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(pixels_call(data, sizeof(data), offsets, 2, heights, widths, e, (uform_scalar_t)8),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(
        pixels_call(data, sizeof(data), offsets, 2, heights, widths, uform_outputs_states_k, uform_scalar_i8_k),
        uform_status_invalid_argument_k);
    CHECK_STATUS(
        pixels_call(data, sizeof(data), offsets, 2, heights, widths, uform_outputs_states_k, uform_scalar_b1_k),
        uform_status_invalid_argument_k);
}

static uform_status_t samples_call(float const *data, size_t length, size_t const *offsets, size_t count, size_t rate,
                                   uform_outputs_t outputs, uform_scalar_t scalar) {
    uform_audio_encode_args_t args;
    memset(&args, 0, sizeof(args));
    args.scalar = scalar;
    return uform_audio_encode_samples(model, ram, data, length, offsets, count, rate, outputs, &args, arena, &encoded,
                                      NULL, MSG);
}

static void samples(void) {
    float data[400];
    size_t offsets[3] = {0, 200, 400};
    size_t falling[3] = {0, 200, 100};
    size_t leaving[3] = {0, 200, 401};
    uform_outputs_t e = uform_outputs_embeddings_k;
    size_t i;
    for (i = 0; i != 400; ++i) data[i] = (float)sin((double)i * 0.1);

    CHECK_OK(samples_call(data, 400, offsets, 2, 16000, e, uform_scalar_f32_k));
    /* Sample rate zero. */
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 0, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    /* Samples that are not finite, anywhere in any item. */
    data[17] = (float)NAN;
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 16000, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    data[17] = 0.0f;
    data[399] = (float)INFINITY;
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 16000, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    data[399] = -(float)INFINITY;
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 16000, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    /* Finite but beyond 2^32 (FLT_MAX made NaN embeddings with status ok); 2^32 itself is legal. */
    data[399] = FLT_MAX;
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 16000, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    data[399] = -4294967808.0f; /* the next float past -2^32 */
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 16000, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    data[399] = 4294967296.0f;
    CHECK_OK(samples_call(data, 400, offsets, 2, 16000, e, uform_scalar_f32_k));
    data[399] = 0.0f;
    /* Sample rates outside 1 kHz to 384 kHz (1 Hz made 3.1 GB of samples, 100 MHz 838 MB of filter bank). */
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 1, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 999, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 100000000, e, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
#if defined(__wasi__) /* no FFmpeg, so no resampling: only the model's rate is taken */
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 1000, e, uform_scalar_f32_k), uform_status_unsupported_k);
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 384000, e, uform_scalar_f32_k), uform_status_unsupported_k);
#else
    CHECK_OK(samples_call(data, 400, offsets, 2, 1000, e, uform_scalar_f32_k));
    CHECK_OK(samples_call(data, 400, offsets, 2, 384000, e, uform_scalar_f32_k));
#endif
    /* Offsets and null pointers. */
    CHECK_STATUS(samples_call(data, 400, falling, 2, 16000, e, uform_scalar_f32_k), uform_status_shape_mismatch_k);
    CHECK_STATUS(samples_call(data, 400, leaving, 2, 16000, e, uform_scalar_f32_k), uform_status_shape_mismatch_k);
    CHECK_STATUS(samples_call(NULL, 400, offsets, 2, 16000, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    CHECK_STATUS(samples_call(data, 400, NULL, 2, 16000, e, uform_scalar_f32_k), uform_status_invalid_argument_k);
    /* Outputs and scalars. */
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 16000, (uform_outputs_t)32, uform_scalar_f32_k),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 16000, e, (uform_scalar_t)42), uform_status_invalid_argument_k);
    CHECK_STATUS(samples_call(data, 400, offsets, 2, 16000, uform_outputs_states_k, uform_scalar_i8_k),
                 uform_status_invalid_argument_k);
}

static void file_tapes(void) {
    char const *path = tiny_path();
    size_t length = strlen(path);
    size_t offsets[3], falling[3], leaving[3];
    char paths[8400];
    uform_image_encode_args_t image_args;
    uform_video_encode_args_t video_args;
    uform_audio_encode_args_t audio_args;

    /* Two copies of an existing path, so that only the defect under test can refuse. */
    memcpy(paths, path, length);
    memcpy(paths + length, path, length);
    offsets[0] = 0, offsets[1] = length, offsets[2] = 2 * length;
    falling[0] = 0, falling[1] = length, falling[2] = length - 1;
    leaving[0] = 0, leaving[1] = length, leaving[2] = 2 * length + 1;
    memset(&image_args, 0, sizeof(image_args));
    memset(&video_args, 0, sizeof(video_args));
    memset(&audio_args, 0, sizeof(audio_args));

    CHECK_STATUS(uform_image_encode(model, ram, paths, 2 * length, falling, 2, uform_outputs_embeddings_k, NULL, arena,
                                    &encoded, NULL, MSG),
                 uform_status_shape_mismatch_k);
    CHECK_STATUS(uform_video_encode(model, ram, paths, 2 * length, leaving, 2, uform_outputs_embeddings_k, NULL, arena,
                                    &encoded, NULL, MSG),
                 uform_status_shape_mismatch_k);
    CHECK_STATUS(uform_audio_encode(model, ram, paths, 2 * length, falling, 2, uform_outputs_embeddings_k, NULL, arena,
                                    &encoded, NULL, MSG),
                 uform_status_shape_mismatch_k);
    CHECK_STATUS(uform_image_encode(model, ram, NULL, 2 * length, offsets, 2, uform_outputs_embeddings_k, NULL, arena,
                                    &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_audio_encode(model, ram, paths, 2 * length, NULL, 2, uform_outputs_embeddings_k, NULL, arena,
                                    &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_image_encode(model, ram, paths, 2 * length, offsets, 2, (uform_outputs_t)8, NULL, arena,
                                    &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    image_args.scalar = (uform_scalar_t)9;
    CHECK_STATUS(uform_image_encode(model, ram, paths, 2 * length, offsets, 2, uform_outputs_embeddings_k, &image_args,
                                    arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    video_args.scalar = uform_scalar_b1_k;
    CHECK_STATUS(uform_video_encode(model, ram, paths, 2 * length, offsets, 2, uform_outputs_states_k, &video_args,
                                    arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    /* Paths that cannot name a file: empty, or holding a NUL byte. */
    {
        size_t empty_second[3];
        char with_nul[8] = {'a', '.', 'p', 'n', 'g', '\0', 'x', 'y'};
        size_t nul_offsets[2] = {0, 8};
        empty_second[0] = 0, empty_second[1] = length, empty_second[2] = length;
        CHECK_STATUS(uform_image_encode(model, ram, paths, 2 * length, empty_second, 2, uform_outputs_embeddings_k,
                                        NULL, arena, &encoded, NULL, MSG),
                     uform_status_invalid_argument_k);
        CHECK_STATUS(uform_audio_encode(model, ram, with_nul, 8, nul_offsets, 1, uform_outputs_embeddings_k, NULL,
                                        arena, &encoded, NULL, MSG),
                     uform_status_invalid_argument_k);
        CHECK_STATUS(uform_video_encode(model, ram, with_nul, 8, nul_offsets, 1, uform_outputs_embeddings_k, NULL,
                                        arena, &encoded, NULL, MSG),
                     uform_status_invalid_argument_k);
    }
    audio_args.scalar = uform_scalar_i8_k;
    CHECK_STATUS(uform_audio_encode(model, ram, paths, 2 * length, offsets, 2,
                                    (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k), &audio_args,
                                    arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
}

static void choices(void) {
    static char const *const options[] = {"yn", "ABCD", "01", "z"};
    static char const *const empty_option[] = {"yn", "ABCD", "", "z"};
    static char const *const repeated_option[] = {"yn", "ABCD", "00", "z"};
    static char const *const three[] = {"yn", "ABCD", "01"};
    test_tape_t c;
    uform_tape_t probabilities;
    uform_text_choose_args_t args;
    size_t groups[4] = {0, 1, 0, 2};
    size_t falling[5] = {0, 2, 6, 5, 9};
    size_t leaving[5] = {0, 2, 6, 8, 10};

#define CHOOSE(choice_data, choice_length, choice_offsets, choice_count, arguments)                                    \
    uform_text_choose(model, ram, tape.data, tape.length, tape.offsets, tape.count, choice_data, choice_length,        \
                      choice_offsets, choice_count, arguments, arena, &probabilities, NULL, MSG)

    tape_of(&c, options, 4);
    CHECK_OK(CHOOSE(c.data, c.length, c.offsets, c.count, NULL));
    /* Temperature groups: out of range, counts neither zero nor the items, a missing array. */
    memset(&args, 0, sizeof(args));
    args.temperature_groups = groups;
    args.temperature_groups_count = 4;
    CHECK_STATUS(CHOOSE(c.data, c.length, c.offsets, c.count, &args), uform_status_invalid_argument_k);
    groups[3] = 1;
    CHECK_OK(CHOOSE(c.data, c.length, c.offsets, c.count, &args));
    args.temperature_groups_count = 2;
    CHECK_STATUS(CHOOSE(c.data, c.length, c.offsets, c.count, &args), uform_status_shape_mismatch_k);
    args.temperature_groups = NULL;
    args.temperature_groups_count = 4;
    CHECK_STATUS(CHOOSE(c.data, c.length, c.offsets, c.count, &args), uform_status_invalid_argument_k);
    /* Empty and repeated choices. */
    tape_of(&c, empty_option, 4);
    CHECK_STATUS(CHOOSE(c.data, c.length, c.offsets, c.count, NULL), uform_status_invalid_argument_k);
    tape_of(&c, repeated_option, 4);
    CHECK_STATUS(CHOOSE(c.data, c.length, c.offsets, c.count, NULL), uform_status_invalid_argument_k);
    /* A choices count unlike the texts'. */
    tape_of(&c, three, 3);
    CHECK_STATUS(CHOOSE(c.data, c.length, c.offsets, c.count, NULL), uform_status_shape_mismatch_k);
    /* Choice offsets that fall or leave the data; null pointers. */
    tape_of(&c, options, 4);
    CHECK_STATUS(CHOOSE(c.data, c.length, falling, 4, NULL), uform_status_shape_mismatch_k);
    CHECK_STATUS(CHOOSE(c.data, c.length, leaving, 4, NULL), uform_status_shape_mismatch_k);
    CHECK_STATUS(CHOOSE(NULL, c.length, c.offsets, 4, NULL), uform_status_invalid_argument_k);
    CHECK_STATUS(CHOOSE(c.data, c.length, NULL, 4, NULL), uform_status_invalid_argument_k);
#undef CHOOSE
    /* Text offsets that fall. */
    {
        size_t text_falling[5] = {0, 14, 13, 30, 31};
        CHECK_STATUS(uform_text_choose(model, ram, tape.data, tape.length, text_falling, 4, c.data, c.length, c.offsets,
                                       c.count, NULL, arena, &probabilities, NULL, MSG),
                     uform_status_shape_mismatch_k);
    }
}

/** A failure found before the call started writes nothing: neither the result struct nor the stats. */
static void writes_nothing(void) {
    uform_encoded_t sentinel, untouched;
    uform_text_encode_stats_t stats, untouched_stats;
    uform_text_encode_args_t args;
    uform_tape_t probabilities, untouched_probabilities;
    size_t falling[5] = {0, 14, 10, 30, 31};
    memset(&sentinel, 0x5A, sizeof(sentinel));
    memcpy(&untouched, &sentinel, sizeof(sentinel));
    memset(&stats, 0x5A, sizeof(stats));
    memcpy(&untouched_stats, &stats, sizeof(stats));
    memset(&args, 0, sizeof(args));
    args.stats = &stats;
    CHECK_STATUS(uform_text_encode(model, ram, tape.data, tape.length, falling, 4, uform_outputs_embeddings_k, &args,
                                   arena, &sentinel, NULL, MSG),
                 uform_status_shape_mismatch_k);
    CHECK(memcmp(&sentinel, &untouched, sizeof(sentinel)) == 0 && memcmp(&stats, &untouched_stats, sizeof(stats)) == 0);
    CHECK_STATUS(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, 4, (uform_outputs_t)8, &args,
                                   arena, &sentinel, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK(memcmp(&sentinel, &untouched, sizeof(sentinel)) == 0 && memcmp(&stats, &untouched_stats, sizeof(stats)) == 0);
    CHECK_STATUS(uform_text_encode(NULL, ram, tape.data, tape.length, tape.offsets, 4, uform_outputs_embeddings_k,
                                   &args, arena, &sentinel, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK(memcmp(&sentinel, &untouched, sizeof(sentinel)) == 0 && memcmp(&stats, &untouched_stats, sizeof(stats)) == 0);
    memset(&probabilities, 0x5A, sizeof(probabilities));
    memcpy(&untouched_probabilities, &probabilities, sizeof(probabilities));
    CHECK_STATUS(uform_text_choose(model, ram, tape.data, tape.length, tape.offsets, 4, tape.data, tape.length,
                                   tape.offsets, 4, NULL, arena, &probabilities, NULL, MSG),
                 uform_status_invalid_argument_k); /* the empty text has no choices */
    CHECK(memcmp(&probabilities, &untouched_probabilities, sizeof(probabilities)) == 0);
}

/** Every refusal above was found before its call started, so the rows already in the arena are intact. */
static void arena_untouched(float const *saved, void const *rows) {
    CHECK(rows != NULL && memcmp(saved, rows, 4 * 64 * sizeof(float)) == 0);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Training                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

static uform_executor_t vram = NULL;
static uform_trainer_t trainer = NULL;
static uform_modality_t modalities[4] = {uform_modality_text_k, uform_modality_text_k, uform_modality_text_k,
                                         uform_modality_text_k};
static char const *const contents[] = {"a cat", "a kitten", "a dog", "a puppy"};
static test_tape_t content_tape;

static uform_status_t step(uform_trainer_step_args_t const *args) {
    return uform_trainer_step(trainer, vram, modalities, content_tape.data, content_tape.length, content_tape.offsets,
                              content_tape.count, args, NULL, NULL, MSG);
}

static void training(void) {
    size_t count = 0, device = 0;
    uform_trainer_init_vram_args_t init;
    uform_trainer_step_args_t args, good;
    uform_trainer_step_stats_t stats;
    size_t offsets[5] = {0, 1, 2, 3, 4}, ids[4] = {1, 0, 3, 2};
    float weights[4] = {1.0f, 0.5f, 2.0f, 1.0f};
    uform_edges_t *sets[3];
    char const *set_names[3] = {"attract", "repel", "ignore"};
    int set;
    size_t bags[4] = {0, 0, 1, 1};
    uform_late_interaction_side_t sides[4] = {uform_late_interaction_side_query_k,
                                              uform_late_interaction_side_document_k,
                                              uform_late_interaction_side_none_k, uform_late_interaction_side_none_k};
    static char const *const options[] = {"yn", "", "", "AB"};
    test_tape_t choice_tape;
    float targets[4] = {0.75f, 0.25f, 0.5f, 0.5f};
    size_t target_offsets[5] = {0, 2, 2, 2, 4};

    CHECK_OK(uform_gpu_devices(NULL, 0, &count, MSG));
    if (count == 0) return;
    tape_of(&content_tape, contents, 4);
    tape_of(&choice_tape, options, 4);
    if (!CHECK_OK(uform_executor_init_vram(&device, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &vram, MSG)))
        return;
    memset(&init, 0, sizeof(init));
    init.depth = 2;
    init.hidden = 64;
    init.batch.max_rows_per_device = 8;
    init.batch.max_columns_per_row = 64;
    init.batch.image.patch_side = 16;
    init.seed = 42;
    if (!CHECK_OK(uform_trainer_init_vram(vram, &init, &trainer, MSG))) {
        uform_executor_free(vram);
        return;
    }

    /* A good step's arguments, mutated one defect at a time. */
    memset(&good, 0, sizeof(good));
    good.bags = bags;
    good.bags_count = 4;
    good.relations.attract.offsets = offsets;
    good.relations.attract.offsets_count = 5;
    good.relations.attract.ids = ids;
    good.relations.attract.ids_count = 4;
    good.relations.attract.weights = weights;
    good.relations.attract.weights_count = 4;
    good.sides = sides;
    good.sides_count = 4;
    good.choices = choice_tape.data;
    good.choices_length = choice_tape.length;
    good.choices_offsets = choice_tape.offsets;
    good.choices_count = 4;
    good.choice_targets = targets;
    good.choice_targets_length = 4;
    good.choice_targets_offsets = target_offsets;
    good.choice_targets_count = 4;
    good.stats = &stats;

    /* Edge sets, each of the three in turn. */
    for (set = 0; set != 3; ++set) {
        size_t short_offsets[4] = {0, 1, 2, 3}, falling[5] = {0, 2, 1, 3, 4};
        float bad_weights[4] = {1.0f, 1.0f, 1.0f, 1.0f};
        uform_edges_t *e;
        args = good;
        args.relations.attract.offsets_count = 0, args.relations.attract.ids_count = 0;
        args.relations.attract.weights_count = 0;
        args.relations.attract.offsets = NULL, args.relations.attract.ids = NULL, args.relations.attract.weights = NULL;
        sets[0] = &args.relations.attract;
        sets[1] = &args.relations.repel;
        sets[2] = &args.relations.ignore;
        e = sets[set];
        fprintf(stderr, "  edge set %s\n", set_names[set]);
        e->offsets = offsets, e->offsets_count = 5, e->ids = ids, e->ids_count = 4, e->weights = weights,
        e->weights_count = 4;
        CHECK_OK(step(&args));
        /* Ids outside the items, and self loops. */
        ids[2] = 4;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        ids[2] = (size_t)-1;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        ids[2] = 2;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        ids[2] = 3;
        /* An offsets count neither zero nor the items plus one. */
        e->offsets = short_offsets, e->offsets_count = 4, e->ids_count = 3, e->weights_count = 3;
        CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
        e->offsets = offsets, e->offsets_count = 5, e->ids_count = 4, e->weights_count = 4;
        /* Offsets that fall, and ids unlike the last offset. */
        e->offsets = falling;
        CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
        e->offsets = offsets;
        e->ids_count = 3, e->weights_count = 3;
        CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
        e->ids_count = 4, e->weights_count = 4;
        /* Weights: a count neither zero nor the ids', and values not finite and positive. */
        e->weights_count = 2;
        CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
        e->weights_count = 4;
        e->weights = bad_weights;
        bad_weights[1] = 0.0f;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        bad_weights[1] = -1.0f;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        bad_weights[1] = (float)NAN;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        bad_weights[1] = (float)INFINITY;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        e->weights = weights;
        /* Null arrays with nonzero counts. */
        e->offsets = NULL;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        e->offsets = offsets;
        e->ids = NULL;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        e->ids = ids;
        e->weights = NULL;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
        e->weights = weights;
    }

    /* Bags and sides: counts neither zero nor the items, missing arrays, unknown sides. */
    args = good;
    args.bags_count = 3;
    CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
    args.bags_count = 5;
    CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
    args.bags_count = 4;
    args.bags = NULL;
    CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
    args = good;
    args.sides_count = 2;
    CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
    args.sides_count = 4;
    args.sides = NULL;
    CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
    args = good;
    sides[2] = (uform_late_interaction_side_t)3;
    CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
    sides[2] = uform_late_interaction_side_none_k;

    /* Choices and their targets. */
    args = good;
    args.choices_count = 3, args.choice_targets_count = 3;
    CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
    args = good;
    args.choice_targets_count = 3;
    CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
    args = good;
    args.choice_targets_count = 0, args.choice_targets = NULL, args.choice_targets_offsets = NULL,
    args.choice_targets_length = 0;
    CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
    args = good;
    args.choices_count = 0, args.choices = NULL, args.choices_offsets = NULL, args.choices_length = 0;
    CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
    {
        size_t shifted[5] = {0, 1, 2, 2, 4};
        float three_targets[3] = {1.0f, 0.5f, 0.5f};
        args = good;
        args.choice_targets_offsets = shifted;
        CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
        args = good;
        args.choice_targets = three_targets;
        args.choice_targets_length = 3;
        CHECK_STATUS(step(&args), uform_status_shape_mismatch_k);
    }
    args = good;
    targets[0] = 0.5f; /* 0.5 + 0.25 */
    CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
    targets[0] = 1.25f, targets[1] = -0.25f;
    CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
    targets[0] = (float)NAN, targets[1] = 0.25f;
    CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
    targets[0] = 0.75f;
    {
        static char const *const repeated[] = {"yy", "", "", "AB"};
        test_tape_t r;
        tape_of(&r, repeated, 4);
        args = good;
        args.choices = r.data, args.choices_length = r.length, args.choices_offsets = r.offsets;
        args.choice_targets_offsets = r.offsets;
        CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
    }

    /* Choices on an item that is not text. */
    {
        char const *mixed[4];
        test_tape_t mixed_tape;
        uform_modality_t with_image[4] = {uform_modality_image_k, uform_modality_text_k, uform_modality_text_k,
                                          uform_modality_text_k};
        mixed[0] = tiny_path(), mixed[1] = contents[1], mixed[2] = contents[2], mixed[3] = contents[3];
        tape_of(&mixed_tape, mixed, 4);
        args = good;
        CHECK_STATUS(uform_trainer_step(trainer, vram, with_image, mixed_tape.data, mixed_tape.length,
                                        mixed_tape.offsets, 4, &args, NULL, NULL, MSG),
                     uform_status_invalid_argument_k);
    }

    /* Modalities and contents. */
    args = good;
    modalities[1] = (uform_modality_t)4;
    CHECK_STATUS(step(&args), uform_status_invalid_argument_k);
    modalities[1] = uform_modality_text_k;
    CHECK_STATUS(uform_trainer_step(trainer, vram, NULL, content_tape.data, content_tape.length, content_tape.offsets,
                                    4, &args, NULL, NULL, MSG),
                 uform_status_invalid_argument_k);
    {
        size_t falling[5] = {0, 5, 4, 18, 25};
        size_t leaving[5] = {0, 5, 13, 18, 26};
        CHECK_STATUS(uform_trainer_step(trainer, vram, modalities, content_tape.data, content_tape.length, falling, 4,
                                        &args, NULL, NULL, MSG),
                     uform_status_shape_mismatch_k);
        CHECK_STATUS(uform_trainer_step(trainer, vram, modalities, content_tape.data, content_tape.length, leaving, 4,
                                        &args, NULL, NULL, MSG),
                     uform_status_shape_mismatch_k);
        CHECK_STATUS(uform_trainer_step(trainer, vram, modalities, NULL, content_tape.length, content_tape.offsets, 4,
                                        &args, NULL, NULL, MSG),
                     uform_status_invalid_argument_k);
    }
    /* Null handles. */
    CHECK_STATUS(uform_trainer_step(NULL, vram, modalities, content_tape.data, content_tape.length,
                                    content_tape.offsets, 4, &args, NULL, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_trainer_save(NULL, vram, "x.safetensors", 13, NULL, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_trainer_save(trainer, vram, NULL, 13, NULL, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_trainer_init_vram(vram, &init, NULL, MSG), uform_status_invalid_argument_k);

    /* None of the refused steps counted: after the three good ones above, this one is step 3. */
    memset(&stats, 0, sizeof(stats));
    stats.step = 99;
    if (CHECK_OK(step(&good))) CHECK_SIZE(stats.step, 3);

    /* Receivers outside the model's residency: a RAM model on a VRAM executor or into a VRAM arena, a VRAM
     * model into a host arena or on a RAM executor, a VRAM executor sharing no device with the VRAM model. */
    {
        uform_arena_t host = NULL, device_arena = NULL;
        uform_model_t on_device = NULL;
        uform_model_load_vram_args_t load;
        memset(&load, 0, sizeof(load));
        load.path = tiny_path();
        load.path_length = strlen(load.path);
        if (CHECK_OK(uform_arena_init(NULL, &host, MSG)) && CHECK_OK(uform_arena_init(vram, &device_arena, MSG))) {
            CHECK_STATUS(uform_text_encode(model, vram, tape.data, tape.length, tape.offsets, tape.count,
                                           uform_outputs_embeddings_k, NULL, host, &encoded, NULL, MSG),
                         uform_status_invalid_argument_k);
            CHECK_STATUS(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, tape.count,
                                           uform_outputs_embeddings_k, NULL, device_arena, &encoded, NULL, MSG),
                         uform_status_invalid_argument_k);
            CHECK_STATUS(uform_text_encode(model, NULL, tape.data, tape.length, tape.offsets, tape.count,
                                           uform_outputs_embeddings_k, NULL, device_arena, &encoded, NULL, MSG),
                         uform_status_invalid_argument_k);
            if (CHECK_OK(uform_model_load_vram(&load, &on_device, MSG))) {
                CHECK_OK(uform_text_encode(on_device, vram, tape.data, tape.length, tape.offsets, tape.count,
                                           uform_outputs_embeddings_k, NULL, device_arena, &encoded, NULL, MSG));
                CHECK_STATUS(uform_text_encode(on_device, vram, tape.data, tape.length, tape.offsets, tape.count,
                                               uform_outputs_embeddings_k, NULL, host, &encoded, NULL, MSG),
                             uform_status_invalid_argument_k);
                CHECK_STATUS(uform_text_encode(on_device, ram, tape.data, tape.length, tape.offsets, tape.count,
                                               uform_outputs_embeddings_k, NULL, host, &encoded, NULL, MSG),
                             uform_status_invalid_argument_k);
                if (count >= 2) {
                    size_t second = 1;
                    uform_executor_t elsewhere = NULL;
                    uform_arena_t elsewhere_arena = NULL;
                    if (CHECK_OK(uform_executor_init_vram(&second, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0,
                                                          &elsewhere, MSG)) &&
                        CHECK_OK(uform_arena_init(elsewhere, &elsewhere_arena, MSG)))
                        CHECK_STATUS(uform_text_encode(on_device, elsewhere, tape.data, tape.length, tape.offsets,
                                                       tape.count, uform_outputs_embeddings_k, NULL, elsewhere_arena,
                                                       &encoded, NULL, MSG),
                                     uform_status_invalid_argument_k);
                    uform_arena_free(elsewhere_arena);
                    uform_executor_free(elsewhere);
                }
                uform_model_free(on_device);
            }
        }
        uform_arena_free(host);
        uform_arena_free(device_arena);
    }
    uform_trainer_free(trainer);
    uform_executor_free(vram);
}

int main(void) {
    float saved[4 * 64];
    void const *rows = NULL;

    model = load_tiny();
    if (!model) return test_report("bad_input");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_arena_init(NULL, &arena, MSG));
    tape_of(&tape, texts, 4);

    null_handles();
    text_tapes();
    outputs_and_scalars(1);
    pixels();
    samples();
    file_tapes();
    choices();

    /* Rows in the arena, then every refusal again: none may touch them. */
    memset(&encoded, 0, sizeof(encoded));
    if (CHECK_OK(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, tape.count,
                                   uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG)) &&
        encoded.embeddings.count == 4 && encoded.embeddings.stride == 64 * sizeof(float)) {
        rows = encoded.embeddings.data;
        memcpy(saved, rows, sizeof(saved));
        null_handles();
        text_tapes();
        outputs_and_scalars(0);
        writes_nothing();
        arena_untouched(saved, rows);
    }

    training();
    uform_arena_free(arena);
    uform_executor_free(ram);
    uform_model_free(model);
    return test_report("bad_input");
}
