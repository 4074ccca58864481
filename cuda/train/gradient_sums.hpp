// A VRAM trainer's gradients summed over a mesh (docs/decisions.md, "Training over the GPU mesh"), in the buckets every
// transport shares (cpp/train/collectives.hpp, `for_each_bucket`, tensor order): over NCCL, each bucket's device
// arrays in one group on a communication stream of their own, launched while the backward runs as soon as the
// backward has finished the bucket's tensors (`overlapped_sums_t`); else, after the backward, staged through a host
// bucket (pinned memory on a device) and the mesh's host sum over Gloo. The `trainer.*` scalars' gradients, which the
// host's loss terms write, are host arrays either way. Host code only, so that a host test drives every path with fake
// copies, streams and transport.
#pragma once

#include <algorithm>
#include <cstddef>
#include <new>
#include <span>
#include <utility>
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

/// Sums the host arrays among `count` tensors' gradients (`host(t)` where `device(t)` is empty: the `trainer.*`
/// scalars) over `mesh`, packed into `scalars` (which keeps its capacity) for one host sum.
template <typename device_of_, typename host_of_>
uform_status_t host_gradient_sums(uform::train::collectives_t &mesh, std::size_t count, device_of_ &&device,
                                  host_of_ &&host, std::vector<float> &scalars, char const **message) noexcept {
    std::size_t packed = 0;
    for (std::size_t t = 0; t != count; ++t)
        if (device(t).empty()) packed += host(t).size();
    if (packed == 0) return uform_status_ok_k;
    try {
        scalars.resize(packed);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory summing the gradients");
    }
    for (std::size_t t = 0, at = 0; t != count; ++t)
        if (device(t).empty()) std::copy_n(host(t).data(), host(t).size(), scalars.data() + at), at += host(t).size();
    if (uform_status_t status = mesh.sum(std::span<float>(scalars), message)) return status;
    for (std::size_t t = 0, at = 0; t != count; ++t)
        if (device(t).empty()) std::copy_n(scalars.data() + at, host(t).size(), host(t).data()), at += host(t).size();
    return uform_status_ok_k;
}

/// What overlapped sums ask of a GPU's two streams: the backward's (compute) and the sums' (communication).
class sum_streams_t {
  public:
    virtual ~sum_streams_t() = default;
    /// Makes the communication stream wait for the work given to the compute stream so far (an event recorded on the
    /// compute stream); false when the device refused.
    virtual bool follow() noexcept = 0;
    /// The communication stream, as the mesh's transport takes it.
    virtual void *stream() noexcept = 0;
};

/// The device gradients' sums over a mesh whose transport sums device memory, overlapped with the backward: `arm`
/// before it, `ready(from)` each time the backward has given the compute stream the last work on every gradient from
/// tensor `from` on, `finish` after it. Buckets are `for_each_bucket`'s over the device arrays in tensor order; the
/// backward finishes gradients from the last tensor down, so the buckets launch from the last to the first, each as
/// soon as its first tensor is ready: the same order on every rank. A launched bucket waits on the communication
/// stream for the compute stream's work so far, then its group is enqueued there while the backward goes on.
class overlapped_sums_t {
  public:
    /// Takes the device arrays (`arrays[t]`, empty for a host tensor) in buckets of `bucket_floats` floats; nothing is
    /// launched yet. `out-of-memory` when the buckets do not fit.
    uform_status_t arm(uform::train::collectives_t &mesh, sum_streams_t &streams,
                       std::span<std::span<float> const> arrays, std::size_t bucket_floats,
                       char const **message) noexcept {
        mesh_ = nullptr, status_ = uform_status_ok_k, message_ = nullptr, launched_ = 0;
        try {
            arrays_.assign(arrays.begin(), arrays.end());
            group_.reserve(arrays.size());
            buckets_.clear();
            auto size_of = [&](std::size_t t) noexcept { return arrays_[t].size(); };
            (void)uform::train::for_each_bucket(arrays_.size(), size_of, bucket_floats,
                                                [&](std::size_t begin, std::size_t end) {
                                                    buckets_.emplace_back(begin, end);
                                                    return uform_status_ok_k;
                                                });
        } catch (std::bad_alloc const &) {
            return fail(message, uform_status_out_of_memory_k, "out of memory summing the gradients");
        }
        mesh_ = &mesh, streams_ = &streams, pending_ = buckets_.size();
        return uform_status_ok_k;
    }

    /// Whether `arm` came since the last `finish`.
    bool armed() const noexcept { return mesh_ != nullptr; }

    /// Launches every bucket not launched yet whose tensors are all at `from` or later, the last first; after a failure
    /// launches nothing (`finish` answers it).
    void ready(std::size_t from) noexcept {
        if (!mesh_ || status_ != uform_status_ok_k) return;
        bool followed = false;
        for (; pending_ != 0 && buckets_[pending_ - 1].first >= from; --pending_) {
            auto const [begin, end] = buckets_[pending_ - 1];
            group_.clear();
            for (std::size_t t = begin; t != end; ++t)
                if (!arrays_[t].empty()) group_.push_back(arrays_[t]); // within the capacity `arm` reserved
            if (group_.empty()) continue;
            if (!followed && !(followed = streams_->follow())) {
                status_ = fail(&message_, uform_status_device_k, "the device refused to order the gradients' sums");
                return;
            }
            if ((status_ = mesh_->enqueue_sum_device(group_, streams_->stream(), &message_))) return;
            ++launched_;
        }
    }

    /// Launches what is left (`ready(0)`), waits until the communication stream summed every bucket and disarms;
    /// answers the first failure.
    uform_status_t finish(char const **message) noexcept {
        if (!mesh_) return fail(message, uform_status_internal_k, "the gradients' sums were not armed");
        ready(0);
        uform::train::collectives_t &mesh = *std::exchange(mesh_, nullptr);
        if (status_ != uform_status_ok_k) return fail(message, status_, message_);
        return mesh.sum_device({}, streams_->stream(), message);
    }

    /// Groups launched since `arm`.
    std::size_t launched() const noexcept { return launched_; }

  private:
    uform::train::collectives_t *mesh_ = nullptr;
    sum_streams_t *streams_ = nullptr;
    std::vector<std::span<float>> arrays_, group_;
    std::vector<std::pair<std::size_t, std::size_t>> buckets_; // [begin, end) in tensor order
    std::size_t pending_ = 0, launched_ = 0;                   // buckets not launched: the first `pending_`
    uform_status_t status_ = uform_status_ok_k;
    char const *message_ = nullptr;
};

} // namespace uform::cuda::train
