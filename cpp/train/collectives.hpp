// The collectives a CPU trainer runs across the ranks of a mesh (docs/decisions.md, "Training", "The mesh"): sums,
// gathers and broadcasts, each called by every rank in the same order. The backend's mesh implements them over Gloo
// (cpp/backend/mesh.cpp), for a RAM mesh and a VRAM one alike; a VRAM mesh over NCCL also sums device memory
// (`sum_device`), which a VRAM trainer's gradients take instead of staging through host memory. A trainer without a
// mesh calls none of them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include <uform/types.h>

#include "common/fail.hpp"

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

    /// Whether `sum_device` sums device memory itself (a VRAM mesh over NCCL). When false, a trainer whose gradients
    /// live in device memory stages them through host memory and `sum` (the host-staged path).
    virtual bool sums_device_memory() const noexcept { return false; }
    /// Sums each array of `values` (floats in the device memory of this rank's GPU) over the ranks in place, as one
    /// group enqueued on the CUDA stream `stream`, and waits until the stream finished, the groups `enqueue_sum_device`
    /// put on it before included (with no arrays, it waits for those alone). `unsupported` where
    /// `sums_device_memory()` is false.
    virtual uform_status_t sum_device(std::span<std::span<float> const> values, void *stream,
                                      char const **message) noexcept {
        (void)values, (void)stream;
        return fail(message, uform_status_unsupported_k, "this mesh sums host memory only");
    }
    /// Enqueues `sum_device`'s group of `values` on `stream` without waiting: the sums are done once the stream reaches
    /// them (`sum_device` with no arrays waits for that). `unsupported` where `sums_device_memory()` is false.
    virtual uform_status_t enqueue_sum_device(std::span<std::span<float> const> values, void *stream,
                                              char const **message) noexcept {
        (void)values, (void)stream;
        return fail(message, uform_status_unsupported_k, "this mesh sums host memory only");
    }
};

/// Floats of the bucket a trainer sums its gradients over the mesh in.
inline constexpr std::size_t gradient_bucket_floats_k = std::size_t(1) << 22;

/// Calls `each(begin, end)` for the buckets of `count` arrays, `size_of(t)` floats each, in array order: consecutive
/// arrays grouped while their floats fit `bucket_floats`, an array larger than that alone. Every transport sums a
/// trainer's gradients in these buckets, so every rank sums the same arrays together. Stops at the first failure.
template <typename size_of_, typename each_>
uform_status_t for_each_bucket(std::size_t count, size_of_ &&size_of, std::size_t bucket_floats,
                               each_ &&each) noexcept {
    std::size_t begin = 0, filled = 0;
    for (std::size_t t = 0; t != count; ++t) {
        std::size_t const size = size_of(t);
        if (filled != 0 && filled + size > bucket_floats) {
            if (uform_status_t status = each(begin, t)) return status;
            begin = t, filled = 0;
        }
        filled += size;
        if (filled >= bucket_floats) {
            if (uform_status_t status = each(begin, t + 1)) return status;
            begin = t + 1, filled = 0;
        }
    }
    return begin != count ? each(begin, count) : uform_status_ok_k;
}

/// Sums `count` arrays over the mesh in place, `values(t)` the span of array `t`, in `for_each_bucket`'s buckets of
/// `bucket.size()` floats: a bucket's arrays are packed into `bucket`, summed and unpacked; an array larger than
/// `bucket` is summed in place alone. Every rank must pass arrays of the same sizes.
template <typename values_of_>
uform_status_t sum_in_buckets(collectives_t &mesh, std::size_t count, values_of_ &&values, std::span<float> bucket,
                              char const **message) noexcept {
    auto size_of = [&](std::size_t t) noexcept { return values(t).size(); };
    return for_each_bucket(count, size_of, bucket.size(), [&](std::size_t begin, std::size_t end) noexcept {
        if (end == begin + 1 && values(begin).size() > bucket.size()) return mesh.sum(values(begin), message);
        std::size_t filled = 0;
        for (std::size_t t = begin; t != end; ++t) {
            std::span<float> const source = values(t);
            std::copy(source.begin(), source.end(), bucket.data() + filled);
            filled += source.size();
        }
        if (uform_status_t status = mesh.sum(bucket.first(filled), message)) return status;
        for (std::size_t t = begin, at = 0; t != end; ++t) {
            std::span<float> const target = values(t);
            std::copy_n(bucket.data() + at, target.size(), target.data());
            at += target.size();
        }
        return uform_status_ok_k;
    });
}

} // namespace uform::train
