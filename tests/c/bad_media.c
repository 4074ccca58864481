/**
 * @file bad_media.c
 * @brief Bad media answers a clear status and names the item that failed: every file verb over truncated, corrupt,
 * mislabelled, empty, bomb and streamless files (the RAM build, which decodes; `tests/data/bad-media/`), and the
 * per-item checks of pixels and samples (every build). Each bad item sits second in a batch of three, so the
 * call must fail as a whole and say `failed_item == 1`; a good batch leaves `failed_item` at `SIZE_MAX`.
 */
#include "common.h"

#include <math.h>
#include <stdint.h>

static uform_model_t model = NULL;
static uform_executor_t ram = NULL;
static uform_arena_t arena = NULL;
static char media[4096];

typedef enum verb_t { image_k, video_k, audio_k } verb_t;

/** Runs a file verb over `count` names on `executor`; its stats' items and failed item land in the out-pointers. */
static uform_status_t encode_files(verb_t verb, char const *const *names, size_t count, uform_executor_t executor,
                                   size_t max_pixels, uform_encoded_t *encoded, size_t *items, size_t *failed) {
    char const *paths_list[8];
    test_tape_t paths;
    uform_status_t status;
    size_t i;
    for (i = 0; i != count; ++i) paths_list[i] = names[i][0] == '/' ? names[i] : joined_path(media, names[i]);
    tape_of(&paths, paths_list, count);
    memset(encoded, 0xA5, sizeof(*encoded));
    if (verb == image_k) {
        uform_image_encode_stats_t stats;
        uform_image_encode_args_t args;
        memset(&args, 0, sizeof(args));
        memset(&stats, 0, sizeof(stats));
        stats.failed_item = 7;
        args.stats = &stats;
        args.max_pixels = max_pixels;
        status = uform_image_encode(model, executor, paths.data, paths.length, paths.offsets, paths.count,
                                    uform_outputs_embeddings_k, &args, arena, encoded, NULL, MSG);
        *items = stats.items, *failed = stats.failed_item;
    } else if (verb == video_k) {
        uform_video_encode_stats_t stats;
        uform_video_encode_args_t args;
        memset(&args, 0, sizeof(args));
        memset(&stats, 0, sizeof(stats));
        stats.failed_item = 7;
        args.stats = &stats;
        status = uform_video_encode(model, executor, paths.data, paths.length, paths.offsets, paths.count,
                                    uform_outputs_embeddings_k, &args, arena, encoded, NULL, MSG);
        *items = stats.items, *failed = stats.failed_item;
    } else {
        uform_audio_encode_stats_t stats;
        uform_audio_encode_args_t args;
        memset(&args, 0, sizeof(args));
        memset(&stats, 0, sizeof(stats));
        stats.failed_item = 7;
        args.stats = &stats;
        status = uform_audio_encode(model, executor, paths.data, paths.length, paths.offsets, paths.count,
                                    uform_outputs_embeddings_k, &args, arena, encoded, NULL, MSG);
        *items = stats.items, *failed = stats.failed_item;
    }
    return status;
}

/** `bad` between two copies of `good`: the call fails with `expected` and names item 1, on both receivers. */
static void refuse(verb_t verb, char const *good, char const *bad, uform_status_t expected) {
    char const *names[3];
    uform_encoded_t encoded;
    size_t items = 0, failed = 0;
    int receiver;
    names[0] = good, names[1] = bad, names[2] = good;
    fprintf(stderr, "  %s between two of %s\n", bad, good);
    for (receiver = 0; receiver != 2; ++receiver) {
        test_message_ = NULL;
        CHECK_STATUS(encode_files(verb, names, 3, receiver ? ram : NULL, 0, &encoded, &items, &failed), expected);
        CHECK_SIZE(failed, 1);
        CHECK_SIZE(items, 0); /* the rest of the stats stays untouched */
        CHECK(test_message_ != NULL && test_message_[0] != '\0');
        CHECK(encoded_empty(&encoded));
    }
}

/** A batch of good files: encoded, one unit row each, and `failed_item` left at `SIZE_MAX`. */
static void accept(verb_t verb, char const *const *names, size_t count) {
    uform_encoded_t encoded;
    size_t items = 0, failed = 0, i;
    fprintf(stderr, "  %zu good files from %s\n", count, names[0]);
    if (!CHECK_OK(encode_files(verb, names, count, ram, 0, &encoded, &items, &failed))) return;
    CHECK_SIZE(items, count);
    CHECK_SIZE(failed, SIZE_MAX);
    if (CHECK_ROWS_PER_ITEM(&encoded.embeddings, count, 64))
        for (i = 0; i != count; ++i) CHECK(fabs(row_norm(&encoded.embeddings, i) - 1) < 1e-4);
}

static void files(void) {
    static char const *const images[] = {"ok.png", "ok.jpg", "ok.webp", "gray.png", "alpha.png"};
    static char const *const clips[] = {"ok.mp4", "ok.webm"};
    static char const *const recordings[] = {"ok.wav", "ok.flac", "ok.mp3", "ok.opus", "silent.wav"};
    static char const *const bad_images[] = {"truncated.png", "truncated.jpg", "truncated.webp", "corrupt.png",
                                             "corrupt.jpg",   "corrupt.webp",  "text.jpg",       "zero.png"};
    static char const *const bad_clips[] = {"truncated.mp4", "truncated.webm", "corrupt.mp4",
                                            "corrupt.webm",  "text.jpg",       "ok.png"}; /* an image is no clip */
    static char const *const bad_recordings[] = {"truncated.wav", "truncated.flac", "truncated.mp3", "truncated.opus",
                                                 "corrupt.wav",   "corrupt.flac",   "corrupt.mp3",   "corrupt.opus"};
    char missing[4200];
    size_t i, items, failed;
    uform_encoded_t encoded;

    snprintf(missing, sizeof(missing), "%s/no-such-file.png", media);
    accept(image_k, images, 5);
    accept(video_k, clips, 2);
    accept(audio_k, recordings, 5);
    for (i = 0; i != sizeof(bad_images) / sizeof(bad_images[0]); ++i)
        refuse(image_k, "ok.png", bad_images[i], uform_status_corrupt_k);
    for (i = 0; i != sizeof(bad_clips) / sizeof(bad_clips[0]); ++i)
        refuse(video_k, "ok.mp4", bad_clips[i], uform_status_corrupt_k);
    for (i = 0; i != sizeof(bad_recordings) / sizeof(bad_recordings[0]); ++i)
        refuse(audio_k, "ok.wav", bad_recordings[i], uform_status_corrupt_k);
    /* A decompression bomb is refused from its header by the pixel limit; so is any image over max_pixels. */
    refuse(image_k, "ok.png", "bomb.png", uform_status_limit_exceeded_k);
    {
        char const *names[2] = {"ok.png", "ok.jpg"};
        CHECK_STATUS(encode_files(image_k, names, 2, ram, 24 * 16 - 1, &encoded, &items, &failed),
                     uform_status_limit_exceeded_k);
        CHECK_SIZE(failed, 0);
    }
    /* A container the verb does not take is `corrupt`; one without the verb's stream `unsupported`; a missing
     * file `not-found`; a directory `io`. */
    refuse(video_k, "ok.mp4", "no-video.mp4", uform_status_unsupported_k);
    refuse(audio_k, "ok.wav", "ok.mp4", uform_status_corrupt_k);
    refuse(audio_k, "ok.wav", "text.jpg", uform_status_corrupt_k);
    refuse(image_k, "ok.png", missing, uform_status_not_found_k);
    refuse(image_k, "ok.png", media, uform_status_io_k);
    /* Empty audio is an empty item: a zero embedding. */
    {
        char const *names[2] = {"empty.wav", "silent.wav"};
        if (CHECK_OK(encode_files(audio_k, names, 2, ram, 0, &encoded, &items, &failed)) &&
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 2, 64)) {
            CHECK(row_is_zero(&encoded.embeddings, 0));
            CHECK(!row_is_zero(&encoded.embeddings, 1));
        }
    }
}

/** The per-item checks of pixels and samples, found before the call starts, in every build. */
static void buffers(void) {
    uint8_t pixels[3 * 8 * 8 * 3];
    size_t pixel_offsets[4] = {0, 192, 384, 576}, heights[3] = {8, 8, 8}, widths[3] = {8, 8, 8};
    float samples[3 * 1600];
    size_t sample_offsets[4] = {0, 1600, 3200, 4800};
    uform_image_encode_stats_t image_stats;
    uform_image_encode_args_t image_args;
    uform_audio_encode_stats_t audio_stats;
    uform_audio_encode_args_t audio_args;
    uform_encoded_t encoded;
    size_t i;

    for (i = 0; i != sizeof(pixels); ++i) pixels[i] = (uint8_t)(i * 37);
    for (i = 0; i != 3 * 1600; ++i) samples[i] = (float)(0.5 * sin((double)i * 0.05));
    memset(&image_args, 0, sizeof(image_args));
    memset(&audio_args, 0, sizeof(audio_args));
    image_args.stats = &image_stats;
    audio_args.stats = &audio_stats;

    fprintf(stderr, "  pixels and samples\n");
    /* A zero-sized image, then a buffer shorter than height x width x 3, each second of three. */
    heights[1] = 0;
    image_stats.failed_item = 7;
    CHECK_STATUS(uform_image_encode_pixels(model, ram, pixels, sizeof(pixels), pixel_offsets, 3, heights, widths,
                                           uform_outputs_embeddings_k, &image_args, arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_SIZE(image_stats.failed_item, 1);
    heights[1] = 8;
    pixel_offsets[2] = 383;
    image_stats.failed_item = 7;
    CHECK_STATUS(uform_image_encode_pixels(model, ram, pixels, sizeof(pixels), pixel_offsets, 3, heights, widths,
                                           uform_outputs_embeddings_k, &image_args, arena, &encoded, NULL, MSG),
                 uform_status_shape_mismatch_k);
    CHECK_SIZE(image_stats.failed_item, 1);
    pixel_offsets[2] = 384;
    CHECK_OK(uform_image_encode_pixels(model, ram, pixels, sizeof(pixels), pixel_offsets, 3, heights, widths,
                                       uform_outputs_embeddings_k, &image_args, arena, &encoded, NULL, MSG));
    CHECK_SIZE(image_stats.failed_item, SIZE_MAX);

    /* A NaN sample in the second recording; a sample rate of zero, which is no item's. */
    samples[1600 + 17] = NAN;
    audio_stats.failed_item = 7;
    CHECK_STATUS(uform_audio_encode_samples(model, ram, samples, 4800, sample_offsets, 3, 16000,
                                            uform_outputs_embeddings_k, &audio_args, arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_SIZE(audio_stats.failed_item, 1);
    samples[1600 + 17] = 0;
    audio_stats.failed_item = 7;
    CHECK_STATUS(uform_audio_encode_samples(model, ram, samples, 4800, sample_offsets, 3, 0, uform_outputs_embeddings_k,
                                            &audio_args, arena, &encoded, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_SIZE(audio_stats.failed_item, SIZE_MAX);
    /* Silence and an empty recording are legal: a zero embedding for the empty one. */
    for (i = 1600; i != 3200; ++i) samples[i] = 0;
    sample_offsets[1] = 0;
    if (CHECK_OK(uform_audio_encode_samples(model, ram, samples, 4800, sample_offsets, 3, 22050,
                                            uform_outputs_embeddings_k, &audio_args, arena, &encoded, NULL, MSG)) &&
        CHECK_ROWS_PER_ITEM(&encoded.embeddings, 3, 64)) {
        CHECK(row_is_zero(&encoded.embeddings, 0));
        CHECK(!row_is_zero(&encoded.embeddings, 1) && !row_is_zero(&encoded.embeddings, 2));
        CHECK_SIZE(audio_stats.failed_item, SIZE_MAX);
    }
}

int main(void) {
    char const *data = getenv("UFORM_TEST_DATA");
    snprintf(media, sizeof(media), "%s/bad-media", data && *data ? data : "tests/data");
    model = load_tiny();
    if (!model) return test_report("bad_media");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_arena_init(NULL, &arena, MSG));
    buffers();
    if (!build_is_stub()) files();
    else {
        /* The stub decodes nothing, but still names the file it could not read. */
        char missing[4200];
        snprintf(missing, sizeof(missing), "%s/no-such-file.png", media);
        refuse(image_k, "ok.png", missing, uform_status_not_found_k);
        refuse(audio_k, "ok.wav", missing, uform_status_not_found_k);
    }
    uform_arena_free(arena);
    uform_executor_free(ram);
    uform_model_free(model);
    return test_report("bad_media");
}
