// The device parameters: one allocation carved into per-tensor arrays, the copies in and out on the trainer's stream,
// and the update through cuda/train/kernels.cu.
#include "cuda/train/parameters.hpp"

#include <cmath>
#include <cstring>
#include <new>
#include <string_view>

#include "common/fail.hpp"
#include "cpp/train/optimizer.hpp"
#include "cuda/train/kernels.hpp"

namespace uform::cuda::train {
namespace {

/// Device arrays start 256 bytes apart, as cuBLASLt prefers its operands.
constexpr std::size_t alignment_k = 256;

std::size_t aligned(std::size_t bytes) noexcept { return (bytes + alignment_k - 1) / alignment_k * alignment_k; }

/// Bytes of one tensor's arrays: four F32 arrays and the BF16 copy, each aligned, and the F32 copy of a tensor that is
/// not a product's weight.
std::size_t tensor_bytes(uform::train::tensor_t const &t) noexcept {
    std::size_t const floats = aligned(t.count() * sizeof(float));
    return (t.panelled ? 4 : 5) * floats + aligned(t.count() * sizeof(std::uint16_t));
}

bool is_scalar(std::string_view name) noexcept { return name.starts_with("trainer."); }

/// Copies `bytes` between host and device on `stream`; false when the runtime refused.
bool copy(void *target, void const *source, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) noexcept {
    if (bytes == 0) return true;
    if (cudaMemcpyAsync(target, source, bytes, kind, stream) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
}

} // namespace

uform_status_t device_parameters_t::finish(char const *what, char const **message) noexcept {
    if (cudaStreamSynchronize(stream_->stream) == cudaSuccess) return uform_status_ok_k;
    (void)cudaGetLastError();
    return fail(message, uform_status_internal_k, what);
}

uform_status_t device_parameters_t::open(stream_t &stream, uform::train::parameters_t const &parameters,
                                         char const **message) noexcept {
    stream_ = &stream;
    std::size_t const count = parameters.tensors.size();
    try {
        tensors_.assign(count, {});
        sums_.assign(count, 0.0);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the trainer's tensors");
    }
    std::size_t bytes = aligned(count * sizeof(double)) + aligned(sizeof(unsigned));
    for (uform::train::tensor_t const &t : parameters.tensors) bytes += tensor_bytes(t);
    if (!memory_.reserve(bytes))
        return fail(message, uform_status_out_of_memory_k, "out of device memory for the trainer's tensors");
    ++allocations_;
    auto *at = static_cast<unsigned char *>(memory_.data);
    device_sums_ = reinterpret_cast<double *>(at);
    at += aligned(count * sizeof(double));
    device_flag_ = reinterpret_cast<unsigned *>(at);
    at += aligned(sizeof(unsigned));
    for (std::size_t i = 0; i != count; ++i) {
        uform::train::tensor_t const &t = parameters.tensors[i];
        device_tensor_t &d = tensors_[i];
        std::size_t const floats = aligned(t.count() * sizeof(float));
        d.count = t.count(), d.decays = t.decays, d.scalar = is_scalar(t.name);
        d.master = reinterpret_cast<float *>(at), d.grad = reinterpret_cast<float *>(at + floats);
        d.moment1 = reinterpret_cast<float *>(at + 2 * floats), d.moment2 = reinterpret_cast<float *>(at + 3 * floats);
        d.bits = reinterpret_cast<std::uint16_t *>(at + 4 * floats);
        if (!t.panelled)
            d.copy = reinterpret_cast<float *>(at + 4 * floats + aligned(t.count() * sizeof(std::uint16_t)));
        at += tensor_bytes(t);
    }
    return upload(parameters, message);
}

uform_status_t device_parameters_t::upload(uform::train::parameters_t const &parameters,
                                           char const **message) noexcept {
    cudaStream_t const stream = stream_->stream;
    for (std::size_t i = 0; i != tensors_.size(); ++i) {
        uform::train::tensor_t const &t = parameters.tensors[i];
        device_tensor_t const &d = tensors_[i];
        std::size_t const bytes = d.count * sizeof(float);
        if (!copy(d.master, t.master.data(), bytes, cudaMemcpyHostToDevice, stream) ||
            !copy(d.moment1, t.moment1.data(), bytes, cudaMemcpyHostToDevice, stream) ||
            !copy(d.moment2, t.moment2.data(), bytes, cudaMemcpyHostToDevice, stream))
            return fail(message, uform_status_internal_k, "the device refused the trainer's tensors");
    }
    return finish("the device failed copying the trainer's tensors", message);
}

uform_status_t device_parameters_t::refresh(uform::train::parameters_t &parameters, char const **message) noexcept {
    cudaStream_t const stream = stream_->stream;
    for (std::size_t i = 0; i != tensors_.size(); ++i) {
        device_tensor_t const &d = tensors_[i];
        if (!to_bf16(d.master, d.count, d.bits, stream) || (d.copy && !round_f32(d.master, d.count, d.copy, stream)))
            return fail(message, uform_status_internal_k, "the device refused the BF16 copies");
        if (d.scalar && !copy(parameters.tensors[i].master.data(), d.master, d.count * sizeof(float),
                              cudaMemcpyDeviceToHost, stream))
            return fail(message, uform_status_internal_k, "the device refused the trainer's scalars");
    }
    return finish("the device failed making the BF16 copies", message);
}

uform_status_t device_parameters_t::zero_gradients(uform::train::parameters_t &parameters,
                                                   char const **message) noexcept {
    for (uform::train::tensor_t &t : parameters.tensors)
        if (is_scalar(t.name)) std::memset(t.grad.data(), 0, t.grad.size() * sizeof(float));
    for (device_tensor_t const &d : tensors_)
        if (cudaMemsetAsync(d.grad, 0, d.count * sizeof(float), stream_->stream) != cudaSuccess) {
            (void)cudaGetLastError();
            return fail(message, uform_status_internal_k, "the device refused to zero the gradients");
        }
    return uform_status_ok_k;
}

uform_status_t device_parameters_t::gradient_norm(uform::train::parameters_t const &parameters, double &norm,
                                                  char const **message) noexcept {
    cudaStream_t const stream = stream_->stream;
    if (cudaMemsetAsync(device_sums_, 0, tensors_.size() * sizeof(double), stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return fail(message, uform_status_internal_k, "the device refused the gradient norm");
    }
    for (std::size_t i = 0; i != tensors_.size(); ++i) {
        device_tensor_t const &d = tensors_[i];
        if ((d.scalar && !copy(d.grad, parameters.tensors[i].grad.data(), d.count * sizeof(float),
                               cudaMemcpyHostToDevice, stream)) ||
            !squared_sum(d.grad, d.count, device_sums_ + i, stream))
            return fail(message, uform_status_internal_k, "the device refused the gradient norm");
    }
    if (!copy(sums_.data(), device_sums_, sums_.size() * sizeof(double), cudaMemcpyDeviceToHost, stream))
        return fail(message, uform_status_internal_k, "the device refused the gradient norm");
    if (uform_status_t status = finish("the device failed computing the gradient norm", message)) return status;
    double total = 0;
    for (double sum : sums_) total += sum;
    norm = std::sqrt(total);
    return uform_status_ok_k;
}

uform_status_t device_parameters_t::scale(double factor, char const **message) noexcept {
    if (factor == 1.0) return uform_status_ok_k;
    for (device_tensor_t const &d : tensors_)
        if (!train::scale(d.grad, d.count, static_cast<float>(factor), stream_->stream))
            return fail(message, uform_status_internal_k, "the device refused the clip");
    return uform_status_ok_k;
}

uform_status_t device_parameters_t::stays_finite(std::size_t k, double lr, double weight_decay, bool &finite,
                                                 char const **message) noexcept {
    uform::train::adamw_t const c{};
    maths::adamw_scalars_t const scalars = maths::adamw_scalars(k, lr, weight_decay, c.beta1, c.beta2, c.eps);
    cudaStream_t const stream = stream_->stream;
    unsigned bad = 0;
    if (cudaMemsetAsync(device_flag_, 0, sizeof(unsigned), stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return fail(message, uform_status_internal_k, "the device refused the update's check");
    }
    for (device_tensor_t const &d : tensors_)
        if (!adamw_non_finite(d.master, d.grad, d.moment1, d.moment2, d.count, d.decays, scalars, device_flag_, stream))
            return fail(message, uform_status_internal_k, "the device refused the update's check");
    if (!copy(&bad, device_flag_, sizeof(bad), cudaMemcpyDeviceToHost, stream))
        return fail(message, uform_status_internal_k, "the device refused the update's check");
    if (uform_status_t status = finish("the device failed checking the update", message)) return status;
    finite = bad == 0;
    return uform_status_ok_k;
}

uform_status_t device_parameters_t::update(std::size_t k, double lr, double weight_decay,
                                           char const **message) noexcept {
    uform::train::adamw_t const c{};
    maths::adamw_scalars_t const scalars = maths::adamw_scalars(k, lr, weight_decay, c.beta1, c.beta2, c.eps);
    for (device_tensor_t const &d : tensors_)
        if (!adamw(d.master, d.grad, d.moment1, d.moment2, d.count, d.decays, scalars, stream_->stream))
            return fail(message, uform_status_internal_k, "the device refused the update");
    return uform_status_ok_k;
}

uform_status_t device_parameters_t::to_host(uform::train::parameters_t &parameters, char const **message) noexcept {
    cudaStream_t const stream = stream_->stream;
    for (std::size_t i = 0; i != tensors_.size(); ++i) {
        uform::train::tensor_t &t = parameters.tensors[i];
        device_tensor_t const &d = tensors_[i];
        std::size_t const bytes = d.count * sizeof(float);
        if (!copy(t.master.data(), d.master, bytes, cudaMemcpyDeviceToHost, stream) ||
            !copy(t.moment1.data(), d.moment1, bytes, cudaMemcpyDeviceToHost, stream) ||
            !copy(t.moment2.data(), d.moment2, bytes, cudaMemcpyDeviceToHost, stream) ||
            (!d.scalar && !copy(t.grad.data(), d.grad, bytes, cudaMemcpyDeviceToHost, stream)))
            return fail(message, uform_status_internal_k, "the device refused to copy the trainer's tensors back");
    }
    return finish("the device failed copying the trainer's tensors back", message);
}

} // namespace uform::cuda::train
