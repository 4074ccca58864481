// The collectives a CPU trainer runs across the ranks of a mesh (docs/decisions.md, "Training", "The mesh"): sums,
// gathers and broadcasts, each called by every rank in the same order. The RAM backend's mesh implements them over
// Gloo (cpp/backend/mesh.cpp); a trainer without a mesh calls none of them.
#pragma once

#include <cstddef>
#include <span>

#include <uform/types.h>

namespace uform::train {

/// A mesh's collectives. Each answers ok, `timeout` when a peer did not answer within the mesh's timeout, `io` when a
/// connection failed, or `out_of_memory`; after a failure the mesh is broken and every later call may fail.
class collectives_t {
  public:
    virtual ~collectives_t() = default;

    /// This process's rank, below `ranks()`.
    virtual std::size_t rank() const noexcept = 0;
    /// Ranks in the mesh.
    virtual std::size_t ranks() const noexcept = 0;

    /// Sums `values` over the ranks, in place: every rank receives the same sums.
    virtual uform_status_t sum(std::span<float> values, char const **message) noexcept = 0;
    /// Sums `values` over the ranks, in place, in double.
    virtual uform_status_t sum(std::span<double> values, char const **message) noexcept = 0;
    /// Gathers every rank's bytes into `all`, rank by rank: rank r contributes `bytes[r]` bytes, this rank the ones at
    /// `mine` (`bytes[rank()]` of them); `all` holds the sum of `bytes`.
    virtual uform_status_t gather(void const *mine, std::span<std::size_t const> bytes, void *all,
                                  char const **message) noexcept = 0;
    /// Copies rank 0's `bytes` bytes at `values` to every rank's.
    virtual uform_status_t broadcast(void *values, std::size_t bytes, char const **message) noexcept = 0;
};

} // namespace uform::train
