/**
 * @file train_bounds.c
 * @brief A trainer's configuration and steps at their edges. Every configuration a seeded trainer accepts saves a
 * checkpoint the library loads back (the trainer's bounds and the checkpoint reader's are one set), at the smallest
 * and largest values of each field; one the reader would refuse (an audio rate of 1 Hz, a video rate below a frame a
 * quarter hour) is refused at init, naming the metadata key. The optimiser's scalars are bounded at init (a learning
 * rate of 1e30 is refused, not run into overflowing weights). A step with nothing to learn from (no items, or only
 * empty texts) is refused with nothing changed: the saved weights are byte for byte those before it, and the next
 * real step is step 0 of the schedule.
 */
#include "common.h"

#include <stdint.h>
#include <unistd.h>

static uform_executor_t ram = NULL;
static char scratch[4096];

/** A small seeded trainer: depth 1, hidden 64 in 2 heads, every front-end off. */
static uform_trainer_init_ram_args_t seeded(void) {
    uform_trainer_init_ram_args_t init;
    memset(&init, 0, sizeof(init));
    init.depth = 1;
    init.hidden = 64;
    init.heads = 2;
    init.ffn_hidden = 64;
    init.dimensions = 32;
    init.late_interaction.token_width = 16;
    init.batch.max_rows_per_device = 4;
    init.batch.max_columns_per_row = 32;
    init.schedule.steps = 10;
    init.schedule.warmup_steps = 2;
    init.seed = 3;
    return init;
}

/** Makes a trainer of `init`; when it is accepted, saves it and loads the save back, which must work. Answers the
 * init's status. */
static uform_status_t init_save_load(uform_trainer_init_ram_args_t const *init, char const *what) {
    uform_trainer_t trainer = NULL;
    uform_status_t const status = uform_trainer_init_ram(ram, init, &trainer, MSG);
    if (status != uform_status_ok_k) {
        printf("%-40s refused at init: %s\n", what, test_message_ ? test_message_ : "");
        return status;
    }
    {
        char const *path = joined_path(scratch, "extreme.safetensors");
        uform_model_load_ram_args_t load;
        uform_model_t model = NULL;
        if (CHECK_OK(uform_trainer_save(trainer, ram, path, strlen(path), NULL, MSG))) {
            memset(&load, 0, sizeof(load));
            load.path = path;
            load.path_length = strlen(path);
            if (!CHECK_OK(uform_model_load_ram(&load, &model, MSG)))
                fprintf(stderr, "%s: saved, but loading it answered: %s\n", what, test_message_ ? test_message_ : "");
            if (model) uform_model_free(model);
        }
        unlink(path);
    }
    printf("%-40s accepted, saved and loaded\n", what);
    uform_trainer_free(trainer);
    return status;
}

/** One extreme configuration: a field set to a value. */
typedef struct extreme_t {
    char const *what;
    void (*set)(uform_trainer_init_ram_args_t *, double);
    double value;
} extreme_t;

static void audio_on(uform_trainer_init_ram_args_t *init) {
    if (!init->batch.audio.sample_rate) init->batch.audio.sample_rate = 16000;
}
static void video_on(uform_trainer_init_ram_args_t *init) {
    init->batch.image.patch_side = 4;
    init->batch.video.tubelet_frames = 2;
}
static void set_rate(uform_trainer_init_ram_args_t *init, double v) { init->batch.audio.sample_rate = (size_t)v; }
static void set_mels(uform_trainer_init_ram_args_t *init, double v) {
    audio_on(init);
    init->batch.audio.mel_bins = (size_t)v;
}
static void set_frames_per_patch(uform_trainer_init_ram_args_t *init, double v) {
    audio_on(init);
    init->batch.audio.frames_per_patch = (size_t)v;
}
static void set_audio_patches(uform_trainer_init_ram_args_t *init, double v) {
    audio_on(init);
    init->batch.audio.max_patches = (size_t)v;
}
static void set_patch_side(uform_trainer_init_ram_args_t *init, double v) { init->batch.image.patch_side = (size_t)v; }
static void set_fps(uform_trainer_init_ram_args_t *init, double v) {
    video_on(init);
    init->batch.video.fps = (float)v;
}
static void set_tubelet(uform_trainer_init_ram_args_t *init, double v) {
    video_on(init);
    init->batch.video.tubelet_frames = (size_t)v;
}
static void set_video_frames(uform_trainer_init_ram_args_t *init, double v) {
    video_on(init);
    init->batch.video.max_frames = (size_t)v;
}
static void set_frame_patches(uform_trainer_init_ram_args_t *init, double v) {
    video_on(init);
    init->batch.video.max_patches_per_frame = (size_t)v;
}
static void set_columns(uform_trainer_init_ram_args_t *init, double v) {
    init->batch.image.patch_side = 4; /* the columns bound an image's patches */
    init->batch.max_columns_per_row = (size_t)v;
}
static void set_token_width(uform_trainer_init_ram_args_t *init, double v) {
    init->late_interaction.token_width = (size_t)v;
}
static void set_groups(uform_trainer_init_ram_args_t *init, double v) { init->choices.groups = (size_t)v; }
static void set_dimensions(uform_trainer_init_ram_args_t *init, double v) { init->dimensions = (size_t)v; }

/** Every accepted extreme saves a checkpoint that loads; what the reader refuses is refused at init. */
static void extremes(void) {
    static extreme_t const cases[] = {
        {"audio.sample_rate 1", set_rate, 1},
        {"audio.sample_rate 999", set_rate, 999},
        {"audio.sample_rate 1000", set_rate, 1000},
        {"audio.sample_rate 384000", set_rate, 384000},
        {"audio.sample_rate 384001", set_rate, 384001},
        {"audio.sample_rate 1e12", set_rate, 1e12},
        {"audio.mel_bins 1", set_mels, 1},
        {"audio.mel_bins 1024", set_mels, 1024},
        {"audio.mel_bins 1e9", set_mels, 1e9},
        {"audio.frames_per_patch 1", set_frames_per_patch, 1},
        {"audio.frames_per_patch 1e6", set_frames_per_patch, 1e6},
        {"audio.max_patches 1", set_audio_patches, 1},
        {"audio.max_patches 1e6", set_audio_patches, 1e6},
        {"image.patch_side 1", set_patch_side, 1},
        {"image.patch_side 64", set_patch_side, 64},
        {"video.fps 1e-4", set_fps, 1e-4},
        {"video.fps 1e-3", set_fps, 1e-3},
        {"video.fps 1000", set_fps, 1000},
        {"video.fps 1001", set_fps, 1001},
        {"video.tubelet_frames 1", set_tubelet, 1},
        {"video.tubelet_frames 64", set_tubelet, 64},
        {"video.max_frames 1", set_video_frames, 1},
        {"video.max_frames 1e7", set_video_frames, 1e7},
        {"video.max_patches_per_frame 1", set_frame_patches, 1},
        {"video.max_patches_per_frame 1e6", set_frame_patches, 1e6},
        {"batch.max_columns_per_row 1 (images)", set_columns, 1},
        {"batch.max_columns_per_row 2^20 (images)", set_columns, 1048576},
        {"late_interaction.token_width 1", set_token_width, 1},
        {"late_interaction.token_width 65536", set_token_width, 65536},
        {"choices.groups 65536", set_groups, 65536},
        {"dimensions 1", set_dimensions, 1},
        {"dimensions 65536", set_dimensions, 65536},
    };
    size_t i, accepted = 0;
    for (i = 0; i != sizeof(cases) / sizeof(cases[0]); ++i) {
        uform_trainer_init_ram_args_t init = seeded();
        uform_status_t status;
        cases[i].set(&init, cases[i].value);
        status = init_save_load(&init, cases[i].what);
        CHECK(status == uform_status_ok_k || status == uform_status_invalid_argument_k);
        accepted += status == uform_status_ok_k;
    }
    CHECK(accepted >= 20); /* most extremes are within the bounds: the table tests both sides */
    {
        /* What the reader refuses is refused at init, naming the metadata key. */
        uform_trainer_init_ram_args_t init = seeded();
        uform_trainer_t trainer = NULL;
        init.batch.audio.sample_rate = 1;
        CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
        CHECK(test_message_ && strstr(test_message_, "uform.audio.sample_rate"));
        init = seeded();
        set_fps(&init, 1e-4);
        CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
        CHECK(test_message_ && strstr(test_message_, "uform.video.fps"));
    }
}

/** The optimiser's scalars within their documented bounds: rates at most 1, weights and spans at most 1e6. */
static void optimiser_bounds(void) {
    uform_trainer_init_ram_args_t init = seeded();
    uform_trainer_t trainer = NULL;
    init.schedule.learning_rate = 1e30f;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    CHECK(test_message_ && strstr(test_message_, "learning_rate"));
    init.schedule.learning_rate = 1.001f;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.schedule.learning_rate = 1;
    init.schedule.weight_decay = 1.5f;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    CHECK(test_message_ && strstr(test_message_, "weight_decay"));
    init.schedule.weight_decay = 1;
    init.contrastive.weight = 2e6f;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.contrastive.weight = 1e6f;
    init.masking.mean_span = 1e6f;
    init.masking.weight = 1e6f;
    init.contrastive.hard_negative_weight = 1e6f;
    init.late_interaction.weight = 1e6f;
    init.choices.weight = 1e6f;
    CHECK_OK(init_save_load(&init, "every bound at its largest"));
}

/** Two saves of the same trainer hold the same bytes. */
static int same_file(char const *a, char const *b) {
    size_t length_a = 0, length_b = 0;
    unsigned char *bytes_a = read_whole_file(a, &length_a), *bytes_b = read_whole_file(b, &length_b);
    int const same = bytes_a && bytes_b && length_a == length_b && memcmp(bytes_a, bytes_b, length_a) == 0;
    free(bytes_a);
    free(bytes_b);
    return same;
}

/** Steps with nothing to learn from are refused, changing nothing; the schedule starts when a real step comes. */
static void empty_steps(void) {
    static char const *const empties[] = {"", "", ""};
    static char const *const texts[] = {"a cat", "a dog", "a bird"};
    static uform_modality_t const modalities[3] = {uform_modality_text_k, uform_modality_text_k, uform_modality_text_k};
    static size_t const bags[3] = {0, 0, 1};
    uform_trainer_init_ram_args_t const init = seeded();
    uform_trainer_t trainer = NULL;
    uform_trainer_step_args_t args;
    uform_trainer_step_stats_t stats;
    test_tape_t tape;
    char before[4200], after[4200];
    if (!CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG))) return;
    snprintf(before, sizeof(before), "%s", joined_path(scratch, "before.safetensors"));
    snprintf(after, sizeof(after), "%s", joined_path(scratch, "after.safetensors"));
    CHECK_OK(uform_trainer_save(trainer, ram, before, strlen(before), NULL, MSG));
    memset(&args, 0, sizeof(args));
    args.stats = &stats;
    tape_of(&tape, empties, 0);
    CHECK_STATUS(
        uform_trainer_step(trainer, ram, modalities, tape.data, tape.length, tape.offsets, 0, &args, NULL, NULL, MSG),
        uform_status_invalid_argument_k);
    CHECK(test_message_ && strstr(test_message_, "nothing changed"));
    tape_of(&tape, empties, 3);
    CHECK_STATUS(
        uform_trainer_step(trainer, ram, modalities, tape.data, tape.length, tape.offsets, 3, &args, NULL, NULL, MSG),
        uform_status_invalid_argument_k);
    CHECK_OK(uform_trainer_save(trainer, ram, after, strlen(after), NULL, MSG));
    CHECK(same_file(before, after));
    /* The first real step is the schedule's step 0: warm-up's first rate, lr * 1 / 2. */
    tape_of(&tape, texts, 3);
    args.bags = bags;
    args.bags_count = 3;
    if (CHECK_OK(uform_trainer_step(trainer, ram, modalities, tape.data, tape.length, tape.offsets, 3, &args, NULL,
                                    NULL, MSG))) {
        CHECK_SIZE(stats.step, 0);
        CHECK(stats.learning_rate > 0.49e-3f && stats.learning_rate < 0.51e-3f);
    }
    unlink(before);
    unlink(after);
    uform_trainer_free(trainer);
}

int main(void) {
    CHECK(make_temp_directory(scratch, sizeof(scratch), "train-bounds"));
    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG)))
        return test_report("train_bounds");
    extremes();
    optimiser_bounds();
    empty_steps();
    uform_executor_free(ram);
    rmdir(scratch);
    return test_report("train_bounds");
}
