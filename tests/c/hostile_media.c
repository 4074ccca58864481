/**
 * @file hostile_media.c
 * @brief Media a hostile or careless caller sends costs what the model's budgets allow and no more: a tall image's
 * grid stays within `max_patches`; audio past the patch budget is never read and changes nothing; sample rates and
 * magnitudes out of range are refused; a nonempty clip at another rate is never an empty item; the demuxers the
 * spec does not name are refused; a FIFO (or another file that is not a regular one) named as a media file or a
 * checkpoint answers `io` at once, never waiting for a writer; FFmpeg writes nothing to stderr; and the peak RSS of it
 * all stays under 300 MiB.
 * The parts that decode or compare rows run in the RAM build only (the stub hashes files instead of decoding them).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "common.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Whether AddressSanitizer is built in, whose shadow memory and quarantine inflate the peak RSS. */
#if defined(__SANITIZE_ADDRESS__)
static int const under_address_sanitizer = 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
static int const under_address_sanitizer = 1;
#else
static int const under_address_sanitizer = 0;
#endif
#else
static int const under_address_sanitizer = 0;
#endif

enum { dimensions_k = 64, budget_samples_k = 256 * 4 * 160 };

static uform_model_t model = NULL;
static uform_executor_t ram = NULL;
static uform_arena_t arena = NULL;
static char scratch[4096];
static char data_dir[4096]; /* absolute: playlists name files through it */

/** Writes a mono WAV of `count` samples at `rate` Hz, 16-bit PCM, sample `i` being `sample(i)`. */
static int write_wav16(char const *path, unsigned rate, size_t count, float (*sample)(size_t)) {
    unsigned char header[44];
    uint32_t const bytes = (uint32_t)(count * 2),
                   fields[] = {36 + bytes, 16, 1 | 1u << 16, rate, rate * 2, 2 | 16u << 16};
    size_t i;
    FILE *file = fopen(path, "wb");
    int ok;
    if (!file) return 0;
    memcpy(header, "RIFF", 4), memcpy(header + 8, "WAVEfmt ", 8), memcpy(header + 36, "data", 4);
    for (i = 0; i != 4; ++i) {
        header[4 + i] = (unsigned char)(fields[0] >> 8 * i), header[16 + i] = (unsigned char)(fields[1] >> 8 * i);
        header[20 + i] = (unsigned char)(fields[2] >> 8 * i), header[24 + i] = (unsigned char)(fields[3] >> 8 * i);
        header[28 + i] = (unsigned char)(fields[4] >> 8 * i), header[32 + i] = (unsigned char)(fields[5] >> 8 * i);
        header[40 + i] = (unsigned char)(bytes >> 8 * i);
    }
    ok = fwrite(header, 1, 44, file) == 44;
    for (i = 0; ok && i != count; ++i) {
        long const value = lrintf(sample(i) * 32767.0f);
        unsigned char const pcm[2] = {(unsigned char)(value & 0xFF), (unsigned char)((value >> 8) & 0xFF)};
        ok = fwrite(pcm, 1, 2, file) == 2;
    }
    return fclose(file) == 0 && ok;
}

/** CRC-32 (PNG's) of `length` bytes, continuing from `crc`. */
static uint32_t crc32_of(uint32_t crc, unsigned char const *bytes, size_t length) {
    size_t i;
    int k;
    crc = ~crc;
    for (i = 0; i != length; ++i)
        for (crc ^= bytes[i], k = 0; k != 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    return ~crc;
}

/** Appends a big-endian 32-bit value. */
static unsigned char *put32(unsigned char *at, uint32_t value) {
    at[0] = (unsigned char)(value >> 24), at[1] = (unsigned char)(value >> 16);
    at[2] = (unsigned char)(value >> 8), at[3] = (unsigned char)value;
    return at + 4;
}

/** Writes a `height x width` RGB PNG of a gradient, its pixels in stored (uncompressed) deflate blocks. */
static int write_png(char const *path, uint32_t height, uint32_t width) {
    size_t const row = 1 + (size_t)width * 3, raw = row * height, blocks = (raw + 65534) / 65535;
    size_t const idat = 2 + raw + blocks * 5 + 4, total = 8 + 25 + 12 + idat + 12;
    unsigned char *file = (unsigned char *)malloc(total), *at = file, *chunk, *data;
    uint32_t a = 1, b = 0;
    size_t y, x, done;
    int ok;
    if (!file) return 0;
    memcpy(at, "\x89PNG\r\n\x1a\n", 8), at += 8;
    chunk = at, at = put32(at, 13), memcpy(at, "IHDR", 4), at += 4;
    at = put32(put32(at, width), height);
    at[0] = 8, at[1] = 2, at[2] = at[3] = at[4] = 0, at += 5;
    at = put32(at, crc32_of(0, chunk + 4, 17));
    chunk = at, at = put32(at, (uint32_t)idat), memcpy(at, "IDAT", 4), at += 4;
    *at++ = 0x78, *at++ = 0x01;
    data = (unsigned char *)malloc(raw);
    if (!data) return free(file), 0;
    for (y = 0; y != height; ++y) {
        data[y * row] = 0;
        for (x = 0; x != (size_t)width * 3; ++x)
            data[y * row + 1 + x] = (unsigned char)((x / 3 + y + x % 3 * 85) & 0xFF);
    }
    for (done = 0; done != raw;) {
        size_t const length = raw - done < 65535 ? raw - done : 65535;
        *at++ = done + length == raw;
        at[0] = (unsigned char)length, at[1] = (unsigned char)(length >> 8);
        at[2] = (unsigned char)~length, at[3] = (unsigned char)(~length >> 8), at += 4;
        memcpy(at, data + done, length), at += length, done += length;
    }
    for (x = 0; x != raw; ++x) a = (a + data[x]) % 65521, b = (b + a) % 65521;
    free(data);
    at = put32(at, b << 16 | a);
    at = put32(at, crc32_of(0, chunk + 4, idat + 4));
    chunk = at, at = put32(at, 0), memcpy(at, "IEND", 4), at += 4;
    at = put32(at, crc32_of(0, chunk + 4, 4));
    ok = write_whole_file(path, file, (size_t)(at - file));
    free(file);
    return ok;
}

/** A batch of large pictures holds each only while it is resized: 24 of 2000 x 2000 (12 MB of RGB each). */
static void many_pictures(void) {
    char const *list[24];
    test_tape_t paths;
    uform_image_encode_stats_t stats;
    uform_image_encode_args_t args;
    uform_encoded_t encoded;
    size_t i;
    if (!CHECK(write_png(joined_path(scratch, "large.png"), 2000, 2000))) return;
    for (i = 0; i != 24; ++i) list[i] = joined_path(scratch, "large.png");
    tape_of(&paths, list, 24);
    memset(&args, 0, sizeof(args));
    memset(&stats, 0, sizeof(stats));
    args.stats = &stats;
    CHECK_OK(uform_image_encode(model, ram, paths.data, paths.length, paths.offsets, 24, uform_outputs_embeddings_k,
                                &args, arena, &encoded, NULL, MSG));
    CHECK_SIZE(stats.tokens, 24 * 64);
}

/** A quiet 440 Hz tone at 16 kHz, then, past the patch budget, loud noise: what lies past the budget. */
static float quiet_then_loud(size_t i) {
    if (i < budget_samples_k + 4000) return 0.01f * (float)sin((double)i * 2.0 * 3.14159265358979 * 440.0 / 16000.0);
    return (i * 2654435761u >> 7 & 1) ? 0.9f : -0.9f;
}

/** Silence. */
static float silence(size_t i) {
    (void)i;
    return 0.0f;
}

/** The embedding of one audio file, its tokens and truncated items; the status. */
static uform_status_t audio_file(char const *path, float *embedding, size_t *tokens, size_t *truncated) {
    test_tape_t paths;
    uform_audio_encode_stats_t stats;
    uform_audio_encode_args_t args;
    uform_encoded_t encoded;
    uform_status_t status;
    char const *list[1];
    list[0] = path;
    tape_of(&paths, list, 1);
    memset(&args, 0, sizeof(args));
    memset(&stats, 0, sizeof(stats));
    args.stats = &stats;
    status = uform_audio_encode(model, ram, paths.data, paths.length, paths.offsets, 1, uform_outputs_embeddings_k,
                                &args, arena, &encoded, NULL, MSG);
    if (status == uform_status_ok_k) row_f32(&encoded.embeddings, 0, embedding);
    if (tokens) *tokens = stats.tokens;
    if (truncated) *truncated = stats.truncated_items;
    return status;
}

/** The embedding of one clip of samples at `rate`, its tokens and truncated items; the status. */
static uform_status_t audio_samples(float const *samples, size_t count, size_t rate, float *embedding, size_t *tokens,
                                    size_t *truncated) {
    size_t offsets[2];
    uform_audio_encode_stats_t stats;
    uform_audio_encode_args_t args;
    uform_encoded_t encoded;
    uform_status_t status;
    offsets[0] = 0, offsets[1] = count;
    memset(&args, 0, sizeof(args));
    memset(&stats, 0, sizeof(stats));
    args.stats = &stats;
    status = uform_audio_encode_samples(model, ram, samples, count, offsets, 1, rate, uform_outputs_embeddings_k, &args,
                                        arena, &encoded, NULL, MSG);
    if (status == uform_status_ok_k) row_f32(&encoded.embeddings, 0, embedding);
    if (tokens) *tokens = stats.tokens;
    if (truncated) *truncated = stats.truncated_items;
    return status;
}

/** A file verb over one path; the status, and the message through `MSG`. */
static uform_status_t one_file(int video, char const *path) {
    test_tape_t paths;
    uform_encoded_t encoded;
    char const *list[1];
    list[0] = path;
    tape_of(&paths, list, 1);
    if (video)
        return uform_video_encode(model, ram, paths.data, paths.length, paths.offsets, 1, uform_outputs_embeddings_k,
                                  NULL, arena, &encoded, NULL, MSG);
    return uform_audio_encode(model, ram, paths.data, paths.length, paths.offsets, 1, uform_outputs_embeddings_k, NULL,
                              arena, &encoded, NULL, MSG);
}

/** Seconds of the monotonic clock. */
static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

/** Whether `status` is `io` and came within a second of `start`. */
static int refused_at_once(uform_status_t status, double start) {
    double const seconds = now_seconds() - start;
    if (seconds >= 1.0) fprintf(stderr, "a FIFO took %.2f s to refuse\n", seconds);
    return CHECK_STATUS(status, uform_status_io_k) && CHECK(seconds < 1.0);
}

/** Counts calls of a progress handler. */
static bool count_progress(void *context, size_t completed, size_t total) {
    (void)completed, (void)total;
    ++*(size_t *)context;
    return false;
}

/**
 * A FIFO as an image, video or audio path, and as a checkpoint path: `io` at once in every build, the image's batch
 * refused before any item completes. Opening a FIFO for reading blocks until a writer comes, so a library that opened
 * it plainly would hang here: an alarm turns that into a failure.
 */
static void fifo_paths(void) {
    char fifo[4200];
    int modality;
    snprintf(fifo, sizeof(fifo), "%s", joined_path(scratch, "fifo"));
    if (!CHECK(mkfifo(fifo, 0600) == 0)) return;
    alarm(60);
    for (modality = 0; modality != 3; ++modality) {
        test_tape_t paths;
        uform_encoded_t encoded;
        char const *list[1];
        size_t progress_calls = 0;
        double const start = now_seconds();
        uform_status_t status;
        list[0] = fifo;
        tape_of(&paths, list, 1);
        if (modality == 0) {
            uform_image_encode_args_t args;
            memset(&args, 0, sizeof(args));
            args.progress = count_progress;
            args.progress_context = &progress_calls;
            status = uform_image_encode(model, ram, paths.data, paths.length, paths.offsets, 1,
                                        uform_outputs_embeddings_k, &args, arena, &encoded, NULL, MSG);
        } else {
            status = one_file(modality == 1, fifo);
        }
        refused_at_once(status, start);
        CHECK_SIZE(progress_calls, 0);
    }
    {
        uform_model_load_ram_args_t args;
        uform_model_t loaded = NULL;
        double const start = now_seconds();
        memset(&args, 0, sizeof(args));
        args.path = fifo;
        args.path_length = strlen(fifo);
        refused_at_once(uform_model_load_ram(&args, &loaded, MSG), start);
        CHECK(loaded == NULL);
    }
    alarm(0);
    unlink(fifo);
}

/** An image one pixel wide and `height` tall (or the transpose) keeps to the budget: a 64 x 1 grid, 64 tokens. */
static void tall_images(void) {
    static size_t const sides[] = {1000000, 10000000};
    size_t i, transpose;
    for (i = 0; i != sizeof(sides) / sizeof(sides[0]); ++i)
        for (transpose = 0; transpose != 2; ++transpose) {
            size_t const side = sides[i], offsets[2] = {0, side * 3};
            size_t const height = transpose ? 1 : side, width = transpose ? side : 1;
            uint8_t *pixels = (uint8_t *)malloc(side * 3);
            uform_image_encode_stats_t stats;
            uform_image_encode_args_t args;
            uform_encoded_t encoded;
            size_t k;
            if (!CHECK(pixels != NULL)) return;
            for (k = 0; k != side * 3; ++k) pixels[k] = (uint8_t)(k * 7 / 3);
            memset(&args, 0, sizeof(args));
            memset(&stats, 0, sizeof(stats));
            args.stats = &stats;
            CHECK_OK(uform_image_encode_pixels(model, ram, pixels, side * 3, offsets, 1, &height, &width,
                                               uform_outputs_embeddings_k, &args, arena, &encoded, NULL, MSG));
            CHECK_SIZE(stats.tokens, 64);
            free(pixels);
        }
}

/** Samples past the patch budget change nothing (the log-mel's clamp is taken over the kept part), at the model's
 * rate, at another, and from a file, which stops decoding there. (That resampling only the input the budget
 * reaches keeps the kept samples exact is checked bit for bit in tests/unit/resample_test.cpp.) */
static void audio_past_the_budget(void) {
    static size_t const rates[] = {16000, 44100};
    float kept[dimensions_k], longer[dimensions_k];
    size_t r, tokens = 0, truncated = 0;
    for (r = 0; r != 2; ++r) {
        size_t const rate = rates[r], total = (size_t)((double)(budget_samples_k + 40000) * (double)rate / 16000.0);
        size_t const head = (size_t)((double)budget_samples_k * (double)rate / 16000.0) + 200;
        float *samples = (float *)malloc(total * sizeof(float));
        size_t i;
        if (!CHECK(samples != NULL)) return;
        for (i = 0; i != total; ++i) samples[i] = quiet_then_loud((size_t)((double)i * 16000.0 / (double)rate));
        CHECK_OK(audio_samples(samples, head, rate, kept, &tokens, &truncated));
        CHECK_SIZE(tokens, 256);
        CHECK_SIZE(truncated, 1);
        CHECK_OK(audio_samples(samples, total, rate, longer, &tokens, &truncated));
        CHECK_SIZE(truncated, 1);
        CHECK(memcmp(kept, longer, sizeof(kept)) == 0);
        free(samples);
    }
    CHECK(write_wav16(joined_path(scratch, "head.wav"), 16000, budget_samples_k + 2000, quiet_then_loud));
    CHECK(write_wav16(joined_path(scratch, "long.wav"), 16000, budget_samples_k + 200000, quiet_then_loud));
    CHECK_OK(audio_file(joined_path(scratch, "head.wav"), kept, &tokens, &truncated));
    CHECK_SIZE(tokens, 256);
    CHECK_SIZE(truncated, 1);
    CHECK_OK(audio_file(joined_path(scratch, "long.wav"), longer, &tokens, &truncated));
    CHECK(memcmp(kept, longer, sizeof(kept)) == 0);
}

/** A few samples at another rate give one patch, as they do at the model's rate. */
static void short_clips(void) {
    float samples[40], embedding[dimensions_k];
    size_t i, tokens = 0;
    for (i = 0; i != 40; ++i) samples[i] = 0.5f * (float)sin((double)i);
    CHECK_OK(audio_samples(samples, 40, 16000, embedding, &tokens, NULL));
    CHECK_SIZE(tokens, 1);
    CHECK_OK(audio_samples(samples, 10, 44100, embedding, &tokens, NULL));
    CHECK_SIZE(tokens, 1);
    CHECK_OK(audio_samples(samples, 1, 384000, embedding, &tokens, NULL));
    CHECK_SIZE(tokens, 1);
}

/** Recordings at rates outside 1 kHz to 384 kHz, a few samples at another rate (one patch, as in short_clips),
 * and hours of silence, which cost only the budget. */
static void file_rates(void) {
    float embedding[dimensions_k];
    size_t tokens = 0, truncated = 0;
    CHECK(write_wav16(joined_path(scratch, "short.wav"), 44100, 10, quiet_then_loud));
    CHECK_OK(audio_file(joined_path(scratch, "short.wav"), embedding, &tokens, NULL));
    CHECK_SIZE(tokens, 1);
    CHECK(write_wav16(joined_path(scratch, "slow.wav"), 500, 100, silence));
    CHECK_STATUS(audio_file(joined_path(scratch, "slow.wav"), embedding, NULL, NULL), uform_status_unsupported_k);
    CHECK(write_wav16(joined_path(scratch, "fast.wav"), 400000, 100, silence));
    CHECK_STATUS(audio_file(joined_path(scratch, "fast.wav"), embedding, NULL, NULL), uform_status_unsupported_k);
    /* Two hours at 1 kHz: 460 MB of samples at the model's rate if it were all read. */
    CHECK(write_wav16(joined_path(scratch, "hours.wav"), 1000, 2 * 3600 * 1000, silence));
    CHECK_OK(audio_file(joined_path(scratch, "hours.wav"), embedding, &tokens, &truncated));
    CHECK_SIZE(tokens, 256);
    CHECK_SIZE(truncated, 1);
}

/** Only the demuxers of the formats the spec names, and no protocol but `file`. */
static void demuxers(void) {
    char text[8600];
    snprintf(text, sizeof(text), "ffconcat version 1.0\nfile '%s'\n", joined_path(data_dir, "media/tone.wav"));
    CHECK(write_whole_file(joined_path(scratch, "list.ffconcat"), text, strlen(text)));
    CHECK_STATUS(one_file(0, joined_path(scratch, "list.ffconcat")), uform_status_corrupt_k);
    snprintf(text, sizeof(text), "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n%s\n#EXT-X-ENDLIST\n",
             joined_path(data_dir, "media/tone.wav"));
    CHECK(write_whole_file(joined_path(scratch, "list.m3u8"), text, strlen(text)));
    CHECK_STATUS(one_file(0, joined_path(scratch, "list.m3u8")), uform_status_corrupt_k);
    CHECK_STATUS(one_file(1, joined_path(data_dir, "media/gray.png")), uform_status_corrupt_k);
    CHECK_STATUS(one_file(0, joined_path(data_dir, "media/gray.png")), uform_status_corrupt_k);
    CHECK_OK(one_file(0, joined_path(data_dir, "media/tone.opus")));
    CHECK_OK(one_file(1, joined_path(data_dir, "media/clip.webm")));
}

/** FFmpeg logs nothing to the host's stderr, for good files or bad. */
static void quiet(void) {
    static char const *const images[] = {"media/gray.png", "media/rgba.webp", "bad-media/corrupt.png",
                                         "bad-media/truncated.jpg"};
    char const *log = joined_path(scratch, "stderr.txt");
    int const saved = dup(2);
    FILE *sink = fopen(log, "wb");
    size_t i, length = 1;
    unsigned char *written;
    if (!CHECK(saved >= 0 && sink != NULL)) return;
    fflush(stderr);
    dup2(fileno(sink), 2);
    for (i = 0; i != sizeof(images) / sizeof(images[0]); ++i) {
        test_tape_t paths;
        uform_encoded_t encoded;
        char const *list[1];
        list[0] = joined_path(data_dir, images[i]);
        tape_of(&paths, list, 1);
        (void)uform_image_encode(model, ram, paths.data, paths.length, paths.offsets, 1, uform_outputs_embeddings_k,
                                 NULL, arena, &encoded, NULL, MSG);
    }
    (void)one_file(0, joined_path(data_dir, "bad-media/corrupt.mp3"));
    (void)one_file(1, joined_path(data_dir, "bad-media/corrupt.mp4"));
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(sink);
    written = read_whole_file(log, &length);
    CHECK(written != NULL);
    if (length) fprintf(stderr, "FFmpeg wrote to stderr: %.*s\n", (int)(length < 400 ? length : 400), written);
    CHECK_SIZE(length, 0);
    free(written);
}

/** Peak resident memory of the process so far, in MiB. */
static double peak_rss_mib(void) {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) return -1;
    return (double)usage.ru_maxrss / 1024.0; /* kilobytes on Linux */
}

int main(void) {
    char const *data = getenv("UFORM_TEST_DATA");
    if (!realpath(data && *data ? data : "tests/data", data_dir)) data_dir[0] = '\0';
    model = load_tiny();
    if (!model) return test_report("hostile_media");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_arena_init(NULL, &arena, MSG));
    CHECK(make_temp_directory(scratch, sizeof(scratch), "hostile"));
    tall_images();
    short_clips();
    fifo_paths();
    if (!build_is_stub()) {
        audio_past_the_budget();
        file_rates();
        many_pictures();
        demuxers();
        quiet();
    }
    printf("peak RSS %.1f MiB\n", peak_rss_mib());
    if (!under_address_sanitizer) CHECK(peak_rss_mib() < 300.0); /* ASan's shadow and quarantine are no measure */
    {
        static char const *const made[] = {"head.wav",  "long.wav",  "slow.wav",   "fast.wav",     "hours.wav",
                                           "short.wav", "list.m3u8", "stderr.txt", "list.ffconcat"};
        size_t i;
        for (i = 0; i != sizeof(made) / sizeof(made[0]); ++i) unlink(joined_path(scratch, made[i]));
        rmdir(scratch);
    }
    uform_arena_free(arena);
    uform_executor_free(ram);
    uform_model_free(model);
    return test_report("hostile_media");
}
