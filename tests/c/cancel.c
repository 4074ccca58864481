/**
 * @file cancel.c
 * @brief Cancellation: a progress handler answering `true` fails the call with `cancelled`, publishing nothing.
 *
 * The result struct is first filled by a successful call, then handed to the cancelled one: since the
 * arena was rewound, the old views would dangle, so a cancelled call must leave every view empty.
 */
#include "common.h"

static uform_model_t model = NULL;
static uform_executor_t ram = NULL, local = NULL;
static char const *const texts[] = {"a cat on a mat", "a dog in the fog", "", "x"};
static test_tape_t tape;

static int is_empty_tape(uform_tape_t const *tape_view) { return tape_view->data == NULL && tape_view->items == 0; }

/** Runs `uform_text_encode` with a handler stopping at its `stop_at`-th call, or once `stop_at_completed` items
 * are done, on a receiver. */
static uform_status_t text_with_stop(uform_executor_t executor, int deferred, size_t stop_at, size_t stop_at_completed,
                                     uform_arena_t arena, uform_encoded_t *encoded, test_progress_t *progress) {
    uform_text_encode_args_t args;
    uform_outcome_t outcome = NULL;
    uform_status_t status;
    memset(&args, 0, sizeof(args));
    memset(progress, 0, sizeof(*progress));
    progress->stop_at_call = stop_at;
    progress->stop_at_completed = stop_at_completed;
    args.progress = test_progress;
    args.progress_context = progress;
    status = uform_text_encode(model, executor, tape.data, tape.length, tape.offsets, tape.count,
                               (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k), &args, arena,
                               encoded, deferred ? &outcome : NULL, MSG);
    if (!deferred) return status;
    if (!CHECK_STATUS(status, uform_status_deferred_k)) return status;
    status = uform_outcome_wait(outcome, MSG);
    CHECK_STATUS(uform_outcome_status(outcome, MSG), status);
    uform_outcome_release(outcome);
    return status;
}

static void text(void) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    test_progress_t progress;
    int receiver;

    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    for (receiver = 0; receiver != 5; ++receiver) {
        uform_executor_t executor = receiver == 0 ? NULL : receiver == 1 || receiver == 3 ? ram : local;
        int deferred = receiver >= 3;
        /* Stopping at the first report, then once half the items are done (reports may coalesce on a threaded
         * executor, so their number varies from run to run; the last one always reports every item). */
        memset(&encoded, 0, sizeof(encoded));
        CHECK_OK(text_with_stop(executor, deferred, 0, 0, arena, &encoded, &progress));
        CHECK(encoded.embeddings.count == 4 && encoded.states.count == 31);
        CHECK_STATUS(text_with_stop(executor, deferred, 1, 0, arena, &encoded, &progress), uform_status_cancelled_k);
        CHECK_SIZE(progress.calls, 1);
        CHECK(encoded_empty(&encoded));

        CHECK_OK(text_with_stop(executor, deferred, 0, 0, arena, &encoded, &progress));
        CHECK_STATUS(text_with_stop(executor, deferred, 0, 2, arena, &encoded, &progress), uform_status_cancelled_k);
        CHECK(progress.calls >= 1 && progress.last_completed >= 2);
        CHECK(encoded_empty(&encoded));
        /* The executor and the arena serve the next call as usual. */
        CHECK_OK(text_with_stop(executor, deferred, 0, 0, arena, &encoded, &progress));
        CHECK(encoded.embeddings.count == 4);
    }
    uform_arena_free(arena);
}

static bool stop_at_once(void *context, size_t completed, size_t total) {
    (void)completed, (void)total;
    ++*(size_t *)context;
    return true;
}

static void other_verbs(void) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_tape_t probabilities;
    uform_outcome_t outcome = NULL;
    size_t calls = 0;
    uint8_t pixels[2 * 3 * 3 + 3];
    size_t pixel_offsets[3] = {0, 18, 21}, heights[2] = {2, 1}, widths[2] = {3, 1};
    float samples[800];
    size_t sample_offsets[3] = {0, 400, 800}, i;
    static char const *const choices[] = {"yn", "AB", "01", "z"};
    test_tape_t c;

    for (i = 0; i != sizeof(pixels); ++i) pixels[i] = (uint8_t)(i * 13);
    for (i = 0; i != 800; ++i) samples[i] = (float)sin((double)i * 0.05) * 0.5f;
    tape_of(&c, choices, 4);
    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;

    /* Pixels. */
    {
        uform_image_encode_args_t args;
        memset(&args, 0, sizeof(args));
        CHECK_OK(uform_image_encode_pixels(model, ram, pixels, sizeof(pixels), pixel_offsets, 2, heights, widths,
                                           uform_outputs_embeddings_k, &args, arena, &encoded, NULL, MSG));
        CHECK(encoded.embeddings.count == 2);
        args.progress = stop_at_once;
        args.progress_context = &calls;
        calls = 0;
        {
            /* Stats are left untouched by a cancellation, but for `failed_item`, which no item caused. */
            uform_image_encode_stats_t stats, untouched;
            memset(&stats, 0x5A, sizeof(stats));
            memcpy(&untouched, &stats, sizeof(stats));
            args.stats = &stats;
            CHECK_STATUS(uform_image_encode_pixels(model, ram, pixels, sizeof(pixels), pixel_offsets, 2, heights,
                                                   widths, uform_outputs_embeddings_k, &args, arena, &encoded, NULL,
                                                   MSG),
                         uform_status_cancelled_k);
            CHECK(calls == 1 && encoded_empty(&encoded));
            CHECK_SIZE(stats.failed_item, SIZE_MAX);
            stats.failed_item = untouched.failed_item;
            CHECK(memcmp(&stats, &untouched, sizeof(stats)) == 0);
            args.stats = NULL;
        }
        CHECK_OK(uform_image_encode_pixels(model, local, pixels, sizeof(pixels), pixel_offsets, 2, heights, widths,
                                           uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG));
        outcome = NULL;
        if (CHECK_STATUS(uform_image_encode_pixels(model, local, pixels, sizeof(pixels), pixel_offsets, 2, heights,
                                                   widths, uform_outputs_embeddings_k, &args, arena, &encoded, &outcome,
                                                   MSG),
                         uform_status_deferred_k)) {
            CHECK_STATUS(uform_outcome_wait(outcome, MSG), uform_status_cancelled_k);
            uform_outcome_release(outcome);
            CHECK(encoded_empty(&encoded));
        }
    }

    /* Samples. */
    {
        uform_audio_encode_args_t args;
        memset(&args, 0, sizeof(args));
        CHECK_OK(uform_audio_encode_samples(model, NULL, samples, 800, sample_offsets, 2, 16000,
                                            uform_outputs_embeddings_k, &args, arena, &encoded, NULL, MSG));
        args.progress = stop_at_once;
        args.progress_context = &calls;
        calls = 0;
        CHECK_STATUS(uform_audio_encode_samples(model, NULL, samples, 800, sample_offsets, 2, 16000,
                                                uform_outputs_embeddings_k, &args, arena, &encoded, NULL, MSG),
                     uform_status_cancelled_k);
        CHECK(calls == 1 && encoded_empty(&encoded));
    }

    /* Choices: the probabilities tape stays empty. */
    {
        uform_text_choose_args_t args;
        memset(&args, 0, sizeof(args));
        CHECK_OK(uform_text_choose(model, ram, tape.data, tape.length, tape.offsets, tape.count, c.data, c.length,
                                   c.offsets, c.count, &args, arena, &probabilities, NULL, MSG));
        CHECK(probabilities.items == 4);
        args.progress = stop_at_once;
        args.progress_context = &calls;
        calls = 0;
        CHECK_STATUS(uform_text_choose(model, ram, tape.data, tape.length, tape.offsets, tape.count, c.data, c.length,
                                       c.offsets, c.count, &args, arena, &probabilities, NULL, MSG),
                     uform_status_cancelled_k);
        CHECK(calls == 1 && is_empty_tape(&probabilities));
        outcome = NULL;
        CHECK_OK(uform_text_choose(model, ram, tape.data, tape.length, tape.offsets, tape.count, c.data, c.length,
                                   c.offsets, c.count, NULL, arena, &probabilities, NULL, MSG));
        if (CHECK_STATUS(uform_text_choose(model, ram, tape.data, tape.length, tape.offsets, tape.count, c.data,
                                           c.length, c.offsets, c.count, &args, arena, &probabilities, &outcome, MSG),
                         uform_status_deferred_k)) {
            CHECK_STATUS(uform_outcome_wait(outcome, MSG), uform_status_cancelled_k);
            uform_outcome_release(outcome);
            CHECK(is_empty_tape(&probabilities));
        }
    }

    /* A file verb, over the checkpoint itself as the file (the stub reads but never decodes). */
    if (build_is_stub()) {
        uform_image_encode_args_t args;
        char const *path = tiny_path();
        size_t offsets[2];
        offsets[0] = 0;
        offsets[1] = strlen(path);
        memset(&args, 0, sizeof(args));
        args.progress = stop_at_once;
        args.progress_context = &calls;
        calls = 0;
        CHECK_OK(uform_image_encode(model, NULL, path, offsets[1], offsets, 1, uform_outputs_embeddings_k, NULL, arena,
                                    &encoded, NULL, MSG));
        CHECK_STATUS(uform_image_encode(model, NULL, path, offsets[1], offsets, 1, uform_outputs_embeddings_k, &args,
                                        arena, &encoded, NULL, MSG),
                     uform_status_cancelled_k);
        CHECK(calls == 1 && encoded_empty(&encoded));
    }
    uform_arena_free(arena);
}

int main(void) {
    model = load_tiny();
    if (!model) return test_report("cancel");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_executor_init_local(&local, MSG));
    tape_of(&tape, texts, 4);
    text();
    other_verbs();
    uform_executor_free(ram);
    uform_executor_free(local);
    uform_model_free(model);
    return test_report("cancel");
}
