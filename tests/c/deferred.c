/**
 * @file deferred.c
 * @brief Deferred calls: polling, waiting, releasing; a local executor holding calls until it must run them;
 * and contention, an executor or an arena serving one call at a time.
 *
 * A watchdog thread ends the program after 20 seconds, so a deadlock fails the test instead of hanging it.
 */
#include "common.h"

#include <pthread.h>
#include <time.h>

static uform_model_t model = NULL;
static char const *const texts[] = {"a cat on a mat", "a dog in the fog", "", "x"};
static test_tape_t tape;

/* ---------------------------------------------------------------------------------------------------------- */
/* A gate: a progress handler that announces it was entered, then blocks until the gate opens                  */
/* ---------------------------------------------------------------------------------------------------------- */

typedef struct gate_t {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    int entered;
    int open;
    size_t calls;
} gate_t;

static gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

static bool gate_handler(void *context, size_t completed, size_t total) {
    gate_t *g = (gate_t *)context;
    (void)completed, (void)total;
    pthread_mutex_lock(&g->mutex);
    ++g->calls;
    g->entered = 1;
    pthread_cond_broadcast(&g->changed);
    while (!g->open) pthread_cond_wait(&g->changed, &g->mutex);
    pthread_mutex_unlock(&g->mutex);
    return false;
}

/** Waits up to `seconds` for the handler to be entered; answers whether it was. */
static int gate_wait_entered(gate_t *g, int seconds) {
    struct timespec deadline;
    int entered;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += seconds;
    pthread_mutex_lock(&g->mutex);
    while (!g->entered)
        if (pthread_cond_timedwait(&g->changed, &g->mutex, &deadline) != 0) break;
    entered = g->entered;
    pthread_mutex_unlock(&g->mutex);
    return entered;
}

static void gate_reset(gate_t *g) {
    pthread_mutex_lock(&g->mutex);
    g->entered = 0;
    g->open = 0;
    g->calls = 0;
    pthread_mutex_unlock(&g->mutex);
}

static void gate_open(gate_t *g) {
    pthread_mutex_lock(&g->mutex);
    g->open = 1;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->mutex);
}

static void *watchdog(void *unused) {
    struct timespec deadline;
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t never = PTHREAD_COND_INITIALIZER;
    (void)unused;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 20;
    pthread_mutex_lock(&mutex);
    while (pthread_cond_timedwait(&never, &mutex, &deadline) == 0) {
    }
    pthread_mutex_unlock(&mutex);
    fprintf(stderr, "deferred: still running after 20 s, a call is stuck\n");
    test_report("deferred");
    exit(EXIT_FAILURE);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Helpers                                                                                                     */
/* ---------------------------------------------------------------------------------------------------------- */

static uform_status_t submit(uform_executor_t executor, uform_text_encode_args_t const *args, uform_arena_t arena,
                             uform_encoded_t *encoded, uform_outcome_t *outcome) {
    return uform_text_encode(model, executor, tape.data, tape.length, tape.offsets, tape.count,
                             uform_outputs_embeddings_k, args, arena, encoded, outcome, MSG);
}

static uform_status_t blocking(uform_executor_t executor, uform_arena_t arena, uform_encoded_t *encoded) {
    return uform_text_encode(model, executor, tape.data, tape.length, tape.offsets, tape.count,
                             uform_outputs_embeddings_k, NULL, arena, encoded, NULL, MSG);
}

/** Whether an encoding is the full, final result of `tape`. */
static int complete(uform_encoded_t const *encoded) {
    return encoded->embeddings.data != NULL && encoded->embeddings.count == 4 && encoded->embeddings.columns == 64;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Polling, waiting, releasing                                                                                 */
/* ---------------------------------------------------------------------------------------------------------- */

static void poll_wait_release(void) {
    uform_executor_t ram = NULL;
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = NULL;
    uform_encoded_t encoded;
    uform_text_encode_stats_t stats;
    uform_text_encode_args_t args;
    uform_status_t status = uform_status_deferred_k;
    long polls;

    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG))) return;
    if (!CHECK_OK(uform_arena_init(ram, &arena, MSG))) return;

    /* Poll until final, without ever waiting. */
    memset(&encoded, 0, sizeof(encoded));
    memset(&stats, 0, sizeof(stats));
    memset(&args, 0, sizeof(args));
    args.stats = &stats;
    if (CHECK_STATUS(submit(ram, &args, arena, &encoded, &outcome), uform_status_deferred_k) &&
        CHECK(outcome != NULL)) {
        for (polls = 0; polls != 200000000L && status == uform_status_deferred_k; ++polls)
            status = uform_outcome_status(outcome, MSG);
        CHECK_STATUS(status, uform_status_ok_k);
        CHECK(complete(&encoded));
        CHECK_SIZE(stats.items, 4);
        /* A final status stays final; waiting for a final call answers it at once, as often as asked. */
        CHECK_OK(uform_outcome_status(outcome, MSG));
        CHECK_OK(uform_outcome_wait(outcome, MSG));
        CHECK_OK(uform_outcome_wait(outcome, NULL));
        uform_outcome_release(outcome);
    }

    /* Wait without polling. */
    outcome = NULL;
    memset(&encoded, 0, sizeof(encoded));
    if (CHECK_STATUS(submit(ram, NULL, arena, &encoded, &outcome), uform_status_deferred_k)) {
        CHECK_OK(uform_outcome_wait(outcome, MSG));
        CHECK(complete(&encoded));
        CHECK_OK(uform_outcome_status(outcome, MSG));
        uform_outcome_release(outcome);
    }

    /* Release without waiting: it waits, so the result is final once it returns. */
    outcome = NULL;
    memset(&encoded, 0, sizeof(encoded));
    memset(&stats, 0, sizeof(stats));
    if (CHECK_STATUS(submit(ram, &args, arena, &encoded, &outcome), uform_status_deferred_k)) {
        uform_outcome_release(outcome);
        CHECK(complete(&encoded));
        CHECK_SIZE(stats.items, 4);
    }

    /* Many deferred calls in a row, each on its own arena, released in reverse order: the table recycles. */
    {
        uform_arena_t arenas[8];
        uform_outcome_t outcomes[8];
        uform_encoded_t results[8];
        int i, made = 0;
        for (i = 0; i != 8; ++i) arenas[i] = NULL, outcomes[i] = NULL;
        for (i = 0; i != 8; ++i) {
            if (!CHECK_OK(uform_arena_init(NULL, &arenas[i], MSG))) break;
            /* Each call needs the executor, which the previous one may still hold: wait for it first. */
            if (i) CHECK_OK(uform_outcome_wait(outcomes[i - 1], MSG));
            memset(&results[i], 0, sizeof(results[i]));
            if (!CHECK_STATUS(submit(ram, NULL, arenas[i], &results[i], &outcomes[i]), uform_status_deferred_k)) break;
            ++made;
        }
        for (i = made; i-- > 0;) {
            CHECK_OK(uform_outcome_wait(outcomes[i], MSG));
            CHECK(complete(&results[i]));
            uform_outcome_release(outcomes[i]);
        }
        for (i = 0; i != 8; ++i) uform_arena_free(arenas[i]);
    }

    /* A deferred call without an executor runs at once on the calling thread: final on return. */
    outcome = NULL;
    memset(&encoded, 0, sizeof(encoded));
    memset(&stats, 0, sizeof(stats));
    if (CHECK_STATUS(submit(NULL, &args, arena, &encoded, &outcome), uform_status_deferred_k) &&
        CHECK(outcome != NULL)) {
        CHECK_OK(uform_outcome_status(outcome, MSG));
        CHECK(complete(&encoded));
        CHECK_SIZE(stats.items, 4);
        uform_outcome_release(outcome);
    }
    {
        test_progress_t stop;
        uform_text_encode_args_t stopping;
        memset(&stop, 0, sizeof(stop));
        stop.stop_at_call = 1;
        memset(&stopping, 0, sizeof(stopping));
        stopping.progress = test_progress;
        stopping.progress_context = &stop;
        outcome = NULL;
        if (CHECK_STATUS(submit(NULL, &stopping, arena, &encoded, &outcome), uform_status_deferred_k)) {
            CHECK_STATUS(uform_outcome_status(outcome, MSG), uform_status_cancelled_k);
            CHECK(encoded_empty(&encoded));
            uform_outcome_release(outcome);
        }
    }

    /* A deferred call refused before submission answers its status and takes no outcome. */
    outcome = NULL;
    CHECK_STATUS(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, tape.count, (uform_outputs_t)8,
                                   NULL, arena, &encoded, &outcome, MSG),
                 uform_status_invalid_argument_k);
    CHECK(outcome == NULL);

    /* Null outcomes. */
    CHECK_STATUS(uform_outcome_status(NULL, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_outcome_wait(NULL, MSG), uform_status_invalid_argument_k);
    uform_outcome_release(NULL);

    uform_arena_free(arena);
    uform_executor_free(ram);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* A local executor holds deferred calls                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

static void local_holds(void) {
    uform_executor_t local = NULL;
    uform_arena_t arena = NULL, other = NULL;
    uform_outcome_t outcome = NULL;
    uform_encoded_t encoded, second;
    uform_text_encode_args_t args;
    test_progress_t progress;
    int i;

    if (!CHECK_OK(uform_executor_init_local(&local, MSG))) return;
    if (!CHECK_OK(uform_arena_init(local, &arena, MSG)) || !CHECK_OK(uform_arena_init(NULL, &other, MSG))) return;
    memset(&args, 0, sizeof(args));
    args.progress = test_progress;
    args.progress_context = &progress;

    /* Held until its wait: polling never runs it. */
    memset(&progress, 0, sizeof(progress));
    memset(&encoded, 0, sizeof(encoded));
    if (CHECK_STATUS(submit(local, &args, arena, &encoded, &outcome), uform_status_deferred_k)) {
        for (i = 0; i != 1000; ++i)
            if (uform_outcome_status(outcome, MSG) != uform_status_deferred_k) break;
        CHECK(i == 1000);
        CHECK_SIZE(progress.calls, 0);
        CHECK(!complete(&encoded));
        CHECK_OK(uform_outcome_wait(outcome, MSG));
        CHECK(progress.calls >= 1);
        CHECK(complete(&encoded));
        uform_outcome_release(outcome);
    }

    /* Held until the executor's drain. */
    outcome = NULL;
    memset(&progress, 0, sizeof(progress));
    memset(&encoded, 0, sizeof(encoded));
    if (CHECK_STATUS(submit(local, &args, arena, &encoded, &outcome), uform_status_deferred_k)) {
        CHECK_STATUS(uform_outcome_status(outcome, MSG), uform_status_deferred_k);
        CHECK_OK(uform_executor_drain(local, uform_mood_sleeping_k, MSG));
        CHECK(progress.calls >= 1);
        CHECK_OK(uform_outcome_status(outcome, MSG));
        CHECK(complete(&encoded));
        uform_outcome_release(outcome);
    }

    /* A drain answers the failure of a held call it ran, which its outcome reports too. */
    outcome = NULL;
    memset(&progress, 0, sizeof(progress));
    progress.stop_at_call = 1;
    if (CHECK_STATUS(submit(local, &args, arena, &encoded, &outcome), uform_status_deferred_k)) {
        CHECK_STATUS(uform_executor_drain(local, uform_mood_spinning_k, MSG), uform_status_cancelled_k);
        CHECK_STATUS(uform_outcome_status(outcome, MSG), uform_status_cancelled_k);
        CHECK_STATUS(uform_outcome_wait(outcome, MSG), uform_status_cancelled_k);
        uform_outcome_release(outcome);
        /* Once run, the failure is the outcome's alone: the next drain has nothing to report. */
        CHECK_OK(uform_executor_drain(local, uform_mood_spinning_k, MSG));
    }
    progress.stop_at_call = 0;

    /* The held call holds the executor: another deferred call meanwhile is contended, touching nothing. */
    outcome = NULL;
    memset(&progress, 0, sizeof(progress));
    memset(&encoded, 0, sizeof(encoded));
    if (CHECK_STATUS(submit(local, &args, arena, &encoded, &outcome), uform_status_deferred_k)) {
        uform_outcome_t second_outcome = NULL;
        uform_encoded_t untouched;
        memset(&second, 0x5A, sizeof(second));
        memcpy(&untouched, &second, sizeof(second));
        CHECK_STATUS(submit(local, NULL, other, &second, &second_outcome), uform_status_contended_k);
        CHECK(second_outcome == NULL);
        CHECK(memcmp(&second, &untouched, sizeof(second)) == 0);
        CHECK_SIZE(progress.calls, 0);
        CHECK_OK(uform_outcome_wait(outcome, MSG));
        CHECK(complete(&encoded));
        uform_outcome_release(outcome);
        /* Once it ran, the executor takes the next deferred call. */
        second_outcome = NULL;
        memset(&second, 0, sizeof(second));
        if (CHECK_STATUS(submit(local, NULL, other, &second, &second_outcome), uform_status_deferred_k)) {
            CHECK_OK(uform_outcome_wait(second_outcome, MSG));
            CHECK(complete(&second));
            uform_outcome_release(second_outcome);
        }
    }

    /* Held until the executor's next blocking call, which runs it first, then itself. */
    outcome = NULL;
    memset(&progress, 0, sizeof(progress));
    memset(&encoded, 0, sizeof(encoded));
    memset(&second, 0, sizeof(second));
    if (CHECK_STATUS(submit(local, &args, arena, &encoded, &outcome), uform_status_deferred_k)) {
        CHECK_STATUS(uform_outcome_status(outcome, MSG), uform_status_deferred_k);
        CHECK_OK(blocking(local, other, &second));
        CHECK(complete(&second));
        CHECK_OK(uform_outcome_status(outcome, MSG));
        CHECK(complete(&encoded));
        CHECK(complete(&encoded) && complete(&second) && rows_equal(&encoded.embeddings, 0, &second.embeddings, 0));
        uform_outcome_release(outcome);
    }

    /* Held until the arena it names is freed. */
    outcome = NULL;
    memset(&progress, 0, sizeof(progress));
    if (CHECK_STATUS(submit(local, &args, arena, &encoded, &outcome), uform_status_deferred_k)) {
        CHECK_STATUS(uform_outcome_status(outcome, MSG), uform_status_deferred_k);
        uform_arena_free(arena);
        arena = NULL;
        CHECK(progress.calls >= 1);
        CHECK_OK(uform_outcome_status(outcome, MSG));
        uform_outcome_release(outcome);
    }

    /* Held until the model it names is freed. */
    {
        uform_model_t doomed = load_tiny();
        outcome = NULL;
        memset(&progress, 0, sizeof(progress));
        if (doomed && CHECK_STATUS(uform_text_encode(doomed, local, tape.data, tape.length, tape.offsets, tape.count,
                                                     uform_outputs_embeddings_k, &args, other, &encoded, &outcome, MSG),
                                   uform_status_deferred_k)) {
            CHECK_STATUS(uform_outcome_status(outcome, MSG), uform_status_deferred_k);
            uform_model_free(doomed);
            doomed = NULL;
            CHECK(progress.calls >= 1);
            CHECK_OK(uform_outcome_status(outcome, MSG));
            uform_outcome_release(outcome);
        }
        uform_model_free(doomed);
    }

    /* Held until the executor itself is freed; the outcome outlives it. */
    outcome = NULL;
    memset(&progress, 0, sizeof(progress));
    if (CHECK_STATUS(submit(local, &args, other, &encoded, &outcome), uform_status_deferred_k)) {
        CHECK_STATUS(uform_outcome_status(outcome, MSG), uform_status_deferred_k);
        uform_executor_free(local);
        local = NULL;
        CHECK(progress.calls >= 1);
        CHECK_OK(uform_outcome_status(outcome, MSG));
        uform_outcome_release(outcome);
    }

    /* Released while held: the release runs it first. */
    if (CHECK_OK(uform_executor_init_local(&local, MSG))) {
        outcome = NULL;
        memset(&progress, 0, sizeof(progress));
        memset(&encoded, 0, sizeof(encoded));
        if (CHECK_STATUS(submit(local, &args, other, &encoded, &outcome), uform_status_deferred_k)) {
            uform_outcome_release(outcome);
            CHECK(progress.calls >= 1);
            CHECK(complete(&encoded));
        }
    }
    uform_arena_free(other);
    uform_executor_free(local);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Contention                                                                                                  */
/* ---------------------------------------------------------------------------------------------------------- */

static void contention(void) {
    uform_executor_t ram = NULL, another = NULL;
    uform_arena_t arena = NULL, other = NULL;
    uform_outcome_t outcome = NULL, second_outcome = NULL;
    uform_encoded_t encoded, second, untouched;
    uform_text_encode_args_t args;
    uform_tape_t probabilities;
    size_t capacity_before = 0, capacity_after = 0;
    float saved[64];
    void const *rows_in_other = NULL;

    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG)) ||
        !CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &another, MSG)) ||
        !CHECK_OK(uform_arena_init(ram, &arena, MSG)) || !CHECK_OK(uform_arena_init(NULL, &other, MSG)))
        return;

    /* Rows already in `other`, which a contended call must leave alone. */
    memset(&second, 0, sizeof(second));
    if (CHECK_OK(blocking(another, other, &second)) && complete(&second)) {
        rows_in_other = row_bytes(&second.embeddings, 0);
        memcpy(saved, rows_in_other, sizeof(saved));
    }
    CHECK_OK(uform_arena_capacity(other, &capacity_before, MSG));

    gate_reset(&gate);
    memset(&args, 0, sizeof(args));
    args.progress = gate_handler;
    args.progress_context = &gate;
    memset(&encoded, 0, sizeof(encoded));
    if (!CHECK_STATUS(submit(ram, &args, arena, &encoded, &outcome), uform_status_deferred_k)) return;
    if (!CHECK(gate_wait_entered(&gate, 5))) {
        fprintf(stderr, "    the progress handler of a deferred call on a RAM executor never ran\n");
        gate_open(&gate);
        uform_outcome_release(outcome);
        return;
    }
    /* The call is inside its handler, so it holds `ram` and `arena`. */
    CHECK_STATUS(uform_outcome_status(outcome, MSG), uform_status_deferred_k);

    /* The same executor with another arena: blocking, then deferred. */
    memset(&untouched, 0x5A, sizeof(untouched));
    memcpy(&second, &untouched, sizeof(second));
    CHECK_STATUS(blocking(ram, other, &second), uform_status_contended_k);
    CHECK(memcmp(&second, &untouched, sizeof(second)) == 0);
    second_outcome = NULL;
    CHECK_STATUS(submit(ram, NULL, other, &second, &second_outcome), uform_status_contended_k);
    CHECK(second_outcome == NULL);
    uform_outcome_release(second_outcome);
    CHECK(memcmp(&second, &untouched, sizeof(second)) == 0);

    /* The same arena with another executor, and on the calling thread. */
    CHECK_STATUS(blocking(another, arena, &second), uform_status_contended_k);
    CHECK_STATUS(blocking(NULL, arena, &second), uform_status_contended_k);
    second_outcome = NULL;
    CHECK_STATUS(submit(another, NULL, arena, &second, &second_outcome), uform_status_contended_k);
    CHECK(second_outcome == NULL);
    uform_outcome_release(second_outcome);
    CHECK(memcmp(&second, &untouched, sizeof(second)) == 0);

    /* Another verb is refused the same way. */
    {
        static char const *const choices[] = {"yn", "AB", "01", "z"};
        test_tape_t c;
        tape_of(&c, choices, 4);
        CHECK_STATUS(uform_text_choose(model, ram, tape.data, tape.length, tape.offsets, tape.count, c.data, c.length,
                                       c.offsets, c.count, NULL, other, &probabilities, NULL, MSG),
                     uform_status_contended_k);
        CHECK_STATUS(uform_text_choose(model, another, tape.data, tape.length, tape.offsets, tape.count, c.data,
                                       c.length, c.offsets, c.count, NULL, arena, &probabilities, NULL, MSG),
                     uform_status_contended_k);
    }

    /* A contended call touched nothing: the rows already in `other` are intact. */
    CHECK_OK(uform_arena_capacity(other, &capacity_after, MSG));
    CHECK_SIZE(capacity_after, capacity_before);
    CHECK(rows_in_other != NULL && memcmp(saved, rows_in_other, sizeof(saved)) == 0);

    /* Other executors and arenas are free: the model is shared. */
    memset(&second, 0, sizeof(second));
    CHECK_OK(blocking(another, other, &second));
    CHECK(complete(&second));

    /* Let the call finish. */
    gate_open(&gate);
    CHECK_OK(uform_outcome_wait(outcome, MSG));
    CHECK(complete(&encoded));
    uform_outcome_release(outcome);

    /* Both are free again. */
    memset(&second, 0, sizeof(second));
    CHECK_OK(blocking(ram, arena, &second));
    CHECK_OK(blocking(NULL, arena, &second));
    CHECK(complete(&second));

    uform_arena_free(arena);
    uform_arena_free(other);
    uform_executor_free(another);
    uform_executor_free(ram);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* One model, shared by threads with executors and arenas of their own                                         */
/* ---------------------------------------------------------------------------------------------------------- */

typedef struct sharer_t {
    int ok;
    unsigned char first_row[64 * sizeof(float)];
} sharer_t;

static void *share(void *context) {
    sharer_t *sharer = (sharer_t *)context;
    uform_executor_t executor = NULL;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    int i;
    sharer->ok = 0;
    if (uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &executor, NULL) != uform_status_ok_k) return NULL;
    if (uform_arena_init(executor, &arena, NULL) == uform_status_ok_k) {
        sharer->ok = 1;
        for (i = 0; i != 50 && sharer->ok; ++i) {
            memset(&encoded, 0, sizeof(encoded));
            sharer->ok =
                uform_text_encode(model, i % 2 ? executor : NULL, tape.data, tape.length, tape.offsets, tape.count,
                                  uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, NULL) == uform_status_ok_k &&
                complete(&encoded);
            if (sharer->ok && i == 0) memcpy(sharer->first_row, row_bytes(&encoded.embeddings, 0), 64 * sizeof(float));
            else if (sharer->ok)
                sharer->ok = memcmp(sharer->first_row, row_bytes(&encoded.embeddings, 0), 64 * sizeof(float)) == 0;
        }
        uform_arena_free(arena);
    }
    uform_executor_free(executor);
    return NULL;
}

static void shared_model(void) {
    pthread_t threads[4];
    sharer_t sharers[4];
    int i, started[4];
    for (i = 0; i != 4; ++i) started[i] = pthread_create(&threads[i], NULL, share, &sharers[i]) == 0;
    for (i = 0; i != 4; ++i)
        if (started[i]) pthread_join(threads[i], NULL);
    for (i = 0; i != 4; ++i) {
        CHECK(started[i] && sharers[i].ok);
        if (i) CHECK(memcmp(sharers[0].first_row, sharers[i].first_row, sizeof(sharers[i].first_row)) == 0);
    }
}

/* A drain waits for a running call. */
typedef struct drain_context_t {
    uform_executor_t executor;
    uform_status_t status;
    int done;
} drain_context_t;

static void *drain_thread(void *context) {
    drain_context_t *c = (drain_context_t *)context;
    c->status = uform_executor_drain(c->executor, uform_mood_spinning_k, NULL);
    pthread_mutex_lock(&gate.mutex);
    c->done = 1;
    pthread_mutex_unlock(&gate.mutex);
    return NULL;
}

static void drain_waits(void) {
    uform_executor_t ram = NULL;
    uform_arena_t arena = NULL;
    uform_outcome_t outcome = NULL;
    uform_encoded_t encoded;
    uform_text_encode_args_t args;
    drain_context_t context;
    pthread_t thread;
    int done;

    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG)) ||
        !CHECK_OK(uform_arena_init(NULL, &arena, MSG)))
        return;
    gate_reset(&gate);
    memset(&args, 0, sizeof(args));
    args.progress = gate_handler;
    args.progress_context = &gate;
    if (CHECK_STATUS(submit(ram, &args, arena, &encoded, &outcome), uform_status_deferred_k) &&
        CHECK(gate_wait_entered(&gate, 5))) {
        context.executor = ram;
        context.status = uform_status_internal_k;
        context.done = 0;
        if (CHECK(pthread_create(&thread, NULL, drain_thread, &context) == 0)) {
            /* Give the drain a moment: it must not return while the call is inside its handler. */
            struct timespec pause = {0, 50 * 1000 * 1000};
            nanosleep(&pause, NULL);
            pthread_mutex_lock(&gate.mutex);
            done = context.done;
            pthread_mutex_unlock(&gate.mutex);
            CHECK(!done);
            gate_open(&gate);
            pthread_join(thread, NULL);
            CHECK_STATUS(context.status, uform_status_ok_k);
            CHECK_OK(uform_outcome_status(outcome, MSG));
        } else {
            gate_open(&gate);
        }
    } else {
        gate_open(&gate);
    }
    uform_outcome_release(outcome);
    uform_arena_free(arena);
    uform_executor_free(ram);
}

int main(void) {
    pthread_t dog;
    pthread_create(&dog, NULL, watchdog, NULL);
    pthread_detach(dog);
    model = load_tiny();
    if (!model) return test_report("deferred");
    tape_of(&tape, texts, 4);
    poll_wait_release();
    local_holds();
    contention();
    drain_waits();
    shared_model();
    uform_model_free(model);
    return test_report("deferred");
}
