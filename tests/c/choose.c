/**
 * @file choose.c
 * @brief `uform_text_choose`: probabilities per choice summing to one, temperature groups, receivers, refusals.
 */
#include "common.h"

static uform_model_t model = NULL;
static uform_executor_t ram = NULL, local = NULL;

static char const *const texts[] = {"keep this candidate?", "expand which neighbour?", "", "pick one"};
static char const *const options[] = {"yn", "ABCD", "01", "z"};
enum { items_k = 4, choices_k = 9 };

static test_tape_t text_tape, choice_tape;
static float reference[choices_k];

static uform_status_t choose(uform_executor_t executor, int deferred, test_tape_t const *t, test_tape_t const *c,
                             uform_text_choose_args_t const *args, uform_arena_t arena, uform_tape_t *probabilities) {
    uform_outcome_t outcome = NULL;
    uform_status_t status =
        uform_text_choose(model, executor, t->data, t->length, t->offsets, t->count, c->data, c->length, c->offsets,
                          c->count, args, arena, probabilities, deferred ? &outcome : NULL, MSG);
    if (!deferred) return status;
    if (!CHECK_STATUS(status, uform_status_deferred_k)) return status;
    status = uform_outcome_wait(outcome, MSG);
    uform_outcome_release(outcome);
    return status;
}

/** Checks a probabilities tape against the choices tape: one F32 in [0, 1] per choice, summing to one per item. */
static int check_probabilities(uform_tape_t const *p, test_tape_t const *c) {
    size_t item, i;
    int ok = p->data != NULL && p->offsets != NULL && p->items == c->count && p->scalar == uform_scalar_f32_k &&
             p->residency == uform_residency_ram_k && p->device == 0;
    if (!CHECK(ok)) return 0;
    for (i = 0; i != c->count + 1; ++i) ok = ok && p->offsets[i] == c->offsets[i] - c->offsets[0];
    if (!CHECK(ok)) return 0;
    for (item = 0; item != c->count; ++item) {
        double sum = 0;
        for (i = p->offsets[item]; i != p->offsets[item + 1]; ++i) {
            float value = ((float const *)p->data)[i];
            ok = ok && value >= 0.0f && value <= 1.0f;
            sum += value;
        }
        ok = ok && fabs(sum - 1.0) < 1e-5;
    }
    return CHECK(ok);
}

static void receivers(void) {
    uform_arena_t arena = NULL;
    uform_tape_t probabilities;
    uform_text_choose_stats_t stats;
    uform_text_choose_args_t args;
    test_progress_t progress;
    size_t groups[items_k] = {0, 1, 0, 1};
    int receiver, have_reference = 0;

    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    for (receiver = 0; receiver != 5; ++receiver) {
        uform_executor_t executor = receiver == 0 ? NULL : receiver == 1 || receiver == 3 ? ram : local;
        memset(&probabilities, 0, sizeof(probabilities));
        memset(&stats, 0, sizeof(stats));
        memset(&progress, 0, sizeof(progress));
        memset(&args, 0, sizeof(args));
        args.temperature_groups = groups;
        args.temperature_groups_count = items_k;
        args.stats = &stats;
        args.progress = test_progress;
        args.progress_context = &progress;
        if (!CHECK_OK(choose(executor, receiver >= 3, &text_tape, &choice_tape, &args, arena, &probabilities)))
            continue;
        if (!check_probabilities(&probabilities, &choice_tape)) continue;
        /* A single legal choice is certain. */
        CHECK(((float const *)probabilities.data)[8] == 1.0f);
        CHECK_SIZE(stats.items, items_k);
        CHECK_SIZE(stats.choices, choices_k);
        CHECK_SIZE(stats.tokens, text_tape.length + items_k);
        CHECK(progress.calls >= 1 && progress.total == items_k && progress.last_completed == items_k);
        if (!have_reference) {
            memcpy(reference, probabilities.data, sizeof(reference));
            have_reference = 1;
        } else {
            CHECK(memcmp(reference, probabilities.data, sizeof(reference)) == 0);
        }
    }

    /* Without groups every item is in group 0; the same item in another batch answers the same probabilities. */
    {
        static char const *const some_texts[] = {"pick one", "keep this candidate?"};
        static char const *const some_options[] = {"z", "yn"};
        test_tape_t t, c;
        tape_of(&t, some_texts, 2);
        tape_of(&c, some_options, 2);
        if (CHECK_OK(choose(ram, 0, &t, &c, NULL, arena, &probabilities)) && check_probabilities(&probabilities, &c))
            CHECK(memcmp((float const *)probabilities.data + 1, reference, 2 * sizeof(float)) == 0);
        memset(&args, 0, sizeof(args));
        args.temperature_groups = groups;
        args.temperature_groups_count = 0; /* zero puts all in group 0, whatever the pointer */
        if (CHECK_OK(choose(local, 0, &t, &c, &args, arena, &probabilities)) && check_probabilities(&probabilities, &c))
            CHECK(memcmp((float const *)probabilities.data + 1, reference, 2 * sizeof(float)) == 0);
    }

    /* Choices are scored in the order given: reversing them reverses the probabilities. */
    {
        static char const *const one_text[] = {"expand which neighbour?"};
        static char const *const reversed[] = {"DCBA"};
        size_t group = 1;
        test_tape_t t, c;
        tape_of(&t, one_text, 1);
        tape_of(&c, reversed, 1);
        memset(&args, 0, sizeof(args));
        args.temperature_groups = &group;
        args.temperature_groups_count = 1;
        if (CHECK_OK(choose(NULL, 0, &t, &c, &args, arena, &probabilities)) &&
            check_probabilities(&probabilities, &c)) {
            float const *p = (float const *)probabilities.data;
            CHECK(fabs(p[0] - reference[5]) < 1e-6 && fabs(p[1] - reference[4]) < 1e-6 &&
                  fabs(p[2] - reference[3]) < 1e-6 && fabs(p[3] - reference[2]) < 1e-6);
        }
    }
    uform_arena_free(arena);
}

static void refusals(void) {
    uform_arena_t arena = NULL;
    uform_tape_t probabilities;
    uform_text_choose_args_t args;
    size_t groups[items_k] = {0, 1, 2, 0};
    test_tape_t c;
    static char const *const empty_choice[] = {"yn", "", "01", "z"};
    static char const *const duplicate_choice[] = {"yn", "ABCA", "01", "z"};
    static char const *const three_choices[] = {"yn", "ABCD", "01"};

    if (!CHECK_OK(uform_arena_init(NULL, &arena, MSG))) return;
    memset(&args, 0, sizeof(args));
    /* A group at or past the model's two groups. */
    args.temperature_groups = groups;
    args.temperature_groups_count = items_k;
    CHECK_STATUS(choose(NULL, 0, &text_tape, &choice_tape, &args, arena, &probabilities),
                 uform_status_invalid_argument_k);
    groups[2] = (size_t)-1;
    CHECK_STATUS(choose(ram, 0, &text_tape, &choice_tape, &args, arena, &probabilities),
                 uform_status_invalid_argument_k);
    groups[2] = 1;
    /* Groups for some items only (counts that disagree), and a missing array. */
    args.temperature_groups_count = items_k - 1;
    CHECK_STATUS(choose(NULL, 0, &text_tape, &choice_tape, &args, arena, &probabilities),
                 uform_status_shape_mismatch_k);
    args.temperature_groups_count = items_k + 1;
    CHECK_STATUS(choose(NULL, 0, &text_tape, &choice_tape, &args, arena, &probabilities),
                 uform_status_shape_mismatch_k);
    args.temperature_groups = NULL;
    args.temperature_groups_count = items_k;
    CHECK_STATUS(choose(NULL, 0, &text_tape, &choice_tape, &args, arena, &probabilities),
                 uform_status_invalid_argument_k);
    args.temperature_groups = groups;
    CHECK_OK(choose(NULL, 0, &text_tape, &choice_tape, &args, arena, &probabilities));

    /* An item without choices, and an item with a repeated choice. */
    tape_of(&c, empty_choice, items_k);
    CHECK_STATUS(choose(NULL, 0, &text_tape, &c, NULL, arena, &probabilities), uform_status_invalid_argument_k);
    tape_of(&c, duplicate_choice, items_k);
    CHECK_STATUS(choose(local, 0, &text_tape, &c, NULL, arena, &probabilities), uform_status_invalid_argument_k);
    /* A choices tape with fewer items than texts, or more: counts that disagree. */
    tape_of(&c, three_choices, 3);
    CHECK_STATUS(choose(NULL, 0, &text_tape, &c, NULL, arena, &probabilities), uform_status_shape_mismatch_k);
    CHECK_STATUS(choose(NULL, 0, &c, &choice_tape, NULL, arena, &probabilities), uform_status_shape_mismatch_k);
    /* Deferred refusals are found before submission: the verb answers them and takes no outcome. */
    {
        uform_outcome_t outcome = NULL;
        CHECK_STATUS(uform_text_choose(model, ram, text_tape.data, text_tape.length, text_tape.offsets, text_tape.count,
                                       c.data, c.length, c.offsets, c.count, NULL, arena, &probabilities, &outcome,
                                       MSG),
                     uform_status_shape_mismatch_k);
        CHECK(outcome == NULL);
    }
    /* Null handles and results. */
    CHECK_STATUS(uform_text_choose(NULL, NULL, text_tape.data, text_tape.length, text_tape.offsets, text_tape.count,
                                   choice_tape.data, choice_tape.length, choice_tape.offsets, choice_tape.count, NULL,
                                   arena, &probabilities, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_text_choose(model, NULL, text_tape.data, text_tape.length, text_tape.offsets, text_tape.count,
                                   choice_tape.data, choice_tape.length, choice_tape.offsets, choice_tape.count, NULL,
                                   NULL, &probabilities, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_text_choose(model, NULL, text_tape.data, text_tape.length, text_tape.offsets, text_tape.count,
                                   choice_tape.data, choice_tape.length, choice_tape.offsets, choice_tape.count, NULL,
                                   arena, NULL, NULL, MSG),
                 uform_status_invalid_argument_k);
    /* Choice offsets that fall or leave their data. */
    {
        size_t falling[5] = {0, 2, 1, 8, 9};
        size_t leaving[5] = {0, 2, 6, 8, 10};
        CHECK_STATUS(uform_text_choose(model, NULL, text_tape.data, text_tape.length, text_tape.offsets,
                                       text_tape.count, choice_tape.data, choice_tape.length, falling, 4, NULL, arena,
                                       &probabilities, NULL, MSG),
                     uform_status_shape_mismatch_k);
        CHECK_STATUS(uform_text_choose(model, NULL, text_tape.data, text_tape.length, text_tape.offsets,
                                       text_tape.count, choice_tape.data, choice_tape.length, leaving, 4, NULL, arena,
                                       &probabilities, NULL, MSG),
                     uform_status_shape_mismatch_k);
    }
    uform_arena_free(arena);
}

int main(void) {
    model = load_tiny();
    if (!model) return test_report("choose");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_executor_init_local(&local, MSG));
    tape_of(&text_tape, texts, items_k);
    tape_of(&choice_tape, options, items_k);
    receivers();
    refusals();
    uform_executor_free(ram);
    uform_executor_free(local);
    uform_model_free(model);
    return test_report("choose");
}
