/**
 * @file media_numerics.c
 * @brief The RAM residency against `tests/data/goldens/media.safetensors`: the media files of
 * `tests/data/media/` through `uform_image_encode`, `uform_video_encode` and `uform_audio_encode`, a raw RGB
 * buffer through `uform_image_encode_pixels`, and raw samples at 44.1 kHz through `uform_audio_encode_samples`.
 *
 * Bounds: embeddings within cosine 0.999 of the goldens through the file decoders (lossy codecs
 * differ by decoder, and the reference decoded with FFmpeg 5.1's command-line tools) and 0.9999 from raw
 * pixels and samples. Where the golden stores states (raw inputs and the lossless audio files, whose decoded
 * samples every FFmpeg agrees on), docs/model.md's rules: every row's cosine >= 0.999 and relative Frobenius error
 * <= 1e-2. Token counts match exactly, but for the lossy audio items (no stored states), where a decoder that
 * trims encoder delay differently may give one patch more or less.
 *
 * Each group runs on the calling thread and on a two-thread RAM executor. The stub answers stand-in rows, so
 * under the stub this test only says it skipped.
 */
#include "common.h"
#include "goldens.h"

enum { hidden_k = 64, dimensions_k = 64 };

static uform_outputs_t const wanted = (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k);

/** The worst figures of one group over every run. */
typedef struct worst_t {
    double embedding_cosine;
    double row_cosine;
    double frobenius;
    int ran;
} worst_t;

/** One group of the golden (`image`, `video`, `audio`, `pixels`, `samples`): token offsets and embeddings of
 *  every item; the states of the items in `state_items`, in that order. */
typedef struct group_t {
    char const *prefix;
    size_t items;
    int64_t *token_offsets;
    float *embeddings;
    int64_t *state_items;
    size_t state_items_count;
    float *states;
    size_t states_count;
    /* file groups: the files' paths as a tape */
    test_tape_t paths;
} group_t;

static void *group_tensor(golden_file_t const *file, char const *prefix, char const *name, char const *dtype,
                          size_t size, size_t *count, int optional) {
    char key[96];
    snprintf(key, sizeof(key), "%s.%s", prefix, name);
    return golden_file_copy(file, key, dtype, size, count, optional);
}

/** Reads a group; the file groups' names become paths under `$UFORM_TEST_DATA/media/`. */
static int group_open(golden_file_t const *file, char const *prefix, group_t *group) {
    size_t offsets_count = 0, embeddings_count = 0, names_count = 0, name_offsets_count = 0, i;
    unsigned char *names;
    int64_t *name_offsets;
    char const *directory = getenv("UFORM_TEST_DATA");
    memset(group, 0, sizeof(*group));
    group->prefix = prefix;
    tape_clear(&group->paths);
    group->token_offsets = (int64_t *)group_tensor(file, prefix, "token_offsets", "I64", 8, &offsets_count, 0);
    group->embeddings = (float *)group_tensor(file, prefix, "embeddings", "F32", 4, &embeddings_count, 0);
    group->state_items = (int64_t *)group_tensor(file, prefix, "state_items", "I64", 8, &group->state_items_count, 1);
    group->states = (float *)group_tensor(file, prefix, "states", "F32", 4, &group->states_count, 1);
    if (!CHECK(group->token_offsets && group->embeddings && offsets_count >= 2)) return 0;
    group->items = offsets_count - 1;
    if (!CHECK(embeddings_count == group->items * dimensions_k)) return 0;
    if (!CHECK((group->state_items == NULL) == (group->states == NULL))) return 0;
    for (i = 0; i != group->state_items_count; ++i)
        if (!CHECK(group->state_items[i] >= 0 && (size_t)group->state_items[i] < group->items)) return 0;
    names = (unsigned char *)group_tensor(file, prefix, "files", "U8", 1, &names_count, 1);
    name_offsets = (int64_t *)group_tensor(file, prefix, "file_offsets", "I64", 8, &name_offsets_count, 1);
    if (names && CHECK(name_offsets && name_offsets_count == offsets_count))
        for (i = 0; i != group->items; ++i) {
            char path[4200];
            int length =
                snprintf(path, sizeof(path), "%s/media/%.*s", directory && *directory ? directory : "tests/data",
                         (int)(name_offsets[i + 1] - name_offsets[i]), (char const *)names + name_offsets[i]);
            FILE *media = fopen(path, "rb");
            if (!CHECK(media != NULL)) fprintf(stderr, "cannot open %s\n", path);
            else fclose(media);
            tape_push(&group->paths, path, (size_t)length);
        }
    free(names);
    free(name_offsets);
    return 1;
}

static void group_close(group_t *group) {
    free(group->token_offsets);
    free(group->embeddings);
    free(group->state_items);
    free(group->states);
    memset(group, 0, sizeof(*group));
}

/** Holds one encoding of a group to the golden: token counts (`lossy_slack` patches of freedom for items
 *  without stored states), embeddings within `min_embedding`, stored states by docs/model.md's rules. */
static void compare(uform_encoded_t const *encoded, group_t const *group, double min_embedding, size_t lossy_slack,
                    worst_t *worst, char const *label) {
    float row[hidden_k];
    size_t item, k, r, golden_row = 0;
    if (!CHECK_ROWS_PER_ITEM(&encoded->embeddings, group->items, dimensions_k) ||
        !CHECK_ROWS_TAPE(&encoded->states, group->items, hidden_k))
        return;
    worst->ran = 1;
    for (item = 0; item != group->items; ++item) {
        size_t const expected = (size_t)(group->token_offsets[item + 1] - group->token_offsets[item]);
        size_t const got = encoded->states.offsets[item + 1] - encoded->states.offsets[item];
        int stored = 0;
        double c;
        for (k = 0; k != group->state_items_count; ++k) stored = stored || (size_t)group->state_items[k] == item;
        if (got != expected) {
            size_t const gap = got > expected ? got - expected : expected - got;
            fprintf(stderr, "%s %s item %zu: %zu tokens, the golden has %zu\n", label, group->prefix, item, got,
                    expected);
            CHECK(!stored && gap <= lossy_slack);
        }
        row_f32(&encoded->embeddings, item, row);
        c = cosine_f64(row, group->embeddings + item * dimensions_k, dimensions_k, NULL, NULL);
        if (c < worst->embedding_cosine) worst->embedding_cosine = c;
        if (!CHECK(c >= min_embedding))
            fprintf(stderr, "%s %s item %zu: embedding cosine %.7f < %.4f\n", label, group->prefix, item, c,
                    min_embedding);
    }
    for (k = 0; k != group->state_items_count; ++k) {
        size_t const item_index = (size_t)group->state_items[k];
        size_t const rows = (size_t)(group->token_offsets[item_index + 1] - group->token_offsets[item_index]);
        size_t const first = encoded->states.offsets[item_index];
        double difference = 0, reference = 0, frobenius, least = 1;
        if (!CHECK((golden_row + rows) * hidden_k <= group->states_count)) return;
        if (encoded->states.offsets[item_index + 1] - first != rows) {
            golden_row += rows; /* the count was reported above */
            continue;
        }
        for (r = 0; r != rows; ++r) {
            float const *expected = group->states + (golden_row + r) * hidden_k;
            size_t c;
            double rc;
            row_f32(&encoded->states, first + r, row);
            rc = cosine_f64(row, expected, hidden_k, NULL, NULL);
            if (rc < least) least = rc;
            for (c = 0; c != hidden_k; ++c) {
                double const d = (double)row[c] - expected[c];
                difference += d * d;
                reference += (double)expected[c] * expected[c];
            }
        }
        golden_row += rows;
        frobenius = reference > 0 ? sqrt(difference / reference) : sqrt(difference);
        if (least < worst->row_cosine) worst->row_cosine = least;
        if (frobenius > worst->frobenius) worst->frobenius = frobenius;
        if (!CHECK(least >= 0.999 && frobenius <= 1e-2))
            fprintf(stderr, "%s %s item %zu states: worst row cosine %.6f, relative Frobenius %.3e\n", label,
                    group->prefix, item_index, least, frobenius);
    }
}

/* ---------------------------------------------------------------------------------------------------------- */
/* The five groups                                                                                             */
/* ---------------------------------------------------------------------------------------------------------- */

static void check_image_files(uform_model_t model, uform_executor_t executor, group_t const *group, worst_t *worst,
                              char const *label) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_image_encode_args_t args;
    uform_image_encode_stats_t stats;
    test_tape_t const *paths = &group->paths;
    memset(&args, 0, sizeof(args));
    memset(&stats, 0, sizeof(stats));
    args.stats = &stats;
    if (!CHECK(paths->count == group->items) || !CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    if (CHECK_OK(uform_image_encode(model, executor, paths->data, paths->length, paths->offsets, paths->count, wanted,
                                    &args, arena, &encoded, NULL, MSG))) {
        CHECK_SIZE(stats.items, group->items);
        compare(&encoded, group, 0.999, 0, worst, label);
    }
    uform_arena_free(arena);
}

static void check_video_files(uform_model_t model, uform_executor_t executor, group_t const *group, size_t frames_taken,
                              worst_t *worst, char const *label) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_video_encode_args_t args;
    uform_video_encode_stats_t stats;
    test_tape_t const *paths = &group->paths;
    memset(&args, 0, sizeof(args));
    memset(&stats, 0, sizeof(stats));
    args.stats = &stats;
    if (!CHECK(paths->count == group->items) || !CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    if (CHECK_OK(uform_video_encode(model, executor, paths->data, paths->length, paths->offsets, paths->count, wanted,
                                    &args, arena, &encoded, NULL, MSG))) {
        CHECK_SIZE(stats.items, group->items);
        CHECK_SIZE(stats.frames, frames_taken); /* docs/model.md's sampling: frames at (k + 0.5) / fps */
        compare(&encoded, group, 0.999, 0, worst, label);
    }
    uform_arena_free(arena);
}

static void check_audio_files(uform_model_t model, uform_executor_t executor, group_t const *group, worst_t *worst,
                              char const *label) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_audio_encode_args_t args;
    uform_audio_encode_stats_t stats;
    test_tape_t const *paths = &group->paths;
    memset(&args, 0, sizeof(args));
    memset(&stats, 0, sizeof(stats));
    args.stats = &stats;
    if (!CHECK(paths->count == group->items) || !CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    if (CHECK_OK(uform_audio_encode(model, executor, paths->data, paths->length, paths->offsets, paths->count, wanted,
                                    &args, arena, &encoded, NULL, MSG))) {
        CHECK_SIZE(stats.items, group->items);
        compare(&encoded, group, 0.999, 1, worst, label);
    }
    uform_arena_free(arena);
}

/** The raw RGB buffer (`pixels.pixels`, `pixels.shapes` as H, W, 3). */
static void check_pixels(uform_model_t model, uform_executor_t executor, golden_file_t const *file,
                         group_t const *group, worst_t *worst, char const *label) {
    size_t pixels_count = 0, shapes_count = 0, offsets[2], heights[1], widths[1];
    uint8_t *pixels = (uint8_t *)golden_file_copy(file, "pixels.pixels", "U8", 1, &pixels_count, 0);
    int64_t *shapes = (int64_t *)golden_file_copy(file, "pixels.shapes", "I64", 8, &shapes_count, 0);
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    if (CHECK(pixels && shapes && shapes_count == 3 && shapes[2] == 3 && group->items == 1) &&
        CHECK_SIZE(pixels_count, (size_t)(shapes[0] * shapes[1] * 3)) &&
        CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
        heights[0] = (size_t)shapes[0];
        widths[0] = (size_t)shapes[1];
        offsets[0] = 0;
        offsets[1] = pixels_count;
        if (CHECK_OK(uform_image_encode_pixels(model, executor, pixels, pixels_count, offsets, 1, heights, widths,
                                               wanted, NULL, arena, &encoded, NULL, MSG)))
            compare(&encoded, group, 0.9999, 0, worst, label);
        uform_arena_free(arena);
    }
    free(pixels);
    free(shapes);
}

/** The raw mono samples (`samples.samples` at `samples.rates[0]`, 44.1 kHz), resampled by the library. */
static void check_samples(uform_model_t model, uform_executor_t executor, golden_file_t const *file,
                          group_t const *group, worst_t *worst, char const *label) {
    size_t samples_count = 0, rates_count = 0, offsets_count = 0, offsets[2];
    float *samples = (float *)golden_file_copy(file, "samples.samples", "F32", 4, &samples_count, 0);
    int64_t *rates = (int64_t *)golden_file_copy(file, "samples.rates", "I64", 8, &rates_count, 0);
    int64_t *sample_offsets = (int64_t *)golden_file_copy(file, "samples.sample_offsets", "I64", 8, &offsets_count, 0);
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    if (CHECK(samples && rates && sample_offsets && rates_count == 1 && offsets_count == 2 && group->items == 1) &&
        CHECK_SIZE((size_t)sample_offsets[1], samples_count) && CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
        offsets[0] = 0;
        offsets[1] = samples_count;
        if (CHECK_OK(uform_audio_encode_samples(model, executor, samples, samples_count, offsets, 1, (size_t)rates[0],
                                                wanted, NULL, arena, &encoded, NULL, MSG)))
            compare(&encoded, group, 0.9999, 0, worst, label);
        uform_arena_free(arena);
    }
    free(samples);
    free(rates);
    free(sample_offsets);
}

/* ---------------------------------------------------------------------------------------------------------- */

static worst_t fresh(void) {
    worst_t w;
    w.embedding_cosine = 1;
    w.row_cosine = 1;
    w.frobenius = 0;
    w.ran = 0;
    return w;
}

static void summary(char const *what, worst_t const *w) {
    if (!w->ran) printf("media_numerics: %-36s did not run\n", what);
    else
        printf("media_numerics: %-36s worst embedding cosine %.7f; stored states: worst row cosine %.6f, "
               "relative Frobenius %.2e\n",
               what, w->embedding_cosine, w->row_cosine, w->frobenius);
}

int main(void) {
    enum { groups_k = 5 };
    static char const *const prefixes[groups_k] = {"image", "video", "audio", "pixels", "samples"};
    static char const *const titles[groups_k] = {
        "image files (JPEG, PNG, WebP):", "video files (MP4, WebM):", "audio files (WAV, FLAC, MP3, Opus):",
        "raw pixels:", "raw samples at 44.1 kHz:"};
    uform_model_t model;
    uform_executor_t ram = NULL, executors[2];
    golden_file_t file;
    group_t groups[groups_k];
    worst_t worst[groups_k];
    size_t frames_taken = 0, taken_count = 0, g, e;
    int64_t *taken_offsets;
    if (build_is_stub()) {
        printf("media_numerics: skipped: the stub answers stand-in rows, not the model's (build the RAM residency)\n");
        return test_report("media_numerics");
    }
    model = load_tiny();
    if (!model || !CHECK(golden_file_open(&file, "media.safetensors"))) {
        uform_model_free(model);
        return test_report("media_numerics");
    }
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    executors[0] = NULL;
    executors[1] = ram;
    taken_offsets = (int64_t *)golden_file_copy(&file, "video.taken_offsets", "I64", 8, &taken_count, 0);
    if (CHECK(taken_offsets && taken_count >= 1)) frames_taken = (size_t)taken_offsets[taken_count - 1];
    free(taken_offsets);
    for (g = 0; g != groups_k; ++g) {
        worst[g] = fresh();
        if (!group_open(&file, prefixes[g], &groups[g])) continue;
        for (e = 0; e != 2; ++e) {
            char const *label = e ? "two threads:" : "calling thread:";
            if (e && !ram) continue;
            switch (g) {
            case 0: check_image_files(model, executors[e], &groups[g], &worst[g], label); break;
            case 1: check_video_files(model, executors[e], &groups[g], frames_taken, &worst[g], label); break;
            case 2: check_audio_files(model, executors[e], &groups[g], &worst[g], label); break;
            case 3: check_pixels(model, executors[e], &file, &groups[g], &worst[g], label); break;
            default: check_samples(model, executors[e], &file, &groups[g], &worst[g], label); break;
            }
        }
    }
    for (g = 0; g != groups_k; ++g) {
        summary(titles[g], &worst[g]);
        group_close(&groups[g]);
    }
    golden_file_close(&file);
    uform_executor_free(ram);
    uform_model_free(model);
    return test_report("media_numerics");
}
