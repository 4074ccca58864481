// A VRAM trainer's gradients over a mesh, on the host (cuda/train/gradient_sums.hpp: host code, so this test runs in
// every RAM build too):
// - the staged path sums every array, device and host, in the buckets the RAM trainer sums in
// (cpp/train/collectives.hpp,
//   `for_each_bucket`), an array larger than the bucket in bucket-sized chunks; it waits for the copies before each sum
//   and after each bucket; a copy the device refuses answers `device`, a sum that fails answers its status, and nothing
//   is summed after either;
// - the NCCL path hands each bucket's device arrays to the transport as one group, then sums the host arrays (the
//   `trainer.*` scalars) packed in one host sum;
// - the trainer over a Gloo mesh of 2 processes, on a kernel set that keeps its gradients away from the host arrays
//   (poisoned with NaN after the backward, as a device's are) and sums them through the staged path, takes the same 5
//   steps as one process over the same 12 texts: weights within the RAM mesh test's bounds of one process's (1e-4 over
//   all tensors, 1e-3 per tensor), and equal on both ranks.
#include <cmath>
#include <cstdio>
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
        if (stream != this) return uform::fail(message, uform_status_internal_k, "another stream");
        sums.push_back(0);
        for (std::span<float> array : values) {
            sums.push_back(array.size());
            for (float &value : array) value *= 2;
        }
        return uform_status_ok_k;
    }
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
    std::vector<std::span<float>> group;
    std::vector<float> scalars;
    char const *message = nullptr;
    auto device = [&](std::size_t t) { return arrays.device(t); };
    auto host = [&](std::size_t t) { return arrays.host(t); };
    check(uform::cuda::train::device_gradient_sums(mesh, sizes.size(), device, host, &mesh, group, scalars, &message) ==
                  uform_status_ok_k &&
              arrays.doubled(),
          "the NCCL path sums every array");
    check(mesh.sums == std::vector<std::size_t>{0, 3, 4, 5, 3},
          "one device group of the device arrays in order, then the host arrays packed in one host sum");
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
        for (std::size_t t = 0; t != p.tensors.size(); ++t) {
            if (scalar(p, t)) continue;
            kept_[t] = p.tensors[t].grad;
            std::fill(p.tensors[t].grad.begin(), p.tensors[t].grad.end(), std::nanf(""));
        }
        return uform_status_ok_k;
    }
    uform_status_t sum_gradients(parameters_t &p, collectives_t &mesh, std::vector<float> &bucket,
                                 char const **message) noexcept override {
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

  private:
    static bool scalar(parameters_t const &p, std::size_t t) { return p.tensors[t].name.starts_with("trainer."); }

    uform::train::ram_kernels_t ram_;
    std::vector<std::vector<float>> kept_;
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
    if (kernels.copies_.copies == 0 && mesh && mesh->ranks() > 1) return std::printf("nothing staged\n"), false;
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
    std::vector<float> weights;
    std::vector<std::size_t> sizes;
    bool const trained = train(mesh, rank * 6, 6, weights, sizes);
    uform::backend::mesh_free(mesh);
    if (!trained) return 1;
    std::ofstream out(directory + "/rank" + std::to_string(rank), std::ios::binary);
    out.write(reinterpret_cast<char const *>(weights.data()), std::streamsize(weights.size() * sizeof(float)));
    return out ? 0 : 1;
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
    test_mesh();
    if (failures) return 1;
    std::printf("ok\n");
    return 0;
}
