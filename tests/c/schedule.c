/**
 * @file schedule.c
 * @brief The learning rate a step reports follows the schedule, in every residency the same: linear warm-up, cosine
 * decay to the minimum over `steps - warmup_steps` steps, then the minimum from step `steps` on. A small seeded
 * trainer steps past its schedule's end, and each step's `stats.learning_rate` must be, rounded to F32, the formula
 * written here in C (docs/model.md's schedule, as tools/reference/train_optim.py computes it): at step 0, the end of
 * the warm-up, the middle of the decay, steps - 1, steps and steps + 5.
 */
#include "common.h"

#include <math.h>

/** The schedule's rate at step `k` (from 0), in double, as the reference computes it. */
static double expected_rate(uform_schedule_t const *s, size_t k) {
    double const lr = s->learning_rate, lo = s->min_learning_rate;
    if (k < s->warmup_steps) return lr * (double)(k + 1) / (double)s->warmup_steps;
    if (k >= s->steps) return lo;
    double const span = (double)(s->steps > s->warmup_steps ? s->steps - s->warmup_steps : 1);
    return lo + (lr - lo) * (1 + cos(3.14159265358979323846 * (double)(k - s->warmup_steps) / span)) / 2;
}

int main(void) {
    static char const *const texts[] = {"a cat", "a dog", "a bird"};
    static uform_modality_t const modalities[3] = {uform_modality_text_k, uform_modality_text_k, uform_modality_text_k};
    static size_t const bags[3] = {0, 0, 1};
    uform_executor_t ram = NULL;
    uform_trainer_t trainer = NULL;
    uform_trainer_init_ram_args_t init;
    uform_trainer_step_args_t args;
    uform_trainer_step_stats_t stats;
    test_tape_t tape;
    size_t const steps = 8, warmup = 2, last = 8 + 5;
    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG)))
        return test_report("schedule");
    memset(&init, 0, sizeof(init));
    init.depth = 1;
    init.hidden = 64;
    init.heads = 2;
    init.ffn_hidden = 64;
    init.dimensions = 32;
    init.late_interaction.token_width = 16;
    init.batch.max_rows_per_device = 4;
    init.batch.max_columns_per_row = 32;
    init.schedule.steps = steps;
    init.schedule.warmup_steps = warmup;
    init.schedule.learning_rate = 1e-3f;
    init.schedule.min_learning_rate = 1e-5f;
    init.seed = 5;
    if (CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG))) {
        memset(&args, 0, sizeof(args));
        args.stats = &stats;
        args.bags = bags;
        args.bags_count = 3;
        tape_of(&tape, texts, 3);
        for (size_t k = 0; k <= last; ++k) {
            memset(&stats, 0, sizeof(stats));
            if (!CHECK_OK(uform_trainer_step(trainer, ram, modalities, tape.data, tape.length, tape.offsets, 3, &args,
                                             NULL, NULL, MSG)))
                break;
            CHECK_SIZE(stats.step, k);
            double const expected = expected_rate(&init.schedule, k);
            if (!CHECK(stats.learning_rate == (float)expected)) /* the library rounds the same double to F32 */
                printf("  step %zu: learning_rate %.9g, the schedule's %.9g\n", k, (double)stats.learning_rate,
                       expected);
        }
        /* The points the schedule turns at, against values worked out by hand (lr and min as the F32 fields hold
         * them). */
        double const lr = init.schedule.learning_rate, lo = init.schedule.min_learning_rate;
        CHECK(fabs(expected_rate(&init.schedule, 0) - lr / 2) <= 1e-12 * lr);
        CHECK(fabs(expected_rate(&init.schedule, warmup) - lr) <= 1e-12 * lr);
        CHECK(fabs(expected_rate(&init.schedule, warmup + (steps - warmup) / 2) - (lr + lo) / 2) <= 1e-12 * lr);
        CHECK(expected_rate(&init.schedule, steps) == lo);
        CHECK(expected_rate(&init.schedule, last) == lo);
        uform_trainer_free(trainer);
    }
    uform_executor_free(ram);
    return test_report("schedule");
}
