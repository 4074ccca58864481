// One GPU's step kernels: each call on the GPU's own stream, the GPU current on the calling thread meanwhile; the
// gradients' sums over a mesh through cuda/train/gradient_sums.hpp.
#include "cuda/train/step_kernels.hpp"

#include "cuda/portable.hpp"

#include "common/fail.hpp"
#include "cuda/train/gradient_sums.hpp"

namespace uform::cuda::train {
namespace {

/// The staged sums' copies on the trainer's stream.
class stream_copies_t final : public gradient_copies_t {
  public:
    explicit stream_copies_t(cudaStream_t stream) noexcept : stream_(stream) {}
    bool down(float const *device, float *host, std::size_t count) noexcept override {
        return cudaMemcpyAsync(host, device, count * sizeof(float), cudaMemcpyDeviceToHost, stream_) == cudaSuccess ||
               ((void)cudaGetLastError(), false);
    }
    bool up(float const *host, float *device, std::size_t count) noexcept override {
        return cudaMemcpyAsync(device, host, count * sizeof(float), cudaMemcpyHostToDevice, stream_) == cudaSuccess ||
               ((void)cudaGetLastError(), false);
    }
    bool wait() noexcept override {
        return cudaStreamSynchronize(stream_) == cudaSuccess || ((void)cudaGetLastError(), false);
    }

  private:
    cudaStream_t stream_;
};

} // namespace

uform_status_t sum_stream_pair_t::open(cudaStream_t compute, char const **message) noexcept {
    compute_ = compute;
    if (comm_ != nullptr) return uform_status_ok_k;
    if (cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&event_, cudaEventDisableTiming) != cudaSuccess) {
        (void)cudaGetLastError();
        close();
        return fail(message, uform_status_internal_k, "the CUDA runtime refused a stream for the gradients' sums");
    }
    return uform_status_ok_k;
}

void sum_stream_pair_t::close() noexcept {
    if (comm_) (void)cudaStreamSynchronize(comm_), (void)cudaStreamDestroy(comm_);
    if (event_) (void)cudaEventDestroy(event_);
    comm_ = nullptr, event_ = nullptr;
}

bool sum_stream_pair_t::follow() noexcept {
    return (cudaEventRecord(event_, compute_) == cudaSuccess && cudaStreamWaitEvent(comm_, event_, 0) == cudaSuccess) ||
           ((void)cudaGetLastError(), false);
}

cuda_kernels_t::~cuda_kernels_t() noexcept {
    if (staging_) (void)cudaFreeHost(staging_);
    if (stream_.stream == nullptr) return;
    device_guard_t const guard{stream_.device};
    streams_.close();
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
    uform_status_t const status = trunk_.backward(stream_, device_, parameters, d_z, d_token_vectors, d_logits, poll,
                                                  overlap_.armed() ? &overlap_ : nullptr, message);
    // A backward that failed or was cancelled still completes the buckets it began, so that no sum in flight meets
    // the next step's gradients (and the ranks enqueue the same groups).
    if (status != uform_status_ok_k && overlap_.armed()) (void)overlap_.finish(nullptr);
    return status;
}

uform_status_t cuda_kernels_t::begin_gradient_sums(uform::train::parameters_t &parameters,
                                                   uform::train::collectives_t &mesh, char const **message) noexcept {
    if (!mesh.sums_device_memory()) return uform_status_ok_k;
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    if (uform_status_t status = streams_.open(stream_.stream, message)) return status;
    try {
        arrays_.resize(parameters.tensors.size());
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory summing the gradients");
    }
    for (std::size_t t = 0; t != arrays_.size(); ++t) {
        device_tensor_t const &d = device_.tensor(t);
        arrays_[t] = d.scalar ? std::span<float>() : std::span<float>(d.grad, d.count);
    }
    return overlap_.arm(mesh, streams_, arrays_, uform::train::gradient_bucket_floats_k, message);
}

uform_status_t cuda_kernels_t::sum_gradients(uform::train::parameters_t &parameters, uform::train::collectives_t &mesh,
                                             std::vector<float> &, char const **message) noexcept {
    bool const on_device = mesh.sums_device_memory();
    if (!on_device && mesh.ranks() == 1) return uform_status_ok_k;
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    auto device = [&](std::size_t t) noexcept {
        device_tensor_t const &d = device_.tensor(t);
        return d.scalar ? std::span<float>() : std::span<float>(d.grad, d.count);
    };
    auto host = [&](std::size_t t) noexcept { return std::span<float>(parameters.tensors[t].grad); };
    std::size_t const count = parameters.tensors.size();
    if (on_device) {
        if (!overlap_.armed())
            if (uform_status_t status = begin_gradient_sums(parameters, mesh, message)) return status;
        if (uform_status_t status = overlap_.finish(message)) return status;
        return host_gradient_sums(mesh, count, device, host, scalars_, message);
    }
    if (!staging_ && cudaMallocHost(reinterpret_cast<void **>(&staging_),
                                    uform::train::gradient_bucket_floats_k * sizeof(float)) != cudaSuccess) {
        (void)cudaGetLastError();
        staging_ = nullptr;
        return fail(message, uform_status_out_of_memory_k, "out of pinned host memory to stage the gradients");
    }
    stream_copies_t copies{stream_.stream};
    return staged_gradient_sums(mesh, count, device, host, copies,
                                std::span<float>(staging_, uform::train::gradient_bucket_floats_k), message);
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

uform_status_t cuda_kernels_t::upload(uform::train::parameters_t &parameters, char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    if (uform_status_t status = device_.upload(parameters, message)) return status;
    return device_.refresh(parameters, message);
}

uform_status_t cuda_kernels_t::to_host(uform::train::parameters_t &parameters, char const **message) noexcept {
    device_guard_t const guard{stream_.device};
    if (!guard.ok()) return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return device_.to_host(parameters, message);
}

} // namespace uform::cuda::train
