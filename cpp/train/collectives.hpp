// The collectives a CPU trainer runs across the ranks of a mesh (docs/decisions.md, "Training", "The mesh"): sums,
// gathers and broadcasts, each called by every rank in the same order. The RAM backend's mesh implements them over
// Gloo (cpp/backend/mesh.cpp); a trainer without a mesh calls none of them.
#pragma once

#include <algorithm>
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

/// Floats of the bucket a trainer sums its gradients over the mesh in.
inline constexpr std::size_t gradient_bucket_floats_k = std::size_t(1) << 22;

/// Sums `count` arrays over the mesh in place, `values(t)` the span of array `t`: consecutive arrays are packed into
/// `bucket` (`gradient_bucket_floats_k` floats), which is summed when the next array would not fit and unpacked; an
/// array larger than the bucket is summed in place alone. Every rank must pass arrays of the same sizes.
template <typename values_of_>
uform_status_t sum_in_buckets(collectives_t &mesh, std::size_t count, values_of_ &&values, std::span<float> bucket,
                              char const **message) noexcept {
    std::size_t begin = 0, filled = 0;
    auto flush = [&](std::size_t end) noexcept -> uform_status_t {
        if (uform_status_t status = mesh.sum(bucket.first(filled), message)) return status;
        for (std::size_t t = begin, at = 0; t != end; ++t) {
            std::span<float> const target = values(t);
            std::copy_n(bucket.data() + at, target.size(), target.data());
            at += target.size();
        }
        begin = end, filled = 0;
        return uform_status_ok_k;
    };
    for (std::size_t t = 0; t != count; ++t) {
        std::span<float> const source = values(t);
        if (source.size() > bucket.size()) {
            if (uform_status_t status = flush(t)) return status;
            if (uform_status_t status = mesh.sum(source, message)) return status;
            begin = t + 1;
            continue;
        }
        if (filled + source.size() > bucket.size())
            if (uform_status_t status = flush(t)) return status;
        std::copy(source.begin(), source.end(), bucket.data() + filled);
        filled += source.size();
    }
    return flush(count);
}

} // namespace uform::train
