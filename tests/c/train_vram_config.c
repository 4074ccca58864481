/**
 * @file train_vram_config.c
 * @brief `uform_trainer_init_vram` checks its configuration exactly as `uform_trainer_init_ram` does: for each defect
 * below, both constructors (over a RAM executor, the only kind a process without a device has) answer the same status
 * and the same message. A good configuration makes a RAM trainer; `init_vram` then answers
 * `uform_status_unsupported_k`, naming the missing GPU where the process drives none.
 */
#include "common.h"

#include <string.h>

/** A small valid configuration. */
static uform_trainer_init_vram_args_t good_config(void) {
    uform_trainer_init_vram_args_t init;
    memset(&init, 0, sizeof(init));
    init.depth = 1;
    init.hidden = 64;
    init.heads = 2;
    init.ffn_hidden = 64;
    init.dimensions = 32;
    init.batch.max_rows_per_device = 4;
    init.batch.max_columns_per_row = 32;
    init.seed = 3;
    return init;
}

/** Both constructors over `ram` on `init`: the same status and message, and that status is not ok. */
static void same_refusal(uform_executor_t ram, uform_trainer_init_vram_args_t const *init, char const *what) {
    uform_trainer_t trainer = NULL;
    char const *vram_message = NULL, *ram_message = NULL;
    uform_status_t const vram_status = uform_trainer_init_vram(ram, init, &trainer, &vram_message);
    uform_status_t const ram_status = uform_trainer_init_ram(ram, init, &trainer, &ram_message);
    if (!CHECK(vram_status == ram_status) || !CHECK(ram_status != uform_status_ok_k))
        fprintf(stderr, "  %s: init_vram %d (%s), init_ram %d (%s)\n", what, (int)vram_status,
                vram_message ? vram_message : "", (int)ram_status, ram_message ? ram_message : "");
    CHECK_STRING(vram_message ? vram_message : "", ram_message ? ram_message : "");
}

int main(void) {
    uform_executor_t ram = NULL;
    uform_trainer_t trainer = NULL;
    uform_trainer_init_vram_args_t init;
    size_t devices = 0;
    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG)))
        return test_report("train_vram_config");

    init = good_config();
    init.hidden = 65;
    same_refusal(ram, &init, "a width the heads do not divide");
    init = good_config();
    init.objective = (uform_objective_t)99;
    same_refusal(ram, &init, "an unknown objective");
    init = good_config();
    init.schedule.learning_rate = -1.0f;
    same_refusal(ram, &init, "a negative learning rate");
    init = good_config();
    init.masking.ratio = 2.0f;
    same_refusal(ram, &init, "a masking ratio above one");
    init = good_config();
    init.contrastive.negatives = (uform_negatives_t)42;
    same_refusal(ram, &init, "unknown negatives");
    init = good_config();
    init.checkpoint = "/nonexistent/uform-train-vram-config.safetensors";
    init.checkpoint_length = strlen(init.checkpoint);
    same_refusal(ram, &init, "a missing checkpoint");

    init = good_config();
    if (CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG))) uform_trainer_free(trainer);
    CHECK_OK(uform_gpu_devices(NULL, 0, &devices, MSG));
    CHECK_STATUS(uform_trainer_init_vram(ram, &init, &trainer, MSG), uform_status_unsupported_k);
    if (devices == 0) CHECK(test_message_ != NULL && strstr(test_message_, "needs a GPU") != NULL);
    CHECK_STATUS(uform_trainer_init_vram(NULL, &init, &trainer, MSG), uform_status_invalid_argument_k);
    uform_executor_free(ram);
    return test_report("train_vram_config");
}
