// One GPU's step kernels: each call on the GPU's own stream, the GPU current on the calling thread meanwhile.
#include "cuda/train/step_kernels.hpp"

#include "common/fail.hpp"

namespace uform::cuda::train {

cuda_kernels_t::~cuda_kernels_t() noexcept {
    if (stream_.stream == nullptr) return;
    device_guard_t const guard{stream_.device};
    trunk_.release(), device_.release();
    stream_.close();
}

uform_status_t cuda_kernels_t::open(std::size_t ordinal, uform::train::parameters_t const &parameters,
                                    char const **message) noexcept {
    if (uform_status_t status = stream_.open(ordinal, 0, 0, message)) return status;
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return device_.open(stream_, parameters, message);
}

uform_status_t cuda_kernels_t::forward(uform::train::parameters_t const &parameters,
                                       uform::train::trunk_request_t const &request, ram::parallel_t const &,
                                       uform::train::poll_t poll, uform::train::trunk_outputs_t &out,
                                       char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return trunk_.forward(stream_, device_, parameters, request, poll, out, message);
}

uform_status_t cuda_kernels_t::zero_gradients(uform::train::parameters_t &parameters, char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return device_.zero_gradients(parameters, message);
}

uform_status_t cuda_kernels_t::backward(uform::train::parameters_t &parameters, float const *d_z,
                                        float const *d_token_vectors, float const *d_logits, ram::parallel_t const &,
                                        uform::train::poll_t poll, char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return trunk_.backward(stream_, device_, parameters, d_z, d_token_vectors, d_logits, poll, message);
}

uform_status_t cuda_kernels_t::gradient_norm(uform::train::parameters_t &parameters, double &norm,
                                             char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return device_.gradient_norm(parameters, norm, message);
}

uform_status_t cuda_kernels_t::scale_gradients(uform::train::parameters_t &, double factor, ram::parallel_t const &,
                                               char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return device_.scale(factor, message);
}

uform_status_t cuda_kernels_t::update_stays_finite(uform::train::parameters_t &, std::size_t k, double lr,
                                                   double weight_decay, ram::parallel_t const &, bool &finite,
                                                   char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return device_.stays_finite(k, lr, weight_decay, finite, message);
}

uform_status_t cuda_kernels_t::update(uform::train::parameters_t &, std::size_t k, double lr, double weight_decay,
                                      ram::parallel_t const &, char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return device_.update(k, lr, weight_decay, message);
}

uform_status_t cuda_kernels_t::refresh(uform::train::parameters_t &parameters, ram::parallel_t const &,
                                       char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return device_.refresh(parameters, message);
}

uform_status_t cuda_kernels_t::to_host(uform::train::parameters_t &parameters, char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return device_.to_host(parameters, message);
}

} // namespace uform::cuda::train
