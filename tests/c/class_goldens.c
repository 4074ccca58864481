/**
 * @file class_goldens.c
 * @brief Every CPU class this machine runs, pinned one at a time, against the PyTorch text goldens.
 *
 * c.numerics holds the class `auto` picks; this test pins each named class in turn (the serial class, and on a
 * machine with SVE also `arm-neon` beside `arm-sve` and `arm-sve2`, on an AVX-512 machine `intel-haswell` beside
 * `intel-skylake`, ...) and holds its text states and embeddings to docs/model.md's bounds: every state row's cosine
 * >= 0.999, each item's relative Frobenius error <= 1e-2, every embedding's cosine >= 0.9999 (the empty text's
 * embedding exactly zero). The class `auto` picks encodes every golden text; the others leave out the 2 KiB one,
 * whose forward costs most of the test's time under emulation. A class the machine refuses is skipped and named; the
 * serial class and the one `auto` picks must load. `$UFORM_TEST_CPU_CLASSES` (space-separated names), when set,
 * narrows the test to the classes it lists, each of which must load (scripts/arm-check.sh names the Arm classes each
 * emulated CPU can run, since every class costs an emulated forward).
 *
 * The stub answers stand-in rows, so under the stub this test only says it skipped.
 */
#include "common.h"
#include "goldens.h"

/** The golden texts: their bytes and item offsets, and the reference's states and embeddings. */
typedef struct text_goldens_t {
    golden_file_t file;
    unsigned char *bytes;
    float *states, *embeddings;
    size_t bytes_count, states_count, embeddings_count, items;
    size_t offsets[16];
} text_goldens_t;

/** The model's widths, the classes' bound, and the longest text every class encodes (the 2 KiB one, which costs most
 *  of an emulated forward, is left to the class `auto` picks). */
enum { hidden_k = 64, dimensions_k = 64, classes_k = 32, short_text_bytes_k = 512 };

static void text_goldens_close(text_goldens_t *t) {
    free(t->bytes);
    free(t->states);
    free(t->embeddings);
    golden_file_close(&t->file);
}

/** Reads text.safetensors; answers 1 when every tensor is there and consistent. */
static int text_goldens_open(text_goldens_t *t) {
    int64_t *offsets;
    size_t count = 0, i;
    memset(t, 0, sizeof(*t));
    if (!CHECK(golden_file_open(&t->file, "text.safetensors"))) return 0;
    t->bytes = (unsigned char *)golden_file_copy(&t->file, "bytes", "U8", 1, &t->bytes_count, 0);
    offsets = (int64_t *)golden_file_copy(&t->file, "offsets", "I64", 8, &count, 0);
    t->states = (float *)golden_file_copy(&t->file, "states", "F32", 4, &t->states_count, 0);
    t->embeddings = (float *)golden_file_copy(&t->file, "embeddings", "F32", 4, &t->embeddings_count, 0);
    if (!CHECK(t->bytes && offsets && t->states && t->embeddings && count >= 2 && count <= 16)) {
        free(offsets);
        return 0;
    }
    t->items = count - 1;
    for (i = 0; i != count; ++i) t->offsets[i] = (size_t)offsets[i];
    free(offsets);
    return CHECK(t->offsets[t->items] == t->bytes_count && t->states_count == t->bytes_count * hidden_k &&
                 t->embeddings_count == t->items * dimensions_k);
}

/** The worst state row cosine, worst relative Frobenius error per item, and worst embedding cosine; 0 when a state
 *  or an embedding breaks its bound (each break is printed). */
static int compare(uform_encoded_t const *encoded, text_goldens_t const *t, size_t items, double worst[3],
                   char const *name) {
    float row[hidden_k];
    size_t item, r, c;
    int ok = 1;
    for (item = 0; item != items; ++item) {
        double difference = 0, reference = 0, frobenius, aa, bb, cosine;
        for (r = encoded->states.offsets[item]; r != encoded->states.offsets[item + 1]; ++r) {
            float const *expected = t->states + r * hidden_k;
            row_f32(&encoded->states, r, row);
            cosine = cosine_f64(row, expected, hidden_k, NULL, NULL);
            if (cosine < worst[0]) worst[0] = cosine;
            if (cosine < 0.999 && ok)
                fprintf(stderr, "%s: item %zu state row %zu cosine %.6f\n", name, item, r, cosine);
            ok = ok && cosine >= 0.999;
            for (c = 0; c != hidden_k; ++c) {
                difference += ((double)row[c] - expected[c]) * ((double)row[c] - expected[c]);
                reference += (double)expected[c] * expected[c];
            }
        }
        frobenius = reference > 0 ? sqrt(difference / reference) : sqrt(difference);
        if (frobenius > worst[1]) worst[1] = frobenius;
        if (frobenius > 1e-2) fprintf(stderr, "%s: item %zu relative Frobenius error %.3e\n", name, item, frobenius);
        ok = ok && frobenius <= 1e-2;
        row_f32(&encoded->embeddings, item, row);
        cosine = cosine_f64(row, t->embeddings + item * dimensions_k, dimensions_k, &aa, &bb);
        if (bb == 0) {
            if (!row_is_zero(&encoded->embeddings, item)) fprintf(stderr, "%s: item %zu is not zero\n", name, item);
            ok = ok && row_is_zero(&encoded->embeddings, item);
            continue;
        }
        if (cosine < worst[2]) worst[2] = cosine;
        if (cosine < 0.9999) fprintf(stderr, "%s: item %zu embedding cosine %.7f\n", name, item, cosine);
        ok = ok && cosine >= 0.9999;
    }
    return ok;
}

/** Encodes the first `items` golden texts on the calling thread with `model` and holds them to the goldens. */
static void check_class(uform_model_t model, text_goldens_t const *t, size_t items, char const *name) {
    uform_outputs_t const outputs = (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k);
    double worst[3] = {1, 0, 1};
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    if (CHECK_OK(uform_text_encode(model, NULL, (char const *)t->bytes, t->offsets[items], t->offsets, items, outputs,
                                   NULL, arena, &encoded, NULL, MSG)) &&
        CHECK_ROWS_TAPE(&encoded.states, items, hidden_k) &&
        CHECK_ROWS_PER_ITEM(&encoded.embeddings, items, dimensions_k)) {
        if (!CHECK(compare(&encoded, t, items, worst, name))) fprintf(stderr, "%s breaks the goldens' bounds\n", name);
        printf("%s, %zu texts: states worst row cosine %.6f, worst relative Frobenius %.2e; embeddings worst cosine "
               "%.7f\n",
               name, items, worst[0], worst[1], worst[2]);
    }
    uform_arena_free(arena);
}

/** Loads the tiny checkpoint pinned to `cpu_class`; `NULL` when this machine refuses the class. */
static uform_model_t load_pinned(uform_cpu_class_t cpu_class) {
    uform_model_load_ram_args_t args;
    uform_model_t model = NULL;
    char const *message = NULL;
    memset(&args, 0, sizeof(args));
    args.path = tiny_path();
    args.path_length = strlen(args.path);
    args.cpu_class = cpu_class;
    if (uform_model_load_ram(&args, &model, &message) != uform_status_ok_k) return NULL;
    return model;
}

/** The class a model loaded with `auto` describes; `auto` (a counted failure) when it does not load. */
static uform_cpu_class_t dispatched_class(void) {
    uform_model_t model = load_tiny();
    uform_model_description_t description;
    uform_cpu_class_t dispatched = uform_cpu_class_auto_k;
    if (model && CHECK_OK(uform_model_describe(model, &description, MSG)) && CHECK(description.cpu_class < classes_k))
        dispatched = description.cpu_class;
    uform_model_free(model);
    return dispatched;
}

/** Marks in `wanted` the classes to check and in `required` those that must load: the classes
 *  `$UFORM_TEST_CPU_CLASSES` names when set, else every class (the serial class and `dispatched` required). */
static void chosen_classes(uform_cpu_class_t dispatched, int wanted[classes_k], int required[classes_k]) {
    char const *listed = getenv("UFORM_TEST_CPU_CLASSES");
    char names[256];
    int c;
    if (listed && *listed) {
        if (!CHECK(strlen(listed) < sizeof(names))) return;
        strcpy(names, listed);
        for (char *name = strtok(names, " "); name; name = strtok(NULL, " ")) {
            uform_cpu_class_t cpu_class = uform_cpu_class_auto_k;
            if (CHECK_OK(uform_cpu_class_parse(name, &cpu_class)) && CHECK(cpu_class < classes_k))
                wanted[cpu_class] = required[cpu_class] = 1;
        }
        return;
    }
    for (c = uform_cpu_class_serial_k; c != classes_k; ++c) wanted[c] = 1;
    required[uform_cpu_class_serial_k] = required[dispatched] = 1;
}

int main(void) {
    text_goldens_t goldens;
    int wanted[classes_k] = {0}, required[classes_k] = {0};
    uform_cpu_class_t dispatched;
    size_t short_items = 0;
    int c;
    if (build_is_stub()) {
        printf("class_goldens: skipped: the stub answers stand-in rows, not the model's (build the RAM residency)\n");
        return test_report("class_goldens");
    }
    dispatched = dispatched_class();
    chosen_classes(dispatched, wanted, required);
    if (!text_goldens_open(&goldens)) {
        text_goldens_close(&goldens);
        return test_report("class_goldens");
    }
    while (short_items < goldens.items &&
           goldens.offsets[short_items + 1] - goldens.offsets[short_items] <= short_text_bytes_k)
        ++short_items;
    for (c = uform_cpu_class_serial_k; c != classes_k; ++c) {
        char const *name = uform_cpu_class_name((uform_cpu_class_t)c);
        uform_model_t model;
        if (!name || !wanted[c]) continue;
        model = load_pinned((uform_cpu_class_t)c);
        if (!model) {
            printf("%s: refused on this machine\n", name);
            if (!CHECK(!required[c])) fprintf(stderr, "%s must load here\n", name);
            continue;
        }
        check_class(model, &goldens, c == (int)dispatched ? goldens.items : short_items, name);
        uform_model_free(model);
    }
    text_goldens_close(&goldens);
    return test_report("class_goldens");
}
