// The RAM residency's step kernels: the CPU trunk and optimiser over the host arrays.
#include "cpp/train/kernels.hpp"

#include <algorithm>
#include <new>

#include "common/fail.hpp"

namespace uform::train {

uform_status_t ram_kernels_t::forward(parameters_t const &parameters, trunk_request_t const &request,
                                      ram::parallel_t const &parallel, poll_t poll, trunk_outputs_t &out,
                                      char const **message) noexcept {
    return trunk_.forward(parameters, request, parallel, poll, out, message);
}

uform_status_t ram_kernels_t::zero_gradients(parameters_t &parameters, char const **) noexcept {
    for (tensor_t &t : parameters.tensors) std::fill(t.grad.begin(), t.grad.end(), 0.0f);
    return uform_status_ok_k;
}

uform_status_t ram_kernels_t::backward(parameters_t &parameters, float const *d_z, float const *d_token_vectors,
                                       float const *d_logits, ram::parallel_t const &parallel, poll_t poll,
                                       char const **message) noexcept {
    return trunk_.backward(parameters, d_z, d_token_vectors, d_logits, parallel, poll, message);
}

uform_status_t ram_kernels_t::views(parameters_t &parameters, char const **message) noexcept {
    try {
        views_.clear();
        for (tensor_t &t : parameters.tensors)
            views_.push_back({t.master.data(), t.grad.data(), t.moment1.data(), t.moment2.data(), t.count(), t.decays});
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the optimiser");
    }
    return uform_status_ok_k;
}

uform_status_t ram_kernels_t::gradient_norm(parameters_t &parameters, double &norm, char const **message) noexcept {
    if (uform_status_t status = views(parameters, message)) return status;
    norm = train::gradient_norm(views_);
    return uform_status_ok_k;
}

uform_status_t ram_kernels_t::scale_gradients(parameters_t &, double factor, ram::parallel_t const &parallel,
                                              char const **) noexcept {
    train::scale_gradients(views_, factor, parallel);
    return uform_status_ok_k;
}

uform_status_t ram_kernels_t::update_stays_finite(parameters_t &, std::size_t k, double lr, double weight_decay,
                                                  ram::parallel_t const &parallel, bool &finite,
                                                  char const **) noexcept {
    finite = adamw_stays_finite(views_, k, lr, weight_decay, adamw_t{}, parallel);
    return uform_status_ok_k;
}

uform_status_t ram_kernels_t::update(parameters_t &, std::size_t k, double lr, double weight_decay,
                                     ram::parallel_t const &parallel, char const **) noexcept {
    adamw_step(views_, k, lr, weight_decay, adamw_t{}, parallel);
    return uform_status_ok_k;
}

uform_status_t ram_kernels_t::refresh(parameters_t &parameters, ram::parallel_t const &parallel,
                                      char const **message) noexcept {
    return parameters_refresh(parameters, parallel, message);
}

} // namespace uform::train
