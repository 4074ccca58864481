// The CUDA residency's step kernels (cpp/train/kernels.hpp's interface): the device trunk (cuda/train/trunk.hpp) and
// the device parameters' update (cuda/train/parameters.hpp) on one GPU's own stream. `trainer_core_t` runs the step's
// phases over them as over the RAM ones; its host-side work (relations, the loss terms, checks, stats, save,
// calibration) is unchanged.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "cpp/train/kernels.hpp"
#include "cuda/device.hpp"
#include "cuda/train/gradient_sums.hpp"
#include "cuda/train/parameters.hpp"
#include "cuda/train/trunk.hpp"

namespace uform::cuda::train {

/// A GPU's compute stream (the trainer's) and the communication stream its gradients' sums run on, ordered by an event.
class sum_stream_pair_t final : public sum_streams_t {
  public:
    sum_stream_pair_t() noexcept = default;
    ~sum_stream_pair_t() noexcept override { close(); }
    sum_stream_pair_t(sum_stream_pair_t const &) = delete;
    sum_stream_pair_t &operator=(sum_stream_pair_t const &) = delete;

    /// Makes the communication stream and the event once (the device current), following `compute`; `internal` when
    /// the runtime refuses.
    uform_status_t open(cudaStream_t compute, char const **message) noexcept;
    /// Waits for the communication stream and frees it and the event (the device current); safe when never opened.
    void close() noexcept;
    bool follow() noexcept override;
    void *stream() noexcept override { return comm_; }

  private:
    cudaStream_t compute_ = nullptr, comm_ = nullptr;
    cudaEvent_t event_ = nullptr;
};

/// One GPU's step kernels. `open` first; every call makes the GPU current on the calling thread for its duration.
class cuda_kernels_t final : public uform::train::step_kernels_t {
  public:
    cuda_kernels_t() noexcept = default;
    /// Frees the device memory and the stream with the GPU current.
    ~cuda_kernels_t() noexcept override;
    cuda_kernels_t(cuda_kernels_t const &) = delete;
    cuda_kernels_t &operator=(cuda_kernels_t const &) = delete;

    /// Opens a stream on the process's GPU `ordinal` and uploads `parameters`' masters and moments. Answers
    /// `not-found`, `out-of-memory` or `internal` with a message.
    uform_status_t open(std::size_t ordinal, uform::train::parameters_t const &parameters,
                        char const **message) noexcept;

    uform_status_t forward(uform::train::parameters_t const &parameters, uform::train::trunk_request_t const &request,
                           ram::parallel_t const &parallel, uform::train::poll_t poll,
                           uform::train::trunk_outputs_t &out, char const **message) noexcept override;
    uform_status_t zero_gradients(uform::train::parameters_t &parameters, char const **message) noexcept override;
    uform_status_t backward(uform::train::parameters_t &parameters, float const *d_z, float const *d_token_vectors,
                            float const *d_logits, ram::parallel_t const &parallel, uform::train::poll_t poll,
                            char const **message) noexcept override;
    /// Over NCCL, arms the overlapped sums the backward launches bucket by bucket on the communication stream; a
    /// staged mesh sums after the backward (nothing to ready).
    uform_status_t begin_gradient_sums(uform::train::parameters_t &parameters, uform::train::collectives_t &mesh,
                                       char const **message) noexcept override;
    /// Sums the gradients over `mesh` on the device (NCCL: the buckets the backward did not launch, then waiting for
    /// the communication stream) or staged through a pinned host bucket (Gloo), in cuda/train/gradient_sums.hpp's
    /// buckets; `bucket` is unused. A one-rank mesh without NCCL sums nothing.
    uform_status_t sum_gradients(uform::train::parameters_t &parameters, uform::train::collectives_t &mesh,
                                 std::vector<float> &bucket, char const **message) noexcept override;
    uform_status_t gradient_norm(uform::train::parameters_t &parameters, double &norm,
                                 char const **message) noexcept override;
    uform_status_t scale_gradients(uform::train::parameters_t &parameters, double factor,
                                   ram::parallel_t const &parallel, char const **message) noexcept override;
    uform_status_t update_stays_finite(uform::train::parameters_t &parameters, std::size_t k, double lr,
                                       double weight_decay, ram::parallel_t const &parallel, bool &finite,
                                       char const **message) noexcept override;
    uform_status_t update(uform::train::parameters_t &parameters, std::size_t k, double lr, double weight_decay,
                          ram::parallel_t const &parallel, char const **message) noexcept override;
    uform_status_t refresh(uform::train::parameters_t &parameters, ram::parallel_t const &parallel,
                           char const **message) noexcept override;
    uform_status_t to_host(uform::train::parameters_t &parameters, char const **message) noexcept override;

    /// Uploads every master and moment again (after a mesh's broadcast changed the host's), then `refresh`.
    uform_status_t upload(uform::train::parameters_t &parameters, char const **message) noexcept;

    /// Device allocations made so far, the parameters' and the trunk's: constant over a steady loop after its first
    /// step (scripts/gpu-check.sh --train asserts it).
    std::size_t allocations() const noexcept { return device_.allocations() + trunk_.allocations(); }
    /// The trunk, for tests that bound what it keeps.
    device_trunk_t &trunk() noexcept { return trunk_; }

  private:
    stream_t stream_;
    device_parameters_t device_;
    device_trunk_t trunk_;
    float *staging_ = nullptr;             // pinned host memory: the staged sums' bucket, made at the first
    sum_stream_pair_t streams_;            // the NCCL path's communication stream
    overlapped_sums_t overlap_;            // the NCCL path's buckets, launched during the backward
    std::vector<std::span<float>> arrays_; // every tensor's device gradient (empty for the host's scalars)
    std::vector<float> scalars_;           // the `trainer.*` gradients, packed (the NCCL path)
};

} // namespace uform::cuda::train
