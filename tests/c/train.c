/**
 * @file train.c
 * @brief The mesh and the trainer over the stub's simulated GPUs (`UFORM_STUB_GPUS`, 2 by default): bootstrap,
 * describe, init, steps with bags and relations, stats, embeddings in arenas, save and load back.
 *
 * Builds without a GPU residency answer `unsupported` for all of it, which is what this test checks there.
 */
#include "common.h"

#include <pthread.h>
#include <time.h>

static char directory[4096];
static uform_executor_t vram = NULL;
static size_t width = 0;

static char const *const contents[] = {"a cat", "a kitten", "a dog", "a puppy"};
static uform_modality_t const texts_only[4] = {uform_modality_text_k, uform_modality_text_k, uform_modality_text_k,
                                               uform_modality_text_k};
static test_tape_t content_tape;
static size_t bags[4] = {0, 0, 1, 1};
static size_t attract_offsets[5] = {0, 1, 2, 3, 4};
static size_t attract_ids[4] = {1, 0, 3, 2};

/* A gate: a progress handler that announces it was entered, then blocks until the gate opens. */
static pthread_mutex_t gate_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_changed = PTHREAD_COND_INITIALIZER;
static int gate_entered = 0, gate_opened = 0;

static bool gate_handler(void *context, size_t completed, size_t total) {
    (void)context, (void)completed, (void)total;
    pthread_mutex_lock(&gate_mutex);
    gate_entered = 1;
    pthread_cond_broadcast(&gate_changed);
    while (!gate_opened) pthread_cond_wait(&gate_changed, &gate_mutex);
    pthread_mutex_unlock(&gate_mutex);
    return false;
}

static int gate_wait_entered(void) {
    struct timespec deadline;
    int entered;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    pthread_mutex_lock(&gate_mutex);
    while (!gate_entered)
        if (pthread_cond_timedwait(&gate_changed, &gate_mutex, &deadline) != 0) break;
    entered = gate_entered;
    pthread_mutex_unlock(&gate_mutex);
    return entered;
}

static void gate_open(void) {
    pthread_mutex_lock(&gate_mutex);
    gate_opened = 1;
    pthread_cond_broadcast(&gate_changed);
    pthread_mutex_unlock(&gate_mutex);
}

static void without_gpus(void) {
    uform_executor_t ram = NULL;
    uform_mesh_t mesh = NULL;
    uform_mesh_options_t options;
    uform_trainer_t trainer = NULL;
    uform_trainer_init_vram_args_t init;
    size_t device = 0;
    memset(&options, 0, sizeof(options));
    memset(&init, 0, sizeof(init));
    init.depth = 2;
    init.hidden = 64;
    CHECK_STATUS(uform_executor_init_vram(&device, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &vram, MSG),
                 uform_status_unsupported_k);
    if (CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) {
        /* A one-process RAM mesh joins at once: one device per host, no multimem, no GPU class. */
        if (CHECK_OK(uform_mesh_bootstrap(ram, &options, &mesh, MSG))) {
            uform_mesh_description_t description;
            if (CHECK_OK(uform_mesh_describe(mesh, &description, MSG)))
                CHECK(description.host_domain_count == 1 && description.local_devices == 1 &&
                      description.world_devices == 1 && description.first_rank == 0 &&
                      description.multimem_tier == uform_multimem_tier_none_k &&
                      description.gpu_class == uform_gpu_class_auto_k);
            init.mesh = mesh;
            CHECK_STATUS(uform_trainer_init_vram(ram, &init, &trainer, MSG), uform_status_unsupported_k);
            init.mesh = NULL;
            uform_mesh_free(mesh);
        }
        CHECK_STATUS(uform_trainer_init_vram(ram, &init, &trainer, MSG), uform_status_unsupported_k);
        uform_executor_free(ram);
    }
}

static int finite_stats(uform_trainer_step_stats_t const *stats) {
    return isfinite(stats->loss) && isfinite(stats->masking_loss) && isfinite(stats->contrastive_loss) &&
           isfinite(stats->late_interaction_loss) && isfinite(stats->choices_loss) && isfinite(stats->distill_loss) &&
           isfinite(stats->gradient_norm) && stats->gradient_norm >= 0 && isfinite(stats->learning_rate) &&
           stats->learning_rate >= 0;
}

static uform_trainer_step_args_t base_step(uform_trainer_step_stats_t *stats) {
    uform_trainer_step_args_t args;
    memset(&args, 0, sizeof(args));
    args.bags = bags;
    args.bags_count = 4;
    args.relations.attract.offsets = attract_offsets;
    args.relations.attract.offsets_count = 5;
    args.relations.attract.ids = attract_ids;
    args.relations.attract.ids_count = 4;
    args.stats = stats;
    return args;
}

static uform_status_t step(uform_trainer_t trainer, uform_modality_t const *modalities, test_tape_t const *tape,
                           uform_trainer_step_args_t const *args, uform_rows_t *embeddings) {
    return uform_trainer_step(trainer, vram, modalities, tape->data, tape->length, tape->offsets, tape->count, args,
                              embeddings, NULL, MSG);
}

static void mesh_and_trainer(void) {
    uform_mesh_t mesh = NULL, lonely = NULL;
    uform_mesh_options_t options;
    uform_mesh_description_t description;
    uform_trainer_t trainer = NULL;
    uform_trainer_init_vram_args_t init;
    uform_trainer_step_args_t args;
    uform_trainer_step_stats_t stats;
    uform_rows_t embeddings;
    uform_arena_t device_arena = NULL, host_arena = NULL;
    uform_outcome_t outcome = NULL;
    uform_executor_t ram = NULL;
    size_t next_step = 0;
    char saved[4200];

    /* A one-host mesh through a fresh directory. */
    memset(&options, 0, sizeof(options));
    options.host_domain_index = 0;
    options.host_domain_count = 1;
    options.directory = directory;
    options.directory_length = strlen(directory);
    options.job = "ctest";
    options.job_length = 5;
    options.timeout_seconds = 5;
    if (!CHECK_OK(uform_mesh_bootstrap(vram, &options, &mesh, MSG))) return;
    memset(&description, 0xEE, sizeof(description));
    if (CHECK_OK(uform_mesh_describe(mesh, &description, MSG))) {
        CHECK_SIZE(description.host_domain_index, 0);
        CHECK_SIZE(description.host_domain_count, 1);
        CHECK_SIZE(description.local_devices, width);
        CHECK_SIZE(description.world_devices, width);
        CHECK_SIZE(description.first_rank, 0);
        CHECK(uform_multimem_tier_name(description.multimem_tier) != NULL);
        CHECK(description.gpu_class != uform_gpu_class_auto_k && uform_gpu_class_name(description.gpu_class));
    }
    CHECK_STATUS(uform_mesh_describe(NULL, &description, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_mesh_describe(mesh, NULL, MSG), uform_status_invalid_argument_k);

    /* A host index past the hosts; a RAM executor. */
    options.host_domain_index = 1;
    CHECK_STATUS(uform_mesh_bootstrap(vram, &options, &lonely, MSG), uform_status_invalid_argument_k);
    options.host_domain_index = 0;
    if (CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) {
        CHECK_STATUS(uform_mesh_bootstrap(ram, &options, &lonely, MSG), uform_status_unsupported_k);
    }
    CHECK_STATUS(uform_mesh_bootstrap(NULL, &options, &lonely, MSG), uform_status_invalid_argument_k);
    /* A job name that could leave the directory, and a directory that is null but has a length. */
    options.job = "../ctest";
    options.job_length = 8;
    CHECK_STATUS(uform_mesh_bootstrap(vram, &options, &lonely, MSG), uform_status_invalid_argument_k);
    options.job = "ctest";
    options.job_length = 5;
    options.directory = NULL;
    CHECK_STATUS(uform_mesh_bootstrap(vram, &options, &lonely, MSG), uform_status_invalid_argument_k);
    options.directory = directory;
    CHECK_STATUS(uform_mesh_bootstrap(vram, &options, NULL, MSG), uform_status_invalid_argument_k);

    /* The spec's configuration, shrunk to depth 2 and hidden 64 for speed. */
    memset(&init, 0, sizeof(init));
    init.mesh = mesh;
    init.depth = 2;
    init.hidden = 64;
    init.objective = uform_objective_joint_k;
    init.batch.max_rows_per_device = 64;
    init.batch.max_segments_per_device = 256;
    init.batch.max_columns_per_row = 1024;
    init.batch.max_bags_per_device = 128;
    init.batch.image.patch_side = 16;
    init.schedule.steps = 100000;
    init.seed = 42;
    if (ram) {
        CHECK_STATUS(uform_trainer_init_vram(ram, &init, &trainer, MSG), uform_status_unsupported_k);
        uform_executor_free(ram);
    }
    {
        uform_executor_t local = NULL;
        if (CHECK_OK(uform_executor_init_local(&local, MSG))) {
            CHECK_STATUS(uform_trainer_init_vram(local, &init, &trainer, MSG), uform_status_unsupported_k);
            CHECK_STATUS(uform_mesh_bootstrap(local, &options, &lonely, MSG), uform_status_unsupported_k);
            uform_executor_free(local);
        }
    }
    init.objective = (uform_objective_t)6;
    CHECK_STATUS(uform_trainer_init_vram(vram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.objective = uform_objective_joint_k;
    init.contrastive.form = (uform_pair_loss_form_t)2;
    CHECK_STATUS(uform_trainer_init_vram(vram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.contrastive.form = uform_pair_loss_form_info_nce_k;
    init.contrastive.negatives = (uform_negatives_t)4;
    CHECK_STATUS(uform_trainer_init_vram(vram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.contrastive.negatives = uform_negatives_device_k;
    CHECK_STATUS(uform_trainer_init_vram(NULL, &init, &trainer, MSG), uform_status_invalid_argument_k);
    trainer = NULL;
    if (!CHECK_OK(uform_trainer_init_vram(vram, &init, &trainer, MSG))) {
        uform_mesh_free(mesh);
        return;
    }

    /* A step with bags and relations: the stats are filled, the index counts from zero. */
    memset(&stats, 0xEE, sizeof(stats));
    args = base_step(&stats);
    memset(&embeddings, 0x5A, sizeof(embeddings));
    if (CHECK_OK(step(trainer, texts_only, &content_tape, &args, &embeddings))) {
        CHECK_SIZE(stats.step, next_step);
        CHECK(finite_stats(&stats));
        CHECK_SIZE(stats.items, 4);
        CHECK(stats.tokens >= content_tape.length);
        /* Without an arena, the embeddings are empty rows. */
        CHECK(rows_empty(&embeddings));
        ++next_step;
    }
    if (CHECK_OK(step(trainer, texts_only, &content_tape, &args, NULL))) {
        CHECK_SIZE(stats.step, next_step);
        ++next_step;
    }

    /* With a VRAM arena: device rows, one per item, F32, of the embedding's columns. */
    if (CHECK_OK(uform_arena_init(vram, &device_arena, MSG))) {
        args.arena = device_arena;
        memset(&embeddings, 0, sizeof(embeddings));
        if (CHECK_OK(step(trainer, texts_only, &content_tape, &args, &embeddings))) {
            CHECK_SIZE(stats.step, next_step);
            ++next_step;
            CHECK(embeddings.data != NULL && embeddings.offsets == NULL);
            CHECK_SIZE(embeddings.count, 4);
            CHECK_SIZE(embeddings.items, 4);
            CHECK_SIZE(embeddings.columns, 64);
            CHECK(embeddings.scalar == uform_scalar_f32_k);
            CHECK(embeddings.residency == uform_residency_vram_k);
            CHECK(embeddings.device < width);
            CHECK(embeddings.stride >= 64 * sizeof(float));
        }
    }
    /* With a host arena: rows the host reads, unit rows as every pooled embedding. */
    if (CHECK_OK(uform_arena_init(NULL, &host_arena, MSG))) {
        args.arena = host_arena;
        memset(&embeddings, 0, sizeof(embeddings));
        if (CHECK_OK(step(trainer, texts_only, &content_tape, &args, &embeddings))) {
            CHECK_SIZE(stats.step, next_step);
            ++next_step;
            CHECK(embeddings.residency == uform_residency_ram_k);
            if (CHECK_ROWS_PER_ITEM(&embeddings, 4, 64)) CHECK_UNIT_ROWS(&embeddings, 1e-3);
        }
    }
    args.arena = NULL;

    /* Every relation, sides, choices and their targets. */
    {
        static size_t repel_offsets[5] = {0, 1, 1, 1, 1}, repel_ids[1] = {2};
        static float repel_weights[1] = {2.0f};
        static size_t ignore_offsets[5] = {0, 0, 0, 0, 1}, ignore_ids[1] = {0};
        static uform_late_interaction_side_t sides[4] = {
            uform_late_interaction_side_query_k, uform_late_interaction_side_document_k,
            uform_late_interaction_side_query_k, uform_late_interaction_side_document_k};
        static char const *const options_per_item[] = {"yn", "", "", "ABC"};
        static float targets[5] = {0.9f, 0.1f, 0.2f, 0.3f, 0.5f};
        test_tape_t choices;
        tape_of(&choices, options_per_item, 4);
        args = base_step(&stats);
        args.relations.repel.offsets = repel_offsets;
        args.relations.repel.offsets_count = 5;
        args.relations.repel.ids = repel_ids;
        args.relations.repel.ids_count = 1;
        args.relations.repel.weights = repel_weights;
        args.relations.repel.weights_count = 1;
        args.relations.ignore.offsets = ignore_offsets;
        args.relations.ignore.offsets_count = 5;
        args.relations.ignore.ids = ignore_ids;
        args.relations.ignore.ids_count = 1;
        args.sides = sides;
        args.sides_count = 4;
        args.choices = choices.data;
        args.choices_length = choices.length;
        args.choices_offsets = choices.offsets;
        args.choices_count = 4;
        args.choice_targets = targets;
        args.choice_targets_length = 5;
        args.choice_targets_offsets = choices.offsets;
        args.choice_targets_count = 4;
        if (CHECK_OK(step(trainer, texts_only, &content_tape, &args, NULL))) {
            CHECK_SIZE(stats.step, next_step);
            CHECK(finite_stats(&stats));
            ++next_step;
        }
    }

    /* A deferred step. */
    args = base_step(&stats);
    outcome = NULL;
    if (CHECK_STATUS(uform_trainer_step(trainer, vram, texts_only, content_tape.data, content_tape.length,
                                        content_tape.offsets, content_tape.count, &args, NULL, &outcome, MSG),
                     uform_status_deferred_k)) {
        CHECK_OK(uform_outcome_wait(outcome, MSG));
        uform_outcome_release(outcome);
        CHECK_SIZE(stats.step, next_step);
        ++next_step;
    }

    /* A cancelled step publishes nothing and does not count. */
    {
        test_progress_t progress;
        memset(&progress, 0, sizeof(progress));
        progress.stop_at_call = 1;
        args = base_step(&stats);
        args.progress = test_progress;
        args.progress_context = &progress;
        args.arena = host_arena;
        memset(&embeddings, 0, sizeof(embeddings));
        CHECK_STATUS(step(trainer, texts_only, &content_tape, &args, &embeddings), uform_status_cancelled_k);
        CHECK(progress.calls == 1 && rows_empty(&embeddings));
        args = base_step(&stats);
        if (CHECK_OK(step(trainer, texts_only, &content_tape, &args, NULL))) {
            CHECK_SIZE(stats.step, next_step);
            ++next_step;
        }
    }

    /* Media items: an image file (the trainer has the image front-end), a video (it has none), a missing file. */
    {
        char image[4200], missing[4200];
        char const *paths[4];
        test_tape_t mixed;
        uform_modality_t with_image[4] = {uform_modality_text_k, uform_modality_image_k, uform_modality_text_k,
                                          uform_modality_text_k};
        uform_modality_t with_video[4] = {uform_modality_text_k, uform_modality_video_k, uform_modality_text_k,
                                          uform_modality_text_k};
        unsigned char bytes[256];
        size_t i;
        for (i = 0; i != sizeof(bytes); ++i) bytes[i] = (unsigned char)(i * 29);
        memcpy(bytes, "\x89PNG\r\n\x1a\n", 8);
        snprintf(image, sizeof(image), "%s/kitten.png", directory);
        snprintf(missing, sizeof(missing), "%s/no-such-kitten.png", directory);
        if (CHECK(write_whole_file(image, bytes, sizeof(bytes)))) {
            paths[0] = contents[0], paths[1] = image, paths[2] = contents[2], paths[3] = contents[3];
            tape_of(&mixed, paths, 4);
            args = base_step(&stats);
            if (build_is_stub() && CHECK_OK(step(trainer, with_image, &mixed, &args, NULL))) {
                CHECK_SIZE(stats.step, next_step);
                ++next_step;
            }
            CHECK_STATUS(step(trainer, with_video, &mixed, &args, NULL), uform_status_unsupported_k);
            paths[1] = missing;
            tape_of(&mixed, paths, 4);
            CHECK_STATUS(step(trainer, with_image, &mixed, &args, NULL), uform_status_not_found_k);
            remove(image);
        }
    }

    /* A trainer serves one call at a time: while a step runs, another executor over the same devices finds the
     * trainer busy for a step and for a save; an executor over other devices is refused outright. */
    {
        uform_executor_t same = NULL;
        size_t devices[2] = {0, 1};
        args = base_step(&stats);
        args.progress = gate_handler;
        outcome = NULL;
        if (CHECK_OK(uform_executor_init_vram(devices, width, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &same,
                                              MSG)) &&
            CHECK_STATUS(uform_trainer_step(trainer, vram, texts_only, content_tape.data, content_tape.length,
                                            content_tape.offsets, content_tape.count, &args, NULL, &outcome, MSG),
                         uform_status_deferred_k)) {
            if (CHECK(gate_wait_entered())) {
                uform_trainer_step_args_t plain = base_step(NULL);
                CHECK_STATUS(uform_trainer_step(trainer, same, texts_only, content_tape.data, content_tape.length,
                                                content_tape.offsets, content_tape.count, &plain, NULL, NULL, MSG),
                             uform_status_contended_k);
                snprintf(saved, sizeof(saved), "%s/busy.safetensors", directory);
                CHECK_STATUS(uform_trainer_save(trainer, same, saved, strlen(saved), NULL, MSG),
                             uform_status_contended_k);
                /* The executor is busy too. */
                CHECK_STATUS(uform_trainer_save(trainer, vram, saved, strlen(saved), NULL, MSG),
                             uform_status_contended_k);
            }
            gate_open();
            CHECK_OK(uform_outcome_wait(outcome, MSG));
            uform_outcome_release(outcome);
            CHECK_SIZE(stats.step, next_step);
            ++next_step;
            /* Free again. */
            args = base_step(&stats);
            if (CHECK_OK(uform_trainer_step(trainer, same, texts_only, content_tape.data, content_tape.length,
                                            content_tape.offsets, content_tape.count, &args, NULL, NULL, MSG))) {
                CHECK_SIZE(stats.step, next_step);
                ++next_step;
            }
        }
        gate_open();
        uform_executor_free(same);
        if (width >= 2) {
            uform_executor_t other = NULL;
            if (CHECK_OK(uform_executor_init_vram(devices + 1, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0,
                                                  &other, MSG))) {
                args = base_step(&stats);
                CHECK_STATUS(uform_trainer_step(trainer, other, texts_only, content_tape.data, content_tape.length,
                                                content_tape.offsets, content_tape.count, &args, NULL, NULL, MSG),
                             uform_status_invalid_argument_k);
                uform_executor_free(other);
            }
        }
    }

    /* Save, then load the checkpoint back into host memory and describe it. */
    snprintf(saved, sizeof(saved), "%s/trained.safetensors", directory);
    if (CHECK_OK(uform_trainer_save(trainer, vram, saved, strlen(saved), NULL, MSG))) {
        uform_model_load_ram_args_t load;
        uform_model_t model = NULL;
        uform_model_description_t d;
        memset(&load, 0, sizeof(load));
        load.path = saved;
        load.path_length = strlen(saved);
        if (CHECK_OK(uform_model_load_ram(&load, &model, MSG))) {
            if (CHECK_OK(uform_model_describe(model, &d, MSG))) {
                CHECK_SIZE(d.version, 1);
                CHECK_SIZE(d.depth, 2);
                CHECK_SIZE(d.hidden, 64);
                CHECK_SIZE(d.heads, 1);
                CHECK_SIZE(d.head_dim, 64);
                CHECK_SIZE(d.ffn_hidden, 192);
                CHECK_SIZE(d.dimensions, 64);
                CHECK_SIZE(d.token_width, 128);
                CHECK_SIZE(d.choice_temperature_groups, 1);
                CHECK_SIZE(d.image_patch_side, 16);
                CHECK_SIZE(d.image_channels, 3);
                CHECK_SIZE(d.image_max_patches, 1024); /* the batch's max_columns_per_row */
                CHECK_SIZE(d.video_tubelet_frames, 0);
                CHECK_SIZE(d.audio_sample_rate, 0);
            }
            uform_model_free(model);
        }
        remove(saved);
    }
    /* A deferred save. */
    outcome = NULL;
    if (CHECK_STATUS(uform_trainer_save(trainer, vram, saved, strlen(saved), &outcome, MSG), uform_status_deferred_k)) {
        CHECK_OK(uform_outcome_wait(outcome, MSG));
        uform_outcome_release(outcome);
        {
            FILE *file = fopen(saved, "rb");
            CHECK(file != NULL);
            if (file) fclose(file);
        }
        remove(saved);
    }
    /* A save into a directory that does not exist. */
    {
        char nowhere[4200];
        snprintf(nowhere, sizeof(nowhere), "%s/no/such/dir/x.safetensors", directory);
        CHECK_STATUS(uform_trainer_save(trainer, vram, nowhere, strlen(nowhere), NULL, MSG), uform_status_io_k);
    }

    uform_arena_free(device_arena);
    uform_arena_free(host_arena);
    uform_trainer_free(trainer);
    uform_mesh_free(mesh);
}

/** A trainer without a mesh, starting from the tiny checkpoint: its geometry comes from the file. */
static void from_checkpoint(void) {
    uform_trainer_init_vram_args_t init;
    uform_trainer_t trainer = NULL;
    uform_trainer_step_stats_t stats;
    uform_trainer_step_args_t args;
    char saved[4200], missing[4200];
    memset(&init, 0, sizeof(init));
    init.checkpoint = tiny_path();
    init.checkpoint_length = strlen(tiny_path());
    init.batch.max_rows_per_device = 8;
    init.batch.max_columns_per_row = 64;
    if (!CHECK_OK(uform_trainer_init_vram(vram, &init, &trainer, MSG))) return;
    args = base_step(&stats);
    if (CHECK_OK(step(trainer, texts_only, &content_tape, &args, NULL))) {
        CHECK_SIZE(stats.step, 0);
        CHECK(finite_stats(&stats));
    }
    /* The batch's bounds per device (8 rows of 64 tokens, so 32 items) are documented limits. */
    {
        static char long_text[65];
        char const *items[65];
        uform_modality_t modalities[65];
        test_tape_t big;
        size_t i;
        memset(long_text, 'a', 64);
        long_text[64] = '\0';
        for (i = 0; i != 65; ++i) items[i] = "x", modalities[i] = uform_modality_text_k;
        items[0] = long_text;
        tape_of(&big, items, 1);
        args = base_step(NULL);
        args.bags_count = 0, args.relations.attract.offsets_count = 0, args.relations.attract.ids_count = 0;
        CHECK_OK(step(trainer, modalities, &big, &args, NULL));
        long_text[63] = 'b';
        memmove(long_text + 1, long_text, 64); /* 65 bytes now: longer than a packed row */
        tape_clear(&big);
        tape_push(&big, long_text, 65);
        CHECK_STATUS(step(trainer, modalities, &big, &args, NULL), uform_status_limit_exceeded_k);
        items[0] = "x";
        tape_of(&big, items, 32 * width);
        CHECK_OK(step(trainer, modalities, &big, &args, NULL));
        tape_of(&big, items, 32 * width + 1);
        CHECK_STATUS(step(trainer, modalities, &big, &args, NULL), uform_status_limit_exceeded_k);
    }
    snprintf(saved, sizeof(saved), "%s/fine-tuned.safetensors", directory);
    if (CHECK_OK(uform_trainer_save(trainer, vram, saved, strlen(saved), NULL, MSG))) {
        uform_model_load_ram_args_t load;
        uform_model_t model = NULL;
        uform_model_description_t d;
        memset(&load, 0, sizeof(load));
        load.path = saved;
        load.path_length = strlen(saved);
        if (CHECK_OK(uform_model_load_ram(&load, &model, MSG))) {
            if (CHECK_OK(uform_model_describe(model, &d, MSG))) {
                CHECK(d.depth == 2 && d.hidden == 64 && d.heads == 2 && d.head_dim == 32 && d.ffn_hidden == 192);
                CHECK(d.dimensions == 64 && d.token_width == 32 && d.choice_temperature_groups == 2);
                CHECK(d.image_patch_side == 8 && d.video_tubelet_frames == 2 && d.audio_sample_rate == 16000);
            }
            uform_model_free(model);
        }
        remove(saved);
    }
    uform_trainer_free(trainer);

    snprintf(missing, sizeof(missing), "%s.missing", tiny_path());
    init.checkpoint = missing;
    init.checkpoint_length = strlen(missing);
    trainer = NULL;
    CHECK_STATUS(uform_trainer_init_vram(vram, &init, &trainer, MSG), uform_status_not_found_k);
}

/** Reads the F32 values of `name` from a checkpoint into `values` (at most `capacity`); answers how many. */
static size_t saved_floats(char const *path, char const *name, float *values, size_t capacity) {
    static char header[1 << 16];
    unsigned char prefix[8];
    unsigned long long begin = 0, end = 0, length = 0;
    char pattern[256];
    char const *at;
    size_t i, count = 0;
    FILE *file = fopen(path, "rb");
    if (!file) return 0;
    if (fread(prefix, 1, 8, file) == 8) {
        for (i = 8; i-- > 0;) length = length << 8 | prefix[i];
        if (length < sizeof(header) && fread(header, 1, (size_t)length, file) == length) {
            header[length] = '\0';
            snprintf(pattern, sizeof(pattern), "\"%s\":{", name);
            at = strstr(header, pattern);
            at = at ? strstr(at, "\"data_offsets\":[") : NULL;
            if (at && sscanf(at, "\"data_offsets\":[%llu,%llu]", &begin, &end) == 2 && (end - begin) % 4 == 0 &&
                (end - begin) / 4 <= capacity && fseek(file, (long)(8 + length + begin), SEEK_SET) == 0)
                count = fread(values, 4, (size_t)((end - begin) / 4), file);
        }
    }
    fclose(file);
    return count;
}

/** Calibrates `trainer` on `executor` with the held-out items below; `groups` may be NULL. */
static uform_status_t calibrate(uform_trainer_t trainer, uform_executor_t executor, test_tape_t const *texts,
                                test_tape_t const *choices, float const *targets, size_t const *target_offsets,
                                uform_trainer_calibrate_args_t const *args) {
    return uform_trainer_calibrate(trainer, executor, texts->data, texts->length, texts->offsets, texts->count,
                                   choices->data, choices->length, choices->offsets, choices->count, targets,
                                   target_offsets[choices->count], target_offsets, choices->count, args, NULL, MSG);
}

/** A RAM trainer: the configuration of a VRAM one, checked alike before the backend; every later call takes a RAM
 *  executor of the trainer's NUMA nodes. Runs in every build; the stub's RAM trainer must exist. */
static void ram_trainer(void) {
    static char const *const held_out[] = {"is it?", "yes or no", "pick one"};
    static char const *const held_out_choices[] = {"yn", "yn", "ABC"};
    static float targets[7] = {1.0f, 0.0f, 0.0f, 1.0f, 0.2f, 0.3f, 0.5f};
    static size_t target_offsets[4] = {0, 2, 4, 7};
    static size_t groups[3] = {0, 1, 1};
    uform_executor_t ram = NULL, pinned = NULL, local = NULL;
    uform_trainer_init_ram_args_t init;
    uform_trainer_t trainer = NULL;
    uform_trainer_step_stats_t stats;
    uform_trainer_step_args_t args;
    uform_trainer_calibrate_stats_t calibrated;
    uform_trainer_calibrate_args_t calibration;
    test_tape_t texts, choices;
    char saved[4200];
    size_t node = 0;
    uform_status_t status;
    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) return;
    memset(&init, 0, sizeof(init));
    init.checkpoint = tiny_path();
    init.checkpoint_length = strlen(tiny_path());
    init.batch.max_rows_per_device = 8;
    init.batch.max_columns_per_row = 64;

    /* A geometry the checkpoint contradicts is refused; the checkpoint's own values pass (below). */
    init.hidden = 128;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.hidden = 64;
    init.depth = 3;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.depth = 2;
    init.choices.groups = 1;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.choices.groups = 2;
    init.late_interaction.token_width = 16;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.late_interaction.token_width = 32;
    init.batch.audio.sample_rate = 8000;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.batch.audio.sample_rate = 16000;
    init.batch.image.patch_side = 16;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.batch.image.patch_side = 8;
    /* A VRAM or local executor, and a dead mesh: a RAM trainer trains on a RAM executor, over a live RAM mesh. */
    if (vram) CHECK_STATUS(uform_trainer_init_ram(vram, &init, &trainer, MSG), uform_status_unsupported_k);
    if (CHECK_OK(uform_executor_init_local(&local, MSG))) {
        CHECK_STATUS(uform_trainer_init_ram(local, &init, &trainer, MSG), uform_status_unsupported_k);
        uform_executor_free(local);
    }
    init.mesh = (uform_mesh_t)&init; /* its magic is not a mesh's */
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    init.mesh = NULL;
    CHECK_STATUS(uform_trainer_init_ram(ram, &init, NULL, MSG), uform_status_invalid_argument_k);

    status = uform_trainer_init_ram(ram, &init, &trainer, MSG);
    if (build_is_stub()) CHECK_OK(status);
    else CHECK(status == uform_status_ok_k || status == uform_status_unsupported_k); /* until the RAM trainer */
    if (status != uform_status_ok_k) {
        uform_executor_free(ram);
        return;
    }

    /* A step on its executor; on another residency's, other NUMA nodes' or a local one, refused. */
    args = base_step(&stats);
    if (CHECK_OK(uform_trainer_step(trainer, ram, texts_only, content_tape.data, content_tape.length,
                                    content_tape.offsets, content_tape.count, &args, NULL, NULL, MSG))) {
        CHECK_SIZE(stats.step, 0);
        CHECK_SIZE(stats.items, 4);
        CHECK(finite_stats(&stats));
    }
    if (vram)
        CHECK_STATUS(uform_trainer_step(trainer, vram, texts_only, content_tape.data, content_tape.length,
                                        content_tape.offsets, content_tape.count, &args, NULL, NULL, MSG),
                     uform_status_invalid_argument_k);
    if (CHECK_OK(uform_executor_init_ram(&node, 1, uform_cpu_class_auto_k, 1, &pinned, MSG))) {
        CHECK_STATUS(uform_trainer_step(trainer, pinned, texts_only, content_tape.data, content_tape.length,
                                        content_tape.offsets, content_tape.count, &args, NULL, NULL, MSG),
                     uform_status_invalid_argument_k);
        CHECK_STATUS(uform_trainer_save(trainer, pinned, "x", 1, NULL, MSG), uform_status_invalid_argument_k);
        uform_executor_free(pinned);
    }
    if (vram) {
        uform_arena_t device_arena = NULL;
        if (CHECK_OK(uform_arena_init(vram, &device_arena, MSG))) {
            args.arena = device_arena;
            CHECK_STATUS(uform_trainer_step(trainer, ram, texts_only, content_tape.data, content_tape.length,
                                            content_tape.offsets, content_tape.count, &args, NULL, NULL, MSG),
                         uform_status_invalid_argument_k);
            args.arena = NULL;
            uform_arena_free(device_arena);
        }
    }

    /* Choice targets sum to one within 1e-5 (their F32 sum); a choice item's CHOOSE counts against its row. */
    {
        static char const *const options[] = {"yn", "", "", ""};
        static float close[2] = {0.5f, 0.500004f}, far[2] = {0.5f, 0.50002f};
        static size_t offsets[5] = {0, 2, 2, 2, 2};
        static char long_text[65];
        char const *items[4] = {long_text, "a kitten", "a dog", "a puppy"};
        test_tape_t option_tape, item_tape;
        tape_of(&option_tape, options, 4);
        args = base_step(&stats);
        args.choices = option_tape.data;
        args.choices_length = option_tape.length;
        args.choices_offsets = option_tape.offsets;
        args.choices_count = 4;
        args.choice_targets = close;
        args.choice_targets_length = 2;
        args.choice_targets_offsets = offsets;
        args.choice_targets_count = 4;
        CHECK_OK(uform_trainer_step(trainer, ram, texts_only, content_tape.data, content_tape.length,
                                    content_tape.offsets, content_tape.count, &args, NULL, NULL, MSG));
        args.choice_targets = far;
        CHECK_STATUS(uform_trainer_step(trainer, ram, texts_only, content_tape.data, content_tape.length,
                                        content_tape.offsets, content_tape.count, &args, NULL, NULL, MSG),
                     uform_status_invalid_argument_k);
        args.choice_targets = close;
        memset(long_text, 'a', 63);
        tape_of(&item_tape, items, 4);
        CHECK_OK(uform_trainer_step(trainer, ram, texts_only, item_tape.data, item_tape.length, item_tape.offsets,
                                    item_tape.count, &args, NULL, NULL, MSG));
        long_text[63] = 'a'; /* 64 bytes and CHOOSE: past a row of 64 */
        tape_of(&item_tape, items, 4);
        CHECK_STATUS(uform_trainer_step(trainer, ram, texts_only, item_tape.data, item_tape.length, item_tape.offsets,
                                        item_tape.count, &args, NULL, NULL, MSG),
                     uform_status_limit_exceeded_k);
    }

    /* Calibration: two groups fitted on three held-out items, lowering their loss. */
    tape_of(&texts, held_out, 3);
    tape_of(&choices, held_out_choices, 3);
    memset(&calibration, 0, sizeof(calibration));
    memset(&calibrated, 0, sizeof(calibrated));
    calibration.temperature_groups = groups;
    calibration.temperature_groups_count = 3;
    calibration.stats = &calibrated;
    if (CHECK_OK(calibrate(trainer, ram, &texts, &choices, targets, target_offsets, &calibration))) {
        CHECK_SIZE(calibrated.items, 3);
        CHECK_SIZE(calibrated.groups_fitted, 2);
        CHECK_SIZE(calibrated.tokens, strlen(held_out[0]) + strlen(held_out[1]) + strlen(held_out[2]) + 3);
        CHECK(isfinite(calibrated.loss_before) && isfinite(calibrated.loss_after));
        CHECK(calibrated.loss_after <= calibrated.loss_before + 1e-5f);
    }
    {
        test_progress_t progress;
        memset(&progress, 0, sizeof(progress));
        progress.stop_at_call = 1;
        calibration.progress = test_progress;
        calibration.progress_context = &progress;
        CHECK_STATUS(calibrate(trainer, ram, &texts, &choices, targets, target_offsets, &calibration),
                     uform_status_cancelled_k);
        calibration.progress = NULL;
        calibration.progress_context = NULL;
    }
    if (vram)
        CHECK_STATUS(calibrate(trainer, vram, &texts, &choices, targets, target_offsets, &calibration),
                     uform_status_invalid_argument_k);
    groups[2] = 2; /* not below the checkpoint's two groups */
    CHECK_STATUS(calibrate(trainer, ram, &texts, &choices, targets, target_offsets, &calibration),
                 uform_status_invalid_argument_k);
    groups[2] = 1;
    calibration.temperature_groups_count = 2;
    CHECK_STATUS(calibrate(trainer, ram, &texts, &choices, targets, target_offsets, &calibration),
                 uform_status_shape_mismatch_k);
    calibration.temperature_groups_count = 3;
    targets[0] = 0.9f; /* the first item's targets sum to 0.9 */
    CHECK_STATUS(calibrate(trainer, ram, &texts, &choices, targets, target_offsets, &calibration),
                 uform_status_invalid_argument_k);
    targets[0] = 1.0f;
    {
        static char const *const no_choice[] = {"yn", "", "ABC"};
        static size_t empty_offsets[4] = {0, 2, 2, 5};
        static float empty_targets[5] = {1.0f, 0.0f, 0.2f, 0.3f, 0.5f};
        static char fits[64], past[65];
        char const *fitting[3] = {fits, "b", "c"}, *overlong[3] = {past, "b", "c"};
        test_tape_t long_texts;
        tape_of(&long_texts, no_choice, 3);
        CHECK_STATUS(calibrate(trainer, ram, &texts, &long_texts, empty_targets, empty_offsets, &calibration),
                     uform_status_invalid_argument_k);
        memset(fits, 'r', 63); /* 63 bytes and CHOOSE fill a row of 64 */
        tape_of(&long_texts, fitting, 3);
        CHECK_OK(calibrate(trainer, ram, &long_texts, &choices, targets, target_offsets, &calibration));
        memset(past, 'r', 64);
        tape_of(&long_texts, overlong, 3);
        CHECK_STATUS(calibrate(trainer, ram, &long_texts, &choices, targets, target_offsets, &calibration),
                     uform_status_limit_exceeded_k);
    }
    choices.count = 2;
    CHECK_STATUS(calibrate(trainer, ram, &texts, &choices, targets, target_offsets, &calibration),
                 uform_status_shape_mismatch_k);
    choices.count = 3;

    /* The fitted temperatures go into the checkpoint `save` writes. */
    snprintf(saved, sizeof(saved), "%s/calibrated.safetensors", directory[0] ? directory : ".");
    if (CHECK_OK(uform_trainer_save(trainer, ram, saved, strlen(saved), NULL, MSG))) {
        float temperatures[2] = {0, 0};
        if (CHECK_SIZE(saved_floats(saved, "head.choice.temperatures", temperatures, 2), 2))
            CHECK(temperatures[0] >= 0.01f && temperatures[0] <= 100.0f && temperatures[1] >= 0.01f &&
                  temperatures[1] <= 100.0f && (temperatures[0] != 1.0f || temperatures[1] != 1.0f));
        remove(saved);
    }
    uform_trainer_free(trainer);
    uform_executor_free(ram);
}

/** Host 0 of two waits for a peer that never comes. */
/* A step of `trainer` over the four texts with `args`, on `ram`. */
static uform_status_t ram_step(uform_trainer_t trainer, uform_executor_t ram, uform_trainer_step_args_t const *args) {
    return uform_trainer_step(trainer, ram, texts_only, content_tape.data, content_tape.length, content_tape.offsets,
                              content_tape.count, args, NULL, NULL, MSG);
}

/* A trainer of the tiny checkpoint on `ram` with `objective`, or NULL. */
static uform_trainer_t distill_trainer(uform_executor_t ram, uform_objective_t objective) {
    uform_trainer_init_ram_args_t init;
    uform_trainer_t trainer = NULL;
    memset(&init, 0, sizeof(init));
    init.checkpoint = tiny_path();
    init.checkpoint_length = strlen(tiny_path());
    init.batch.max_rows_per_device = 8;
    init.batch.max_columns_per_row = 64;
    init.objective = objective;
    init.schedule.steps = 10;
    return CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG)) ? trainer : NULL;
}

/* The distillation term's configuration refusals: temperatures out of [1e-3, 1e3], weights above 1e6, NaN. */
static void distill_config(uform_executor_t ram) {
    uform_trainer_init_ram_args_t init;
    uform_trainer_t trainer = NULL;
    float const bad[][3] = {{1e-4f, 0, 0}, {0, 2e3f, 0}, {0, 0, 2e6f}, {NAN, 0, 0}, {0, -1, 0}, {0, 0, INFINITY}};
    memset(&init, 0, sizeof(init));
    init.checkpoint = tiny_path();
    init.checkpoint_length = strlen(tiny_path());
    init.objective = uform_objective_distill_k;
    for (size_t k = 0; k != sizeof(bad) / sizeof(bad[0]); ++k) {
        init.distill.student_temperature = bad[k][0];
        init.distill.teacher_temperature = bad[k][1];
        init.distill.weight = bad[k][2];
        CHECK_STATUS(uform_trainer_init_ram(ram, &init, &trainer, MSG), uform_status_invalid_argument_k);
    }
}

/* The distillation term: teacher rows drive a `distill` trainer's loss and join a joint trainer's; bad rows are
 * refused with nothing changed (the next good step is still step 0). */
static void distillation(void) {
    static float teacher[12] = {1, 0, 0, 0.9f, 0.1f, 0, 0, 1, 0, 0, 0.8f, 0.2f};
    static float partial[12] = {1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0.8f, 0.2f};
    static float lonely[12] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    uform_executor_t ram = NULL;
    uform_trainer_t trainer = NULL;
    uform_trainer_step_stats_t stats;
    uform_trainer_step_args_t args;
    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) return;
    distill_config(ram);
    if ((trainer = distill_trainer(ram, uform_objective_distill_k))) {
        memset(&args, 0, sizeof(args));
        args.stats = &stats;
        /* No teacher rows: a distill step has nothing to learn from. */
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_invalid_argument_k);
        args.teacher = teacher;
        args.teacher_count = 12;
        args.teacher_width = 0;
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_invalid_argument_k);
        args.teacher_width = 4;
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_shape_mismatch_k);
        args.teacher_width = 3;
        args.teacher_count = 9;
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_shape_mismatch_k);
        args.teacher_count = 0;
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_shape_mismatch_k);
        args.teacher = NULL;
        args.teacher_count = 12;
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_invalid_argument_k);
        args.teacher = teacher;
        teacher[4] = NAN;
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_invalid_argument_k);
        teacher[4] = INFINITY;
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_invalid_argument_k);
        teacher[4] = 0.1f;
        /* One item with a teacher has no other to compare with: nothing to learn from. */
        args.teacher = lonely;
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_invalid_argument_k);
        args.teacher = teacher;
        memset(&stats, 0, sizeof(stats));
        if (CHECK_OK(ram_step(trainer, ram, &args))) {
            CHECK_SIZE(stats.step, 0);
            CHECK(finite_stats(&stats) && stats.distill_loss > 0 && stats.contrastive_loss == 0 &&
                  stats.masking_loss == 0 && fabsf(stats.loss - stats.distill_loss) <= 1e-6f * stats.loss);
        }
        /* An all-zero row leaves its item out: three items with a teacher still score. */
        args.teacher = partial;
        if (CHECK_OK(ram_step(trainer, ram, &args))) CHECK(stats.step == 1 && stats.distill_loss > 0);
        uform_trainer_free(trainer);
    }
    /* A contrastive trainer refuses teacher rows; a joint one adds the term to its sum. */
    if ((trainer = distill_trainer(ram, uform_objective_contrastive_k))) {
        memset(&args, 0, sizeof(args));
        args.teacher = teacher;
        args.teacher_count = 12;
        args.teacher_width = 3;
        CHECK_STATUS(ram_step(trainer, ram, &args), uform_status_invalid_argument_k);
        uform_trainer_free(trainer);
    }
    if ((trainer = distill_trainer(ram, uform_objective_joint_k))) {
        args = base_step(&stats);
        args.teacher = teacher;
        args.teacher_count = 12;
        args.teacher_width = 3;
        if (CHECK_OK(ram_step(trainer, ram, &args)))
            CHECK(finite_stats(&stats) && stats.distill_loss > 0 && stats.contrastive_loss > 0 &&
                  stats.loss > stats.distill_loss);
        uform_trainer_free(trainer);
    }
    uform_executor_free(ram);
}

static void timeout(void) {
    uform_mesh_options_t options;
    uform_mesh_t mesh = NULL;
    memset(&options, 0, sizeof(options));
    options.host_domain_index = 0;
    options.host_domain_count = 2;
    options.directory = directory;
    options.directory_length = strlen(directory);
    options.job = "lonely";
    options.job_length = 6;
    options.timeout_seconds = 1;
    CHECK_STATUS(uform_mesh_bootstrap(vram, &options, &mesh, MSG), uform_status_timeout_k);
    /* What host 0 published before it gave up (the stub's names; harmless where absent). */
    {
        char path[4200];
        snprintf(path, sizeof(path), "%s/lonely.mesh", directory);
        remove(path);
        snprintf(path, sizeof(path), "%s/lonely.mesh.0", directory);
        remove(path);
    }
}

int main(void) {
    size_t count = 0, devices[2] = {0, 1};
    if (!CHECK_OK(uform_gpu_devices(NULL, 0, &count, MSG))) return test_report("train");
    if (build_is_stub()) CHECK_SIZE(count, stub_gpu_count());
    if (count == 0) {
        without_gpus();
        tape_of(&content_tape, contents, 4);
        ram_trainer();
        distillation();
        return test_report("train");
    }
    width = count < 2 ? count : 2;
    tape_of(&content_tape, contents, 4);
    if (!CHECK_OK(
            uform_executor_init_vram(devices, width, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &vram, MSG)))
        return test_report("train");
    if (CHECK(make_temp_directory(directory, sizeof(directory), "train"))) {
        mesh_and_trainer();
        from_checkpoint();
        ram_trainer();
        distillation();
        timeout();
        remove(directory); /* succeeds only when the mesh left nothing behind; harmless otherwise */
    }
    uform_executor_free(vram);
    return test_report("train");
}
