// The GPU half of common/backend.hpp and of gpu.hpp in a build without a GPU residency: no devices, and refusals that
// `c/` never reaches, since it asks `gpu_count` first. A CUDA build compiles cuda/ instead of this file.
#include "cpp/backend/gpu.hpp"
#include "cpp/backend/ram.hpp"

namespace uform::backend {

char const *flavor() noexcept { return "ram"; }

std::size_t gpu_count() noexcept { return 0; }

void gpu_describe(std::size_t, uform_gpu_device_t &device) noexcept { device = uform_gpu_device_t{}; }

bool gpu_class_available(uform_gpu_class_t, std::span<std::size_t const>) noexcept { return false; }

uform_status_t vram_open(std::span<std::size_t const>, std::span<std::size_t const>, std::size_t, void *&state,
                         char const **message) noexcept {
    state = nullptr;
    return fail(message, uform_status_unsupported_k, "this build drives no GPUs");
}

void vram_close(void *) noexcept {}

void *vram_allocate(std::size_t, std::size_t) noexcept { return nullptr; }

void vram_free(std::size_t, void *, std::size_t) noexcept {}

} // namespace uform::backend

namespace uform::gpu {

struct model_t {};

uform_status_t model_load(backend::model_load_t const &, checkpoint_t const &, std::span<std::byte const>,
                          ram::mapped_file_t const *, call_t &, model_t *&model, std::size_t &weight_bytes,
                          char const **message) noexcept {
    model = nullptr;
    weight_bytes = 0;
    return fail(message, uform_status_unsupported_k, "this build drives no GPUs");
}

void model_free(model_t *) noexcept {}

uform_status_t encode_tokens(model_t const &, call_t &, ram::encode_job_t const &, backend::encode_request_t,
                             uform_encoded_t &, char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "this build drives no GPUs");
}

uform_status_t forward_choose_logits(model_t const &, call_t &, ram::token_batch_t const &, float *,
                                     char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "this build drives no GPUs");
}

uform_status_t copy_to_arena(call_t &, void *, void const *, std::size_t, char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "this build drives no GPUs");
}

} // namespace uform::gpu
