// The CUDA trainer's trunk: the forward of docs/model.md over a step's packed tokens on the device (the inference
// kernels of cuda/kernels.hpp and cuBLASLt products on the BF16 copies of the masters), keeping what the backward
// reads, and the backward of the whole model into the device gradients (cuda/train/kernels.hpp, the products'
// transposes as cuBLASLt layouts). It follows the CPU trunk (cpp/train/trunk.cpp) step for step: the same roundings to
// BF16 before each product, the same kept activations per block, recomputed from the block's input when they did not
// fit. The heads' unit rows (embeddings, token vectors) and their backward are computed on the host from the device's
// rows, as the loss terms read and write them there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpp/train/parameters.hpp"
#include "cpp/train/trunk.hpp"
#include "cuda/device.hpp"
#include "cuda/train/gradient_sums.hpp"
#include "cuda/train/parameters.hpp"
#include "cuda/train/staging.hpp"

namespace uform::cuda::train {

/// One block's kept activations on the device: the BF16 inputs of its products (n1, the attention output, n2, the
/// SwiGLU product m), q, k and v after RoPE as F32 BF16 values (attention's backward reads them), and the F32 `xm`
/// (x plus attention) the MLP norm's backward reads.
struct device_slot_t {
    std::uint16_t *n1, *ao, *n2, *m;
    float *qkv, *xm;
};

/// The device trunk's buffers, carved from one allocation: the staged inputs first, then activations and scratch.
struct trunk_buffers_t {
    // Inputs.
    std::uint16_t *ids;
    std::uint32_t *positions, *segment_begin, *segment_end, *item_offsets, *logit_rows, *vector_rows, *media_rows[3];
    float *patches[3];
    // Forward.
    float *saved;     // [(depth + 1) x tokens x hidden]: each block's input
    std::byte *slots; // [slots x slot bytes]: `device_slot_t`s
    std::size_t slot_bytes;
    float *gu; // [tokens x 2 ffn]: one block's gate and up, then their gradients
    float *h, *e, *t, *logits;
    std::uint16_t *pooled, *vector_in, *logit_in, *patch_bits[3];
    // Backward.
    float *wide, *dqkv, *dn, *dx, *partial, *statistics, *dhead;
    std::uint16_t *dbits, *d_embeddings, *d_vectors, *d_logits;
};

/// The training forward and backward on one device. Owns its activations in one device buffer grown to a high-water
/// mark, so a steady loop of same-shaped steps allocates nothing on the device after the first (`allocations`).
class device_trunk_t {
  public:
    device_trunk_t() noexcept;
    ~device_trunk_t() noexcept;
    device_trunk_t(device_trunk_t const &) = delete;
    device_trunk_t &operator=(device_trunk_t const &) = delete;

    /// Runs the model over `request` on `device`'s BF16 copies (after its `refresh`), on `stream` (its device current),
    /// and waits: `trunk_t::forward`'s contract, the outputs in host memory this trunk owns.
    uform_status_t forward(stream_t &stream, device_parameters_t const &device,
                           uform::train::parameters_t const &parameters, uform::train::trunk_request_t const &request,
                           uform::train::poll_t poll, uform::train::trunk_outputs_t &out,
                           char const **message) noexcept;

    /// Adds every device gradient but `trainer.*`'s from the last forward (`trunk_t::backward`'s contract), the
    /// output gradients given in host memory, and waits. With `sums` (armed), it tells them each time it has enqueued
    /// the last work on the gradients from some tensor on: after the heads and the final norm, after each block from
    /// the last, after the embeddings (from tensor 0).
    uform_status_t backward(stream_t &stream, device_parameters_t const &device,
                            uform::train::parameters_t const &parameters, float const *d_z,
                            float const *d_token_vectors, float const *d_logits, uform::train::poll_t poll,
                            overlapped_sums_t *sums, char const **message) noexcept;

    /// Frees the device memory (on its device, which the caller makes current); the next forward allocates again.
    void release() noexcept { memory_.release(), buffers_ = {}; }

    /// Device allocations made so far (grown buffers): constant over a steady loop after its first step.
    std::size_t allocations() const noexcept { return allocations_; }

    /// Bounds the bytes of block activations the next forwards keep (zero: half the device memory free at the first
    /// forward); blocks past the bound share one slot and the backward recomputes them from their inputs.
    void bound_kept_bytes(std::size_t bytes) noexcept { kept_bytes_ = bytes; }

  private:
    /// Sizes and carves the device buffer for the staged request (growing it only past its high-water mark), then
    /// uploads the inputs.
    uform_status_t prepare(stream_t &stream, uform::train::parameters_t const &parameters,
                           char const **message) noexcept;
    /// The heads' rows made unit on the host: embeddings (every item) and the flagged items' token vectors.
    void unit_rows() noexcept;

    staged_request_t staged_;
    device_buffer_t memory_;
    trunk_buffers_t buffers_{};
    std::vector<std::size_t> holder_; // per slot: the block it holds (depth: none)
    std::size_t slots_ = 0, gu_holder_ = 0, kept_bytes_ = 0, allocations_ = 0;
    // Host: the heads' rows, their unit rows and lengths, the byte logits; the backward's output gradients as BF16.
    std::vector<float> e_, z_, e_norm_, t_, vectors_, t_norm_, logits_, scratch_;
    std::vector<std::uint16_t> d_bits_;
};

} // namespace uform::cuda::train
