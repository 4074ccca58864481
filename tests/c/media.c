/**
 * @file media.c
 * @brief The file verbs: `uform_image_encode`, `uform_video_encode` and `uform_audio_encode`.
 *
 * The stub reads the files but decodes nothing, so for it the files here carry a format's magic bytes and
 * noise; the RAM build decodes, so it reads the well-formed files of `tests/data/bad-media/` instead (bad
 * media itself is bad_media.c's). A missing path is `not-found` in every build.
 */
#include "common.h"

#include <math.h>

enum { dimensions_k = 64, hidden_k = 64 };

static uform_model_t model = NULL;
static uform_executor_t ram = NULL, local = NULL;
static char directory[4096];
static char png[4200], jpeg[4200], mp4[4200], wav[4200], missing[4200];

static int write_media(char *path, char const *name, char const *magic, size_t magic_length, unsigned seed) {
    unsigned char bytes[512];
    size_t i;
    snprintf(path, 4200, "%s/%s", directory, name);
    for (i = 0; i != sizeof(bytes); ++i) bytes[i] = (unsigned char)((i * 131 + seed * 7 + (i >> 2)) & 0xFF);
    memcpy(bytes, magic, magic_length);
    return write_whole_file(path, bytes, sizeof(bytes));
}

/** Removes the six files `write_media` wrote. */
static void remove_written(char const *a, char const *b, char const *c, char const *d, char const *e, char const *f) {
    remove(a);
    remove(b);
    remove(c);
    remove(d);
    remove(e);
    remove(f);
}

typedef uform_status_t (*file_verb_t)(char const *files, size_t length, size_t const *offsets, size_t count,
                                      uform_outputs_t outputs, uform_arena_t arena, uform_executor_t executor,
                                      uform_encoded_t *encoded, uform_outcome_t *outcome, void *stats);

static uform_status_t image_verb(char const *files, size_t length, size_t const *offsets, size_t count,
                                 uform_outputs_t outputs, uform_arena_t arena, uform_executor_t executor,
                                 uform_encoded_t *encoded, uform_outcome_t *outcome, void *stats) {
    uform_image_encode_args_t args;
    memset(&args, 0, sizeof(args));
    args.stats = (uform_image_encode_stats_t *)stats;
    return uform_image_encode(model, executor, files, length, offsets, count, outputs, &args, arena, encoded, outcome,
                              MSG);
}

static uform_status_t video_verb(char const *files, size_t length, size_t const *offsets, size_t count,
                                 uform_outputs_t outputs, uform_arena_t arena, uform_executor_t executor,
                                 uform_encoded_t *encoded, uform_outcome_t *outcome, void *stats) {
    uform_video_encode_args_t args;
    memset(&args, 0, sizeof(args));
    args.stats = (uform_video_encode_stats_t *)stats;
    return uform_video_encode(model, executor, files, length, offsets, count, outputs, &args, arena, encoded, outcome,
                              MSG);
}

static uform_status_t audio_verb(char const *files, size_t length, size_t const *offsets, size_t count,
                                 uform_outputs_t outputs, uform_arena_t arena, uform_executor_t executor,
                                 uform_encoded_t *encoded, uform_outcome_t *outcome, void *stats) {
    uform_audio_encode_args_t args;
    memset(&args, 0, sizeof(args));
    args.stats = (uform_audio_encode_stats_t *)stats;
    return uform_audio_encode(model, executor, files, length, offsets, count, outputs, &args, arena, encoded, outcome,
                              MSG);
}

/** A blocking or deferred call of a verb; a deferred one is waited for and released. */
static uform_status_t run(file_verb_t verb, test_tape_t const *paths, uform_outputs_t outputs, uform_arena_t arena,
                          uform_executor_t executor, int deferred, uform_encoded_t *encoded, void *stats) {
    uform_outcome_t outcome = NULL;
    uform_status_t status = verb(paths->data, paths->length, paths->offsets, paths->count, outputs, arena, executor,
                                 encoded, deferred ? &outcome : NULL, stats);
    if (!deferred || status != uform_status_deferred_k) return status;
    status = uform_outcome_wait(outcome, MSG);
    uform_outcome_release(outcome);
    return status;
}

/** A verb over two distinct files and a repeat of the first: shapes, budgets, determinism, receivers. */
static void encode_files(file_verb_t verb, char const *name, char const *first, char const *second, size_t budget,
                         void *stats, size_t const *items_stat) {
    char const *paths_list[3];
    test_tape_t paths, again;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded, other;
    uform_outputs_t all =
        (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k | uform_outputs_token_vectors_k);
    size_t i;
    int receiver;

    fprintf(stderr, "  %s\n", name);
    paths_list[0] = first;
    paths_list[1] = second;
    paths_list[2] = first;
    tape_of(&paths, paths_list, 3);
    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    memset(&encoded, 0, sizeof(encoded));
    if (CHECK_OK(run(verb, &paths, all, arena, NULL, 0, &encoded, stats))) {
        if (CHECK_ROWS_PER_ITEM(&encoded.embeddings, 3, dimensions_k)) {
            CHECK_UNIT_ROWS(&encoded.embeddings, 1e-4);
            CHECK(rows_equal(&encoded.embeddings, 0, &encoded.embeddings, 2));
            CHECK(!rows_equal(&encoded.embeddings, 0, &encoded.embeddings, 1));
        }
        if (CHECK_ROWS_TAPE(&encoded.states, 3, hidden_k)) {
            int within = 1;
            for (i = 0; i != 3; ++i) {
                size_t tokens = encoded.states.offsets[i + 1] - encoded.states.offsets[i];
                within = within && tokens >= 1 && tokens <= budget;
            }
            CHECK(within);
            CHECK(encoded.states.offsets[1] - encoded.states.offsets[0] ==
                  encoded.states.offsets[3] - encoded.states.offsets[2]);
        }
        if (CHECK_ROWS_TAPE(&encoded.token_vectors, 3, 32))
            CHECK_SIZE(encoded.token_vectors.count, encoded.states.count);
        CHECK_SIZE(*items_stat, 3);
    }
    /* Every receiver, and a batch of the second file alone, answer the same rows. */
    for (receiver = 0; receiver != 4; ++receiver) {
        uform_executor_t executor = receiver == 0 || receiver == 2 ? ram : local;
        memset(&other, 0, sizeof(other));
        tape_of(&again, paths_list + 1, 2);
        if (CHECK_OK(run(verb, &again, uform_outputs_embeddings_k, arena, executor, receiver >= 2, &other, NULL)) &&
            CHECK_ROWS_PER_ITEM(&other.embeddings, 2, dimensions_k) && encoded.embeddings.count == 3) {
            /* The arena was rewound, so compare against a fresh encoding of the full batch in a second arena. */
            uform_arena_t second = NULL;
            uform_encoded_t full;
            if (CHECK_OK(uform_arena_init(NULL, &second, MSG))) {
                if (CHECK_OK(run(verb, &paths, uform_outputs_embeddings_k, second, NULL, 0, &full, NULL)) &&
                    full.embeddings.count == 3) {
                    CHECK(rows_equal(&other.embeddings, 0, &full.embeddings, 1));
                    CHECK(rows_equal(&other.embeddings, 1, &full.embeddings, 0));
                }
                uform_arena_free(second);
            }
        }
    }
    uform_arena_free(arena);
}

static void missing_files(file_verb_t verb, char const *name, char const *existing) {
    char const *paths_list[2];
    test_tape_t paths;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_outcome_t outcome = NULL;
    uform_status_t status;

    fprintf(stderr, "  %s of a missing file\n", name);
    memset(&encoded, 0, sizeof(encoded));
    paths_list[0] = existing;
    paths_list[1] = missing;
    tape_of(&paths, paths_list, 2);
    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    CHECK_STATUS(run(verb, &paths, uform_outputs_embeddings_k, arena, NULL, 0, &encoded, NULL),
                 uform_status_not_found_k);
    CHECK(encoded_empty(&encoded));
    CHECK_STATUS(run(verb, &paths, uform_outputs_embeddings_k, arena, ram, 0, &encoded, NULL),
                 uform_status_not_found_k);
    CHECK_STATUS(run(verb, &paths, uform_outputs_embeddings_k, arena, local, 0, &encoded, NULL),
                 uform_status_not_found_k);
    /* Deferred: a missing file may be found at submission or once the call runs; either way it is `not-found`. */
    status = verb(paths.data, paths.length, paths.offsets, paths.count, uform_outputs_embeddings_k, arena, ram,
                  &encoded, &outcome, NULL);
    if (status == uform_status_deferred_k) {
        CHECK_STATUS(uform_outcome_wait(outcome, MSG), uform_status_not_found_k);
        CHECK_STATUS(uform_outcome_status(outcome, MSG), uform_status_not_found_k);
        CHECK(encoded_empty(&encoded));
        uform_outcome_release(outcome);
    } else {
        CHECK_STATUS(status, uform_status_not_found_k);
    }
    uform_arena_free(arena);
}

/** The token counts docs/model.md gives the real files (RAM builds), each item a segment of one call. */
static void real_shapes(void) {
    char const *one[1];
    test_tape_t paths;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_image_encode_stats_t image_stats;
    uform_video_encode_stats_t video_stats;
    uform_audio_encode_stats_t audio_stats;
    char const *data = getenv("UFORM_TEST_DATA");
    char path[4200];

    fprintf(stderr, "  token counts of real media\n");
    if (!data || !*data) data = "tests/data";
    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    one[0] = path;
    /* 24 x 16 pixels, patch 8, budget 64: a 6 x 9 grid. */
    snprintf(path, sizeof(path), "%s/bad-media/ok.png", data);
    tape_of(&paths, one, 1);
    if (CHECK_OK(run(image_verb, &paths, uform_outputs_states_k, arena, ram, 0, &encoded, &image_stats))) {
        CHECK_SIZE(encoded.states.count, 54);
        CHECK_SIZE(image_stats.pixels, 24 * 16);
    }
    /* 3 seconds at 1 frame a second: 3 frames, 2 tubelets (the last repeats its frame) of a 3 x 4 grid. */
    snprintf(path, sizeof(path), "%s/bad-media/ok.mp4", data);
    tape_of(&paths, one, 1);
    if (CHECK_OK(run(video_verb, &paths, uform_outputs_states_k, arena, ram, 0, &encoded, &video_stats))) {
        CHECK_SIZE(encoded.states.count, 2 * 12);
        CHECK_SIZE(video_stats.frames, 3);
    }
    /* One second of stereo at 8 kHz: 16000 mono samples, 100 frames, 25 patches. */
    snprintf(path, sizeof(path), "%s/bad-media/ok.wav", data);
    tape_of(&paths, one, 1);
    if (CHECK_OK(run(audio_verb, &paths, uform_outputs_states_k, arena, ram, 0, &encoded, &audio_stats))) {
        CHECK_SIZE(encoded.states.count, 25);
        CHECK(fabs(audio_stats.seconds - 1.0) < 1e-9);
        CHECK_SIZE(audio_stats.truncated_items, 0);
    }
    uform_arena_free(arena);
}

int main(void) {
    uform_image_encode_stats_t image_stats;
    uform_video_encode_stats_t video_stats;
    uform_audio_encode_stats_t audio_stats;
    char second_mp4[4200], second_wav[4200];
    test_tape_t paths;
    uform_arena_t arena = NULL;
    uform_encoded_t a, b;
    char const *one[1];
    int made;

    model = load_tiny();
    if (!model) return test_report("media");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_executor_init_local(&local, MSG));
    if (!CHECK(make_temp_directory(directory, sizeof(directory), "media"))) return test_report("media");
    made = write_media(png, "a.png", "\x89PNG\r\n\x1a\n", 8, 1) &&
           write_media(jpeg, "c.jpg", "\xFF\xD8\xFF\xE0", 4, 3) &&
           write_media(mp4, "d.mp4",
                       "\0\0\0\x20"
                       "ftypisom",
                       12, 4) &&
           write_media(second_mp4, "e.mp4",
                       "\0\0\0\x20"
                       "ftypisom",
                       12, 5) &&
           write_media(wav, "f.wav", "RIFF\0\0\0\0WAVEfmt ", 16, 6) &&
           write_media(second_wav, "g.wav", "RIFF\0\0\0\0WAVEfmt ", 16, 7);
    snprintf(missing, sizeof(missing), "%s/no-such-file.png", directory);
    if (!build_is_stub()) { /* real media, which the RAM build decodes, in place of the noise */
        char const *data = getenv("UFORM_TEST_DATA");
        remove_written(png, jpeg, mp4, second_mp4, wav, second_wav);
        if (!data || !*data) data = "tests/data";
        snprintf(png, sizeof(png), "%s/bad-media/ok.png", data);
        snprintf(jpeg, sizeof(jpeg), "%s/bad-media/ok.jpg", data);
        snprintf(mp4, sizeof(mp4), "%s/bad-media/ok.mp4", data);
        snprintf(second_mp4, sizeof(second_mp4), "%s/bad-media/ok.webm", data);
        snprintf(wav, sizeof(wav), "%s/bad-media/ok.wav", data);
        snprintf(second_wav, sizeof(second_wav), "%s/bad-media/ok.flac", data);
    }
    if (CHECK(made)) {
        memset(&image_stats, 0, sizeof(image_stats));
        memset(&video_stats, 0, sizeof(video_stats));
        memset(&audio_stats, 0, sizeof(audio_stats));
        /* Budgets of the tiny geometry: 64 image patches; 4 frames of 16 patches in tubelets of 2; 256 audio
         * patches. */
        encode_files(image_verb, "image_encode", png, jpeg, 64, &image_stats, &image_stats.items);
        encode_files(video_verb, "video_encode", mp4, second_mp4, 2 * 16, &video_stats, &video_stats.items);
        encode_files(audio_verb, "audio_encode", wav, second_wav, 256, &audio_stats, &audio_stats.items);
        if (build_is_stub()) {
            /* The same file as an image and as audio answers different rows: rows depend on the modality. */
            one[0] = png;
            tape_of(&paths, one, 1);
            if (CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
                uform_arena_t other = NULL;
                if (CHECK_OK(uform_arena_init(NULL, &other, MSG))) {
                    if (CHECK_OK(run(image_verb, &paths, uform_outputs_embeddings_k, arena, NULL, 0, &a, NULL)) &&
                        CHECK_OK(run(audio_verb, &paths, uform_outputs_embeddings_k, other, NULL, 0, &b, NULL)) &&
                        a.embeddings.count == 1 && b.embeddings.count == 1)
                        CHECK(!rows_equal(&a.embeddings, 0, &b.embeddings, 0));
                    uform_arena_free(other);
                }
                uform_arena_free(arena);
            }
        }
        if (!build_is_stub()) real_shapes();
        missing_files(image_verb, "image_encode", png);
        missing_files(video_verb, "video_encode", mp4);
        missing_files(audio_verb, "audio_encode", wav);
    }
    if (build_is_stub()) remove_written(png, jpeg, mp4, second_mp4, wav, second_wav);
    remove(directory);
    uform_executor_free(ram);
    uform_executor_free(local);
    uform_model_free(model);
    return test_report("media");
}
