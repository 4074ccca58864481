// A VRAM trainer's gradients over a mesh, on the host (cuda/train/gradient_sums.hpp: host code, so this test runs in
// every RAM build too):
// - the staged path sums every array, device and host, in the buckets the RAM trainer sums in
//   (cpp/train/collectives.hpp, `for_each_bucket`), an array larger than the bucket in bucket-sized chunks; it waits
//   for the copies before each sum and after each bucket; a copy the device refuses answers `device`, a sum that fails
//   answers its status, and nothing is summed after either;
// - the NCCL path after the backward hands each bucket's device arrays to the transport as one group, then sums the
//   host arrays (the `trainer.*` scalars) packed in one host sum;
// - the NCCL path overlapped with a fake backward whose stages write their tensors' gradients: the buckets launch in
//   the fixed order from the last, each after a follow (the communication stream waiting for the compute stream) at
//   the stage finishing its tensors and before the next stage, the sums then awaited; every gradient summed exactly
//   once after it was written; an enqueue that fails and a follow the device refuses answer their statuses;
// - the trainer over a Gloo mesh of 2 processes, on a kernel set that keeps its gradients away from the host arrays
//   (poisoned with NaN after the backward, as a device's are) and sums them through the staged path, takes the same 5
//   steps as one process over the same 12 texts: weights within the RAM mesh test's bounds of one process's (1e-4 over
//   all tensors, 1e-3 per tensor), and equal on both ranks; the same ranks over the overlapped path (a mesh posing as
//   NCCL's, the backward's stages announced, buckets of 16384 floats) end with the staged path's weights bit for bit.
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "common/checkpoint.hpp"
#include "cpp/backend/mesh.hpp"
#include "cpp/train/step.hpp"
#include "cuda/train/gradient_sums.hpp"
#include "tests/unit/train_goldens.hpp"

namespace {

int failures = 0;

void check(bool ok, std::string const &what) {
    if (ok) return;
    ++failures;
    std::printf("FAIL %s\n", what.c_str());
}

using uform::train::collectives_t;

/// A mesh of two ranks whose peer holds the same values: every sum doubles them. It records each sum's size (host
/// ones positive, device groups as their arrays' sizes after a 0), and fails the sum numbered `fail_at`.
class doubling_mesh_t final : public collectives_t {
  public:
    std::vector<std::size_t> sums;
    std::size_t fail_at = std::numeric_limits<std::size_t>::max();
    bool device = false;

    std::size_t rank() const noexcept override { return 0; }
    std::size_t ranks() const noexcept override { return 2; }
    uform_status_t sum(std::span<float> values, char const **message) noexcept override {
        if (sums.size() == fail_at) return uform::fail(message, uform_status_timeout_k, "a peer did not answer");
        sums.push_back(values.size());
        for (float &value : values) value *= 2;
        return uform_status_ok_k;
    }
    uform_status_t sum(std::span<double>, char const **) noexcept override { return uform_status_ok_k; }
    uform_status_t gather(void const *, std::span<std::size_t const>, void *, char const **) noexcept override {
        return uform_status_ok_k;
    }
    uform_status_t broadcast(void *, std::size_t, char const **) noexcept override { return uform_status_ok_k; }
    bool sums_device_memory() const noexcept override { return device; }
    uform_status_t sum_device(std::span<std::span<float> const> values, void *stream,
                              char const **message) noexcept override {
        if (uform_status_t status = enqueue_sum_device(values, stream, message)) return status;
        if (log) log->push_back({'W', 0});
        return uform_status_ok_k;
    }
    /// Sums at once (the fake's stream is always caught up), logging `E` and the group's first array.
    uform_status_t enqueue_sum_device(std::span<std::span<float> const> values, void *stream,
                                      char const **message) noexcept override {
        if (stream != this) return uform::fail(message, uform_status_internal_k, "another stream");
        if (values.empty()) return uform_status_ok_k;
        if (sums.size() == fail_at) return uform::fail(message, uform_status_io_k, "NCCL failed");
        if (log) log->push_back({'E', reinterpret_cast<std::uintptr_t>(values[0].data())});
        sums.push_back(0);
        for (std::span<float> array : values) {
            sums.push_back(array.size());
            for (float &value : array) value *= 2;
        }
        return uform_status_ok_k;
    }

    /// Events in order, when set: `S` a backward stage (its number), `F` a follow, `E` an enqueue, `W` a wait.
    std::vector<std::pair<char, std::uintptr_t>> *log = nullptr;
};

/// The fake's streams: the communication stream is the mesh itself; each follow is logged, the one numbered `fail_at`
/// refused.
class logging_streams_t final : public uform::cuda::train::sum_streams_t {
  public:
    logging_streams_t(doubling_mesh_t &mesh, std::vector<std::pair<char, std::uintptr_t>> &log) noexcept
        : mesh_(mesh), log_(log) {}
    std::size_t follows = 0, fail_at = std::numeric_limits<std::size_t>::max();
    bool follow() noexcept override { return follows++ != fail_at && (log_.push_back({'F', 0}), true); }
    void *stream() noexcept override { return &mesh_; }

  private:
    doubling_mesh_t &mesh_;
    std::vector<std::pair<char, std::uintptr_t>> &log_;
};

/// Copies between "device" arrays (host vectors here) and the bucket, counted; refuses the copy numbered `fail_at`.
class counting_copies_t final : public uform::cuda::train::gradient_copies_t {
  public:
    std::size_t copies = 0, waits = 0, fail_at = std::numeric_limits<std::size_t>::max();

    bool down(float const *device, float *host, std::size_t count) noexcept override {
        return copy(device, host, count);
    }
    bool up(float const *host, float *device, std::size_t count) noexcept override { return copy(host, device, count); }
    bool wait() noexcept override { return ++waits, true; }

  private:
    bool copy(float const *from, float *to, std::size_t count) noexcept {
        if (copies++ == fail_at) return false;
        std::memcpy(to, from, count * sizeof(float));
        return true;
    }
};

/// Arrays of the given sizes, values 1, 2, 3, ... across them; each either "device" or host (`on_host`).
struct arrays_t {
    std::vector<std::vector<float>> values;
    std::vector<bool> on_host;

    arrays_t(std::vector<std::size_t> const &sizes, std::vector<bool> host) : on_host(std::move(host)) {
        float next = 1;
        for (std::size_t size : sizes) {
            values.emplace_back(size);
            for (float &value : values.back()) value = next++;
        }
    }
    std::span<float> device(std::size_t t) { return on_host[t] ? std::span<float>() : std::span<float>(values[t]); }
    std::span<float> host(std::size_t t) { return std::span<float>(values[t]); }
    bool doubled() const {
        float next = 1;
        for (auto const &array : values)
            for (float value : array)
                if (value != 2 * next++) return false;
        return true;
    }
};

void test_staged() {
    std::vector<std::size_t> const sizes{3, 4, 5, 23, 2, 1, 10};
    std::vector<float> bucket(10);
    char const *message = nullptr;

    arrays_t ram(sizes, std::vector<bool>(sizes.size(), true));
    doubling_mesh_t ram_mesh;
    auto values = [&](std::size_t t) { return ram.host(t); };
    check(uform::train::sum_in_buckets(ram_mesh, sizes.size(), values, std::span<float>(bucket), &message) ==
                  uform_status_ok_k &&
              ram.doubled(),
          "the RAM trainer's buckets sum every array");
    check(ram_mesh.sums == std::vector<std::size_t>{7, 5, 23, 3, 10}, "the RAM buckets: 3+4, 5, 23 alone, 2+1, 10");

    arrays_t staged(sizes, {false, true, false, false, true, false, false});
    doubling_mesh_t mesh;
    counting_copies_t copies;
    auto device = [&](std::size_t t) { return staged.device(t); };
    auto host = [&](std::size_t t) { return staged.host(t); };
    check(uform::cuda::train::staged_gradient_sums(mesh, sizes.size(), device, host, copies, std::span<float>(bucket),
                                                   &message) == uform_status_ok_k &&
              staged.doubled(),
          "the staged path sums every array, device and host");
    check(mesh.sums == std::vector<std::size_t>{7, 5, 10, 10, 3, 3, 10},
          "the staged buckets are the RAM ones, 23 floats in chunks of 10, 10, 3");
    check(copies.copies == 2 * (1 + 1 + 3 + 1 + 1) && copies.waits == 2 * mesh.sums.size(),
          "a copy each way per device array and chunk, a wait before each sum and after each bucket");

    arrays_t broken(sizes, std::vector<bool>(sizes.size(), false));
    doubling_mesh_t refused_mesh;
    counting_copies_t refusing;
    refusing.fail_at = 3;
    auto broken_device = [&](std::size_t t) { return broken.device(t); };
    auto broken_host = [&](std::size_t t) { return broken.host(t); };
    check(uform::cuda::train::staged_gradient_sums(refused_mesh, sizes.size(), broken_device, broken_host, refusing,
                                                   std::span<float>(bucket), &message) == uform_status_device_k &&
              refused_mesh.sums.size() == 1,
          "a copy the device refuses: device, and no sum after it");
    doubling_mesh_t failing;
    failing.fail_at = 1;
    counting_copies_t fine;
    check(uform::cuda::train::staged_gradient_sums(failing, sizes.size(), broken_device, broken_host, fine,
                                                   std::span<float>(bucket), &message) == uform_status_timeout_k &&
              failing.sums.size() == 1,
          "a sum that fails: its status, and nothing summed after it");
}

void test_device() {
    std::vector<std::size_t> const sizes{3, 1, 4, 2, 5};
    arrays_t arrays(sizes, {false, true, false, true, false});
    doubling_mesh_t mesh;
    mesh.device = true;
    std::vector<std::pair<char, std::uintptr_t>> log;
    logging_streams_t streams(mesh, log);
    std::vector<std::span<float>> device;
    for (std::size_t t = 0; t != sizes.size(); ++t) device.push_back(arrays.device(t));
    std::vector<float> scalars;
    char const *message = nullptr;
    uform::cuda::train::overlapped_sums_t sums;
    auto host = [&](std::size_t t) { return arrays.host(t); };
    auto device_of = [&](std::size_t t) { return device[t]; };
    check(sums.arm(mesh, streams, device, uform::train::gradient_bucket_floats_k, &message) == uform_status_ok_k &&
              sums.armed() && sums.finish(&message) == uform_status_ok_k && !sums.armed() &&
              uform::cuda::train::host_gradient_sums(mesh, sizes.size(), device_of, host, scalars, &message) ==
                  uform_status_ok_k &&
              arrays.doubled(),
          "the NCCL path after the backward sums every array");
    check(mesh.sums == std::vector<std::size_t>{0, 3, 4, 5, 3},
          "one device group of the device arrays in order, then the host arrays packed in one host sum");
    check(sums.finish(&message) == uform_status_internal_k, "finishing sums never armed: internal");
}

/// A model's gradients as the device backward finishes them: tensors 0-1 the embeddings, 2-4 and 5-7 two blocks,
/// 8 the final norm, 9-10 the heads, 11 a host scalar.
std::vector<std::size_t> const model_sizes_k{5, 2, 1, 4, 3, 1, 2, 9, 1, 3, 2, 1};
/// The first tensor each backward stage finishes: the heads and final norm, block 1, block 0, the embeddings.
std::size_t const stage_from_k[4] = {8, 5, 2, 0};

/// Runs a backward of the model whose stage `s` writes its device tensors' values (the arrays' values, zeroed first as
/// `zero_gradients` does) then tells `sums` (armed with `bucket_floats`) they are ready; answers `finish`'s status.
uform_status_t overlapped_backward(arrays_t &arrays, doubling_mesh_t &mesh, logging_streams_t &streams,
                                   std::vector<std::pair<char, std::uintptr_t>> &log, std::size_t bucket_floats) {
    arrays_t const written = arrays;
    std::vector<std::span<float>> device;
    for (std::size_t t = 0; t != arrays.values.size(); ++t) {
        device.push_back(arrays.device(t));
        if (!arrays.on_host[t]) std::fill(arrays.values[t].begin(), arrays.values[t].end(), 0.0f);
    }
    char const *message = nullptr;
    uform::cuda::train::overlapped_sums_t sums;
    if (uform_status_t status = sums.arm(mesh, streams, device, bucket_floats, &message)) return status;
    for (std::size_t s = 0, end = arrays.values.size(); s != 4; end = stage_from_k[s++]) {
        for (std::size_t t = stage_from_k[s]; t != end; ++t)
            if (!arrays.on_host[t]) arrays.values[t] = written.values[t];
        log.push_back({'S', s});
        sums.ready(stage_from_k[s]);
    }
    return sums.finish(&message);
}

void test_overlap() {
    std::vector<bool> on_host(model_sizes_k.size(), false);
    on_host.back() = true;
    arrays_t arrays(model_sizes_k, on_host);
    doubling_mesh_t mesh;
    mesh.device = true;
    std::vector<std::pair<char, std::uintptr_t>> log;
    mesh.log = &log;
    logging_streams_t streams(mesh, log);
    std::size_t const bucket_floats = 6;
    check(overlapped_backward(arrays, mesh, streams, log, bucket_floats) == uform_status_ok_k,
          "the overlapped sums finish");
    // Device arrays doubled exactly as after the backward; the host scalar is the host sum's, untouched here.
    arrays_t expected(model_sizes_k, on_host);
    for (std::size_t t = 0; t + 1 != model_sizes_k.size(); ++t)
        for (float &value : expected.values[t]) value *= 2;
    check(arrays.values == expected.values, "every device gradient summed once, after its stage wrote it");

    // The fixed buckets, launched from the last: each after the stage finishing its first tensor, before the next.
    std::vector<std::pair<std::size_t, std::size_t>> buckets;
    auto size_of = [&](std::size_t t) { return on_host[t] ? std::size_t(0) : model_sizes_k[t]; };
    (void)uform::train::for_each_bucket(model_sizes_k.size(), size_of, bucket_floats,
                                        [&](std::size_t b, std::size_t e) {
                                            buckets.emplace_back(b, e);
                                            return uform_status_ok_k;
                                        });
    std::vector<std::size_t> launched, stage_of;
    std::size_t stage = 0;
    bool followed = false, ordered = true;
    for (auto const [kind, value] : log) {
        if (kind == 'S') stage = value, followed = false;
        if (kind == 'F') followed = true;
        if (kind != 'E') continue;
        std::size_t t = 0;
        while (reinterpret_cast<std::uintptr_t>(arrays.values[t].data()) != value) ++t;
        std::size_t ready = 0;
        while (stage_from_k[ready] > t) ++ready;
        ordered = ordered && followed && ready == stage;
        launched.push_back(t);
    }
    std::vector<std::size_t> fixed;
    for (std::size_t b = buckets.size(); b-- != 0;)
        if (!on_host[buckets[b].first]) fixed.push_back(buckets[b].first); // a bucket of host scalars alone: none
    check(launched == fixed && buckets.size() > 4, "the buckets launch in the fixed order, the last first");
    check(ordered, "each bucket launches after a follow, at the stage finishing it, before the next stage runs");
    check(!log.empty() && log.back().first == 'W', "the sums are awaited last");
}

void test_overlap_failures() {
    std::vector<bool> on_host(model_sizes_k.size(), false);
    on_host.back() = true;
    std::size_t const bucket_floats = 6;

    arrays_t broken(model_sizes_k, on_host);
    doubling_mesh_t failing;
    failing.device = true, failing.fail_at = 4; // the second group
    std::vector<std::pair<char, std::uintptr_t>> failing_log;
    logging_streams_t failing_streams(failing, failing_log);
    check(overlapped_backward(broken, failing, failing_streams, failing_log, bucket_floats) == uform_status_io_k &&
              failing.sums.size() == 4,
          "an enqueue that fails: its status at the finish, nothing launched after it");
    doubling_mesh_t refused;
    refused.device = true;
    logging_streams_t refusing(refused, failing_log);
    refusing.fail_at = 1;
    check(overlapped_backward(broken, refused, refusing, failing_log, bucket_floats) == uform_status_device_k,
          "a follow the device refuses: device");
}

/// The world's 12 texts and their bags (item i with item i + 6), as the RAM mesh test trains.
char const *const texts_k[12] = {"a cat sits on the mat", "the dog barks",   "rain falls in spain",
                                 "which is an animal",    "the sun is hot",  "boats float on water",
                                 "a kitten on a rug",     "a puppy is loud", "spanish weather, wet",
                                 "which is wet",          "summer heat",     "a ship on the sea"};
std::size_t const bags_k[12] = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
constexpr std::size_t steps_k = 5;

std::string tiny_path() {
    char const *data = std::getenv("UFORM_TEST_DATA");
    return std::string(data && *data ? data : "tests/data") + "/tiny.safetensors";
}

/// A host mesh posing as one that sums device memory (NCCL's, whose "device" arrays are host ones here): each group's
/// arrays summed at once over the host mesh, counted.
class device_posing_mesh_t final : public collectives_t {
  public:
    explicit device_posing_mesh_t(collectives_t &host) noexcept : host_(host) {}
    std::size_t groups = 0;

    std::size_t rank() const noexcept override { return host_.rank(); }
    std::size_t ranks() const noexcept override { return host_.ranks(); }
    uform_status_t sum(std::span<float> values, char const **message) noexcept override {
        return host_.sum(values, message);
    }
    uform_status_t sum(std::span<double> values, char const **message) noexcept override {
        return host_.sum(values, message);
    }
    uform_status_t gather(void const *mine, std::span<std::size_t const> bytes, void *all,
                          char const **message) noexcept override {
        return host_.gather(mine, bytes, all, message);
    }
    uform_status_t broadcast(void *values, std::size_t bytes, char const **message) noexcept override {
        return host_.broadcast(values, bytes, message);
    }
    bool sums_device_memory() const noexcept override { return true; }
    uform_status_t sum_device(std::span<std::span<float> const> values, void *stream,
                              char const **message) noexcept override {
        return enqueue_sum_device(values, stream, message);
    }
    uform_status_t enqueue_sum_device(std::span<std::span<float> const> values, void *,
                                      char const **message) noexcept override {
        groups += values.empty() ? 0 : 1;
        for (std::span<float> array : values)
            if (uform_status_t status = host_.sum(array, message)) return status;
        return uform_status_ok_k;
    }

  private:
    collectives_t &host_;
};

/// Streams that need no ordering: the sums run at once, after the work the backward's stages did on the host.
class host_streams_t final : public uform::cuda::train::sum_streams_t {
  public:
    bool follow() noexcept override { return true; }
    void *stream() noexcept override { return this; }
};

/// The RAM kernels, but with the gradients kept in arrays of their own after the backward (the host's poisoned with
/// NaN), as a device keeps them: only the staged sums and the norm bring them back.
class elsewhere_kernels_t final : public uform::train::step_kernels_t {
  public:
    using parameters_t = uform::train::parameters_t;
    uform_status_t forward(parameters_t const &p, uform::train::trunk_request_t const &request,
                           uform::ram::parallel_t const &parallel, uform::train::poll_t poll,
                           uform::train::trunk_outputs_t &out, char const **message) noexcept override {
        return ram_.forward(p, request, parallel, poll, out, message);
    }
    uform_status_t zero_gradients(parameters_t &p, char const **message) noexcept override {
        return ram_.zero_gradients(p, message);
    }
    uform_status_t backward(parameters_t &p, float const *d_z, float const *d_tokens, float const *d_logits,
                            uform::ram::parallel_t const &parallel, uform::train::poll_t poll,
                            char const **message) noexcept override {
        if (uform_status_t status = ram_.backward(p, d_z, d_tokens, d_logits, parallel, poll, message)) return status;
        kept_.resize(p.tensors.size());
        // Kept stage by stage as the device backward finishes them (the heads and final norm, each block from the
        // last, the embeddings), the armed sums told after each.
        std::size_t end = p.tensors.size();
        for (std::size_t stage = 0; stage != p.geometry.depth + 2; ++stage) {
            std::string const first = stage == 0 ? "final_norm.weight"
                                      : stage <= p.geometry.depth
                                          ? "blocks." + std::to_string(p.geometry.depth - stage) + ".attn_norm.weight"
                                          : p.tensors[0].name;
            std::size_t const from = static_cast<std::size_t>(p.find(first) - p.tensors.data());
            for (std::size_t t = from; t != end; ++t) {
                if (scalar(p, t)) continue;
                kept_[t].resize(p.tensors[t].grad.size()); // the same storage once sized: the armed arrays
                std::copy(p.tensors[t].grad.begin(), p.tensors[t].grad.end(), kept_[t].begin());
                std::fill(p.tensors[t].grad.begin(), p.tensors[t].grad.end(), std::nanf(""));
            }
            if (overlap_.armed()) overlap_.ready(from);
            end = from;
        }
        return uform_status_ok_k;
    }
    /// Over a mesh that sums device memory, arms overlapped sums over the kept arrays in buckets of 16384 floats:
    /// several, some spanning two stages, so that a bucket launched before all its tensors were kept sums stale ones.
    uform_status_t begin_gradient_sums(parameters_t &p, collectives_t &mesh, char const **message) noexcept override {
        if (!mesh.sums_device_memory()) return uform_status_ok_k;
        kept_.resize(p.tensors.size());
        arrays_.resize(p.tensors.size());
        for (std::size_t t = 0; t != p.tensors.size(); ++t) {
            if (!scalar(p, t)) kept_[t].resize(p.tensors[t].grad.size());
            arrays_[t] = scalar(p, t) ? std::span<float>() : std::span<float>(kept_[t]);
        }
        return overlap_.arm(mesh, streams_, arrays_, 16384, message);
    }
    uform_status_t sum_gradients(parameters_t &p, collectives_t &mesh, std::vector<float> &bucket,
                                 char const **message) noexcept override {
        if (overlap_.armed()) {
            if (uform_status_t status = overlap_.finish(message)) return status;
            launched += overlap_.launched();
            auto device = [&](std::size_t t) { return arrays_[t]; };
            auto host = [&](std::size_t t) { return std::span<float>(p.tensors[t].grad); };
            return uform::cuda::train::host_gradient_sums(mesh, p.tensors.size(), device, host, scalars_, message);
        }
        bucket.resize(uform::train::gradient_bucket_floats_k);
        auto device = [&](std::size_t t) { return scalar(p, t) ? std::span<float>() : std::span<float>(kept_[t]); };
        auto host = [&](std::size_t t) { return std::span<float>(p.tensors[t].grad); };
        return uform::cuda::train::staged_gradient_sums(mesh, p.tensors.size(), device, host, copies_,
                                                        std::span<float>(bucket), message);
    }
    uform_status_t gradient_norm(parameters_t &p, double &norm, char const **message) noexcept override {
        for (std::size_t t = 0; t != p.tensors.size() && t < kept_.size(); ++t)
            if (!scalar(p, t)) p.tensors[t].grad = kept_[t];
        return ram_.gradient_norm(p, norm, message);
    }
    uform_status_t scale_gradients(parameters_t &p, double factor, uform::ram::parallel_t const &parallel,
                                   char const **message) noexcept override {
        return ram_.scale_gradients(p, factor, parallel, message);
    }
    uform_status_t update_stays_finite(parameters_t &p, std::size_t k, double lr, double decay,
                                       uform::ram::parallel_t const &parallel, bool &finite,
                                       char const **message) noexcept override {
        return ram_.update_stays_finite(p, k, lr, decay, parallel, finite, message);
    }
    uform_status_t update(parameters_t &p, std::size_t k, double lr, double decay,
                          uform::ram::parallel_t const &parallel, char const **message) noexcept override {
        return ram_.update(p, k, lr, decay, parallel, message);
    }
    uform_status_t refresh(parameters_t &p, uform::ram::parallel_t const &parallel,
                           char const **message) noexcept override {
        return ram_.refresh(p, parallel, message);
    }
    uform_status_t to_host(parameters_t &p, char const **message) noexcept override { return ram_.to_host(p, message); }

    counting_copies_t copies_;
    std::size_t launched = 0; // overlapped groups over every step

  private:
    static bool scalar(parameters_t const &p, std::size_t t) { return p.tensors[t].name.starts_with("trainer."); }

    uform::train::ram_kernels_t ram_;
    std::vector<std::vector<float>> kept_;
    host_streams_t streams_;
    uform::cuda::train::overlapped_sums_t overlap_;
    std::vector<std::span<float>> arrays_;
    std::vector<float> scalars_;
};

/// A core on tiny.safetensors with the contrastive objective over the mesh's negatives.
bool make_core(uform::train::trainer_core_t &core, uform::ram::parallel_t const &parallel) {
    char const *message = nullptr;
    std::string const path = tiny_path();
    uform::checkpoint_t checkpoint;
    if (uform::checkpoint_read_file(path.data(), path.size(), checkpoint, &message) ||
        uform::train::parameters_load(path.data(), path.size(), checkpoint, uform_pair_loss_form_info_nce_k,
                                      core.parameters, &message) ||
        uform::train::parameters_refresh(core.parameters, parallel, &message)) {
        std::printf("cannot load %s: %s\n", path.c_str(), message);
        return false;
    }
    uform::train::settings_t &s = core.settings;
    s.objective = uform_objective_contrastive_k;
    s.contrastive = {uform_pair_loss_form_info_nce_k, uform_negatives_mesh_k, 0.0f, 1.0f};
    s.schedule = {steps_k, 1, 1e-4f, 1e-5f, 0.01f, 1.0f};
    s.seed = 7;
    return true;
}

/// Trains items [first, first + count) for `steps_k` steps (over `mesh` when given) and returns every master.
bool train(collectives_t *mesh, std::size_t first, std::size_t count, std::vector<float> &weights,
           std::vector<std::size_t> &sizes, std::string const &start = "") {
    uform::ram::parallel_t const parallel = goldens::threaded(2);
    uform::train::trainer_core_t core;
    elsewhere_kernels_t kernels;
    char const *message = nullptr;
    if (!make_core(core, parallel)) return false;
    core.mesh = mesh;
    core.kernels = &kernels;
    if (core.agree(parallel, &message)) return std::printf("agree: %s\n", message), false;
    if (!start.empty()) {
        std::ofstream out(start, std::ios::binary);
        for (auto const &t : core.parameters.tensors)
            out.write(reinterpret_cast<char const *>(t.master.data()),
                      std::streamsize(t.master.size() * sizeof(float)));
    }
    std::vector<std::vector<std::uint16_t>> tokens(count);
    std::vector<uform::train::segment_t> segments(count);
    for (std::size_t i = 0; i != count; ++i) {
        for (char c : std::string(texts_k[first + i])) tokens[i].push_back(static_cast<unsigned char>(c));
        segments[i] = {uform_modality_text_k, tokens[i].data(), nullptr, nullptr, tokens[i].size()};
    }
    uform::train::batch_t batch;
    batch.segments = segments;
    batch.bags = std::span<std::size_t const>(bags_k + first, count);
    for (std::size_t step = 0; step != steps_k; ++step) {
        uform::train::step_report_t report;
        if ((mesh && core.arrange(count, false, true, 0, &message)) ||
            core.step(batch, parallel, {}, {}, report, &message))
            return std::printf("step %zu: %s\n", step, message), false;
    }
    bool const posing = mesh && mesh->sums_device_memory();
    if (kernels.copies_.copies == 0 && mesh && !posing && mesh->ranks() > 1)
        return std::printf("nothing staged\n"), false;
    if (posing && kernels.launched <= steps_k) // several buckets a step, each launched as its stage finishes
        return std::printf("the overlapped sums launched %zu groups\n", kernels.launched), false;
    for (auto const &t : core.parameters.tensors) {
        weights.insert(weights.end(), t.master.begin(), t.master.end());
        sizes.push_back(t.master.size());
    }
    return true;
}

/// One rank of the 2-process mesh (a child): joins in `directory`, trains its 6 items, writes its weights.
int rank_main(std::size_t rank, std::string const &directory) {
    uform::backend::mesh_t *mesh = nullptr;
    char const *message = nullptr;
    uform::backend::mesh_rendezvous_t const r{directory,
                                              "vram-staged",
                                              "127.0.0.1",
                                              rank,
                                              2,
                                              std::chrono::steady_clock::now() + std::chrono::seconds(60),
                                              std::chrono::seconds(60)};
    if (uform::backend::mesh_rendezvous(r, mesh, &message)) return std::printf("join: %s\n", message), 1;
    std::vector<float> weights, overlapped;
    std::vector<std::size_t> sizes;
    device_posing_mesh_t posing(*mesh);
    bool const trained = train(mesh, rank * 6, 6, weights, sizes) && train(&posing, rank * 6, 6, overlapped, sizes);
    uform::backend::mesh_free(mesh);
    if (!trained) return 1;
    std::ofstream out(directory + "/rank" + std::to_string(rank), std::ios::binary);
    out.write(reinterpret_cast<char const *>(weights.data()), std::streamsize(weights.size() * sizeof(float)));
    std::ofstream also(directory + "/overlapped" + std::to_string(rank), std::ios::binary);
    also.write(reinterpret_cast<char const *>(overlapped.data()), std::streamsize(overlapped.size() * sizeof(float)));
    return out && also ? 0 : 1;
}

std::vector<float> read_floats(std::string const &path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<float> floats(bytes.size() / sizeof(float));
    std::memcpy(floats.data(), bytes.data(), floats.size() * sizeof(float));
    return floats;
}

void test_mesh() {
    std::string const directory =
        (std::filesystem::temp_directory_path() / ("uform-vram-mesh-" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(directory);
    std::fflush(stdout);
    pid_t children[2];
    for (std::size_t rank = 0; rank != 2; ++rank)
        if ((children[rank] = ::fork()) == 0) std::_Exit(rank_main(rank, directory));
    std::vector<float> alone;
    std::vector<std::size_t> sizes;
    check(train(nullptr, 0, 12, alone, sizes, directory + "/start"), "one process trains the 12 texts");
    for (pid_t child : children) {
        int status = 0;
        check(::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "a rank of the staged mesh trains");
    }
    std::vector<float> const first = read_floats(directory + "/rank0"), second = read_floats(directory + "/rank1");
    check(!first.empty() && first == second, "both ranks hold the same weights");
    check(read_floats(directory + "/overlapped0") == first && read_floats(directory + "/overlapped1") == first,
          "the sums overlapped with the backward leave the same weights, bit for bit, as the staged sums after it");
    if (first.size() != alone.size()) return check(false, "the ranks saved every weight");
    // The RAM mesh test's bounds (tests/c/mesh_ranks.hpp, `compare_weights`): the difference's Frobenius norm within
    // 1e-4 of the weights' over all tensors, and within 1e-3 of each tensor's own.
    double all_difference = 0, all_norm = 0, worst = 0;
    for (std::size_t t = 0, at = 0; t != sizes.size(); at += sizes[t], ++t) {
        double difference = 0, norm = 0;
        for (std::size_t k = at; k != at + sizes[t]; ++k)
            difference += (double(first[k]) - alone[k]) * (double(first[k]) - alone[k]),
                norm += double(alone[k]) * alone[k];
        all_difference += difference, all_norm += norm;
        worst = std::max(worst, norm > 0 ? std::sqrt(difference / norm) : std::sqrt(difference));
    }
    double const all = std::sqrt(all_difference / all_norm);
    std::printf("2 staged ranks vs 1 process: all tensors within %.2e, the worst within %.2e\n", all, worst);
    check(all <= 1e-4 && worst <= 1e-3, "2 staged ranks' weights within the RAM mesh's bounds of one process's");
    check(alone != read_floats(directory + "/start"), "the weights moved from the start");
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);
}

} // namespace

int main() {
    test_staged();
    test_device();
    test_overlap();
    test_overlap_failures();
    test_mesh();
    if (failures) return 1;
    std::printf("ok\n");
    return 0;
}
