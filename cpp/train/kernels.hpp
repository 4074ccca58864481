// The dense work of a training step as a residency supplies it (docs/decisions.md, "One plan, two residencies"): the
// trunk's forward and backward (embeddings and front-ends, norms, RoPE, attention, SiLU-gate, pooling and heads, every
// product forward and backward), and the update (zeroed gradients, the global norm, the clip, AdamW, the BF16 copies).
// `trainer_core_t` runs a step's phases once over this interface; what is not a kernel (relations, candidates, the
// loss terms, checks, stats, save and calibration) runs on the host for every residency. The RAM set (`ram_kernels_t`)
// runs on the host threads; cuda/train/ supplies the CUDA set.
//
// Memory: the forward's outputs and the backward's output gradients are host memory (the loss terms read and write
// them there). Trained tensors' masters, moments and gradients live where the residency keeps them; the gradients of
// the `trainer.*` scalars, which the loss terms compute on the host, are always the host's `tensor_t::grad`, and
// `to_host` brings everything else back (for `save` and for checks).
#pragma once

#include <cstddef>
#include <vector>

#include <uform/types.h>

#include "cpp/parallel.hpp"
#include "cpp/train/collectives.hpp"
#include "cpp/train/optimizer.hpp"
#include "cpp/train/parameters.hpp"
#include "cpp/train/trunk.hpp"

namespace uform::train {

/// The kernels a trainer's step calls, in the order `trainer_core_t::step` calls them: `forward`, `zero_gradients`
/// (then the host's loss terms), `begin_gradient_sums` (in a mesh), `backward`, `sum_gradients` (in a mesh),
/// `gradient_norm`, `scale_gradients`, `update_stays_finite`, `update`, `refresh`.
class step_kernels_t {
  public:
    virtual ~step_kernels_t() = default;

    /// The trunk over `request` on the BF16 copies (`trunk_t::forward`'s contract); `out` points at host memory.
    virtual uform_status_t forward(parameters_t const &parameters, trunk_request_t const &request,
                                   ram::parallel_t const &parallel, poll_t poll, trunk_outputs_t &out,
                                   char const **message) noexcept = 0;

    /// Zeroes every trained tensor's gradient, the host's `trainer.*` scalars' included.
    virtual uform_status_t zero_gradients(parameters_t &parameters, char const **message) noexcept = 0;

    /// Adds the gradient of every tensor but `trainer.*` from the last forward (`trunk_t::backward`'s contract), given
    /// host arrays of dL/dz, dL/d token vectors and dL/d logits (each null for zero).
    virtual uform_status_t backward(parameters_t &parameters, float const *d_z, float const *d_token_vectors,
                                    float const *d_logits, ram::parallel_t const &parallel, poll_t poll,
                                    char const **message) noexcept = 0;

    /// Readies the sums of the next `backward`'s gradients over `mesh`, for a residency that starts them while the
    /// backward runs (in `for_each_bucket`'s buckets still); `sum_gradients` completes them. This default does nothing.
    virtual uform_status_t begin_gradient_sums(parameters_t &parameters, collectives_t &mesh,
                                               char const **message) noexcept {
        (void)parameters, (void)mesh, (void)message;
        return uform_status_ok_k;
    }

    /// Sums every trained tensor's gradient over `mesh` in place, in `for_each_bucket`'s buckets of
    /// `gradient_bucket_floats_k` floats in tensor order. This default sums the host's arrays through `bucket` (grown
    /// to the bucket's size once); a residency that keeps its gradients elsewhere overrides it.
    virtual uform_status_t sum_gradients(parameters_t &parameters, collectives_t &mesh, std::vector<float> &bucket,
                                         char const **message) noexcept;

    /// The L2 norm of every gradient (each tensor's squares summed in double, tensor by tensor in order).
    virtual uform_status_t gradient_norm(parameters_t &parameters, double &norm, char const **message) noexcept = 0;

    /// Multiplies every gradient by the F32 of `factor`.
    virtual uform_status_t scale_gradients(parameters_t &parameters, double factor, ram::parallel_t const &parallel,
                                           char const **message) noexcept = 0;

    /// Sets `finite` to whether AdamW at step `k`, rate `lr`, would leave every value finite (`adamw_stays_finite`),
    /// writing nothing; a status other than ok when the check itself could not run.
    virtual uform_status_t update_stays_finite(parameters_t &parameters, std::size_t k, double lr, double weight_decay,
                                               ram::parallel_t const &parallel, bool &finite,
                                               char const **message) noexcept = 0;

    /// One AdamW step (`adamw_step`) on every trained tensor.
    virtual uform_status_t update(parameters_t &parameters, std::size_t k, double lr, double weight_decay,
                                  ram::parallel_t const &parallel, char const **message) noexcept = 0;

    /// The BF16 copies (and whatever the products read) from the masters (`parameters_refresh`).
    virtual uform_status_t refresh(parameters_t &parameters, ram::parallel_t const &parallel,
                                   char const **message) noexcept = 0;

    /// Copies the masters, moments and gradients the residency keeps elsewhere into `parameters`' host arrays.
    virtual uform_status_t to_host(parameters_t &parameters, char const **message) noexcept = 0;
};

/// The RAM residency's kernels: the CPU trunk (cpp/train/trunk.cpp) and optimiser (cpp/train/optimizer.cpp), on the
/// host arrays of `parameters_t`.
class ram_kernels_t final : public step_kernels_t {
  public:
    uform_status_t forward(parameters_t const &parameters, trunk_request_t const &request,
                           ram::parallel_t const &parallel, poll_t poll, trunk_outputs_t &out,
                           char const **message) noexcept override;
    uform_status_t zero_gradients(parameters_t &parameters, char const **message) noexcept override;
    uform_status_t backward(parameters_t &parameters, float const *d_z, float const *d_token_vectors,
                            float const *d_logits, ram::parallel_t const &parallel, poll_t poll,
                            char const **message) noexcept override;
    uform_status_t gradient_norm(parameters_t &parameters, double &norm, char const **message) noexcept override;
    uform_status_t scale_gradients(parameters_t &parameters, double factor, ram::parallel_t const &parallel,
                                   char const **message) noexcept override;
    uform_status_t update_stays_finite(parameters_t &parameters, std::size_t k, double lr, double weight_decay,
                                       ram::parallel_t const &parallel, bool &finite,
                                       char const **message) noexcept override;
    uform_status_t update(parameters_t &parameters, std::size_t k, double lr, double weight_decay,
                          ram::parallel_t const &parallel, char const **message) noexcept override;
    uform_status_t refresh(parameters_t &parameters, ram::parallel_t const &parallel,
                           char const **message) noexcept override;
    uform_status_t to_host(parameters_t &, char const **) noexcept override { return uform_status_ok_k; }

    /// The CPU trunk, for tests that bound what it keeps.
    trunk_t &trunk() noexcept { return trunk_; }

  private:
    /// The optimiser's views of every tensor, rebuilt in place (allocating only the first time).
    uform_status_t views(parameters_t &parameters, char const **message) noexcept;

    trunk_t trunk_;
    std::vector<adamw_view_t> views_;
};

} // namespace uform::train
