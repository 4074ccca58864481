/**
 * @file text.c
 * @brief `uform_text_encode` on every receiver, every surface and every scalar, and its determinism.
 */
#include "common.h"

static char const *const texts[] = {"a cat on a mat", "a dog in the fog", "", "x"};
enum { items_k = 4, bytes_k = 31, hidden_k = 64, dimensions_k = 64, token_width_k = 32 };

static uform_model_t model = NULL;
static uform_executor_t ram = NULL, local = NULL;
static test_tape_t tape;

/** The reference rows: the first call's F32 outputs, copied out of its arena. */
static float reference_embeddings[items_k][dimensions_k];
static float reference_states[bytes_k][hidden_k];
static float reference_token_vectors[bytes_k][token_width_k];

typedef enum receiver_t {
    calling_thread_k,
    ram_executor_k,
    local_executor_k,
    deferred_ram_k,
    deferred_local_k,
    receivers_k
} receiver_t;

static char const *const receiver_names[] = {"calling thread", "RAM executor", "local executor",
                                             "deferred on a RAM executor", "deferred on a local executor"};

/** Runs `uform_text_encode` on a receiver; a deferred call is waited for and released. */
static uform_status_t encode_on(receiver_t receiver, test_tape_t const *input, uform_outputs_t outputs,
                                uform_text_encode_args_t const *args, uform_arena_t arena, uform_encoded_t *encoded) {
    uform_outcome_t outcome = NULL;
    uform_status_t status;
    uform_executor_t executor = receiver == calling_thread_k                               ? NULL
                                : receiver == ram_executor_k || receiver == deferred_ram_k ? ram
                                                                                           : local;
    int deferred = receiver == deferred_ram_k || receiver == deferred_local_k;
    status = uform_text_encode(model, executor, input->data, input->length, input->offsets, input->count, outputs, args,
                               arena, encoded, deferred ? &outcome : NULL, MSG);
    if (!deferred) return status;
    if (!CHECK_STATUS(status, uform_status_deferred_k)) return status;
    CHECK(outcome != NULL);
    status = uform_outcome_wait(outcome, MSG);
    uform_outcome_release(outcome);
    return status;
}

static void copy_reference(uform_encoded_t const *encoded) {
    size_t row, column;
    for (row = 0; row != items_k; ++row)
        for (column = 0; column != dimensions_k; ++column)
            reference_embeddings[row][column] = row_value(&encoded->embeddings, row, column);
    for (row = 0; row != bytes_k && row != encoded->states.count; ++row) {
        for (column = 0; column != hidden_k; ++column)
            reference_states[row][column] = row_value(&encoded->states, row, column);
        for (column = 0; column != token_width_k; ++column)
            reference_token_vectors[row][column] = row_value(&encoded->token_vectors, row, column);
    }
}

/** Whether F32 rows equal reference rows bit for bit. */
static int same_as_reference(uform_rows_t const *rows, float const *reference, size_t first, size_t count,
                             size_t columns) {
    size_t row;
    for (row = 0; row != count; ++row)
        if (memcmp(row_bytes(rows, first + row), reference + row * columns, columns * sizeof(float))) return 0;
    return 1;
}

/** Checks every property of a full F32 encoding of `texts`. */
static void check_full_encoding(uform_encoded_t const *encoded, char const *receiver) {
    size_t i;
    uform_rows_t const *e = &encoded->embeddings, *s = &encoded->states, *t = &encoded->token_vectors;
    fprintf(stderr, "  checking the encoding on the %s\n", receiver);
    if (CHECK_ROWS_PER_ITEM(e, items_k, dimensions_k)) {
        CHECK(e->scalar == uform_scalar_f32_k && e->residency == uform_residency_ram_k && e->device == 0);
        CHECK_UNIT_ROWS_OR_ZERO(e, 1e-4);
        CHECK(row_is_zero(e, 2));
        CHECK(!row_is_zero(e, 0) && !row_is_zero(e, 1) && !row_is_zero(e, 3));
        CHECK(!rows_equal(e, 0, e, 1));
    }
    if (CHECK_ROWS_TAPE(s, items_k, hidden_k)) {
        CHECK(s->scalar == uform_scalar_f32_k && s->residency == uform_residency_ram_k);
        CHECK_SIZE(s->count, bytes_k);
        /* One state per byte: the offsets are the cumulative byte lengths; the empty text has none. */
        for (i = 0; i != items_k + 1; ++i) CHECK_SIZE(s->offsets[i], tape.offsets[i]);
    }
    if (CHECK_ROWS_TAPE(t, items_k, token_width_k)) {
        CHECK(t->scalar == uform_scalar_f32_k && t->residency == uform_residency_ram_k);
        CHECK_SIZE(t->count, bytes_k);
        for (i = 0; i != items_k + 1; ++i) CHECK_SIZE(t->offsets[i], tape.offsets[i]);
        CHECK_UNIT_ROWS(t, 1e-4);
    }
}

static void receivers(void) {
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_text_encode_stats_t stats;
    uform_text_encode_args_t args;
    test_progress_t progress;
    uform_outputs_t all =
        (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k | uform_outputs_token_vectors_k);
    int receiver;
    int have_reference = 0;

    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    for (receiver = 0; receiver != receivers_k; ++receiver) {
        memset(&encoded, 0, sizeof(encoded));
        memset(&stats, 0, sizeof(stats));
        memset(&progress, 0, sizeof(progress));
        memset(&args, 0, sizeof(args));
        args.scalar = uform_scalar_f32_k;
        args.stats = &stats;
        args.progress = test_progress;
        args.progress_context = &progress;
        if (!CHECK_OK(encode_on((receiver_t)receiver, &tape, all, &args, arena, &encoded))) continue;
        check_full_encoding(&encoded, receiver_names[receiver]);
        CHECK_SIZE(stats.items, items_k);
        CHECK_SIZE(stats.tokens, bytes_k);
        CHECK(progress.calls >= 1 && progress.total == items_k && !progress.regressed && !progress.overshot);
        CHECK_SIZE(progress.last_completed, items_k);
        if (encoded.embeddings.count != items_k || encoded.states.count != bytes_k) continue;
        if (!have_reference) {
            copy_reference(&encoded);
            have_reference = 1;
            continue;
        }
        /* An item's rows never depend on the receiver. */
        CHECK(same_as_reference(&encoded.embeddings, reference_embeddings[0], 0, items_k, dimensions_k));
        CHECK(same_as_reference(&encoded.states, reference_states[0], 0, bytes_k, hidden_k));
        CHECK(same_as_reference(&encoded.token_vectors, reference_token_vectors[0], 0, bytes_k, token_width_k));
    }

    /* `NULL` arguments are the defaults: F32, and zero outputs mean embeddings alone. */
    memset(&encoded, 0, sizeof(encoded));
    if (CHECK_OK(uform_text_encode(model, NULL, tape.data, tape.length, tape.offsets, tape.count, (uform_outputs_t)0,
                                   NULL, arena, &encoded, NULL, MSG))) {
        CHECK_ROWS_PER_ITEM(&encoded.embeddings, items_k, dimensions_k);
        CHECK(encoded.embeddings.scalar == uform_scalar_f32_k);
        CHECK(rows_empty(&encoded.states) && rows_empty(&encoded.token_vectors));
        CHECK(have_reference &&
              same_as_reference(&encoded.embeddings, reference_embeddings[0], 0, items_k, dimensions_k));
    }
    memset(&args, 0, sizeof(args));
    if (CHECK_OK(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, tape.count, uform_outputs_states_k,
                                   &args, arena, &encoded, NULL, MSG))) {
        CHECK(rows_empty(&encoded.embeddings) && rows_empty(&encoded.token_vectors));
        CHECK_ROWS_TAPE(&encoded.states, items_k, hidden_k);
        CHECK(encoded.states.scalar == uform_scalar_f32_k);
        CHECK(have_reference && same_as_reference(&encoded.states, reference_states[0], 0, bytes_k, hidden_k));
    }
    if (CHECK_OK(uform_text_encode(model, local, tape.data, tape.length, tape.offsets, tape.count,
                                   uform_outputs_token_vectors_k, NULL, arena, &encoded, NULL, MSG))) {
        CHECK(rows_empty(&encoded.embeddings) && rows_empty(&encoded.states));
        CHECK_ROWS_TAPE(&encoded.token_vectors, items_k, token_width_k);
    }
    uform_arena_free(arena);
}

/** The same item in another batch, on another receiver, answers the same bytes. */
static void batches(void) {
    static char const *const other[] = {"x", "a cat on a mat", "a cat on a mat", "something else entirely"};
    test_tape_t second;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_outputs_t all =
        (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k | uform_outputs_token_vectors_k);
    int receiver;

    tape_of(&second, other, 4);
    if (!CHECK_OK(uform_arena_init(ram, &arena, MSG))) return;
    for (receiver = 0; receiver != receivers_k; ++receiver) {
        memset(&encoded, 0, sizeof(encoded));
        if (!CHECK_OK(encode_on((receiver_t)receiver, &second, all, NULL, arena, &encoded))) continue;
        if (!CHECK_ROWS_PER_ITEM(&encoded.embeddings, 4, dimensions_k) ||
            !CHECK_ROWS_TAPE(&encoded.states, 4, hidden_k) ||
            !CHECK_ROWS_TAPE(&encoded.token_vectors, 4, token_width_k))
            continue;
        CHECK(same_as_reference(&encoded.embeddings, reference_embeddings[3], 0, 1, dimensions_k));
        CHECK(same_as_reference(&encoded.embeddings, reference_embeddings[0], 1, 1, dimensions_k));
        CHECK(same_as_reference(&encoded.embeddings, reference_embeddings[0], 2, 1, dimensions_k));
        CHECK(!same_as_reference(&encoded.embeddings, reference_embeddings[0], 3, 1, dimensions_k));
        CHECK(encoded.states.offsets[1] == 1 && encoded.states.offsets[2] == 15 && encoded.states.offsets[3] == 29);
        CHECK(same_as_reference(&encoded.states, reference_states[30], 0, 1, hidden_k));
        CHECK(same_as_reference(&encoded.states, reference_states[0], 1, 14, hidden_k));
        CHECK(same_as_reference(&encoded.states, reference_states[0], 15, 14, hidden_k));
        CHECK(same_as_reference(&encoded.token_vectors, reference_token_vectors[0], 15, 14, token_width_k));
        CHECK_UNIT_ROWS(&encoded.embeddings, 1e-4);
    }

    /* A one-item batch and a batch of one empty text. */
    memset(&encoded, 0, sizeof(encoded));
    {
        size_t offsets[2] = {0, 16};
        size_t empty[2] = {0, 0};
        if (CHECK_OK(uform_text_encode(model, NULL, "a dog in the fog", 16, offsets, 1, all, NULL, arena, &encoded,
                                       NULL, MSG)) &&
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 1, dimensions_k))
            CHECK(same_as_reference(&encoded.embeddings, reference_embeddings[1], 0, 1, dimensions_k));
        /* `data` may be `NULL` when `data_length` is zero. */
        if (CHECK_OK(uform_text_encode(model, NULL, NULL, 0, empty, 1, all, NULL, arena, &encoded, NULL, MSG))) {
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 1, dimensions_k);
            CHECK(encoded.embeddings.count == 1 && row_is_zero(&encoded.embeddings, 0));
            CHECK_ROWS_TAPE(&encoded.states, 1, hidden_k);
            CHECK_SIZE(encoded.states.count, 0);
            CHECK_SIZE(encoded.token_vectors.count, 0);
        }
        /* An empty batch answers empty rows. */
        if (CHECK_OK(uform_text_encode(model, NULL, NULL, 0, empty, 0, all, NULL, arena, &encoded, NULL, MSG))) {
            CHECK_SIZE(encoded.embeddings.count, 0);
            CHECK_SIZE(encoded.embeddings.items, 0);
            CHECK_SIZE(encoded.states.count, 0);
        }
        /* Texts are bytes, not checked as UTF-8: invalid sequences and NULs are tokens like any other. */
        offsets[0] = 0;
        offsets[1] = 5;
        if (CHECK_OK(uform_text_encode(model, NULL, "\xFF\xFE\0\xC3(", 5, offsets, 1, all, NULL, arena, &encoded, NULL,
                                       MSG))) {
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 1, dimensions_k);
            CHECK_UNIT_ROWS(&encoded.embeddings, 1e-4);
            CHECK_SIZE(encoded.states.count, 5);
        }
        offsets[1] = 16;
        /* Offsets need not start at zero: a tape may skip a prefix of its data. */
        offsets[0] = 2;
        if (CHECK_OK(uform_text_encode(model, NULL, "a dog in the fog", 16, offsets, 1, uform_outputs_states_k, NULL,
                                       arena, &encoded, NULL, MSG)))
            CHECK_SIZE(encoded.states.count, 14);
    }
    uform_arena_free(arena);
}

/** Tolerances of each scalar against the F32 value: relative and absolute. */
static int close_enough(uform_scalar_t scalar, float got, float expected) {
    double error = fabs((double)got - (double)expected), size = fabs((double)expected);
    switch (scalar) {
    case uform_scalar_f16_k: return error <= 1e-3 * size + 1e-7;
    case uform_scalar_bf16_k: return error <= 4e-3 * size + 1e-30;
    case uform_scalar_e4m3_k: return error <= 0.0625 * size + 0.002;
    case uform_scalar_e5m2_k: return error <= 0.125 * size + 1e-5;
    case uform_scalar_i8_k: return error <= 0.51 / 127.0 + 1e-6;
    case uform_scalar_b1_k: return (got > 0) == (expected > 0);
    default: return got == expected;
    }
}

static int rows_close(uform_rows_t const *rows, float const *reference, size_t count, size_t columns) {
    size_t row, column;
    if (rows->count != count || rows->columns != columns) return 0;
    for (row = 0; row != count; ++row)
        for (column = 0; column != columns; ++column)
            if (!close_enough(rows->scalar, row_value(rows, row, column), reference[row * columns + column])) {
                fprintf(stderr, "    %s row %zu column %zu: %g against %g\n", uform_scalar_name(rows->scalar), row,
                        column, (double)row_value(rows, row, column), (double)reference[row * columns + column]);
                return 0;
            }
    return 1;
}

static void scalars(void) {
    static uform_scalar_t const every[] = {uform_scalar_auto_k, uform_scalar_f32_k,  uform_scalar_f16_k,
                                           uform_scalar_bf16_k, uform_scalar_e4m3_k, uform_scalar_e5m2_k,
                                           uform_scalar_i8_k,   uform_scalar_b1_k};
    uform_arena_t arena = NULL, other = NULL;
    uform_encoded_t encoded, again;
    uform_text_encode_args_t args;
    size_t i;
    uform_outputs_t unit = (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_token_vectors_k);

    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG)) || !CHECK_OK(uform_arena_init(ram, &other, MSG))) return;
    for (i = 0; i != sizeof(every) / sizeof(every[0]); ++i) {
        uform_scalar_t scalar = every[i], landed = scalar == uform_scalar_auto_k ? uform_scalar_f32_k : scalar;
        int packed = scalar == uform_scalar_i8_k || scalar == uform_scalar_b1_k;
        fprintf(stderr, "  scalar %s\n", uform_scalar_name(scalar));
        memset(&args, 0, sizeof(args));
        args.scalar = scalar;
        /* Unit rows take every scalar. */
        memset(&encoded, 0, sizeof(encoded));
        if (CHECK_OK(uform_text_encode(model, NULL, tape.data, tape.length, tape.offsets, tape.count, unit, &args,
                                       arena, &encoded, NULL, MSG))) {
            CHECK(encoded.embeddings.scalar == landed && encoded.token_vectors.scalar == landed);
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, items_k, dimensions_k);
            CHECK_ROWS_TAPE(&encoded.token_vectors, items_k, token_width_k);
            CHECK(rows_close(&encoded.embeddings, reference_embeddings[0], items_k, dimensions_k));
            CHECK(rows_close(&encoded.token_vectors, reference_token_vectors[0], bytes_k, token_width_k));
            CHECK(encoded.embeddings.count == items_k && row_is_zero(&encoded.embeddings, 2));
            if (!packed) CHECK_UNIT_ROWS_OR_ZERO(&encoded.embeddings, landed == uform_scalar_f32_k ? 1e-4 : 0.1);
            /* The same scalar on another receiver and arena answers the same bytes. */
            memset(&again, 0, sizeof(again));
            if (CHECK_OK(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, tape.count, unit, &args,
                                           other, &again, NULL, MSG)) &&
                again.embeddings.count == items_k && encoded.embeddings.count == items_k) {
                CHECK(rows_equal(&encoded.embeddings, 0, &again.embeddings, 0) &&
                      rows_equal(&encoded.embeddings, 3, &again.embeddings, 3));
                CHECK(rows_equal(&encoded.token_vectors, 0, &again.token_vectors, 0));
            }
        }
        /* States are not unit rows: i8 and b1 are refused for them. */
        memset(&encoded, 0, sizeof(encoded));
        if (packed) {
            CHECK_STATUS(uform_text_encode(model, NULL, tape.data, tape.length, tape.offsets, tape.count,
                                           uform_outputs_states_k, &args, arena, &encoded, NULL, MSG),
                         uform_status_invalid_argument_k);
            CHECK_STATUS(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, tape.count,
                                           (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k),
                                           &args, arena, &encoded, NULL, MSG),
                         uform_status_invalid_argument_k);
        } else if (CHECK_OK(uform_text_encode(model, NULL, tape.data, tape.length, tape.offsets, tape.count,
                                              uform_outputs_states_k, &args, arena, &encoded, NULL, MSG))) {
            CHECK(encoded.states.scalar == landed);
            CHECK_ROWS_TAPE(&encoded.states, items_k, hidden_k);
            CHECK(rows_close(&encoded.states, reference_states[0], bytes_k, hidden_k));
        }
    }
    uform_arena_free(arena);
    uform_arena_free(other);
}

int main(void) {
    model = load_tiny();
    if (!model) return test_report("text");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_executor_init_local(&local, MSG));
    tape_of(&tape, texts, items_k);
    receivers();
    batches();
    scalars();
    uform_executor_free(ram);
    uform_executor_free(local);
    uform_model_free(model);
    return test_report("text");
}
