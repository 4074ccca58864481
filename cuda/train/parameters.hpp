// A CUDA trainer's parameters on its device: every trained tensor's F32 master, gradient and AdamW moments, and the
// BF16 copy the products read (an F32 copy of BF16 values for the other tensors), in one device allocation made once (a
// steady loop allocates nothing); and the update of the step's plan on them (cpp/train/kernels.hpp: zeroed gradients,
// the global norm, the clip, AdamW's check and step, the BF16 copies), with the CPU trainer's per-element maths
// (cpp/train/maths.hpp). The host's `parameters_t` stays the record of names, shapes and decay, and of the `trainer.*`
// scalars the host's loss terms read and whose gradients they write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpp/train/parameters.hpp"
#include "cuda/device.hpp"

namespace uform::cuda::train {

/// One tensor's arrays in device memory.
struct device_tensor_t {
    float *master = nullptr, *grad = nullptr, *moment1 = nullptr, *moment2 = nullptr;
    std::uint16_t *bits = nullptr; // bf16(master), as the products read it
    float *copy = nullptr; // bf16(master) as F32 (norms, biases, the byte embedding); null for a product's weight
    std::size_t count = 0;
    bool decays = false, scalar = false; // `scalar`: a `trainer.*` tensor, whose gradient the host computes
};

/// Every trained tensor of a trainer on `stream`'s device.
class device_parameters_t {
  public:
    /// Sizes the device arrays for `parameters`' tensors (one allocation) and uploads masters and moments. Answers
    /// `out-of-memory` or `internal` with a message.
    uform_status_t open(stream_t &stream, uform::train::parameters_t const &parameters, char const **message) noexcept;

    /// Uploads every master and moment (after the host's changed: a load, a mesh's broadcast).
    uform_status_t upload(uform::train::parameters_t const &parameters, char const **message) noexcept;
    /// The BF16 copies from the masters, and the `trainer.*` masters back to the host for the loss terms.
    uform_status_t refresh(uform::train::parameters_t &parameters, char const **message) noexcept;
    /// Zeroes every gradient, the host's `trainer.*` ones included.
    uform_status_t zero_gradients(uform::train::parameters_t &parameters, char const **message) noexcept;
    /// Uploads the `trainer.*` gradients the loss terms wrote, then the global norm: each tensor's squares summed in
    /// double, the tensors' sums added in order on the host.
    uform_status_t gradient_norm(uform::train::parameters_t const &parameters, double &norm,
                                 char const **message) noexcept;
    /// Multiplies every gradient by the F32 of `factor` (nothing when it is 1).
    uform_status_t scale(double factor, char const **message) noexcept;
    /// Whether AdamW at step `k` would leave every value finite; `finite` answers it.
    uform_status_t stays_finite(std::size_t k, double lr, double weight_decay, bool &finite,
                                char const **message) noexcept;
    /// One AdamW step of every tensor.
    uform_status_t update(std::size_t k, double lr, double weight_decay, char const **message) noexcept;
    /// Copies masters, moments and gradients to the host's tensors (for `save`, and for checks).
    uform_status_t to_host(uform::train::parameters_t &parameters, char const **message) noexcept;

    /// Frees the device memory (on its device, which the caller makes current).
    void release() noexcept { memory_.release(), tensors_.clear(); }

    /// Tensor `index`'s device arrays (the host's order).
    device_tensor_t const &tensor(std::size_t index) const noexcept { return tensors_[index]; }
    /// Device allocations made so far (the steady-loop check: it stays at one after `open`).
    std::size_t allocations() const noexcept { return allocations_; }

  private:
    /// Waits for the stream; `internal` with `what` when the device reported an error.
    uform_status_t finish(char const *what, char const **message) noexcept;

    stream_t *stream_ = nullptr;
    device_buffer_t memory_;
    std::vector<device_tensor_t> tensors_;
    std::vector<double> sums_; // per tensor, downloaded
    double *device_sums_ = nullptr;
    unsigned *device_flag_ = nullptr;
    std::size_t allocations_ = 0;
};

} // namespace uform::cuda::train
