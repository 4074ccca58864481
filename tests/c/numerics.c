/**
 * @file numerics.c
 * @brief The RAM residency against the PyTorch goldens of tests/data/goldens/, through the public C API alone:
 * `uform_text_encode` (states, token vectors, embeddings) and `uform_text_choose`, held to docs/model.md's
 * "How agreement is measured": every row's cosine >= 0.999 and relative Frobenius error <= 1e-2 per item for
 * states and token vectors, embedding cosine >= 0.9999 (an empty text's embedding exactly zero), and choice
 * probabilities within 2e-3. Also: the calling thread and a two-thread executor agree, a narrow output scalar is
 * the F32 rows converted, and an E4M3 model's embeddings stay within cosine 0.99 of the goldens.
 *
 * The stub answers deterministic stand-in rows, not the model's, so under the stub this test only says it skipped.
 * The goldens are read by goldens.h.
 */
#include "common.h"
#include "goldens.h"

/* ---------------------------------------------------------------------------------------------------------- */
/* Agreement                                                                                                   */
/* ---------------------------------------------------------------------------------------------------------- */

/** The worst figures over every item compared so far. */
typedef struct agreement_t {
    double worst_cosine;      /* rows of states or token vectors, and embeddings */
    double worst_frobenius;   /* relative, per item */
    double worst_probability; /* absolute */
    int zero_embedding_exact; /* the empty text's embedding is exactly zero */
} agreement_t;

/** Compares the first `items` items of a rows tape with the golden's rows: every row's cosine, each item's relative
 *  Frobenius error. */
static void compare_tape(uform_rows_t const *rows, size_t items, float const *golden, size_t columns, double min_cosine,
                         double max_frobenius, agreement_t *agreement, char const *what) {
    float row[256];
    size_t item, r, c;
    int ok = 1;
    if (!CHECK(rows->columns == columns && columns <= 256)) return;
    for (item = 0; item != items; ++item) {
        double difference = 0, reference = 0, frobenius;
        for (r = rows->offsets[item]; r != rows->offsets[item + 1]; ++r) {
            float const *expected = golden + r * columns;
            double cosine;
            row_f32(rows, r, row);
            cosine = cosine_f64(row, expected, columns, NULL, NULL);
            if (cosine < agreement->worst_cosine) agreement->worst_cosine = cosine;
            if (cosine < min_cosine) {
                if (ok) fprintf(stderr, "%s: item %zu row %zu cosine %.6f\n", what, item, r, cosine);
                ok = 0;
            }
            for (c = 0; c != columns; ++c) {
                double d = (double)row[c] - expected[c];
                difference += d * d;
                reference += (double)expected[c] * expected[c];
            }
        }
        frobenius = reference > 0 ? sqrt(difference / reference) : sqrt(difference);
        if (frobenius > agreement->worst_frobenius) agreement->worst_frobenius = frobenius;
        if (frobenius > max_frobenius) {
            fprintf(stderr, "%s: item %zu relative Frobenius error %.3e\n", what, item, frobenius);
            ok = 0;
        }
    }
    CHECK(ok);
}

/** Compares one embedding per item; an item whose golden is zero must be exactly zero. */
static void compare_embeddings(uform_rows_t const *rows, float const *golden, size_t items, size_t columns,
                               double min_cosine, agreement_t *agreement, char const *what) {
    float row[256];
    size_t item;
    int ok = 1;
    if (!CHECK(rows->columns == columns && rows->count == items && columns <= 256)) return;
    for (item = 0; item != items; ++item) {
        double aa, bb, cosine;
        row_f32(rows, item, row);
        cosine = cosine_f64(row, golden + item * columns, columns, &aa, &bb);
        if (bb == 0) {
            if (aa != 0 || !row_is_zero(rows, item)) {
                fprintf(stderr, "%s: item %zu is not exactly zero\n", what, item);
                agreement->zero_embedding_exact = 0;
                ok = 0;
            }
            continue;
        }
        if (cosine < agreement->worst_cosine) agreement->worst_cosine = cosine;
        if (cosine < min_cosine) {
            fprintf(stderr, "%s: item %zu embedding cosine %.7f\n", what, item, cosine);
            ok = 0;
        }
    }
    CHECK(ok);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* text_encode                                                                                                 */
/* ---------------------------------------------------------------------------------------------------------- */

typedef struct text_golden_t {
    golden_file_t file;
    unsigned char *bytes;
    size_t bytes_count;
    size_t offsets[16];
    size_t items;
    float *states, *token_vectors, *embeddings;
    size_t states_count, token_vectors_count, embeddings_count;
} text_golden_t;

static int text_golden_open(text_golden_t *t) {
    int64_t *offsets;
    size_t count, i;
    memset(t, 0, sizeof(*t));
    if (!CHECK(golden_file_open(&t->file, "text.safetensors"))) return 0;
    t->bytes = (unsigned char *)golden_file_copy(&t->file, "bytes", "U8", 1, &t->bytes_count, 0);
    offsets = (int64_t *)golden_file_copy(&t->file, "offsets", "I64", 8, &count, 0);
    t->states = (float *)golden_file_copy(&t->file, "states", "F32", 4, &t->states_count, 0);
    t->token_vectors = (float *)golden_file_copy(&t->file, "token_vectors", "F32", 4, &t->token_vectors_count, 0);
    t->embeddings = (float *)golden_file_copy(&t->file, "embeddings", "F32", 4, &t->embeddings_count, 0);
    if (!CHECK(t->bytes && offsets && t->states && t->token_vectors && t->embeddings && count >= 2 && count <= 16)) {
        free(offsets);
        return 0;
    }
    t->items = count - 1;
    for (i = 0; i != count; ++i) t->offsets[i] = (size_t)offsets[i];
    free(offsets);
    return CHECK(t->offsets[t->items] == t->bytes_count);
}

static void text_golden_close(text_golden_t *t) {
    free(t->bytes);
    free(t->states);
    free(t->token_vectors);
    free(t->embeddings);
    golden_file_close(&t->file);
}

static uform_outputs_t const all_outputs =
    (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k | uform_outputs_token_vectors_k);

/** The bounds one comparison holds: docs/model.md's for a BF16 model, looser ones for an E4M3 model. */
typedef struct bounds_t {
    double row_cosine, frobenius, embedding_cosine;
} bounds_t;

static bounds_t const model_md_bounds = {0.999, 1e-2, 0.9999};

/** Encodes the golden texts with every surface in F32 and holds them to `bounds`; answers 1 when it ran. */
static int check_text(uform_model_t model, uform_executor_t executor, text_golden_t const *t, bounds_t bounds,
                      agreement_t *states, agreement_t *vectors, agreement_t *embeddings, char const *label) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_text_encode_args_t args;
    uform_text_encode_stats_t stats;
    size_t vector_items = 0, hidden = 64, width = 32, dimensions = 64;
    char what[96];
    memset(&args, 0, sizeof(args));
    args.stats = &stats;
    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return 0;
    if (!CHECK_OK(uform_text_encode(model, executor, (char const *)t->bytes, t->bytes_count, t->offsets, t->items,
                                    all_outputs, &args, arena, &encoded, NULL, MSG))) {
        uform_arena_free(arena);
        return 0;
    }
    CHECK_SIZE(stats.items, t->items);
    CHECK_SIZE(stats.tokens, t->bytes_count);
    CHECK_ROWS_TAPE(&encoded.states, t->items, hidden);
    CHECK_ROWS_TAPE(&encoded.token_vectors, t->items, width);
    CHECK_ROWS_PER_ITEM(&encoded.embeddings, t->items, dimensions);
    CHECK_SIZE(t->states_count, t->bytes_count * hidden);
    snprintf(what, sizeof(what), "%s states", label);
    compare_tape(&encoded.states, t->items, t->states, hidden, bounds.row_cosine, bounds.frobenius, states, what);
    /* The golden's token vectors stop before the last item (the 2 KiB text is left out for size). */
    while (vector_items < t->items && t->offsets[vector_items + 1] * width <= t->token_vectors_count) ++vector_items;
    CHECK(vector_items + 1 >= t->items);
    snprintf(what, sizeof(what), "%s token vectors", label);
    compare_tape(&encoded.token_vectors, vector_items, t->token_vectors, width, bounds.row_cosine, bounds.frobenius,
                 vectors, what);
    snprintf(what, sizeof(what), "%s embeddings", label);
    compare_embeddings(&encoded.embeddings, t->embeddings, t->items, dimensions, bounds.embedding_cosine, embeddings,
                       what);
    uform_arena_free(arena);
    return 1;
}

/** Each narrow output scalar holds the F32 rows converted: the same forward, then one rounding. */
static void check_scalars(uform_model_t model, text_golden_t const *t) {
    static uform_scalar_t const scalars[] = {uform_scalar_f16_k,  uform_scalar_bf16_k, uform_scalar_e4m3_k,
                                             uform_scalar_e5m2_k, uform_scalar_i8_k,   uform_scalar_b1_k};
    uform_arena_t wide = NULL, narrow = NULL;
    uform_encoded_t reference, encoded;
    uform_text_encode_args_t args;
    size_t s, item, column;
    size_t const items = t->items - 1; /* the 2 KiB text adds nothing here */
    memset(&args, 0, sizeof(args));
    if (!CHECK_OK(uform_arena_init(NULL, &wide, MSG)) || !CHECK_OK(uform_arena_init(NULL, &narrow, MSG))) {
        uform_arena_free(wide);
        return;
    }
    if (CHECK_OK(uform_text_encode(model, NULL, (char const *)t->bytes, t->bytes_count, t->offsets, items, all_outputs,
                                   &args, wide, &reference, NULL, MSG)))
        for (s = 0; s != sizeof(scalars) / sizeof(scalars[0]); ++s) {
            int unit_only = scalars[s] == uform_scalar_i8_k || scalars[s] == uform_scalar_b1_k, ok = 1;
            uform_outputs_t outputs =
                unit_only ? (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_token_vectors_k) : all_outputs;
            args.scalar = scalars[s];
            if (!CHECK_OK(uform_text_encode(model, NULL, (char const *)t->bytes, t->bytes_count, t->offsets, items,
                                            outputs, &args, narrow, &encoded, NULL, MSG)))
                continue;
            CHECK(encoded.embeddings.scalar == scalars[s] && encoded.token_vectors.scalar == scalars[s]);
            CHECK(unit_only ? rows_empty(&encoded.states) : encoded.states.scalar == scalars[s]);
            /* Decode both: the narrow value equals the F32 value rounded, within the scalar's half step. */
            for (item = 0; item != items; ++item)
                for (column = 0; column != encoded.embeddings.columns; ++column) {
                    float const exact = row_value(&reference.embeddings, item, column);
                    float const got = row_value(&encoded.embeddings, item, column);
                    double tolerance;
                    switch (scalars[s]) {
                    case uform_scalar_f16_k: tolerance = fabs(exact) * 0x1p-11 + 0x1p-25; break;
                    case uform_scalar_bf16_k: tolerance = fabs(exact) * 0x1p-8; break;
                    case uform_scalar_e4m3_k: tolerance = fabs(exact) * 0x1p-4 + 0x1p-10; break;
                    case uform_scalar_e5m2_k: tolerance = fabs(exact) * 0x1p-3 + 0x1p-17; break;
                    case uform_scalar_i8_k: tolerance = 0.5 / 127 + 1e-6; break;
                    default:
                        tolerance = 2.0; /* b1: only the sign */
                        break;
                    }
                    if (scalars[s] == uform_scalar_b1_k) ok = ok && (got > 0) == (exact > 0);
                    else ok = ok && fabs((double)got - exact) <= tolerance;
                }
            if (!CHECK(ok)) fprintf(stderr, "scalar %s disagrees with F32\n", uform_scalar_name(scalars[s]));
        }
    uform_arena_free(wide);
    uform_arena_free(narrow);
}

/** Only the surfaces asked for: embeddings alone equal the embeddings of the call asking for all. */
static void check_subsets(uform_model_t model, text_golden_t const *t) {
    uform_arena_t a = NULL, b = NULL;
    uform_encoded_t all, one;
    size_t item;
    int same = 1;
    if (!CHECK_OK(uform_arena_init(NULL, &a, MSG)) || !CHECK_OK(uform_arena_init(NULL, &b, MSG))) {
        uform_arena_free(a);
        return;
    }
    if (CHECK_OK(uform_text_encode(model, NULL, (char const *)t->bytes, t->bytes_count, t->offsets, t->items,
                                   all_outputs, NULL, a, &all, NULL, MSG)) &&
        CHECK_OK(uform_text_encode(model, NULL, (char const *)t->bytes, t->bytes_count, t->offsets, t->items,
                                   uform_outputs_embeddings_k, NULL, b, &one, NULL, MSG))) {
        CHECK(rows_empty(&one.states) && rows_empty(&one.token_vectors));
        for (item = 0; item != t->items; ++item)
            same = same && rows_equal(&all.embeddings, item, &one.embeddings, item);
        CHECK(same);
    }
    uform_arena_free(a);
    uform_arena_free(b);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* text_choose                                                                                                 */
/* ---------------------------------------------------------------------------------------------------------- */

static void check_choose(uform_model_t model, uform_executor_t executor, agreement_t *agreement) {
    golden_file_t file;
    unsigned char *prompts = NULL, *legal = NULL;
    int64_t *prompt_offsets64 = NULL, *legal_offsets64 = NULL, *groups64 = NULL;
    float *expected = NULL;
    size_t prompts_count, legal_count, prompt_offsets_count, legal_offsets_count, groups_count, expected_count;
    size_t prompt_offsets[32], legal_offsets[32], groups[32], items, i;
    uform_arena_t arena = NULL;
    uform_tape_t probabilities;
    uform_text_choose_args_t args;
    uform_text_choose_stats_t stats;
    if (!CHECK(golden_file_open(&file, "choose.safetensors"))) return;
    prompts = (unsigned char *)golden_file_copy(&file, "prompt_bytes", "U8", 1, &prompts_count, 0);
    legal = (unsigned char *)golden_file_copy(&file, "legal_bytes", "U8", 1, &legal_count, 0);
    prompt_offsets64 = (int64_t *)golden_file_copy(&file, "prompt_offsets", "I64", 8, &prompt_offsets_count, 0);
    legal_offsets64 = (int64_t *)golden_file_copy(&file, "legal_offsets", "I64", 8, &legal_offsets_count, 0);
    groups64 = (int64_t *)golden_file_copy(&file, "groups", "I64", 8, &groups_count, 0);
    expected = (float *)golden_file_copy(&file, "probabilities", "F32", 4, &expected_count, 0);
    if (CHECK(prompts && legal && prompt_offsets64 && legal_offsets64 && groups64 && expected &&
              prompt_offsets_count >= 2 && prompt_offsets_count <= 32 && legal_offsets_count == prompt_offsets_count &&
              groups_count + 1 == prompt_offsets_count && expected_count == legal_count) &&
        CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
        items = groups_count;
        for (i = 0; i <= items; ++i) {
            prompt_offsets[i] = (size_t)prompt_offsets64[i];
            legal_offsets[i] = (size_t)legal_offsets64[i];
        }
        for (i = 0; i != items; ++i) groups[i] = (size_t)groups64[i];
        memset(&args, 0, sizeof(args));
        args.temperature_groups = groups;
        args.temperature_groups_count = items;
        args.stats = &stats;
        if (CHECK_OK(uform_text_choose(model, executor, (char const *)prompts, prompts_count, prompt_offsets, items,
                                       (char const *)legal, legal_count, legal_offsets, items, &args, arena,
                                       &probabilities, NULL, MSG))) {
            float const *got = (float const *)probabilities.data;
            int ok = 1;
            CHECK_SIZE(probabilities.items, items);
            CHECK(probabilities.scalar == uform_scalar_f32_k);
            CHECK_SIZE(stats.items, items);
            CHECK_SIZE(stats.tokens, prompts_count + items);
            CHECK_SIZE(stats.choices, legal_count);
            for (i = 0; i <= items; ++i) ok = ok && probabilities.offsets[i] == legal_offsets[i];
            CHECK(ok);
            for (i = 0; i != legal_count; ++i) {
                double d = fabs((double)got[i] - expected[i]);
                if (d > agreement->worst_probability) agreement->worst_probability = d;
            }
            if (!CHECK(agreement->worst_probability <= 2e-3))
                fprintf(stderr, "choose: worst probability difference %.3e\n", agreement->worst_probability);
        }
        uform_arena_free(arena);
    }
    free(prompts);
    free(legal);
    free(prompt_offsets64);
    free(legal_offsets64);
    free(groups64);
    free(expected);
    golden_file_close(&file);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* image_encode_pixels and audio_encode_samples                                                               */
/* ---------------------------------------------------------------------------------------------------------- */

/** Holds one encoding's token offsets, states and embeddings to a golden's. */
static void compare_media(uform_encoded_t const *encoded, int64_t const *token_offsets, size_t items,
                          float const *states, size_t states_count, float const *embeddings, agreement_t *rows,
                          agreement_t *pooled, char const *what) {
    size_t i;
    int same = 1;
    char label[96];
    if (!CHECK_ROWS_TAPE(&encoded->states, items, 64) || !CHECK_ROWS_PER_ITEM(&encoded->embeddings, items, 64)) return;
    for (i = 0; i <= items; ++i) same = same && encoded->states.offsets[i] == (size_t)token_offsets[i];
    if (!CHECK(same && states_count == encoded->states.count * 64)) {
        fprintf(stderr, "%s: the tokens per item differ from the golden's\n", what);
        return;
    }
    snprintf(label, sizeof(label), "%s states", what);
    compare_tape(&encoded->states, items, states, 64, 0.999, 1e-2, rows, label);
    snprintf(label, sizeof(label), "%s embeddings", what);
    compare_embeddings(&encoded->embeddings, embeddings, items, 64, 0.9999, pooled, label);
}

/** image.safetensors: grayscale replicated to RGB and alpha dropped, as docs/model.md says, then encoded as pixels. */
static void check_image(uform_model_t model, uform_executor_t executor, agreement_t *rows, agreement_t *pooled) {
    golden_file_t file;
    unsigned char *pixels = NULL, *rgb = NULL;
    int64_t *pixel_offsets = NULL, *shapes = NULL, *token_offsets = NULL;
    float *states = NULL, *embeddings = NULL;
    size_t pixels_count, offsets_count, shapes_count, tokens_count, states_count, embeddings_count;
    size_t heights[8], widths[8], rgb_offsets[9], items, i, p, c;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_image_encode_stats_t stats;
    uform_image_encode_args_t args;
    if (!CHECK(golden_file_open(&file, "image.safetensors"))) return;
    pixels = (unsigned char *)golden_file_copy(&file, "pixels", "U8", 1, &pixels_count, 0);
    pixel_offsets = (int64_t *)golden_file_copy(&file, "pixel_offsets", "I64", 8, &offsets_count, 0);
    shapes = (int64_t *)golden_file_copy(&file, "shapes", "I64", 8, &shapes_count, 0);
    token_offsets = (int64_t *)golden_file_copy(&file, "token_offsets", "I64", 8, &tokens_count, 0);
    states = (float *)golden_file_copy(&file, "states", "F32", 4, &states_count, 0);
    embeddings = (float *)golden_file_copy(&file, "embeddings", "F32", 4, &embeddings_count, 0);
    items = offsets_count ? offsets_count - 1 : 0;
    if (CHECK(pixels && pixel_offsets && shapes && token_offsets && states && embeddings && items >= 1 && items <= 8 &&
              shapes_count == 3 * items && tokens_count == items + 1 && embeddings_count == 64 * items) &&
        CHECK((rgb = (unsigned char *)malloc(3 * pixels_count)) != NULL) &&
        CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
        rgb_offsets[0] = 0;
        for (i = 0; i != items; ++i) {
            size_t const channels = (size_t)shapes[3 * i + 2];
            unsigned char const *source = pixels + pixel_offsets[i];
            heights[i] = (size_t)shapes[3 * i];
            widths[i] = (size_t)shapes[3 * i + 1];
            for (p = 0; p != heights[i] * widths[i]; ++p)
                for (c = 0; c != 3; ++c)
                    rgb[rgb_offsets[i] + 3 * p + c] = source[p * channels + (channels >= 3 ? c : 0)];
            rgb_offsets[i + 1] = rgb_offsets[i] + 3 * heights[i] * widths[i];
        }
        memset(&args, 0, sizeof(args));
        args.stats = &stats;
        if (CHECK_OK(uform_image_encode_pixels(model, executor, rgb, rgb_offsets[items], rgb_offsets, items, heights,
                                               widths, all_outputs, &args, arena, &encoded, NULL, MSG))) {
            CHECK_SIZE(stats.tokens, (size_t)token_offsets[items]);
            compare_media(&encoded, token_offsets, items, states, states_count, embeddings, rows, pooled, "image");
        }
        uform_arena_free(arena);
    }
    free(rgb);
    free(pixels);
    free(pixel_offsets);
    free(shapes);
    free(token_offsets);
    free(states);
    free(embeddings);
    golden_file_close(&file);
}

/** audio.safetensors: mono clips at 16 kHz, an empty one among them. */
static void check_audio(uform_model_t model, uform_executor_t executor, agreement_t *rows, agreement_t *pooled) {
    golden_file_t file;
    float *samples = NULL, *states = NULL, *embeddings = NULL;
    int64_t *sample_offsets64 = NULL, *rates = NULL, *token_offsets = NULL;
    size_t samples_count, offsets_count, rates_count, tokens_count, states_count, embeddings_count;
    size_t sample_offsets[8], items, i;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    if (!CHECK(golden_file_open(&file, "audio.safetensors"))) return;
    samples = (float *)golden_file_copy(&file, "samples", "F32", 4, &samples_count, 0);
    sample_offsets64 = (int64_t *)golden_file_copy(&file, "sample_offsets", "I64", 8, &offsets_count, 0);
    rates = (int64_t *)golden_file_copy(&file, "sample_rates", "I64", 8, &rates_count, 0);
    token_offsets = (int64_t *)golden_file_copy(&file, "token_offsets", "I64", 8, &tokens_count, 0);
    states = (float *)golden_file_copy(&file, "states", "F32", 4, &states_count, 0);
    embeddings = (float *)golden_file_copy(&file, "embeddings", "F32", 4, &embeddings_count, 0);
    items = offsets_count ? offsets_count - 1 : 0;
    if (CHECK(samples && sample_offsets64 && rates && token_offsets && states && embeddings && items >= 1 &&
              items <= 7 && rates_count == items && tokens_count == items + 1 && embeddings_count == 64 * items) &&
        CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
        for (i = 0; i <= items; ++i) sample_offsets[i] = (size_t)sample_offsets64[i];
        for (i = 1; i != items; ++i) CHECK(rates[i] == rates[0]);
        if (CHECK_OK(uform_audio_encode_samples(model, executor, samples, samples_count, sample_offsets, items,
                                                (size_t)rates[0], all_outputs, NULL, arena, &encoded, NULL, MSG)))
            compare_media(&encoded, token_offsets, items, states, states_count, embeddings, rows, pooled, "audio");
        uform_arena_free(arena);
    }
    free(samples);
    free(sample_offsets64);
    free(rates);
    free(token_offsets);
    free(states);
    free(embeddings);
    golden_file_close(&file);
}

/* ---------------------------------------------------------------------------------------------------------- */

static agreement_t fresh(void) {
    agreement_t a;
    a.worst_cosine = 1;
    a.worst_frobenius = 0;
    a.worst_probability = 0;
    a.zero_embedding_exact = 1;
    return a;
}

int main(void) {
    uform_model_t model, e4m3 = NULL;
    uform_executor_t ram = NULL;
    text_golden_t text;
    agreement_t states = fresh(), vectors = fresh(), embeddings = fresh(), choices = fresh();
    agreement_t e4m3_states = fresh(), e4m3_vectors = fresh(), e4m3_embeddings = fresh();
    agreement_t image_states = fresh(), image_embeddings = fresh(), audio_states = fresh(), audio_embeddings = fresh();
    if (build_is_stub()) {
        printf("numerics: skipped: the stub answers stand-in rows, not the model's (build the RAM residency)\n");
        return test_report("numerics");
    }
    model = load_tiny();
    if (!model) return test_report("numerics");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    if (text_golden_open(&text)) {
        check_text(model, NULL, &text, model_md_bounds, &states, &vectors, &embeddings, "calling thread");
        if (ram) check_text(model, ram, &text, model_md_bounds, &states, &vectors, &embeddings, "two threads");
        check_scalars(model, &text);
        check_subsets(model, &text);
        {
            uform_model_load_ram_args_t args;
            memset(&args, 0, sizeof(args));
            args.path = tiny_path();
            args.path_length = strlen(args.path);
            args.quantization = uform_scalar_e4m3_k;
            if (CHECK_OK(uform_model_load_ram(&args, &e4m3, MSG))) {
                /* E4M3 is held to the BF16 model by cosine alone (docs/model.md): embeddings within 0.99,
                   rows within a loose 0.9 that only catches a broken forward. */
                bounds_t const e4m3_bounds = {0.9, 0.5, 0.99};
                check_text(e4m3, NULL, &text, e4m3_bounds, &e4m3_states, &e4m3_vectors, &e4m3_embeddings, "e4m3");
            }
        }
    }
    check_choose(model, NULL, &choices);
    if (ram) check_choose(model, ram, &choices);
    check_image(model, NULL, &image_states, &image_embeddings);
    if (ram) check_image(model, ram, &image_states, &image_embeddings);
    check_audio(model, NULL, &audio_states, &audio_embeddings);
    if (ram) check_audio(model, ram, &audio_states, &audio_embeddings);
    printf("numerics: states worst row cosine %.6f, worst relative Frobenius %.2e\n", states.worst_cosine,
           states.worst_frobenius);
    printf("numerics: token vectors worst row cosine %.6f, worst relative Frobenius %.2e\n", vectors.worst_cosine,
           vectors.worst_frobenius);
    printf("numerics: embeddings worst cosine %.7f, empty text exactly zero: %s\n", embeddings.worst_cosine,
           embeddings.zero_embedding_exact ? "yes" : "no");
    printf("numerics: choices worst probability difference %.2e\n", choices.worst_probability);
    printf(
        "numerics: image states worst row cosine %.6f, worst relative Frobenius %.2e; embeddings worst cosine %.7f\n",
        image_states.worst_cosine, image_states.worst_frobenius, image_embeddings.worst_cosine);
    printf(
        "numerics: audio states worst row cosine %.6f, worst relative Frobenius %.2e; embeddings worst cosine %.7f\n",
        audio_states.worst_cosine, audio_states.worst_frobenius, audio_embeddings.worst_cosine);
    if (e4m3)
        printf("numerics: e4m3 model: states worst row cosine %.5f (Frobenius %.2e), embeddings worst cosine %.5f\n",
               e4m3_states.worst_cosine, e4m3_states.worst_frobenius, e4m3_embeddings.worst_cosine);
    text_golden_close(&text);
    uform_model_free(e4m3);
    uform_executor_free(ram);
    uform_model_free(model);
    return test_report("numerics");
}
