// Every public header included as C++, each alone and twice, then the umbrella; a few symbols used.
#include <uform/types.h>
#include <uform/types.h>
#include <uform/model.h>
#include <uform/model.h>
#include <uform/encode.h>
#include <uform/encode.h>
#include <uform/train.h>
#include <uform/train.h>
#include <uform/uform.h>
#include <uform/uform.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_standard_layout_v<uform_rows_t> && std::is_trivially_copyable_v<uform_rows_t>);
static_assert(std::is_standard_layout_v<uform_encoded_t>);
static_assert(std::is_standard_layout_v<uform_trainer_step_args_t>);
static_assert(std::is_standard_layout_v<uform_model_description_t>);
static_assert(uform_status_ok_k == 0 && uform_status_internal_k == 14);
static_assert(uform_outputs_embeddings_k == 1 && uform_outputs_states_k == 2 && uform_outputs_token_vectors_k == 4);
static_assert(UFORM_VERSION_MAJOR == 0);

/* The function types C++ sees are the C ABI's own. */
static_assert(std::is_same_v<decltype(&uform_status_name), char const *(*)(uform_status_t)>);
static_assert(std::is_same_v<uform_progress_t, bool (*)(void *, std::size_t, std::size_t)>);

namespace {

int passed = 0, failed = 0;

void check(bool ok, char const *what) {
    if (ok) ++passed;
    else ++failed, std::fprintf(stderr, "FAILED: %s\n", what);
}

bool never_stop(void *, std::size_t, std::size_t) noexcept { return false; }

} // namespace

int main() {
    check(uform_version() != nullptr, "uform_version");
    check(uform_build_flavor() != nullptr, "uform_build_flavor");
    check(std::strcmp(uform_status_name(uform_status_shape_mismatch_k), "shape-mismatch") == 0, "status name");

    uform_scalar_t scalar = uform_scalar_auto_k;
    check(uform_scalar_parse("bf16", &scalar) == uform_status_ok_k && scalar == uform_scalar_bf16_k, "scalar parse");
    check(uform_scalar_bytes(uform_scalar_b1_k, 64) == 8, "scalar bytes");

    // Argument structs are aggregates whose value-initialization is the documented default.
    uform_text_encode_args_t text_args{};
    text_args.progress = never_stop;
    check(text_args.scalar == uform_scalar_auto_k && text_args.stats == nullptr, "zero text args");
    uform_trainer_init_vram_args_t trainer_args{};
    check(trainer_args.objective == uform_objective_joint_k && trainer_args.mesh == nullptr, "zero trainer args");
    uform_mesh_options_t mesh_options{};
    check(mesh_options.host_domain_count == 0, "zero mesh options");

    // Flags combine through their integer values.
    auto outputs = static_cast<uform_outputs_t>(uform_outputs_embeddings_k | uform_outputs_states_k);
    check(outputs == 3, "outputs flags");

    // Handles are plain pointers; freeing null does nothing.
    uform_executor_t executor = nullptr;
    if (uform_executor_init_local(&executor, nullptr) == uform_status_ok_k) {
        uform_residency_t residency = uform_residency_vram_k;
        check(uform_executor_residency(executor, &residency, nullptr) == uform_status_ok_k &&
                  residency == uform_residency_ram_k,
              "local executor residency");
        uform_executor_free(executor);
    } else {
        check(false, "local executor");
    }
    uform_model_free(nullptr);
    uform_arena_free(nullptr);
    uform_executor_free(nullptr);
    uform_outcome_release(nullptr);
    uform_trainer_free(nullptr);
    uform_mesh_free(nullptr);

    std::printf("headers: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
