/**
 * @file serial_bits.c
 * @brief The serial class's output is the same bits on every architecture.
 *
 * The tiny checkpoint, pinned to the serial class, encodes the inputs of the text, image and audio goldens on the
 * calling thread; a 64-bit FNV-1a digest of each modality's F32 states and embeddings (every value's bits, little
 * endian) must equal the digest below, which an x86-64 build computed. CI runs this test on x86-64 and, through
 * scripts/arm-check.sh, on AArch64 under QEMU, so both architectures are held to the same bits (docs/decisions.md,
 * "The serial class's bits across architectures"). A deliberate change of the forward's arithmetic changes the
 * digests: the test prints the ones it computed, to be copied here from an x86-64 run.
 *
 * The stub answers stand-in rows, so under the stub this test only says it skipped.
 */
#include "common.h"
#include "goldens.h"

/** The digests an x86-64 build computes: text, image, audio. */
static uint64_t const expected_digests[3] = {
    0x54fc0523cd0e377bull,
    0xad5966c0bd40059bull,
    0x363651274de13007ull,
};

static uform_outputs_t const outputs = (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k);

/** Folds the F32 bits of every value of `rows` into the FNV-1a digest `hash`. */
static uint64_t digest_rows(uint64_t hash, uform_rows_t const *rows) {
    float row[256];
    size_t r, c;
    int b;
    if (!CHECK(rows->scalar == uform_scalar_f32_k && rows->columns <= 256)) return hash;
    for (r = 0; r != rows->count; ++r) {
        row_f32(rows, r, row);
        for (c = 0; c != rows->columns; ++c) {
            uint32_t bits;
            memcpy(&bits, &row[c], 4);
            for (b = 0; b != 4; ++b) hash = (hash ^ ((bits >> (8 * b)) & 0xFF)) * 0x100000001b3ull;
        }
    }
    return hash;
}

/** The digest of one encoding's states, then its embeddings. */
static uint64_t digest_encoded(uform_encoded_t const *encoded) {
    return digest_rows(digest_rows(0xcbf29ce484222325ull, &encoded->states), &encoded->embeddings);
}

/** The golden texts encoded. */
static int encode_text(uform_model_t model, uform_arena_t arena, uform_encoded_t *encoded) {
    golden_file_t file;
    unsigned char *bytes = NULL;
    int64_t *offsets64 = NULL;
    size_t bytes_count = 0, count = 0, offsets[16], i;
    int ok = 0;
    if (!CHECK(golden_file_open(&file, "text.safetensors"))) return 0;
    bytes = (unsigned char *)golden_file_copy(&file, "bytes", "U8", 1, &bytes_count, 0);
    offsets64 = (int64_t *)golden_file_copy(&file, "offsets", "I64", 8, &count, 0);
    if (CHECK(bytes && offsets64 && count >= 2 && count <= 16)) {
        for (i = 0; i != count; ++i) offsets[i] = (size_t)offsets64[i];
        ok = CHECK(offsets[count - 1] == bytes_count) &&
             CHECK_OK(uform_text_encode(model, NULL, (char const *)bytes, bytes_count, offsets, count - 1, outputs,
                                        NULL, arena, encoded, NULL, MSG));
    }
    free(bytes);
    free(offsets64);
    golden_file_close(&file);
    return ok;
}

/** The golden images encoded as RGB pixels, a grayscale one replicated. */
static int encode_image(uform_model_t model, uform_arena_t arena, uform_encoded_t *encoded) {
    golden_file_t file;
    unsigned char *pixels = NULL, *rgb = NULL;
    int64_t *pixel_offsets = NULL, *shapes = NULL;
    size_t pixels_count = 0, offsets_count = 0, shapes_count = 0, heights[8], widths[8], rgb_offsets[9], items, i, p;
    int ok = 0;
    if (!CHECK(golden_file_open(&file, "image.safetensors"))) return 0;
    pixels = (unsigned char *)golden_file_copy(&file, "pixels", "U8", 1, &pixels_count, 0);
    pixel_offsets = (int64_t *)golden_file_copy(&file, "pixel_offsets", "I64", 8, &offsets_count, 0);
    shapes = (int64_t *)golden_file_copy(&file, "shapes", "I64", 8, &shapes_count, 0);
    items = offsets_count ? offsets_count - 1 : 0;
    if (CHECK(pixels && pixel_offsets && shapes && items >= 1 && items <= 8 && shapes_count == 3 * items) &&
        CHECK((rgb = (unsigned char *)malloc(3 * pixels_count)) != NULL)) {
        rgb_offsets[0] = 0;
        for (i = 0; i != items; ++i) {
            size_t const channels = (size_t)shapes[3 * i + 2];
            unsigned char const *source = pixels + pixel_offsets[i];
            heights[i] = (size_t)shapes[3 * i];
            widths[i] = (size_t)shapes[3 * i + 1];
            for (p = 0; p != 3 * heights[i] * widths[i]; ++p)
                rgb[rgb_offsets[i] + p] = source[p / 3 * channels + (channels >= 3 ? p % 3 : 0)];
            rgb_offsets[i + 1] = rgb_offsets[i] + 3 * heights[i] * widths[i];
        }
        ok = CHECK_OK(uform_image_encode_pixels(model, NULL, rgb, rgb_offsets[items], rgb_offsets, items, heights,
                                                widths, outputs, NULL, arena, encoded, NULL, MSG));
    }
    free(rgb);
    free(pixels);
    free(pixel_offsets);
    free(shapes);
    golden_file_close(&file);
    return ok;
}

/** The golden audio clips encoded as samples at their common rate. */
static int encode_audio(uform_model_t model, uform_arena_t arena, uform_encoded_t *encoded) {
    golden_file_t file;
    float *samples = NULL;
    int64_t *sample_offsets64 = NULL, *rates = NULL;
    size_t samples_count = 0, offsets_count = 0, rates_count = 0, sample_offsets[8], items, i;
    int ok = 0;
    if (!CHECK(golden_file_open(&file, "audio.safetensors"))) return 0;
    samples = (float *)golden_file_copy(&file, "samples", "F32", 4, &samples_count, 0);
    sample_offsets64 = (int64_t *)golden_file_copy(&file, "sample_offsets", "I64", 8, &offsets_count, 0);
    rates = (int64_t *)golden_file_copy(&file, "sample_rates", "I64", 8, &rates_count, 0);
    items = offsets_count ? offsets_count - 1 : 0;
    if (CHECK(samples && sample_offsets64 && rates && items >= 1 && items <= 7 && rates_count == items)) {
        for (i = 0; i <= items; ++i) sample_offsets[i] = (size_t)sample_offsets64[i];
        for (i = 1; i != items; ++i) CHECK(rates[i] == rates[0]);
        ok = CHECK_OK(uform_audio_encode_samples(model, NULL, samples, samples_count, sample_offsets, items,
                                                 (size_t)rates[0], outputs, NULL, arena, encoded, NULL, MSG));
    }
    free(samples);
    free(sample_offsets64);
    free(rates);
    golden_file_close(&file);
    return ok;
}

int main(void) {
    typedef int (*encode_t)(uform_model_t, uform_arena_t, uform_encoded_t *);
    static encode_t const encoders[3] = {encode_text, encode_image, encode_audio};
    static char const *const names[3] = {"text", "image", "audio"};
    uform_model_load_ram_args_t args;
    uform_model_t model = NULL;
    int m;
    if (build_is_stub()) {
        printf("serial_bits: skipped: the stub answers stand-in rows, not the model's (build the RAM residency)\n");
        return test_report("serial_bits");
    }
    memset(&args, 0, sizeof(args));
    args.path = tiny_path();
    args.path_length = strlen(args.path);
    args.cpu_class = uform_cpu_class_serial_k;
    if (!CHECK_OK(uform_model_load_ram(&args, &model, MSG))) return test_report("serial_bits");
    for (m = 0; m != 3; ++m) {
        uform_arena_t arena = NULL;
        uform_encoded_t encoded;
        if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) continue;
        if (encoders[m](model, arena, &encoded)) {
            uint64_t const digest = digest_encoded(&encoded);
            printf("serial_bits: %s digest 0x%016llxull\n", names[m], (unsigned long long)digest);
            if (!CHECK(digest == expected_digests[m]))
                fprintf(stderr, "serial_bits: the serial class's %s bits differ from x86-64's (0x%016llx)\n", names[m],
                        (unsigned long long)expected_digests[m]);
        }
        uform_arena_free(arena);
    }
    uform_model_free(model);
    return test_report("serial_bits");
}
