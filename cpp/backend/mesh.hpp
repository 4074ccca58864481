// The backend's mesh: one rank per process, joined over Gloo's TCP transport, its collectives the trainer's; a VRAM
// mesh over NCCL also sums device memory.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "common/backend.hpp"
#include "cpp/train/collectives.hpp"

namespace gloo {
class Context;
} // namespace gloo

namespace uform::cuda {
struct nccl_mesh_t;
} // namespace uform::cuda

namespace uform::backend {

/// A joined mesh. It holds Gloo's context over every pair of ranks (none for a one-rank mesh, whose collectives copy),
/// for a RAM mesh and a VRAM one alike; a VRAM mesh whose hosts chose NCCL also holds its communicators of this host's
/// devices (cuda/mesh.hpp), over which a VRAM trainer sums its gradients in device memory.
struct mesh_t final : train::collectives_t {
    /// The connected ranks; null for a one-rank mesh.
    std::shared_ptr<gloo::Context> context;
    /// A VRAM mesh's communicators; null for a RAM mesh and for a VRAM mesh that stages through host memory.
    std::shared_ptr<cuda::nccl_mesh_t> gpu;
    /// This process's rank and the ranks in the mesh.
    std::size_t index = 0, count = 1;
    /// Each collective's limit.
    std::chrono::milliseconds timeout{0};

    /// This process's rank.
    std::size_t rank() const noexcept override { return index; }
    /// Ranks in the mesh.
    std::size_t ranks() const noexcept override { return count; }
    /// Sums floats over the ranks.
    uform_status_t sum(std::span<float> values, char const **message) noexcept override;
    /// Sums doubles over the ranks.
    uform_status_t sum(std::span<double> values, char const **message) noexcept override;
    /// Gathers every rank's bytes.
    uform_status_t gather(void const *mine, std::span<std::size_t const> bytes, void *all,
                          char const **message) noexcept override;
    /// Copies rank 0's bytes to every rank.
    uform_status_t broadcast(void *values, std::size_t bytes, char const **message) noexcept override;
    /// Whether the mesh sums device memory over NCCL.
    bool sums_device_memory() const noexcept override { return gpu != nullptr; }
    /// Sums device arrays over NCCL.
    uform_status_t sum_device(std::span<std::span<float> const> values, void *stream,
                              char const **message) noexcept override;
    /// Enqueues a sum of device arrays over NCCL without waiting.
    uform_status_t enqueue_sum_device(std::span<std::span<float> const> values, void *stream,
                                      char const **message) noexcept override;
};

} // namespace uform::backend
