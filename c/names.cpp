// The name tables of every enumeration, `uform_scalar_bytes`, the version and the build flavor.
//
// The C tables own the names; Rust's `Display` and `FromStr` call these functions. Parsing is exact and
// case-sensitive: `"shape-mismatch"`, never `"shape_mismatch"` or `" shape-mismatch"`.
#include <cstring>
#include <iterator>

#include <uform/uform.h>

#include "common/backend.hpp"
#include "c/handles.hpp"
#include "common/scalars.hpp"

namespace {

template <typename enum_type_, std::size_t count_>
char const *name_of(char const *const (&names)[count_], enum_type_ const &value) noexcept {
    std::uint64_t const index = uform::raw_enum(value); // any int a C caller passed
    return index < count_ ? names[index] : nullptr;
}

template <typename enum_type_, std::size_t count_>
uform_status_t parse_of(char const *const (&names)[count_], char const *name, enum_type_ *value) noexcept {
    if (!name || !value) return uform_status_invalid_argument_k;
    for (std::size_t i = 0; i != count_; ++i)
        if (std::strcmp(names[i], name) == 0) {
            *value = static_cast<enum_type_>(i);
            return uform_status_ok_k;
        }
    return uform_status_invalid_argument_k;
}

char const *const status_names[] = {
    "ok",          "deferred",       "contended",        "cancelled",     "device",
    "unsupported", "shape-mismatch", "invalid-argument", "out-of-memory", "io",
    "corrupt",     "not-found",      "limit-exceeded",   "timeout",       "internal",
};
char const *const scalar_names[] = {"auto", "f32", "f16", "bf16", "e4m3", "e5m2", "i8", "b1"};
char const *const mood_names[] = {"spinning", "sleeping"};
char const *const cpu_class_names[] = {
    "auto",      "serial",   "intel-haswell", "intel-skylake", "intel-icelake", "intel-sapphire-rapids", "amd-genoa",
    "amd-turin", "arm-neon", "arm-sve",       "arm-sve2",      "arm-sme",       "wasm-v128-relaxed",     "wasm-simd128",
};
char const *const gpu_class_names[] = {"auto",      "nvidia-ampere", "nvidia-ada", "nvidia-hopper", "nvidia-blackwell",
                                       "amd-cdna3", "amd-cdna2"};
char const *const residency_names[] = {"ram", "vram"};
char const *const modality_names[] = {"text", "image", "video", "audio"};
char const *const objective_names[] = {"joint", "masking", "contrastive", "late-interaction", "choices", "distill"};
char const *const negatives_names[] = {"device", "mesh", "hard", "mesh-and-hard"};
char const *const pair_loss_form_names[] = {"info-nce", "sigmoid"};
char const *const side_names[] = {"none", "query", "document"};
char const *const multimem_tier_names[] = {"none", "nvls", "nvls-tree", "collnet"};

static_assert(std::size(status_names) == uform_status_internal_k + 1);
static_assert(std::size(scalar_names) == uform_scalar_b1_k + 1);
static_assert(std::size(cpu_class_names) == uform_cpu_class_wasm_simd128_k + 1);
static_assert(std::size(gpu_class_names) == uform_gpu_class_amd_cdna2_k + 1);

} // namespace

extern "C" {

char const *uform_status_name(uform_status_t status) { return name_of(status_names, status); }
uform_status_t uform_status_parse(char const *name, uform_status_t *status) {
    return parse_of(status_names, name, status);
}

char const *uform_scalar_name(uform_scalar_t scalar) { return name_of(scalar_names, scalar); }
uform_status_t uform_scalar_parse(char const *name, uform_scalar_t *scalar) {
    return parse_of(scalar_names, name, scalar);
}
size_t uform_scalar_bytes(uform_scalar_t scalar, size_t columns) { return uform::scalar_bytes(scalar, columns); }

char const *uform_mood_name(uform_mood_t mood) { return name_of(mood_names, mood); }
uform_status_t uform_mood_parse(char const *name, uform_mood_t *mood) { return parse_of(mood_names, name, mood); }

char const *uform_cpu_class_name(uform_cpu_class_t cpu_class) { return name_of(cpu_class_names, cpu_class); }
uform_status_t uform_cpu_class_parse(char const *name, uform_cpu_class_t *cpu_class) {
    return parse_of(cpu_class_names, name, cpu_class);
}

char const *uform_gpu_class_name(uform_gpu_class_t gpu_class) { return name_of(gpu_class_names, gpu_class); }
uform_status_t uform_gpu_class_parse(char const *name, uform_gpu_class_t *gpu_class) {
    return parse_of(gpu_class_names, name, gpu_class);
}

char const *uform_residency_name(uform_residency_t residency) { return name_of(residency_names, residency); }
uform_status_t uform_residency_parse(char const *name, uform_residency_t *residency) {
    return parse_of(residency_names, name, residency);
}

char const *uform_modality_name(uform_modality_t modality) { return name_of(modality_names, modality); }
uform_status_t uform_modality_parse(char const *name, uform_modality_t *modality) {
    return parse_of(modality_names, name, modality);
}

char const *uform_objective_name(uform_objective_t objective) { return name_of(objective_names, objective); }
uform_status_t uform_objective_parse(char const *name, uform_objective_t *objective) {
    return parse_of(objective_names, name, objective);
}

char const *uform_negatives_name(uform_negatives_t negatives) { return name_of(negatives_names, negatives); }
uform_status_t uform_negatives_parse(char const *name, uform_negatives_t *negatives) {
    return parse_of(negatives_names, name, negatives);
}

char const *uform_pair_loss_form_name(uform_pair_loss_form_t form) { return name_of(pair_loss_form_names, form); }
uform_status_t uform_pair_loss_form_parse(char const *name, uform_pair_loss_form_t *form) {
    return parse_of(pair_loss_form_names, name, form);
}

char const *uform_late_interaction_side_name(uform_late_interaction_side_t side) { return name_of(side_names, side); }
uform_status_t uform_late_interaction_side_parse(char const *name, uform_late_interaction_side_t *side) {
    return parse_of(side_names, name, side);
}

char const *uform_multimem_tier_name(uform_multimem_tier_t tier) { return name_of(multimem_tier_names, tier); }

char const *uform_version(void) { return UFORM_LIBRARY_VERSION; }

char const *uform_build_flavor(void) { return uform::backend::flavor(); }

} // extern "C"
