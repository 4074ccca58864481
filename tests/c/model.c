/**
 * @file model.c
 * @brief Loading the tiny checkpoint from a path and from a buffer, describing it, and refusing broken ones.
 *
 * Broken checkpoints are made in memory from the tiny one: its 8-byte little-endian header length, its
 * JSON header edited as text, re-padded with spaces to an 8-byte boundary, and its data section unchanged.
 */
#include "common.h"

static unsigned char *tiny_bytes = NULL;
static size_t tiny_length = 0;

/* ---------------------------------------------------------------------------------------------------------- */
/* Editing the header                                                                                          */
/* ---------------------------------------------------------------------------------------------------------- */

static size_t tiny_header_length(void) {
    size_t length = 0;
    int i;
    for (i = 7; i >= 0; --i) length = length << 8 | tiny_bytes[i];
    return length;
}

/** The tiny checkpoint's JSON header as a `malloc`ed string, trailing padding removed. */
static char *tiny_header(void) {
    size_t length = tiny_header_length();
    char *json = (char *)malloc(length + 1);
    memcpy(json, tiny_bytes + 8, length);
    while (length && json[length - 1] == ' ') --length;
    json[length] = '\0';
    return json;
}

/** A checkpoint of `json` (padded with spaces to 8 bytes) before the tiny data section; frees `json`. */
static unsigned char *checkpoint_with(char *json, size_t *length) {
    size_t old_header = tiny_header_length();
    size_t data = tiny_length - 8 - old_header;
    size_t header = strlen(json), padded = (header + 7) / 8 * 8, i;
    unsigned char *bytes = (unsigned char *)malloc(8 + padded + data);
    for (i = 0; i != 8; ++i) bytes[i] = (unsigned char)(padded >> (8 * i));
    memcpy(bytes + 8, json, header);
    memset(bytes + 8 + header, ' ', padded - header);
    memcpy(bytes + 8 + padded, tiny_bytes + 8 + old_header, data);
    *length = 8 + padded + data;
    free(json);
    return bytes;
}

/** Replaces the first `from` found after `anchor` (or from the start when `anchor` is NULL); frees `json`. */
static char *replace_after(char *json, char const *anchor, char const *from, char const *to) {
    char const *start = anchor ? strstr(json, anchor) : json;
    char const *found = start ? strstr(start, from) : NULL;
    size_t before, from_length = strlen(from), to_length = strlen(to), total = strlen(json);
    char *result;
    if (!found) {
        fprintf(stderr, "test bug: \"%s\" not found after \"%s\"\n", from, anchor ? anchor : "");
        abort();
    }
    before = (size_t)(found - json);
    result = (char *)malloc(total - from_length + to_length + 1);
    memcpy(result, json, before);
    memcpy(result + before, to, to_length);
    memcpy(result + before + to_length, found + from_length, total - before - from_length + 1);
    free(json);
    return result;
}

/** Removes the pair `"key":value` (a string or an object) and its comma; frees `json`. */
static char *remove_pair(char *json, char const *key) {
    char quoted[256];
    char *start, *end;
    snprintf(quoted, sizeof(quoted), "\"%s\":", key);
    start = strstr(json, quoted);
    if (!start) {
        fprintf(stderr, "test bug: key \"%s\" not found\n", key);
        abort();
    }
    end = start + strlen(quoted);
    if (*end == '{') end = strchr(end, '}') + 1;
    else if (*end == '"') end = strchr(end + 1, '"') + 1;
    if (*end == ',') ++end;
    else if (start[-1] == ',') --start;
    memmove(start, end, strlen(end) + 1);
    return json;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Loading                                                                                                     */
/* ---------------------------------------------------------------------------------------------------------- */

static uform_status_t load_buffer(unsigned char const *bytes, size_t length) {
    uform_model_t model = NULL;
    uform_model_load_ram_args_t const args = {.buffer = bytes, .buffer_length = length};
    uform_status_t status = uform_model_load_ram_buffer(&args, &model, MSG);
    uform_model_free(model);
    return status;
}

/** Loads a checkpoint made of an edited header, answering the status; frees the JSON. */
static uform_status_t load_edited(char *json) {
    size_t length;
    unsigned char *bytes = checkpoint_with(json, &length);
    uform_status_t status = load_buffer(bytes, length);
    free(bytes);
    return status;
}

static void check_tiny_geometry(uform_model_description_t const *d) {
    CHECK_SIZE(d->version, 1);
    CHECK_SIZE(d->depth, 2);
    CHECK_SIZE(d->hidden, 64);
    CHECK_SIZE(d->heads, 2);
    CHECK_SIZE(d->head_dim, 32);
    CHECK_SIZE(d->ffn_hidden, 192);
    CHECK(fabs(d->norm_eps - 1e-6) < 1e-9);
    CHECK(d->rope_theta == 10000.0f);
    CHECK(d->rope_sections[0] == 4 && d->rope_sections[1] == 6 && d->rope_sections[2] == 6);
    CHECK_SIZE(d->dimensions, 64);
    CHECK_SIZE(d->token_width, 32);
    CHECK_SIZE(d->choice_temperature_groups, 2);
    CHECK_SIZE(d->image_patch_side, 8);
    CHECK_SIZE(d->image_channels, 3);
    CHECK_SIZE(d->image_max_patches, 64);
    CHECK_SIZE(d->video_tubelet_frames, 2);
    CHECK(d->video_fps == 1.0f);
    CHECK_SIZE(d->video_max_frames, 4);
    CHECK_SIZE(d->video_max_patches_per_frame, 16);
    CHECK_SIZE(d->audio_sample_rate, 16000);
    CHECK_SIZE(d->audio_mel_bins, 80);
    CHECK_SIZE(d->audio_frames_per_patch, 4);
    CHECK_SIZE(d->audio_max_patches, 256);
}

static void load_from_path(void) {
    uform_model_t model = NULL;
    uform_model_load_ram_args_t args;
    uform_model_description_t description;
    uform_executor_t executor = NULL;
    test_progress_t progress;
    char missing[4200];

    memset(&args, 0, sizeof(args));
    args.path = tiny_path();
    args.path_length = strlen(args.path);
    if (CHECK_OK(uform_model_load_ram(&args, &model, MSG))) {
        CHECK(model != NULL);
        memset(&description, 0xEE, sizeof(description));
        if (CHECK_OK(uform_model_describe(model, &description, MSG))) {
            check_tiny_geometry(&description);
            CHECK(description.residency == uform_residency_ram_k);
            CHECK(description.placement_count >= 1 && description.placement_count <= 16);
            CHECK(description.cpu_class != uform_cpu_class_auto_k && uform_cpu_class_name(description.cpu_class));
            CHECK(description.gpu_class == uform_gpu_class_auto_k);
            CHECK(description.quantization == uform_scalar_bf16_k);
            CHECK(description.weight_bytes > 0);
        }
        CHECK_STATUS(uform_model_describe(model, NULL, MSG), uform_status_invalid_argument_k);
        uform_model_free(model);
    }

    /* The path is the OS's bytes with a length: a longer buffer is cut at `path_length`. */
    snprintf(missing, sizeof(missing), "%sTRAILING", tiny_path());
    args.path = missing;
    model = NULL;
    if (CHECK_OK(uform_model_load_ram(&args, &model, MSG))) uform_model_free(model);

    /* On an executor, pinned to the portable floor, quantized to E4M3, with a progress handler. */
    if (CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &executor, MSG))) {
        memset(&progress, 0, sizeof(progress));
        args.path = tiny_path();
        args.executor = executor;
        args.cpu_class = uform_cpu_class_serial_k;
        args.quantization = uform_scalar_e4m3_k;
        args.progress = test_progress;
        args.progress_context = &progress;
        model = NULL;
        if (CHECK_OK(uform_model_load_ram(&args, &model, MSG))) {
            CHECK_OK(uform_model_describe(model, &description, MSG));
            CHECK(description.cpu_class == uform_cpu_class_serial_k);
            CHECK(description.quantization == uform_scalar_e4m3_k);
            CHECK_SIZE(description.depth, 2);
            uform_model_free(model);
        }
        CHECK(progress.calls >= 1 && progress.total > 0 && !progress.regressed && !progress.overshot);
        CHECK(progress.last_completed == progress.total);

        /* A handler answering `true` cancels the load. */
        memset(&progress, 0, sizeof(progress));
        progress.stop_at_call = 1;
        model = NULL;
        CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_cancelled_k);
        CHECK(progress.calls == 1);
        uform_model_free(model);
        uform_executor_free(executor);
    }

    /* `bf16` and `auto` keep the checkpoint's BF16. */
    memset(&args, 0, sizeof(args));
    args.path = tiny_path();
    args.path_length = strlen(args.path);
    args.quantization = uform_scalar_bf16_k;
    model = NULL;
    if (CHECK_OK(uform_model_load_ram(&args, &model, MSG))) {
        CHECK_OK(uform_model_describe(model, &description, MSG));
        CHECK(description.quantization == uform_scalar_bf16_k);
        uform_model_free(model);
    }

    /* A missing file. */
    snprintf(missing, sizeof(missing), "%s.missing", tiny_path());
    args.path = missing;
    args.path_length = strlen(missing);
    args.quantization = uform_scalar_auto_k;
    CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_not_found_k);
    CHECK_STATUS(uform_model_load_ram(&args, &model, NULL), uform_status_not_found_k);

    /* Refusals of the arguments. */
    args.path = tiny_path();
    args.path_length = strlen(args.path);
    CHECK_STATUS(uform_model_load_ram(NULL, &model, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_model_load_ram(&args, NULL, MSG), uform_status_invalid_argument_k);
    args.path = NULL;
    CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_invalid_argument_k);
    args.path = tiny_path();
    args.path_length = 0;
    CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_invalid_argument_k);
    args.path_length = strlen(args.path);
    args.numa_nodes_count = 1;
    CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_invalid_argument_k);
    args.numa_nodes_count = 0;
    args.cpu_class = (uform_cpu_class_t)14;
    CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_invalid_argument_k);
    args.cpu_class = uform_cpu_class_auto_k;
    args.quantization = (uform_scalar_t)99;
    CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_invalid_argument_k);
    args.quantization = uform_scalar_f16_k; /* only auto, bf16, e4m3 and (in RAM) i8 are weight blocks */
    CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_invalid_argument_k);
    args.quantization = uform_scalar_b1_k;
    CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_invalid_argument_k);
    args.quantization = uform_scalar_i8_k;
    CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_ok_k);
    CHECK_STATUS(uform_model_describe(model, &description, MSG), uform_status_ok_k);
    CHECK(description.quantization == uform_scalar_i8_k);
    uform_model_free(model);
    model = NULL;
    args.quantization = uform_scalar_auto_k;

    CHECK_STATUS(uform_model_describe(NULL, &description, MSG), uform_status_invalid_argument_k);
    uform_model_free(NULL);
}

static void load_from_buffer(void) {
    uform_model_t from_path = load_tiny(), from_buffer = NULL;
    uform_model_load_ram_args_t args;
    uform_model_description_t description;
    uform_arena_t arena_a = NULL, arena_b = NULL;
    uform_encoded_t a, b;
    test_tape_t tape;
    static char const *const texts[] = {"a cat on a mat", "", "x"};
    unsigned char *copy = (unsigned char *)malloc(tiny_length);
    memcpy(copy, tiny_bytes, tiny_length);

    /* The bytes are copied: the buffer is scribbled over and freed once the load returns. */
    if (CHECK_OK(uform_model_load_ram_buffer(
            &(uform_model_load_ram_args_t){.buffer = copy, .buffer_length = tiny_length}, &from_buffer, MSG))) {
        memset(copy, 0, tiny_length);
        free(copy);
        copy = NULL;
        memset(&description, 0xEE, sizeof(description));
        if (CHECK_OK(uform_model_describe(from_buffer, &description, MSG))) {
            check_tiny_geometry(&description);
            CHECK(description.residency == uform_residency_ram_k);
        }
        /* The same checkpoint answers the same rows, however it was loaded. */
        if (from_path && CHECK_OK(uform_arena_init(NULL, &arena_a, MSG)) &&
            CHECK_OK(uform_arena_init(NULL, &arena_b, MSG))) {
            tape_of(&tape, texts, 3);
            CHECK_OK(uform_text_encode(from_path, NULL, tape.data, tape.length, tape.offsets, tape.count,
                                       uform_outputs_embeddings_k, NULL, arena_a, &a, NULL, MSG));
            CHECK_OK(uform_text_encode(from_buffer, NULL, tape.data, tape.length, tape.offsets, tape.count,
                                       uform_outputs_embeddings_k, NULL, arena_b, &b, NULL, MSG));
            CHECK(a.embeddings.count == 3 && b.embeddings.count == 3 &&
                  rows_equal(&a.embeddings, 0, &b.embeddings, 0) && rows_equal(&a.embeddings, 2, &b.embeddings, 2));
        }
        uform_arena_free(arena_a);
        uform_arena_free(arena_b);
        uform_model_free(from_buffer);
    }
    free(copy);

    /* A path in the arguments of a buffer load is ignored. */
    memset(&args, 0, sizeof(args));
    args.path = "/no/such/checkpoint";
    args.path_length = strlen(args.path);
    args.buffer = tiny_bytes;
    args.buffer_length = tiny_length;
    args.quantization = uform_scalar_e4m3_k;
    from_buffer = NULL;
    if (CHECK_OK(uform_model_load_ram_buffer(&args, &from_buffer, MSG))) {
        CHECK_OK(uform_model_describe(from_buffer, &description, MSG));
        CHECK(description.quantization == uform_scalar_e4m3_k);
        uform_model_free(from_buffer);
    }
    /* A path load ignores the buffer fields: the path is what it reads. */
    args.path = tiny_path();
    args.path_length = strlen(args.path);
    args.buffer = "not a checkpoint";
    args.buffer_length = 16;
    args.quantization = uform_scalar_auto_k;
    from_buffer = NULL;
    if (CHECK_OK(uform_model_load_ram(&args, &from_buffer, MSG))) uform_model_free(from_buffer);
    from_buffer = NULL;
    CHECK_STATUS(uform_model_load_ram_buffer(NULL, &from_buffer, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(
        uform_model_load_ram_buffer(&(uform_model_load_ram_args_t){.buffer_length = tiny_length}, &from_buffer, MSG),
        uform_status_invalid_argument_k);
    CHECK_STATUS(uform_model_load_ram_buffer(
                     &(uform_model_load_ram_args_t){.buffer = tiny_bytes, .buffer_length = tiny_length}, NULL, MSG),
                 uform_status_invalid_argument_k);
    /* An empty buffer, null or not, is as corrupt as an empty file. */
    CHECK_STATUS(uform_model_load_ram_buffer(&(uform_model_load_ram_args_t){0}, &from_buffer, MSG),
                 uform_status_corrupt_k);
    CHECK_STATUS(uform_model_load_ram_buffer(&(uform_model_load_ram_args_t){.buffer = tiny_bytes}, &from_buffer, MSG),
                 uform_status_corrupt_k);
    uform_model_free(from_path);
}

static void broken_checkpoints(void) {
    unsigned char *bytes;
    size_t length;
    char *json;
    char path[4200], directory[4096];

    /* Truncated: inside the length prefix, inside the header, and inside the data. */
    CHECK_STATUS(load_buffer(tiny_bytes, 5), uform_status_corrupt_k);
    CHECK_STATUS(load_buffer(tiny_bytes, 8), uform_status_corrupt_k);
    CHECK_STATUS(load_buffer(tiny_bytes, 8 + tiny_header_length() / 2), uform_status_corrupt_k);
    CHECK_STATUS(load_buffer(tiny_bytes, tiny_length - 100), uform_status_corrupt_k);

    /* A header length past the end of the file. */
    bytes = (unsigned char *)malloc(tiny_length);
    memcpy(bytes, tiny_bytes, tiny_length);
    memset(bytes, 0, 8);
    bytes[0] = (unsigned char)((tiny_length + 64) & 0xFF);
    bytes[1] = (unsigned char)(((tiny_length + 64) >> 8) & 0xFF);
    bytes[2] = (unsigned char)(((tiny_length + 64) >> 16) & 0xFF);
    bytes[3] = (unsigned char)(((tiny_length + 64) >> 24) & 0xFF);
    CHECK_STATUS(load_buffer(bytes, tiny_length), uform_status_corrupt_k);
    free(bytes);

    /* The header re-padded unchanged still loads: the editing itself is sound. */
    CHECK_STATUS(load_edited(tiny_header()), uform_status_ok_k);

    /* Bad JSON. */
    CHECK_STATUS(load_edited(replace_after(tiny_header(), NULL, "\"__metadata__\":{", "\"__metadata__\":[")),
                 uform_status_corrupt_k);
    json = tiny_header();
    json[strlen(json) / 2] = '\0';
    CHECK_STATUS(load_edited(json), uform_status_corrupt_k);
    CHECK_STATUS(load_edited(replace_after(tiny_header(), NULL, "\"format\":\"uform\"", "\"format\" \"uform\"")),
                 uform_status_corrupt_k);

    /* A metadata value that is not a number. */
    CHECK_STATUS(load_edited(replace_after(tiny_header(), NULL, "\"uform.depth\":\"2\"", "\"uform.depth\":\"two\"")),
                 uform_status_corrupt_k);

    /* An unknown format or version. */
    CHECK_STATUS(load_edited(replace_after(tiny_header(), NULL, "\"format\":\"uform\"", "\"format\":\"pytorch\"")),
                 uform_status_unsupported_k);
    CHECK_STATUS(load_edited(replace_after(tiny_header(), NULL, "\"uform.version\":\"1\"", "\"uform.version\":\"2\"")),
                 uform_status_unsupported_k);

    /* A tensor whose shape disagrees with the metadata, with as many elements; a dtype that disagrees. */
    CHECK_STATUS(load_edited(replace_after(tiny_header(), "\"head.embedding.weight\"", "[64,64]", "[8,512]")),
                 uform_status_shape_mismatch_k);
    CHECK_STATUS(load_edited(replace_after(tiny_header(), "\"blocks.1.mlp.down.weight\"", "[64,192]", "[192,64]")),
                 uform_status_shape_mismatch_k);
    CHECK_STATUS(load_edited(replace_after(tiny_header(), "\"final_norm.weight\"", "\"BF16\"", "\"F16\"")),
                 uform_status_shape_mismatch_k);
    /* Metadata that disagrees with every tensor. */
    CHECK_STATUS(
        load_edited(replace_after(tiny_header(), NULL, "\"uform.ffn_hidden\":\"192\"", "\"uform.ffn_hidden\":\"96\"")),
        uform_status_shape_mismatch_k);

    /* A missing tensor, and a depth whose blocks are missing. */
    CHECK_STATUS(load_edited(remove_pair(tiny_header(), "blocks.1.mlp.down.weight")), uform_status_corrupt_k);
    CHECK_STATUS(load_edited(remove_pair(tiny_header(), "final_norm.weight")), uform_status_corrupt_k);
    CHECK_STATUS(load_edited(replace_after(tiny_header(), NULL, "\"uform.depth\":\"2\"", "\"uform.depth\":\"3\"")),
                 uform_status_corrupt_k);

    /* Offsets outside the data section. */
    CHECK_STATUS(load_edited(replace_after(tiny_header(), "\"head.choice.temperatures\"", "471112]", "971112]")),
                 uform_status_corrupt_k);

    /* The same refusals through a file. */
    if (CHECK(make_temp_directory(directory, sizeof(directory), "model"))) {
        snprintf(path, sizeof(path), "%s/broken.safetensors", directory);
        bytes =
            checkpoint_with(replace_after(tiny_header(), "\"head.embedding.weight\"", "[64,64]", "[8,512]"), &length);
        if (CHECK(write_whole_file(path, bytes, length))) {
            uform_model_load_ram_args_t args;
            uform_model_t model = NULL;
            memset(&args, 0, sizeof(args));
            args.path = path;
            args.path_length = strlen(path);
            CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_shape_mismatch_k);
            free(bytes);
            bytes = checkpoint_with(
                replace_after(tiny_header(), NULL, "\"uform.version\":\"1\"", "\"uform.version\":\"7\""), &length);
            CHECK(write_whole_file(path, bytes, length));
            CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_unsupported_k);
            CHECK(write_whole_file(path, tiny_bytes, 5));
            CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_corrupt_k);
            remove(path);
        }
        free(bytes);
        remove(directory);
    }
}

/** A checkpoint with the trunk and the embedding head alone, its other tensors and keys removed. */
static void text_only_checkpoint(void) {
    static char const *const tensors[] = {"embed.image.weight",         "embed.image.bias",   "embed.video.weight",
                                          "embed.video.bias",           "embed.audio.weight", "embed.audio.bias",
                                          "frontend.audio.mel_filters", "head.token.weight",  "head.byte.weight",
                                          "head.choice.temperatures"};
    static char const *const keys[] = {"uform.token_width",
                                       "uform.choice.groups",
                                       "uform.image.patch_side",
                                       "uform.image.channels",
                                       "uform.image.max_patches",
                                       "uform.image.mean",
                                       "uform.image.std",
                                       "uform.video.tubelet_frames",
                                       "uform.video.fps",
                                       "uform.video.max_frames",
                                       "uform.video.max_patches_per_frame",
                                       "uform.audio.sample_rate",
                                       "uform.audio.n_fft",
                                       "uform.audio.hop",
                                       "uform.audio.mel_bins",
                                       "uform.audio.frames_per_patch",
                                       "uform.audio.max_patches"};
    char *json = tiny_header();
    unsigned char *bytes;
    size_t length, i, height = 1, width = 1;
    uform_model_t model = NULL;
    uform_model_description_t description;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    test_tape_t tape, choices;
    uform_tape_t probabilities;
    float samples[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    size_t sample_offsets[2] = {0, 4}, pixel_offsets[2] = {0, 3};
    char const *path = tiny_path();
    size_t path_offsets[2];
    static char const *const texts[] = {"abc"};
    static char const *const options[] = {"yn"};

    for (i = 0; i != sizeof(tensors) / sizeof(tensors[0]); ++i) json = remove_pair(json, tensors[i]);
    for (i = 0; i != sizeof(keys) / sizeof(keys[0]); ++i) json = remove_pair(json, keys[i]);
    bytes = checkpoint_with(json, &length);
    if (CHECK_OK(uform_model_load_ram_buffer(&(uform_model_load_ram_args_t){.buffer = bytes, .buffer_length = length},
                                             &model, MSG))) {
        if (CHECK_OK(uform_model_describe(model, &description, MSG))) {
            CHECK_SIZE(description.depth, 2);
            CHECK_SIZE(description.dimensions, 64);
            CHECK_SIZE(description.token_width, 0);
            CHECK_SIZE(description.choice_temperature_groups, 0);
            CHECK_SIZE(description.image_patch_side, 0);
            CHECK_SIZE(description.video_tubelet_frames, 0);
            CHECK_SIZE(description.audio_sample_rate, 0);
        }
        if (CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
            tape_of(&tape, texts, 1);
            CHECK_OK(uform_text_encode(model, NULL, tape.data, tape.length, tape.offsets, 1,
                                       (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k), NULL,
                                       arena, &encoded, NULL, MSG));
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 1, 64);
            CHECK_STATUS(uform_text_encode(model, NULL, tape.data, tape.length, tape.offsets, 1,
                                           uform_outputs_token_vectors_k, NULL, arena, &encoded, NULL, MSG),
                         uform_status_unsupported_k);
            tape_of(&choices, options, 1);
            CHECK_STATUS(uform_text_choose(model, NULL, tape.data, tape.length, tape.offsets, 1, choices.data,
                                           choices.length, choices.offsets, 1, NULL, arena, &probabilities, NULL, MSG),
                         uform_status_unsupported_k);
            CHECK_STATUS(uform_image_encode_pixels(model, NULL, (uint8_t const *)"abc", 3, pixel_offsets, 1, &height,
                                                   &width, uform_outputs_embeddings_k, NULL, arena, &encoded, NULL,
                                                   MSG),
                         uform_status_unsupported_k);
            CHECK_STATUS(uform_audio_encode_samples(model, NULL, samples, 4, sample_offsets, 1, 16000,
                                                    uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG),
                         uform_status_unsupported_k);
            /* An existing file, so that only the missing front-end can refuse. */
            path_offsets[0] = 0;
            path_offsets[1] = strlen(path);
            CHECK_STATUS(uform_image_encode(model, NULL, path, path_offsets[1], path_offsets, 1,
                                            uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG),
                         uform_status_unsupported_k);
            CHECK_STATUS(uform_video_encode(model, NULL, path, path_offsets[1], path_offsets, 1,
                                            uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG),
                         uform_status_unsupported_k);
            CHECK_STATUS(uform_audio_encode(model, NULL, path, path_offsets[1], path_offsets, 1,
                                            uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG),
                         uform_status_unsupported_k);
            uform_arena_free(arena);
        }
        uform_model_free(model);
    }
    free(bytes);
}

static void vram_models(void) {
    uform_model_load_vram_args_t args;
    uform_model_t model = NULL;
    uform_model_description_t description;
    uform_executor_t ram = NULL;
    size_t count = 0, devices[2] = {0, 1};

    memset(&args, 0, sizeof(args));
    args.path = tiny_path();
    args.path_length = strlen(args.path);
    CHECK_OK(uform_gpu_devices(NULL, 0, &count, MSG));
    if (count == 0) {
        CHECK_STATUS(uform_model_load_vram(&args, &model, MSG), uform_status_unsupported_k);
        return;
    }
    if (CHECK_OK(uform_model_load_vram(&args, &model, MSG))) {
        if (CHECK_OK(uform_model_describe(model, &description, MSG))) {
            check_tiny_geometry(&description);
            CHECK(description.residency == uform_residency_vram_k);
            CHECK(description.placement_count == 1 && description.placement[0] == 0);
            CHECK(description.gpu_class != uform_gpu_class_auto_k);
            CHECK(description.cpu_class == uform_cpu_class_auto_k);
        }
        uform_model_free(model);
    }
    if (count >= 2) {
        args.devices = devices;
        args.devices_count = 2;
        model = NULL;
        if (CHECK_OK(uform_model_load_vram(&args, &model, MSG))) {
            CHECK_OK(uform_model_describe(model, &description, MSG));
            CHECK(description.placement_count == 2 && description.placement[0] == 0 && description.placement[1] == 1);
            uform_model_free(model);
        }
    }
    model = NULL;
    args.devices = devices;
    args.devices_count = 1;
    args.buffer = tiny_bytes;
    args.buffer_length = tiny_length;
    if (CHECK_OK(uform_model_load_vram_buffer(&args, &model, MSG))) {
        CHECK_OK(uform_model_describe(model, &description, MSG));
        CHECK(description.residency == uform_residency_vram_k);
        uform_model_free(model);
    }
    /* A device that does not exist, and a RAM executor to upload with. */
    devices[0] = count;
    CHECK_STATUS(uform_model_load_vram(&args, &model, MSG), uform_status_not_found_k);
    devices[0] = 0;
    if (CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) {
        args.executor = ram;
        CHECK_STATUS(uform_model_load_vram(&args, &model, MSG), uform_status_invalid_argument_k);
        args.executor = NULL;
        uform_executor_free(ram);
    }
    CHECK_STATUS(uform_model_load_vram_buffer(&(uform_model_load_vram_args_t){.buffer = tiny_bytes, .buffer_length = 5},
                                              &model, MSG),
                 uform_status_corrupt_k);
    CHECK_STATUS(uform_model_load_vram_buffer(NULL, &model, MSG), uform_status_invalid_argument_k);
}

int main(void) {
    tiny_bytes = read_whole_file(tiny_path(), &tiny_length);
    if (!CHECK(tiny_bytes != NULL && tiny_length > 8)) {
        fprintf(stderr, "cannot read %s: set UFORM_TEST_DATA\n", tiny_path());
        return test_report("model");
    }
    load_from_path();
    load_from_buffer();
    broken_checkpoints();
    text_only_checkpoint();
    vram_models();
    free(tiny_bytes);
    return test_report("model");
}
