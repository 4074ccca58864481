// A VRAM trainer's gradients summed over a mesh (docs/decisions.md, "Training over the GPU mesh"), in the buckets every
// transport shares (cpp/train/collectives.hpp, `for_each_bucket`, tensor order): over NCCL, each bucket's device
// arrays in one group on the trainer's stream; else staged through a host bucket (pinned memory on a device) and the
// mesh's host sum over Gloo. The `trainer.*` scalars' gradients, which the host's loss terms write, are host arrays
// either way. Host code only, so that a host test drives both paths with fake copies and a fake transport.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "common/fail.hpp"
#include "cpp/train/collectives.hpp"

namespace uform::cuda::train {

/// The copies a staged sum makes between a tensor's device gradient and the host bucket.
class gradient_copies_t {
  public:
    virtual ~gradient_copies_t() = default;
    /// Enqueues a copy of `count` floats from device memory at `device` to the host at `host`; false when refused.
    virtual bool down(float const *device, float *host, std::size_t count) noexcept = 0;
    /// Enqueues a copy of `count` floats from the host at `host` to device memory at `device`; false when refused.
    virtual bool up(float const *host, float *device, std::size_t count) noexcept = 0;
    /// Waits for every copy enqueued; false when the device failed.
    virtual bool wait() noexcept = 0;
};

/// Sums `count` tensors' gradients over `mesh` through `bucket`: tensor `t`'s gradient is the device array
/// `device(t)`, or the host array `host(t)` where that is empty. Each bucket is copied into `bucket` (an array larger
/// than it in bucket-sized chunks), summed with `mesh.sum` and copied back, waiting for the copies before the sum and
/// before the bucket is reused.
template <typename device_of_, typename host_of_>
uform_status_t staged_gradient_sums(uform::train::collectives_t &mesh, std::size_t count, device_of_ &&device,
                                    host_of_ &&host, gradient_copies_t &copies, std::span<float> bucket,
                                    char const **message) noexcept {
    auto size_of = [&](std::size_t t) noexcept { return device(t).empty() ? host(t).size() : device(t).size(); };
    // Moves floats [from, from + length) of the bucket's arrays, laid end to end, between them and `bucket`.
    auto transfer = [&](std::size_t begin, std::size_t end, std::size_t from, std::size_t length, bool down) noexcept {
        for (std::size_t t = begin, at = 0; t != end; at += size_of(t), ++t) {
            std::size_t const low = std::max(from, at), high = std::min(from + length, at + size_of(t));
            if (low >= high) continue;
            float *const staged = bucket.data() + (low - from);
            std::size_t const n = high - low, offset = low - at;
            std::span<float> const d = device(t);
            if (!d.empty() &&
                !(down ? copies.down(d.data() + offset, staged, n) : copies.up(staged, d.data() + offset, n)))
                return false;
            if (d.empty()) {
                std::span<float> const h = host(t);
                down ? std::copy_n(h.data() + offset, n, staged) : std::copy_n(staged, n, h.data() + offset);
            }
        }
        return copies.wait();
    };
    auto refused = [&]() noexcept {
        return fail(message, uform_status_device_k, "the device refused to stage the gradients through host memory");
    };
    return uform::train::for_each_bucket(count, size_of, bucket.size(), [&](std::size_t begin, std::size_t end) {
        std::size_t total = 0;
        for (std::size_t t = begin; t != end; ++t) total += size_of(t);
        for (std::size_t from = 0; from < total; from += bucket.size()) {
            std::size_t const length = std::min(bucket.size(), total - from);
            if (!transfer(begin, end, from, length, true)) return refused();
            if (uform_status_t status = mesh.sum(bucket.first(length), message)) return status;
            if (!transfer(begin, end, from, length, false)) return refused();
        }
        return uform_status_ok_k;
    });
}

/// Sums `count` tensors' gradients over `mesh`, whose transport sums device memory: each bucket's device arrays
/// (`device(t)`) in one `mesh.sum_device` group on `stream`, then the host arrays (`host(t)` where `device(t)` is
/// empty) packed into `scalars` and summed with `mesh.sum`. `group` holds a bucket's arrays; both keep their capacity.
template <typename device_of_, typename host_of_>
uform_status_t device_gradient_sums(uform::train::collectives_t &mesh, std::size_t count, device_of_ &&device,
                                    host_of_ &&host, void *stream, std::vector<std::span<float>> &group,
                                    std::vector<float> &scalars, char const **message) noexcept {
    std::size_t packed = 0;
    try {
        group.reserve(count);
        for (std::size_t t = 0; t != count; ++t)
            if (device(t).empty()) packed += host(t).size();
        scalars.resize(packed);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory summing the gradients");
    }
    auto size_of = [&](std::size_t t) noexcept { return device(t).size(); };
    uform_status_t status = uform::train::for_each_bucket(
        count, size_of, uform::train::gradient_bucket_floats_k, [&](std::size_t begin, std::size_t end) noexcept {
            group.clear();
            for (std::size_t t = begin; t != end; ++t)
                if (!device(t).empty()) group.push_back(device(t)); // within the capacity reserved above
            return group.empty() ? uform_status_ok_k : mesh.sum_device(group, stream, message);
        });
    if (status != uform_status_ok_k || packed == 0) return status;
    for (std::size_t t = 0, at = 0; t != count; ++t)
        if (device(t).empty()) std::copy_n(host(t).data(), host(t).size(), scalars.data() + at), at += host(t).size();
    if ((status = mesh.sum(std::span<float>(scalars), message))) return status;
    for (std::size_t t = 0, at = 0; t != count; ++t)
        if (device(t).empty()) std::copy_n(scalars.data() + at, host(t).size(), host(t).data()), at += host(t).size();
    return uform_status_ok_k;
}

} // namespace uform::cuda::train
