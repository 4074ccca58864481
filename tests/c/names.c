/**
 * @file names.c
 * @brief Every enumeration's name and parse round trip, unknown names and values, scalar sizes, the version.
 */
#include "common.h"

/** Checks that `name_fn(value)` is `text` and that `parse_fn(text)` answers `value`. */
#define ROUND_TRIP(type, name_fn, parse_fn, value, text)                                                               \
    do {                                                                                                               \
        type parsed_ = (type)77;                                                                                       \
        CHECK_STRING(name_fn(value), text);                                                                            \
        CHECK_OK(parse_fn(text, &parsed_));                                                                            \
        CHECK(parsed_ == (value));                                                                                     \
    } while (0)

/** Checks the refusals every parse function shares: unknown, empty, misspelt and null names, a null out. */
#define REFUSALS(type, parse_fn, known)                                                                                \
    do {                                                                                                               \
        type parsed_;                                                                                                  \
        CHECK_STATUS(parse_fn("no-such-name", &parsed_), uform_status_invalid_argument_k);                             \
        CHECK_STATUS(parse_fn("", &parsed_), uform_status_invalid_argument_k);                                         \
        CHECK_STATUS(parse_fn(known "x", &parsed_), uform_status_invalid_argument_k);                                  \
        CHECK_STATUS(parse_fn(" " known, &parsed_), uform_status_invalid_argument_k);                                  \
        CHECK_STATUS(parse_fn(NULL, &parsed_), uform_status_invalid_argument_k);                                       \
        CHECK_STATUS(parse_fn(known, NULL), uform_status_invalid_argument_k);                                          \
    } while (0)

static void statuses(void) {
    uform_status_t parsed;
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_ok_k, "ok");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_deferred_k, "deferred");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_contended_k, "contended");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_cancelled_k, "cancelled");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_device_k, "device");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_unsupported_k, "unsupported");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_shape_mismatch_k, "shape-mismatch");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_invalid_argument_k,
               "invalid-argument");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_out_of_memory_k, "out-of-memory");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_io_k, "io");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_corrupt_k, "corrupt");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_not_found_k, "not-found");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_limit_exceeded_k, "limit-exceeded");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_timeout_k, "timeout");
    ROUND_TRIP(uform_status_t, uform_status_name, uform_status_parse, uform_status_internal_k, "internal");
    CHECK(uform_status_name((uform_status_t)15) == NULL);
    CHECK(uform_status_name((uform_status_t)-1) == NULL);
    CHECK(uform_status_name((uform_status_t)1000) == NULL);
    REFUSALS(uform_status_t, uform_status_parse, "shape-mismatch");
    CHECK_STATUS(uform_status_parse("shape_mismatch", &parsed), uform_status_invalid_argument_k);
}

static void scalars(void) {
    ROUND_TRIP(uform_scalar_t, uform_scalar_name, uform_scalar_parse, uform_scalar_auto_k, "auto");
    ROUND_TRIP(uform_scalar_t, uform_scalar_name, uform_scalar_parse, uform_scalar_f32_k, "f32");
    ROUND_TRIP(uform_scalar_t, uform_scalar_name, uform_scalar_parse, uform_scalar_f16_k, "f16");
    ROUND_TRIP(uform_scalar_t, uform_scalar_name, uform_scalar_parse, uform_scalar_bf16_k, "bf16");
    ROUND_TRIP(uform_scalar_t, uform_scalar_name, uform_scalar_parse, uform_scalar_e4m3_k, "e4m3");
    ROUND_TRIP(uform_scalar_t, uform_scalar_name, uform_scalar_parse, uform_scalar_e5m2_k, "e5m2");
    ROUND_TRIP(uform_scalar_t, uform_scalar_name, uform_scalar_parse, uform_scalar_i8_k, "i8");
    ROUND_TRIP(uform_scalar_t, uform_scalar_name, uform_scalar_parse, uform_scalar_b1_k, "b1");
    CHECK(uform_scalar_name((uform_scalar_t)8) == NULL);
    CHECK(uform_scalar_name((uform_scalar_t)-1) == NULL);
    REFUSALS(uform_scalar_t, uform_scalar_parse, "bf16");

    /* Bytes per row of `columns` values. */
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_f32_k, 64), 256);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_f16_k, 64), 128);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_bf16_k, 64), 128);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_e4m3_k, 64), 64);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_e5m2_k, 64), 64);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_i8_k, 64), 64);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_b1_k, 64), 8);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_b1_k, 65), 9);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_b1_k, 1), 1);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_b1_k, 7), 1);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_b1_k, 0), 0);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_f32_k, 0), 0);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_f32_k, 3), 12);
    CHECK_SIZE(uform_scalar_bytes(uform_scalar_auto_k, 64), 0);
}

static void moods_classes_residencies_modalities(void) {
    ROUND_TRIP(uform_mood_t, uform_mood_name, uform_mood_parse, uform_mood_spinning_k, "spinning");
    ROUND_TRIP(uform_mood_t, uform_mood_name, uform_mood_parse, uform_mood_sleeping_k, "sleeping");
    CHECK(uform_mood_name((uform_mood_t)2) == NULL);
    REFUSALS(uform_mood_t, uform_mood_parse, "spinning");

    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_auto_k, "auto");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_serial_k, "serial");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_intel_haswell_k,
               "intel-haswell");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_intel_skylake_k,
               "intel-skylake");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_intel_icelake_k,
               "intel-icelake");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_intel_sapphire_rapids_k,
               "intel-sapphire-rapids");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_amd_genoa_k,
               "amd-genoa");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_amd_turin_k,
               "amd-turin");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_arm_neon_k, "arm-neon");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_arm_sve_k, "arm-sve");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_arm_sve2_k, "arm-sve2");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_arm_sme_k, "arm-sme");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_wasm_v128_relaxed_k,
               "wasm-v128-relaxed");
    ROUND_TRIP(uform_cpu_class_t, uform_cpu_class_name, uform_cpu_class_parse, uform_cpu_class_wasm_simd128_k,
               "wasm-simd128");
    CHECK(uform_cpu_class_name((uform_cpu_class_t)14) == NULL);
    REFUSALS(uform_cpu_class_t, uform_cpu_class_parse, "intel-haswell");
    {
        uform_cpu_class_t parsed;
        CHECK_STATUS(uform_cpu_class_parse("intel_haswell", &parsed), uform_status_invalid_argument_k);
    }

    ROUND_TRIP(uform_gpu_class_t, uform_gpu_class_name, uform_gpu_class_parse, uform_gpu_class_auto_k, "auto");
    ROUND_TRIP(uform_gpu_class_t, uform_gpu_class_name, uform_gpu_class_parse, uform_gpu_class_nvidia_ampere_k,
               "nvidia-ampere");
    ROUND_TRIP(uform_gpu_class_t, uform_gpu_class_name, uform_gpu_class_parse, uform_gpu_class_nvidia_ada_k,
               "nvidia-ada");
    ROUND_TRIP(uform_gpu_class_t, uform_gpu_class_name, uform_gpu_class_parse, uform_gpu_class_nvidia_hopper_k,
               "nvidia-hopper");
    ROUND_TRIP(uform_gpu_class_t, uform_gpu_class_name, uform_gpu_class_parse, uform_gpu_class_nvidia_blackwell_k,
               "nvidia-blackwell");
    ROUND_TRIP(uform_gpu_class_t, uform_gpu_class_name, uform_gpu_class_parse, uform_gpu_class_amd_cdna3_k,
               "amd-cdna3");
    ROUND_TRIP(uform_gpu_class_t, uform_gpu_class_name, uform_gpu_class_parse, uform_gpu_class_amd_cdna2_k,
               "amd-cdna2");
    CHECK(uform_gpu_class_name((uform_gpu_class_t)7) == NULL);
    REFUSALS(uform_gpu_class_t, uform_gpu_class_parse, "nvidia-hopper");

    ROUND_TRIP(uform_residency_t, uform_residency_name, uform_residency_parse, uform_residency_ram_k, "ram");
    ROUND_TRIP(uform_residency_t, uform_residency_name, uform_residency_parse, uform_residency_vram_k, "vram");
    CHECK(uform_residency_name((uform_residency_t)2) == NULL);
    REFUSALS(uform_residency_t, uform_residency_parse, "vram");

    ROUND_TRIP(uform_modality_t, uform_modality_name, uform_modality_parse, uform_modality_text_k, "text");
    ROUND_TRIP(uform_modality_t, uform_modality_name, uform_modality_parse, uform_modality_image_k, "image");
    ROUND_TRIP(uform_modality_t, uform_modality_name, uform_modality_parse, uform_modality_video_k, "video");
    ROUND_TRIP(uform_modality_t, uform_modality_name, uform_modality_parse, uform_modality_audio_k, "audio");
    CHECK(uform_modality_name((uform_modality_t)4) == NULL);
    REFUSALS(uform_modality_t, uform_modality_parse, "image");
}

static void training_enumerations(void) {
    ROUND_TRIP(uform_objective_t, uform_objective_name, uform_objective_parse, uform_objective_joint_k, "joint");
    ROUND_TRIP(uform_objective_t, uform_objective_name, uform_objective_parse, uform_objective_masking_k, "masking");
    ROUND_TRIP(uform_objective_t, uform_objective_name, uform_objective_parse, uform_objective_contrastive_k,
               "contrastive");
    ROUND_TRIP(uform_objective_t, uform_objective_name, uform_objective_parse, uform_objective_late_interaction_k,
               "late-interaction");
    ROUND_TRIP(uform_objective_t, uform_objective_name, uform_objective_parse, uform_objective_choices_k, "choices");
    ROUND_TRIP(uform_objective_t, uform_objective_name, uform_objective_parse, uform_objective_distill_k, "distill");
    CHECK(uform_objective_name((uform_objective_t)6) == NULL);
    REFUSALS(uform_objective_t, uform_objective_parse, "late-interaction");

    ROUND_TRIP(uform_negatives_t, uform_negatives_name, uform_negatives_parse, uform_negatives_device_k, "device");
    ROUND_TRIP(uform_negatives_t, uform_negatives_name, uform_negatives_parse, uform_negatives_mesh_k, "mesh");
    ROUND_TRIP(uform_negatives_t, uform_negatives_name, uform_negatives_parse, uform_negatives_hard_k, "hard");
    ROUND_TRIP(uform_negatives_t, uform_negatives_name, uform_negatives_parse, uform_negatives_mesh_and_hard_k,
               "mesh-and-hard");
    CHECK(uform_negatives_name((uform_negatives_t)4) == NULL);
    REFUSALS(uform_negatives_t, uform_negatives_parse, "mesh-and-hard");

    ROUND_TRIP(uform_pair_loss_form_t, uform_pair_loss_form_name, uform_pair_loss_form_parse,
               uform_pair_loss_form_info_nce_k, "info-nce");
    ROUND_TRIP(uform_pair_loss_form_t, uform_pair_loss_form_name, uform_pair_loss_form_parse,
               uform_pair_loss_form_sigmoid_k, "sigmoid");
    CHECK(uform_pair_loss_form_name((uform_pair_loss_form_t)2) == NULL);
    REFUSALS(uform_pair_loss_form_t, uform_pair_loss_form_parse, "info-nce");

    ROUND_TRIP(uform_late_interaction_side_t, uform_late_interaction_side_name, uform_late_interaction_side_parse,
               uform_late_interaction_side_none_k, "none");
    ROUND_TRIP(uform_late_interaction_side_t, uform_late_interaction_side_name, uform_late_interaction_side_parse,
               uform_late_interaction_side_query_k, "query");
    ROUND_TRIP(uform_late_interaction_side_t, uform_late_interaction_side_name, uform_late_interaction_side_parse,
               uform_late_interaction_side_document_k, "document");
    CHECK(uform_late_interaction_side_name((uform_late_interaction_side_t)3) == NULL);
    REFUSALS(uform_late_interaction_side_t, uform_late_interaction_side_parse, "query");

    /* The multimem tier prints only. */
    CHECK_STRING(uform_multimem_tier_name(uform_multimem_tier_none_k), "none");
    CHECK_STRING(uform_multimem_tier_name(uform_multimem_tier_nvls_k), "nvls");
    CHECK_STRING(uform_multimem_tier_name(uform_multimem_tier_nvls_tree_k), "nvls-tree");
    CHECK_STRING(uform_multimem_tier_name(uform_multimem_tier_collnet_k), "collnet");
    CHECK(uform_multimem_tier_name((uform_multimem_tier_t)4) == NULL);
}

static void version(void) {
    char const *text = uform_version();
    char const *flavor = uform_build_flavor();
    unsigned major = 0, minor = 0, patch = 0;
    char tail = 0;
    CHECK(text != NULL);
    if (text) {
        CHECK(sscanf(text, "%u.%u.%u%c", &major, &minor, &patch, &tail) == 3);
        CHECK(uform_version() == text || strcmp(uform_version(), text) == 0);
        /* Built from the same tree as these headers: both say Cargo.toml's version. */
        CHECK(major == UFORM_VERSION_MAJOR && minor == UFORM_VERSION_MINOR && patch == UFORM_VERSION_PATCH);
    }
    CHECK(flavor != NULL && flavor[0] != '\0');
    if (flavor) {
        /* A comma-separated list of residencies, each one this build knows. */
        char copy[128];
        char *token;
        int known = 1;
        snprintf(copy, sizeof(copy), "%s", flavor);
        for (token = strtok(copy, ","); token; token = strtok(NULL, ","))
            known = known && (!strcmp(token, "ram") || !strcmp(token, "cuda") || !strcmp(token, "rocm") ||
                              !strcmp(token, "stub"));
        CHECK(known);
    }
    /* The headers' own version, which the C ABI's major must honour. */
    CHECK(UFORM_VERSION_MAJOR == 0 && UFORM_VERSION_MINOR >= 1);
}

int main(void) {
    statuses();
    scalars();
    moods_classes_residencies_modalities();
    training_enumerations();
    version();
    return test_report("names");
}
