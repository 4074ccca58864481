/**
 * @file pixels.c
 * @brief `uform_image_encode_pixels`: shapes of its rows, patch budgets, stats, receivers and determinism.
 */
#include "common.h"

enum { images_k = 4, dimensions_k = 64, hidden_k = 64, token_width_k = 32, max_patches_k = 64 };

static uform_model_t model = NULL;
static uform_executor_t ram = NULL, local = NULL;
static uint8_t pixels[3 * (6 + 64 + 1 + 64)];
static size_t offsets[images_k + 1];
static size_t const heights[images_k] = {2, 8, 1, 16};
static size_t const widths[images_k] = {3, 8, 1, 4};
static float reference[images_k][dimensions_k];

static void make_pixels(void) {
    size_t i, item, length = 0;
    offsets[0] = 0;
    for (item = 0; item != images_k; ++item) {
        size_t bytes = heights[item] * widths[item] * 3;
        for (i = 0; i != bytes; ++i) pixels[length + i] = (uint8_t)((i * 37 + item * 101 + (i >> 3)) & 0xFF);
        length += bytes;
        offsets[item + 1] = length;
    }
}

static uform_status_t encode(uform_executor_t executor, int deferred, size_t const *tape_offsets, size_t count,
                             size_t const *h, size_t const *w, uform_outputs_t outputs,
                             uform_image_encode_args_t const *args, uform_arena_t arena, uform_encoded_t *encoded) {
    uform_outcome_t outcome = NULL;
    uform_status_t status =
        uform_image_encode_pixels(model, executor, pixels, sizeof(pixels), tape_offsets, count, h, w, outputs, args,
                                  arena, encoded, deferred ? &outcome : NULL, MSG);
    if (!deferred) return status;
    if (!CHECK_STATUS(status, uform_status_deferred_k)) return status;
    status = uform_outcome_wait(outcome, MSG);
    uform_outcome_release(outcome);
    return status;
}

static void check_patches(uform_rows_t const *rows, size_t items, size_t budget) {
    size_t i;
    int ok = 1;
    for (i = 0; i != items; ++i) {
        size_t patches = rows->offsets[i + 1] - rows->offsets[i];
        ok = ok && patches >= 1 && patches <= budget;
    }
    CHECK(ok);
}

static void receivers(void) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_image_encode_stats_t stats;
    uform_image_encode_args_t args;
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
        if (!CHECK_OK(encode(executor, receiver >= 3, offsets, images_k, heights, widths, all, &args, arena, &encoded)))
            continue;
        if (CHECK_ROWS_PER_ITEM(&encoded.embeddings, images_k, dimensions_k)) {
            CHECK(encoded.embeddings.scalar == uform_scalar_f32_k);
            CHECK_UNIT_ROWS(&encoded.embeddings, 1e-4);
            CHECK(!rows_equal(&encoded.embeddings, 1, &encoded.embeddings, 3));
        }
        if (CHECK_ROWS_TAPE(&encoded.states, images_k, hidden_k))
            check_patches(&encoded.states, images_k, max_patches_k);
        if (CHECK_ROWS_TAPE(&encoded.token_vectors, images_k, token_width_k)) {
            CHECK_SIZE(encoded.token_vectors.count, encoded.states.count);
            for (i = 0; i != images_k + 1; ++i) CHECK_SIZE(encoded.token_vectors.offsets[i], encoded.states.offsets[i]);
            CHECK_UNIT_ROWS(&encoded.token_vectors, 1e-4);
        }
        CHECK_SIZE(stats.items, images_k);
        CHECK_SIZE(stats.pixels, 6 + 64 + 1 + 64);
        CHECK_SIZE(stats.tokens, encoded.states.count);
        CHECK(progress.calls >= 1 && progress.total == images_k && progress.last_completed == images_k);
        if (encoded.embeddings.count != images_k) continue;
        if (!have_reference) {
            for (row = 0; row != images_k; ++row)
                for (i = 0; i != dimensions_k; ++i) reference[row][i] = row_value(&encoded.embeddings, row, i);
            have_reference = 1;
        } else {
            CHECK(memcmp(row_bytes(&encoded.embeddings, 0), reference[0], sizeof(reference[0])) == 0);
            CHECK(memcmp(row_bytes(&encoded.embeddings, 3), reference[3], sizeof(reference[3])) == 0);
        }
    }

    /* A patch budget below the checkpoint's bounds every image. */
    memset(&args, 0, sizeof(args));
    args.max_patches = 4;
    if (CHECK_OK(encode(ram, 0, offsets, images_k, heights, widths, uform_outputs_states_k, &args, arena, &encoded)) &&
        CHECK_ROWS_TAPE(&encoded.states, images_k, hidden_k))
        check_patches(&encoded.states, images_k, 4);

    /* An image past `max_pixels` fails with `limit-exceeded`. */
    args.max_patches = 0;
    args.max_pixels = 10;
    CHECK_STATUS(
        encode(NULL, 0, offsets, images_k, heights, widths, uform_outputs_embeddings_k, &args, arena, &encoded),
        uform_status_limit_exceeded_k);
    args.max_pixels = 64;
    CHECK_OK(encode(NULL, 0, offsets, images_k, heights, widths, uform_outputs_embeddings_k, &args, arena, &encoded));

    /* Other scalars. */
    memset(&args, 0, sizeof(args));
    args.scalar = uform_scalar_bf16_k;
    if (CHECK_OK(encode(local, 0, offsets, images_k, heights, widths, all, &args, arena, &encoded))) {
        CHECK(encoded.embeddings.scalar == uform_scalar_bf16_k && encoded.states.scalar == uform_scalar_bf16_k);
        CHECK(encoded.embeddings.stride >= 128);
        CHECK_UNIT_ROWS(&encoded.embeddings, 0.02);
    }
    args.scalar = uform_scalar_b1_k;
    if (CHECK_OK(
            encode(NULL, 0, offsets, images_k, heights, widths, uform_outputs_embeddings_k, &args, arena, &encoded))) {
        CHECK(encoded.embeddings.scalar == uform_scalar_b1_k && encoded.embeddings.columns == dimensions_k);
        for (row = 0; row != images_k && have_reference; ++row)
            for (i = 0; i != dimensions_k; ++i)
                if ((row_value(&encoded.embeddings, row, i) > 0) != (reference[row][i] > 0)) break;
        CHECK(row == images_k);
    }
    uform_arena_free(arena);
}

static void batches_and_modalities(void) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    size_t one[2], two_heights[2] = {16, 2}, two_widths[2] = {4, 3};
    size_t text_offsets[2] = {0, 3};

    if (!CHECK_OK(uform_arena_init(ram, &arena, MSG))) return;
    /* The last and first images alone, in reverse order, answer the same rows as in the full batch. */
    {
        static uint8_t reversed[3 * (64 + 6)];
        size_t reversed_offsets[3] = {0, 192, 192 + 18};
        memcpy(reversed, pixels + offsets[3], 192);
        memcpy(reversed + 192, pixels, 18);
        if (CHECK_OK(uform_image_encode_pixels(model, ram, reversed, sizeof(reversed), reversed_offsets, 2, two_heights,
                                               two_widths, uform_outputs_embeddings_k, NULL, arena, &encoded, NULL,
                                               MSG)) &&
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 2, dimensions_k)) {
            CHECK(memcmp(row_bytes(&encoded.embeddings, 0), reference[3], sizeof(reference[3])) == 0);
            CHECK(memcmp(row_bytes(&encoded.embeddings, 1), reference[0], sizeof(reference[0])) == 0);
        }
    }
    one[0] = offsets[2];
    one[1] = offsets[3];
    if (CHECK_OK(uform_image_encode_pixels(model, NULL, pixels, sizeof(pixels), one, 1, heights + 2, widths + 2,
                                           uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG)) &&
        CHECK_ROWS_PER_ITEM(&encoded.embeddings, 1, dimensions_k)) {
        CHECK(memcmp(row_bytes(&encoded.embeddings, 0), reference[2], sizeof(reference[2])) == 0);
    }

    /* The same three bytes as a text and as a 1x1 image answer different rows: rows depend on the modality. */
    if (CHECK_OK(uform_text_encode(model, NULL, (char const *)pixels + offsets[2], 3, text_offsets, 1,
                                   uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG)) &&
        encoded.embeddings.count == 1)
        CHECK(memcmp(row_bytes(&encoded.embeddings, 0), reference[2], sizeof(reference[2])) != 0);
    uform_arena_free(arena);
}

int main(void) {
    model = load_tiny();
    if (!model) return test_report("pixels");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_executor_init_local(&local, MSG));
    make_pixels();
    receivers();
    batches_and_modalities();
    uform_executor_free(ram);
    uform_executor_free(local);
    uform_model_free(model);
    return test_report("pixels");
}
