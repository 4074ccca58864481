/**
 * @file samples.c
 * @brief `uform_audio_encode_samples`: shapes, budgets, stats, empty items, receivers and determinism.
 */
#include "common.h"

enum { dimensions_k = 64, hidden_k = 64, max_patches_k = 256 };

static uform_model_t model = NULL;
static uform_executor_t ram = NULL, local = NULL;
/* A 0.1 s tone, one second of a chirp, an empty item, and 0.25 s of a tone again at 8 kHz. */
static float samples[1600 + 16000 + 2000];
static size_t offsets[5] = {0, 1600, 17600, 17600, 19600};
static float reference[4][dimensions_k];

static void make_samples(void) {
    size_t i;
    double const pi = 3.14159265358979323846;
    for (i = 0; i != 1600; ++i) samples[i] = (float)(0.5 * sin(2 * pi * 440.0 * (double)i / 16000.0));
    for (i = 0; i != 16000; ++i)
        samples[1600 + i] = (float)(0.3 * sin(2 * pi * (200.0 + 0.1 * (double)i) * (double)i / 16000.0));
    for (i = 0; i != 2000; ++i) samples[17600 + i] = (float)(0.25 * sin(2 * pi * 330.0 * (double)i / 8000.0));
}

static uform_status_t encode(uform_executor_t executor, int deferred, float const *data, size_t length,
                             size_t const *tape_offsets, size_t count, size_t rate, uform_outputs_t outputs,
                             uform_audio_encode_args_t const *args, uform_arena_t arena, uform_encoded_t *encoded) {
    uform_outcome_t outcome = NULL;
    uform_status_t status = uform_audio_encode_samples(model, executor, data, length, tape_offsets, count, rate,
                                                       outputs, args, arena, encoded, deferred ? &outcome : NULL, MSG);
    if (!deferred) return status;
    if (!CHECK_STATUS(status, uform_status_deferred_k)) return status;
    status = uform_outcome_wait(outcome, MSG);
    uform_outcome_release(outcome);
    return status;
}

static void receivers(void) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_audio_encode_stats_t stats;
    uform_audio_encode_args_t args;
    test_progress_t progress;
    uform_outputs_t all =
        (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k | uform_outputs_token_vectors_k);
    int receiver, have_reference = 0;
    size_t i, row;

    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    for (receiver = 0; receiver != 5; ++receiver) {
        uform_executor_t executor = receiver == 0 ? NULL : receiver == 1 || receiver == 3 ? ram : local;
        memset(&encoded, 0, sizeof(encoded));
        memset(&stats, 0, sizeof(stats));
        memset(&progress, 0, sizeof(progress));
        memset(&args, 0, sizeof(args));
        args.stats = &stats;
        args.progress = test_progress;
        args.progress_context = &progress;
        /* The first three items at 16 kHz. */
        if (!CHECK_OK(encode(executor, receiver >= 3, samples, 17600, offsets, 3, 16000, all, &args, arena, &encoded)))
            continue;
        if (CHECK_ROWS_PER_ITEM(&encoded.embeddings, 3, dimensions_k)) {
            CHECK_UNIT_ROWS_OR_ZERO(&encoded.embeddings, 1e-4);
            CHECK(!row_is_zero(&encoded.embeddings, 0) && !row_is_zero(&encoded.embeddings, 1));
            /* An empty item is legal: a zero embedding and no states. */
            CHECK(row_is_zero(&encoded.embeddings, 2));
            CHECK(!rows_equal(&encoded.embeddings, 0, &encoded.embeddings, 1));
        }
        if (CHECK_ROWS_TAPE(&encoded.states, 3, hidden_k)) {
            CHECK(encoded.states.offsets[1] >= 1 && encoded.states.offsets[1] <= max_patches_k);
            CHECK(encoded.states.offsets[2] - encoded.states.offsets[1] >= 1 &&
                  encoded.states.offsets[2] - encoded.states.offsets[1] <= max_patches_k);
            CHECK_SIZE(encoded.states.offsets[3], encoded.states.offsets[2]);
        }
        if (CHECK_ROWS_TAPE(&encoded.token_vectors, 3, 32)) {
            CHECK_SIZE(encoded.token_vectors.count, encoded.states.count);
            CHECK_UNIT_ROWS(&encoded.token_vectors, 1e-4);
        }
        CHECK_SIZE(stats.items, 3);
        CHECK_SIZE(stats.tokens, encoded.states.count);
        CHECK(fabs(stats.seconds - 1.1) < 1e-6);
        CHECK_SIZE(stats.truncated_items, 0);
        CHECK(progress.calls >= 1 && progress.total == 3 && progress.last_completed == 3);
        if (encoded.embeddings.count != 3) continue;
        if (!have_reference) {
            for (row = 0; row != 3; ++row)
                for (i = 0; i != dimensions_k; ++i) reference[row][i] = row_value(&encoded.embeddings, row, i);
            have_reference = 1;
        } else {
            CHECK(memcmp(row_bytes(&encoded.embeddings, 0), reference[0], sizeof(reference[0])) == 0);
            CHECK(memcmp(row_bytes(&encoded.embeddings, 1), reference[1], sizeof(reference[1])) == 0);
        }
    }

    /* The second item alone, in another batch, answers the same row. */
    {
        size_t alone[2] = {1600, 17600};
        if (CHECK_OK(
                encode(ram, 0, samples, 17600, alone, 1, 16000, uform_outputs_embeddings_k, NULL, arena, &encoded)) &&
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 1, dimensions_k))
            CHECK(memcmp(row_bytes(&encoded.embeddings, 0), reference[1], sizeof(reference[1])) == 0);
    }

    /* Another sample rate is resampled; the fourth item is a quarter of a second at 8 kHz. */
    memset(&stats, 0, sizeof(stats));
    memset(&args, 0, sizeof(args));
    args.stats = &stats;
    {
        size_t eight[2] = {17600, 19600};
#if defined(__wasi__) /* no FFmpeg, so no resampling: only the model's rate is taken */
        CHECK_STATUS(encode(local, 0, samples, sizeof(samples) / sizeof(samples[0]), eight, 1, 8000, all, &args, arena,
                            &encoded),
                     uform_status_unsupported_k);
#else
        if (CHECK_OK(encode(local, 0, samples, sizeof(samples) / sizeof(samples[0]), eight, 1, 8000, all, &args, arena,
                            &encoded))) {
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 1, dimensions_k);
            CHECK_UNIT_ROWS(&encoded.embeddings, 1e-4);
            CHECK(fabs(stats.seconds - 0.25) < 1e-6);
        }
#endif
    }

    /* A patch budget of one truncates both non-empty items and says so. */
    memset(&stats, 0, sizeof(stats));
    args.max_patches = 1;
    if (CHECK_OK(encode(NULL, 0, samples, 17600, offsets, 3, 16000, uform_outputs_states_k, &args, arena, &encoded)) &&
        CHECK_ROWS_TAPE(&encoded.states, 3, hidden_k)) {
        CHECK_SIZE(encoded.states.offsets[1], 1);
        CHECK_SIZE(encoded.states.offsets[2], 2);
        CHECK_SIZE(encoded.states.offsets[3], 2);
        CHECK_SIZE(stats.truncated_items, 2);
        CHECK(fabs(stats.seconds - 1.1) < 1e-6);
    }

    /* F16 rows. */
    memset(&args, 0, sizeof(args));
    args.scalar = uform_scalar_f16_k;
    if (CHECK_OK(encode(ram, 0, samples, 17600, offsets, 3, 16000, all, &args, arena, &encoded))) {
        CHECK(encoded.embeddings.scalar == uform_scalar_f16_k && encoded.states.scalar == uform_scalar_f16_k &&
              encoded.token_vectors.scalar == uform_scalar_f16_k);
        CHECK_UNIT_ROWS_OR_ZERO(&encoded.embeddings, 0.01);
    }

    /* A batch of one empty item, and `NULL` data with zero length. */
    {
        size_t empty[2] = {0, 0};
        if (CHECK_OK(encode(NULL, 0, NULL, 0, empty, 1, 16000, all, NULL, arena, &encoded))) {
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 1, dimensions_k);
            CHECK(encoded.embeddings.count == 1 && row_is_zero(&encoded.embeddings, 0));
            CHECK_SIZE(encoded.states.count, 0);
            CHECK_SIZE(encoded.token_vectors.count, 0);
        }
    }
    uform_arena_free(arena);
}

int main(void) {
    model = load_tiny();
    if (!model) return test_report("samples");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_executor_init_local(&local, MSG));
    make_samples();
    receivers();
    uform_executor_free(ram);
    uform_executor_free(local);
    uform_model_free(model);
    return test_report("samples");
}
