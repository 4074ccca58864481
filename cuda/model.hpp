// A model in the CUDA residency: one replica of the trunk and heads per device it was placed on, each in one device
// allocation, and the streams its calls without an executor run on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/checkpoint.hpp"
#include "cuda/device.hpp"

namespace uform::cuda {

/// One linear's weights on a device: `[columns x depth]` BF16, or E4M3 bytes with one F32 scale per 128 x 128 block,
/// dequantized into BF16 scratch before each product (docs/decisions.md, "The CUDA residency").
struct linear_t {
    void const *weights = nullptr; // BF16 values, or E4M3 bytes
    float const *scales = nullptr; // E4M3 only: [ceil(columns / 128) x ceil(depth / 128)]
    std::size_t columns = 0, depth = 0;
};

/// One trunk block on a device.
struct block_t {
    float const *attn_norm = nullptr, *mlp_norm = nullptr; // [hidden] F32
    linear_t qkv, out, gate_up, down;
};

/// A model's weights on one device: carved from one allocation.
struct replica_t {
    std::size_t ordinal = 0;               // the process's GPU ordinal
    int device = 0;                        // its CUDA ordinal
    void *memory = nullptr;                // the allocation everything below points into
    float const *byte_embedding = nullptr; // [258 x hidden] F32
    std::vector<block_t> blocks;
    float const *final_norm = nullptr;
    linear_t embedding_head, token_head, byte_head; // the last two without weights when absent
};

} // namespace uform::cuda

namespace uform::gpu {

/// A VRAM model (cpp/backend/gpu.hpp).
struct model_t {
    geometry_t geometry{};
    bool e4m3 = false;
    std::size_t largest_linear = 0; // values of the largest trunk linear: the E4M3 dequantization scratch
    std::vector<cuda::replica_t> replicas;
    mutable std::vector<cuda::stream_t> local; // one per replica, for calls without an executor, under `local_mutex`
    mutable std::mutex local_mutex;

    model_t() noexcept = default;
    model_t(model_t const &) = delete;
    model_t &operator=(model_t const &) = delete;
    ~model_t() noexcept;
};

} // namespace uform::gpu
