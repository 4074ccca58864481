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
#include "cuda/train/parameters.hpp"
#include "cuda/train/trunk.hpp"

namespace uform::cuda::train {

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
    /// Sums the gradients over `mesh` on the device (NCCL) or staged through a pinned host bucket (Gloo), in
    /// cuda/train/gradient_sums.hpp's buckets; `bucket` is unused. A one-rank mesh without NCCL sums nothing.
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
    float *staging_ = nullptr;            // pinned host memory: the staged sums' bucket, made at the first
    std::vector<std::span<float>> group_; // a bucket's device arrays (the NCCL path)
    std::vector<float> scalars_;          // the `trainer.*` gradients, packed (the NCCL path)
};

} // namespace uform::cuda::train
