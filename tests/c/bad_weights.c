/**
 * @file bad_weights.c
 * @brief Weights that would answer garbage with `ok` are refused at load with `corrupt`: a NaN or an infinity in any
 * tensor, and a choice temperature that is zero, negative or NaN; finite weights that overflow on an input answer
 * `corrupt` from the call rather than NaN rows. (The stub never reads weights.)
 */
#include "common.h"

static unsigned char *tiny = NULL;
static size_t tiny_length = 0;

/** The byte offset in the file of tensor `name`'s data, from the header's `data_offsets`; 0 when absent. */
static size_t tensor_offset(char const *name) {
    char key[128];
    char const *header = (char const *)tiny + 8, *found, *offsets;
    unsigned long long length = 0; /* eight bytes: wider than a 32-bit size_t */
    size_t header_length, begin = 0, i;
    for (i = 0; i != 8; ++i) length |= (unsigned long long)tiny[i] << (8 * i);
    header_length = (size_t)length;
    snprintf(key, sizeof(key), "\"%s\"", name);
    found = strstr(header, key);
    if (!found || found > header + header_length) return 0;
    offsets = strstr(found, "\"data_offsets\"");
    if (!offsets || sscanf(offsets, "\"data_offsets\":[%zu", &begin) != 1) return 0;
    return 8 + header_length + begin;
}

/** Loads a copy of the tiny checkpoint with `length` bytes at `offset` replaced by `bytes`. */
static uform_status_t load_patched(size_t offset, void const *bytes, size_t length) {
    unsigned char *copy = (unsigned char *)malloc(tiny_length);
    uform_model_load_ram_args_t args;
    uform_model_t model = NULL;
    uform_status_t status;
    memcpy(copy, tiny, tiny_length);
    memcpy(copy + offset, bytes, length);
    memset(&args, 0, sizeof(args));
    args.buffer = copy;
    args.buffer_length = tiny_length;
    status = uform_model_load_ram_buffer(&args, &model, MSG);
    uform_model_free(model);
    free(copy);
    return status;
}

/** The first block's query, key and value weights all 3.39e38 (finite BF16): their products overflow to infinities,
 *  and the softmax of those to NaN. */
static void overflowing_weights(size_t qkv) {
    unsigned char *copy = (unsigned char *)malloc(tiny_length);
    uform_model_load_ram_args_t args;
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;
    uform_tape_t probabilities;
    static size_t const offsets[] = {0, 3}, choice_offsets[] = {0, 2};
    size_t i;
    memcpy(copy, tiny, tiny_length);
    for (i = 0; i != 3 * 64 * 64; ++i) copy[qkv + 2 * i] = 0x7F, copy[qkv + 2 * i + 1] = 0x7F;
    memset(&args, 0, sizeof(args));
    args.buffer = copy;
    args.buffer_length = tiny_length;
    if (CHECK_OK(uform_model_load_ram_buffer(&args, &model, MSG)) && CHECK_OK(uform_arena_init(NULL, &arena, MSG))) {
        CHECK_STATUS(uform_text_encode(model, NULL, "abc", 3, offsets, 1,
                                       (uform_outputs_t)(uform_outputs_embeddings_k | uform_outputs_states_k), NULL,
                                       arena, &encoded, NULL, MSG),
                     uform_status_corrupt_k);
        CHECK_STATUS(uform_text_choose(model, NULL, "abc", 3, offsets, 1, "yn", 2, choice_offsets, 1, NULL, arena,
                                       &probabilities, NULL, MSG),
                     uform_status_corrupt_k);
    }
    uform_arena_free(arena);
    uform_model_free(model);
    free(copy);
}

int main(void) {
    static unsigned char const bf16_nan[2] = {0xC0, 0x7F}, bf16_infinity[2] = {0x80, 0xFF};
    float const temperatures[] = {0.0f, -1.0f, NAN, 1e30f};
    size_t norm, embedding, temperature, i;
    if (build_is_stub()) return test_report("bad_weights");
    tiny = read_whole_file(tiny_path(), &tiny_length);
    if (!CHECK(tiny != NULL)) return test_report("bad_weights");
    tiny[tiny_length] = 0; /* the header is searched as a string */
    norm = tensor_offset("final_norm.weight");
    embedding = tensor_offset("embed.byte.weight");
    temperature = tensor_offset("head.choice.temperatures");
    if (!CHECK(norm && embedding && temperature)) return test_report("bad_weights");

    CHECK_STATUS(load_patched(norm, bf16_nan, 2), uform_status_corrupt_k);
    CHECK_STATUS(load_patched(embedding + 2 * 1000, bf16_infinity, 2), uform_status_corrupt_k);
    for (i = 0; i != sizeof(temperatures) / sizeof(temperatures[0]); ++i)
        CHECK_STATUS(load_patched(temperature, &temperatures[i], 4), uform_status_corrupt_k);
    {
        float const fine = 0.25f;
        CHECK_OK(load_patched(temperature, &fine, 4));
    }
    overflowing_weights(tensor_offset("blocks.0.attn.qkv.weight"));
    free(tiny);
    return test_report("bad_weights");
}
