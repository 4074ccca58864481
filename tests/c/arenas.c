/**
 * @file arenas.c
 * @brief Arenas: where they live, growing to a high-water mark, rewinding, and VRAM arenas' rows.
 */
#include "common.h"

static char const *const texts[] = {"a cat on a mat", "a dog in the fog", "", "x"};

static void host_arenas(uform_model_t model) {
    uform_arena_t arena = NULL;
    uform_executor_t ram = NULL, local = NULL;
    uform_residency_t residency = uform_residency_vram_k;
    uform_encoded_t encoded;
    test_tape_t tape;
    size_t bytes = 99, high_water = 0;
    int i;

    /* Host pages: nothing allocated until a call writes. */
    if (CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
        CHECK(arena != NULL);
        CHECK_OK(uform_arena_residency(arena, &residency, MSG));
        CHECK(residency == uform_residency_ram_k);
        CHECK_OK(uform_arena_capacity(arena, &bytes, MSG));
        CHECK_SIZE(bytes, 0);
        if (model) {
            tape_of(&tape, texts, 4);
            memset(&encoded, 0, sizeof(encoded));
            CHECK_OK(uform_text_encode(model, NULL, tape.data, tape.length, tape.offsets, tape.count,
                                       (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k), NULL,
                                       arena, &encoded, NULL, MSG));
            CHECK_OK(uform_arena_capacity(arena, &high_water, MSG));
            CHECK(high_water >= 4 * 64 * 4 + 31 * 64 * 4);
            /* A steady loop allocates once: the same call again, or a smaller one, keeps the high-water mark. */
            for (i = 0; i != 3; ++i)
                CHECK_OK(uform_text_encode(model, NULL, tape.data, tape.length, tape.offsets, tape.count,
                                           (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k), NULL,
                                           arena, &encoded, NULL, MSG));
            CHECK_OK(uform_arena_capacity(arena, &bytes, MSG));
            CHECK_SIZE(bytes, high_water);
            CHECK_OK(uform_text_encode(model, NULL, tape.data, tape.offsets[1], tape.offsets, 1,
                                       uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG));
            CHECK_OK(uform_arena_capacity(arena, &bytes, MSG));
            CHECK_SIZE(bytes, high_water);
            CHECK_ROWS_PER_ITEM(&encoded.embeddings, 1, 64);
            CHECK(rows_empty(&encoded.states));
        }
        uform_arena_free(arena);
    }

    /* An arena of a RAM executor and of a local executor lives in host memory too. */
    if (CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG))) {
        arena = NULL;
        if (CHECK_OK(uform_arena_init(ram, &arena, MSG))) {
            residency = uform_residency_vram_k;
            CHECK_OK(uform_arena_residency(arena, &residency, MSG));
            CHECK(residency == uform_residency_ram_k);
            CHECK_OK(uform_arena_capacity(arena, &bytes, MSG));
            CHECK_SIZE(bytes, 0);
            if (model) {
                memset(&encoded, 0, sizeof(encoded));
                CHECK_OK(uform_text_encode(model, ram, tape.data, tape.length, tape.offsets, tape.count,
                                           uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, MSG));
                CHECK_ROWS_PER_ITEM(&encoded.embeddings, 4, 64);
                CHECK(encoded.embeddings.residency == uform_residency_ram_k && encoded.embeddings.device == 0);
                CHECK_OK(uform_arena_capacity(arena, &bytes, MSG));
                CHECK(bytes >= 4 * 64 * 4);
            }
            uform_arena_free(arena);
        }
        uform_executor_free(ram);
    }
    if (CHECK_OK(uform_executor_init_local(&local, MSG))) {
        arena = NULL;
        if (CHECK_OK(uform_arena_init(local, &arena, MSG))) {
            residency = uform_residency_vram_k;
            CHECK_OK(uform_arena_residency(arena, &residency, MSG));
            CHECK(residency == uform_residency_ram_k);
            uform_arena_free(arena);
        }
        uform_executor_free(local);
    }

    /* Refusals. */
    CHECK_STATUS(uform_arena_init(NULL, NULL, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_arena_residency(NULL, &residency, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_arena_capacity(NULL, &bytes, MSG), uform_status_invalid_argument_k);
    arena = NULL;
    if (CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
        CHECK_STATUS(uform_arena_residency(arena, NULL, MSG), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_arena_capacity(arena, NULL, MSG), uform_status_invalid_argument_k);
        uform_arena_free(arena);
    }
    uform_arena_free(NULL);
}

static void vram_arenas(void) {
    uform_executor_t executor = NULL;
    uform_arena_t arena = NULL;
    uform_model_t model = NULL;
    uform_model_load_vram_args_t args;
    uform_residency_t residency = uform_residency_ram_k;
    uform_encoded_t encoded;
    test_tape_t tape;
    size_t count = 0, device = 0, bytes = 99;

    CHECK_OK(uform_gpu_devices(NULL, 0, &count, MSG));
    if (count == 0) return;
    if (!CHECK_OK(
            uform_executor_init_vram(&device, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &executor, MSG)))
        return;
    if (CHECK_OK(uform_arena_init(executor, &arena, MSG))) {
        CHECK_OK(uform_arena_residency(arena, &residency, MSG));
        CHECK(residency == uform_residency_vram_k);
        CHECK_OK(uform_arena_capacity(arena, &bytes, MSG));
        CHECK_SIZE(bytes, 0);

        /* A VRAM model writes device rows: the views say so, and hand out a pointer for other libraries. */
        memset(&args, 0, sizeof(args));
        args.path = tiny_path();
        args.path_length = strlen(args.path);
        args.executor = executor;
        if (CHECK_OK(uform_model_load_vram(&args, &model, MSG))) {
            tape_of(&tape, texts, 4);
            memset(&encoded, 0, sizeof(encoded));
            if (CHECK_OK(uform_text_encode(model, executor, tape.data, tape.length, tape.offsets, tape.count,
                                           (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k), NULL,
                                           arena, &encoded, NULL, MSG))) {
                CHECK_ROWS_PER_ITEM(&encoded.embeddings, 4, 64);
                CHECK(encoded.embeddings.residency == uform_residency_vram_k);
                CHECK(encoded.embeddings.device == 0);
                CHECK(encoded.embeddings.scalar == uform_scalar_f32_k);
                CHECK_ROWS_TAPE(&encoded.states, 4, 64);
                CHECK(encoded.states.residency == uform_residency_vram_k);
                CHECK_SIZE(encoded.states.count, 31);
                CHECK_OK(uform_arena_capacity(arena, &bytes, MSG));
                CHECK(bytes > 0);
            }
            uform_model_free(model);
        }
        /* The arena keeps its executor alive: freeing the executor first returns at once. */
        uform_executor_free(executor);
        executor = NULL;
        residency = uform_residency_ram_k;
        CHECK_OK(uform_arena_residency(arena, &residency, MSG));
        CHECK(residency == uform_residency_vram_k);
        uform_arena_free(arena);
    }
    uform_executor_free(executor);
}

int main(void) {
    uform_model_t model = load_tiny();
    host_arenas(model);
    vram_arenas();
    uform_model_free(model);
    return test_report("arenas");
}
