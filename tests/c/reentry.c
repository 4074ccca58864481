/**
 * @file reentry.c
 * @brief Progress handlers that call the library: a call a handler makes runs on scratch of its own, so the call
 * it runs inside publishes the same rows as without it, and what would wait for the handler itself (draining or
 * freeing that call's executor, freeing its arena or model, waiting on or releasing its own outcome) answers
 * `contended` at once, leaving the handle alive. Calls nest at most 8 deep.
 */
#include "common.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

static uform_model_t model = NULL;
static uform_executor_t ram = NULL;
static test_tape_t outer_tape, small_tape, large_tape, many_tape;

/** What the handler does at its first call. */
typedef enum action_t {
    action_nothing,
    action_encode_small, /* a nested call smaller than the outer one, on the calling thread */
    action_encode_large, /* a nested call larger than the outer one, on the calling thread */
    action_drain_executor,
    action_free_executor,
    action_free_arena,
    action_free_model,
    action_wait_outcome,
    action_release_outcome,
} action_t;

typedef struct probe_t {
    action_t action;
    uform_arena_t outer_arena;
    uform_arena_t nested_arena;
    uform_outcome_t outcome; /* the outer call's, for the deferred actions */
    size_t calls;
    uform_status_t status; /* what the action answered */
} probe_t;

static bool act(void *context, size_t completed, size_t total) {
    probe_t *probe = (probe_t *)context;
    uform_encoded_t nested;
    (void)completed, (void)total;
    if (probe->calls++ != 0) return false;
    switch (probe->action) {
    case action_nothing: break;
    case action_encode_small:
    case action_encode_large: {
        test_tape_t const *tape = probe->action == action_encode_small ? &small_tape : &large_tape;
        probe->status = uform_text_encode(model, NULL, tape->data, tape->length, tape->offsets, tape->count,
                                          uform_outputs_states_k, NULL, probe->nested_arena, &nested, NULL, NULL);
        break;
    }
    case action_drain_executor: probe->status = uform_executor_drain(ram, uform_mood_sleeping_k, NULL); break;
    case action_free_executor: probe->status = uform_executor_free(ram); break;
    case action_free_arena: probe->status = uform_arena_free(probe->outer_arena); break;
    case action_free_model: probe->status = uform_model_free(model); break;
    case action_wait_outcome: probe->status = uform_outcome_wait(probe->outcome, NULL); break;
    case action_release_outcome: probe->status = uform_outcome_release(probe->outcome); break;
    }
    return false;
}

/** Encodes the outer tape as F16 embeddings and states (staged in scratch until the call's end) with `probe`'s
 * handler, blocking or deferred, and copies the rows' bytes into `rows` (`capacity` bytes); answers the status. */
static uform_status_t encode_outer(uform_executor_t executor, int deferred, probe_t *probe, unsigned char *rows,
                                   size_t capacity) {
    uform_text_encode_args_t args;
    uform_encoded_t encoded;
    uform_status_t status;
    memset(&args, 0, sizeof(args));
    args.scalar = uform_scalar_f16_k;
    args.progress = act;
    args.progress_context = probe;
    status = uform_text_encode(model, executor, outer_tape.data, outer_tape.length, outer_tape.offsets,
                               outer_tape.count, (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k),
                               &args, probe->outer_arena, &encoded, deferred ? &probe->outcome : NULL, MSG);
    if (deferred) {
        if (!CHECK_STATUS(status, uform_status_deferred_k)) return status;
        status = uform_outcome_wait(probe->outcome, MSG);
        uform_outcome_release(probe->outcome);
    }
    if (status == uform_status_ok_k) {
        size_t const embeddings = encoded.embeddings.count * encoded.embeddings.stride;
        size_t const states = encoded.states.count * encoded.states.stride;
        if (!CHECK(embeddings + states <= capacity)) return uform_status_invalid_argument_k;
        memcpy(rows, encoded.embeddings.data, embeddings);
        memcpy(rows + embeddings, encoded.states.data, states);
    }
    return status;
}

static unsigned char expected_rows[1 << 20], rows[1 << 20];

/** Nested encodes on the calling thread, smaller and larger than the outer call, leave its rows as they were. */
static void nested_calls_keep_the_outer_rows(void) {
    probe_t probe;
    action_t action;
    memset(&probe, 0, sizeof(probe));
    CHECK_OK(uform_arena_init(NULL, &probe.outer_arena, MSG));
    CHECK_OK(uform_arena_init(NULL, &probe.nested_arena, MSG));
    CHECK_OK(encode_outer(NULL, 0, &probe, expected_rows, sizeof(expected_rows)));
    CHECK(probe.calls >= 2); /* the handler runs between groups, while the outer call's rows are staged */
    CHECK_OK(uform_arena_free(probe.outer_arena));
    CHECK_OK(uform_arena_free(probe.nested_arena));
    for (action = action_encode_small; action <= action_encode_large; ++action) {
        memset(&probe, 0, sizeof(probe) - sizeof(probe.status));
        probe.action = action;
        probe.status = uform_status_unsupported_k;
        CHECK_OK(uform_arena_init(NULL, &probe.outer_arena, MSG));
        CHECK_OK(uform_arena_init(NULL, &probe.nested_arena, MSG));
        CHECK_OK(encode_outer(NULL, 0, &probe, rows, sizeof(rows)));
        CHECK_STATUS(probe.status, uform_status_ok_k);
        CHECK(memcmp(rows, expected_rows, sizeof(rows)) == 0);
        CHECK_OK(uform_arena_free(probe.outer_arena));
        CHECK_OK(uform_arena_free(probe.nested_arena));
    }
}

/** Each misuse answers `contended` from the handler, the outer call still succeeds, and the handle lives on. */
static void misuses_answer_contended(void) {
    static action_t const actions[] = {action_drain_executor, action_free_executor, action_free_arena,
                                       action_free_model,     action_wait_outcome,  action_release_outcome};
    size_t i;
    for (i = 0; i != sizeof(actions) / sizeof(actions[0]); ++i) {
        int const deferred = actions[i] == action_wait_outcome || actions[i] == action_release_outcome;
        probe_t probe;
        memset(&probe, 0, sizeof(probe));
        probe.action = actions[i];
        probe.status = uform_status_ok_k;
        CHECK_OK(uform_arena_init(NULL, &probe.outer_arena, MSG));
        CHECK_OK(encode_outer(ram, deferred, &probe, rows, sizeof(rows)));
        CHECK_STATUS(probe.status, uform_status_contended_k);
        /* Everything is still alive and usable. */
        CHECK_OK(uform_executor_drain(ram, uform_mood_sleeping_k, MSG));
        CHECK_OK(encode_outer(ram, 0, &probe, rows, sizeof(rows)));
        CHECK_OK(uform_arena_free(probe.outer_arena));
    }
}

/** A handler whose every call encodes again with the same handler: calls nest 8 deep, then answer `contended`. */
typedef struct nest_t {
    uform_arena_t arenas[10];
    size_t depth;
    uform_status_t statuses[10];
} nest_t;

static bool nest(void *context, size_t completed, size_t total) {
    nest_t *state = (nest_t *)context;
    size_t const depth = state->depth;
    uform_text_encode_args_t args;
    uform_encoded_t encoded;
    (void)completed, (void)total;
    if (depth >= 10 || state->statuses[depth] != uform_status_deferred_k) return false; /* once per level */
    memset(&args, 0, sizeof(args));
    args.progress = nest;
    args.progress_context = state;
    state->depth = depth + 1;
    state->statuses[depth] =
        uform_text_encode(model, NULL, small_tape.data, small_tape.length, small_tape.offsets, small_tape.count,
                          uform_outputs_embeddings_k, &args, state->arenas[depth], &encoded, NULL, NULL);
    state->depth = depth;
    return false;
}

static void nesting_is_bounded(void) {
    nest_t state;
    size_t i;
    memset(&state, 0, sizeof(state));
    for (i = 0; i != 10; ++i) {
        CHECK_OK(uform_arena_init(NULL, &state.arenas[i], MSG));
        state.statuses[i] = uform_status_deferred_k; /* not called yet */
    }
    nest(&state, 0, 1); /* level 0 is the outermost call */
    for (i = 0; i != 8; ++i) CHECK_STATUS(state.statuses[i], uform_status_ok_k);
    CHECK_STATUS(state.statuses[8], uform_status_contended_k);
    for (i = 0; i != 10; ++i) CHECK_OK(uform_arena_free(state.arenas[i]));
}

/* A blocking call a handler makes on a RAM executor may run its own handler on that executor's workers, away from
 * the thread of the handler that made it: what that handler does with the outer call's executor and arena must
 * still answer `contended` rather than wait for the outer call, which waits for it. */
typedef struct across_t {
    uform_executor_t outer_executor;
    uform_arena_t outer_arena;
    uform_arena_t nested_arena;
    pthread_t nesting_thread; /* where the outer handler runs, and with it the nested call's worker 0 */
    int nested;               /* the outer handler made its nested call */
    int acted;                /* the nested handler acted from a worker */
    uform_status_t drain, free_executor, free_arena;
} across_t;

static bool act_across(void *context, size_t completed, size_t total) {
    across_t *state = (across_t *)context;
    struct timespec pause = {0, 1000000};
    (void)completed, (void)total;
    if (pthread_equal(pthread_self(), state->nesting_thread)) {
        nanosleep(&pause, NULL); /* leave the items to the workers */
        return false;
    }
    if (state->acted++) return false;
    state->drain = uform_executor_drain(state->outer_executor, uform_mood_sleeping_k, NULL);
    state->free_executor = uform_executor_free(state->outer_executor);
    state->free_arena = uform_arena_free(state->outer_arena);
    return false;
}

static bool nest_across(void *context, size_t completed, size_t total) {
    across_t *state = (across_t *)context;
    uform_text_encode_args_t args;
    uform_encoded_t encoded;
    (void)completed, (void)total;
    if (state->nested++) return false;
    memset(&args, 0, sizeof(args));
    args.progress = act_across;
    args.progress_context = state;
    state->nesting_thread = pthread_self();
    CHECK_OK(uform_text_encode(model, ram, many_tape.data, many_tape.length, many_tape.offsets, many_tape.count,
                               uform_outputs_states_k, &args, state->nested_arena, &encoded, NULL, MSG));
    return false;
}

static void nested_handlers_on_workers_see_the_outer_call(void) {
    across_t state;
    uform_text_encode_args_t args;
    uform_encoded_t encoded;
    memset(&state, 0, sizeof(state));
    CHECK_OK(uform_executor_init_local(&state.outer_executor, MSG));
    CHECK_OK(uform_arena_init(NULL, &state.outer_arena, MSG));
    CHECK_OK(uform_arena_init(NULL, &state.nested_arena, MSG));
    memset(&args, 0, sizeof(args));
    args.progress = nest_across;
    args.progress_context = &state;
    alarm(60); /* a handler waiting for itself hangs: fail instead */
    CHECK_OK(uform_text_encode(model, state.outer_executor, outer_tape.data, outer_tape.length, outer_tape.offsets,
                               outer_tape.count, uform_outputs_embeddings_k, &args, state.outer_arena, &encoded, NULL,
                               MSG));
    alarm(0);
    /* The stub reports a text call's progress from the workers; the RAM forward calls the handler on the thread
     * that runs the call, where the rows above already hold it. */
    if (build_is_stub()) CHECK(state.acted >= 1);
    if (state.acted) {
        CHECK_STATUS(state.drain, uform_status_contended_k);
        CHECK_STATUS(state.free_executor, uform_status_contended_k);
        CHECK_STATUS(state.free_arena, uform_status_contended_k);
    }
    CHECK_OK(uform_executor_free(state.outer_executor));
    CHECK_OK(uform_arena_free(state.outer_arena));
    CHECK_OK(uform_arena_free(state.nested_arena));
}

int main(void) {
    char text[1000];
    size_t i;
    model = load_tiny();
    if (!model) return test_report("reentry");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    /* Three items of 900 bytes: three groups of the forward, so the handler runs while rows are staged. */
    tape_clear(&outer_tape);
    for (i = 0; i != 3; ++i) {
        size_t j;
        for (j = 0; j != 900; ++j) text[j] = (char)('a' + (i * 7 + j * 13) % 26);
        tape_push(&outer_tape, text, 900);
    }
    tape_clear(&small_tape);
    tape_push(&small_tape, "a small nested call", 19);
    tape_clear(&large_tape);
    for (i = 0; i != 8; ++i) tape_push(&large_tape, outer_tape.data, 900);
    tape_clear(&many_tape); /* items enough, and slow enough, for the workers to report some */
    for (i = 0; i != 16; ++i) tape_push(&many_tape, outer_tape.data, 900);
    nested_calls_keep_the_outer_rows();
    misuses_answer_contended();
    nesting_is_bounded();
    nested_handlers_on_workers_see_the_outer_call();
    CHECK_OK(uform_executor_free(ram));
    CHECK_OK(uform_model_free(model));
    return test_report("reentry");
}
