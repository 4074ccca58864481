// The CUDA trainer's whole step against the RAM trainer's (scripts/gpu-check.sh --train runs it; without a device it
// says so and exits 77, which ctest reports as skipped). Two trainer cores on tiny.safetensors follow the same plan
// (cpp/train/step.cpp) over the golden mixed batch of tests/data/train (texts masked and with choices, an image, a
// video, an audio; every term of the joint objective), one on the RAM kernels, one on the CUDA kernels
// (cuda/train/step_kernels.hpp):
// - the first step's loss and each term within 1e-3 relative, each tensor's gradient at cosine >= 0.999 and relative
//   error <= 1e-2;
// - after `UFORM_TRAIN_CHECK_STEPS` steps (20 unless set; gpu-check runs 2 under compute-sanitizer), each tensor's
//   weights within 5e-3 relative, and no device allocation after the first step;
// - the GPU trainer's checkpoint (`save_checkpoint` after the device's tensors come back once) loaded as a RAM
//   trainer's parameters: its embeddings of the batch at row cosine >= 0.9999 of the GPU trainer's own, and one more
//   step of each from there within 1e-3 relative (a GPU-trained checkpoint resumes on the CPU and vice versa).
//
// Run from the repository root (or with UFORM_TEST_DATA naming tests/data).
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/checkpoint.hpp"
#include "cpp/train/save.hpp"
#include "cpp/train/step.hpp"
#include "cuda/train/step_kernels.hpp"
#include "tests/unit/train_goldens.hpp"

namespace {

constexpr int skip_k = 77;
int failures = 0, passes = 0;

void check(bool ok, std::string const &what, double a = 0, double b = 0) {
    if (ok) {
        ++passes;
        return;
    }
    ++failures;
    std::printf("FAIL %s (%.9g vs %.9g)\n", what.c_str(), a, b);
}

/// Whether `a` is within `bound` relative of `b` (absolutely, for values near zero).
bool near(double a, double b, double bound) { return std::fabs(a - b) <= bound * std::max(std::fabs(b), 1e-6); }

/// The settings of batch.json's joint objective and schedule.
void configure(goldens::json_t const &batch, uform::train::settings_t &s) {
    goldens::json_t const &objective = batch["objective"], &weights = objective["weights"];
    goldens::json_t const &schedule = batch["schedule"];
    s.masking = {0.15f, 3.0f, float(weights["masking"].value)};
    s.contrastive = {uform_pair_loss_form_info_nce_k, uform_negatives_mesh_and_hard_k,
                     float(objective["hard_negative_weight"].value), float(weights["contrastive"].value)};
    s.late_interaction = {32, float(weights["late_interaction"].value)};
    s.choices = {2, float(weights["choices"].value)};
    s.schedule = {schedule["steps"].index(),
                  schedule["warmup_steps"].index(),
                  float(schedule["learning_rate"].value),
                  float(schedule["min_learning_rate"].value),
                  float(schedule["weight_decay"].value),
                  float(schedule["clip_norm"].value)};
    s.seed = 2026;
}

/// Loads the checkpoint at `path` into `core` (on `kernels` when given: opened on GPU 0 first), then agrees.
bool make_core(std::string const &path, goldens::json_t const &batch, uform::train::trainer_core_t &core,
               uform::cuda::train::cuda_kernels_t *kernels, uform::ram::parallel_t const &parallel) {
    char const *message = nullptr;
    uform::checkpoint_t checkpoint;
    configure(batch, core.settings);
    core.kernels = kernels;
    if (uform::checkpoint_read_file(path.data(), path.size(), checkpoint, &message) ||
        uform::train::parameters_load(path.data(), path.size(), checkpoint, uform_pair_loss_form_info_nce_k,
                                      core.parameters, &message) ||
        uform::train::saved_steps(path.data(), path.size(), checkpoint, core.steps, &message) ||
        (kernels != nullptr && kernels->open(0, core.parameters, &message)) || core.agree(parallel, &message)) {
        std::printf("cannot make a trainer of %s: %s\n", path.c_str(), message);
        return false;
    }
    return true;
}

/// Every term of two steps' reports within `bound` relative.
void compare_reports(uform::train::step_report_t const &gpu, uform::train::step_report_t const &ram,
                     std::string const &what, double bound) {
    check(near(gpu.loss, ram.loss, bound), what + ": the loss", gpu.loss, ram.loss);
    check(near(gpu.masking, ram.masking, bound), what + ": the masking term", gpu.masking, ram.masking);
    check(near(gpu.contrastive, ram.contrastive, bound), what + ": the contrastive term", gpu.contrastive,
          ram.contrastive);
    check(near(gpu.late_interaction, ram.late_interaction, bound), what + ": the late-interaction term",
          gpu.late_interaction, ram.late_interaction);
    check(near(gpu.choices, ram.choices, bound), what + ": the choices term", gpu.choices, ram.choices);
    check(gpu.tokens == ram.tokens, what + ": the tokens", double(gpu.tokens), double(ram.tokens));
}

/// The cosine of two arrays and the relative error of `a` against `b`.
void similarity(std::vector<float> const &a, std::vector<float> const &b, double &cosine, double &error) {
    double ab = 0, aa = 0, bb = 0, dd = 0;
    for (std::size_t i = 0; i != a.size(); ++i) {
        ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
        dd += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    }
    cosine = aa == 0 && bb == 0 ? 1.0 : ab / std::sqrt(aa * bb + 1e-300);
    error = bb == 0 ? std::sqrt(dd) : std::sqrt(dd / bb);
}

/// The z rows of a forward of `segments` on `kernels`.
std::vector<float> embeddings(uform::train::step_kernels_t &kernels, uform::train::parameters_t const &p,
                              std::span<uform::train::segment_t const> segments,
                              uform::ram::parallel_t const &parallel) {
    uform::train::trunk_outputs_t out;
    char const *message = nullptr;
    if (kernels.forward(p, {segments, {}, {}}, parallel, {}, out, &message) != uform_status_ok_k) {
        check(false, std::string("a forward: ") + (message ? message : ""));
        return {};
    }
    std::size_t const D = p.geometry.dimensions;
    return {out.z, out.z + segments.size() * D};
}

} // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("SKIPPED: no CUDA device is present; the CUDA trainer's step runs against the RAM trainer's where "
                    "one is (scripts/gpu-check.sh --train).\n");
        return skip_k;
    }
    char const *steps_text = std::getenv("UFORM_TRAIN_CHECK_STEPS");
    std::size_t const steps = steps_text && *steps_text ? std::size_t(std::atoi(steps_text)) : 20;
    goldens::json_t const batch = goldens::batch();
    auto const t = goldens::read_safetensors(goldens::directory() + "/train.safetensors");
    goldens::batch_t const data = goldens::golden_batch(batch, t);
    uform::train::batch_t const view = data.view();
    uform::ram::parallel_t const parallel = goldens::threaded(4);
    std::string const tiny = goldens::directory() + "/../tiny.safetensors";
    char const *message = nullptr;

    uform::cuda::train::cuda_kernels_t cuda;
    uform::train::trainer_core_t gpu, ram;
    if (!make_core(tiny, batch, gpu, &cuda, parallel) || !make_core(tiny, batch, ram, nullptr, parallel)) return 1;
    uform::train::step_report_t a, b;
    std::size_t allocations = 0;
    for (std::size_t k = 0; k != steps; ++k) {
        uform_status_t const status = gpu.step(view, parallel, {}, {}, a, &message);
        check(status == uform_status_ok_k, "GPU step " + std::to_string(k) + (message ? message : ""));
        check(ram.step(view, parallel, {}, {}, b, &message) == uform_status_ok_k, "RAM step " + std::to_string(k));
        if (status != uform_status_ok_k) break;
        if (k == 0) {
            compare_reports(a, b, "the first step", 1e-3);
            check(cuda.to_host(gpu.parameters, &message) == uform_status_ok_k, "the gradients come back");
            for (std::size_t i = 0; i != ram.parameters.tensors.size(); ++i) {
                double cosine = 0, error = 0;
                similarity(gpu.parameters.tensors[i].grad, ram.parameters.tensors[i].grad, cosine, error);
                std::string const name = ram.parameters.tensors[i].name;
                check(cosine >= 0.999, name + ": the gradient's cosine", cosine, 0.999);
                check(error <= 1e-2, name + ": the gradient's relative error", error, 1e-2);
            }
            allocations = cuda.allocations();
        }
    }
    check(cuda.allocations() == allocations, "no device allocation after the first step", double(cuda.allocations()),
          double(allocations));
    check(cuda.to_host(gpu.parameters, &message) == uform_status_ok_k, "the weights come back");
    for (std::size_t i = 0; i != ram.parameters.tensors.size(); ++i) {
        double cosine = 0, error = 0;
        similarity(gpu.parameters.tensors[i].master, ram.parameters.tensors[i].master, cosine, error);
        check(error <= 5e-3, ram.parameters.tensors[i].name + ": the weights after the steps", error, 5e-3);
    }

    // Save (the device's tensors came back once above), load on the CPU, encode, resume on both.
    std::string const saved =
        std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/uform-vram-train-step.safetensors";
    check(uform::train::save_checkpoint(gpu.parameters, gpu.steps, saved.data(), saved.size(), &message) ==
              uform_status_ok_k,
          "the GPU trainer saves");
    uform::train::trainer_core_t loaded;
    if (!make_core(saved, batch, loaded, nullptr, parallel)) return 1;
    check(loaded.steps == gpu.steps, "the checkpoint's steps", double(loaded.steps), double(gpu.steps));
    uform::train::ram_kernels_t cpu;
    std::vector<float> const ours = embeddings(cuda, gpu.parameters, data.segments, parallel);
    std::vector<float> const theirs = embeddings(cpu, loaded.parameters, data.segments, parallel);
    std::size_t const D = gpu.parameters.geometry.dimensions;
    for (std::size_t i = 0; i + 1 <= ours.size() / D && ours.size() == theirs.size(); ++i) {
        std::vector<float> const x(ours.begin() + i * D, ours.begin() + (i + 1) * D);
        std::vector<float> const y(theirs.begin() + i * D, theirs.begin() + (i + 1) * D);
        double cosine = 0, error = 0;
        similarity(x, y, cosine, error);
        check(cosine >= 0.9999, "item " + std::to_string(i) + ": the loaded checkpoint's embedding", cosine, 0.9999);
    }
    uform::cuda::train::cuda_kernels_t resumed_kernels;
    uform::train::trainer_core_t resumed;
    if (!make_core(saved, batch, resumed, &resumed_kernels, parallel)) return 1;
    check(resumed.step(view, parallel, {}, {}, a, &message) == uform_status_ok_k, "the GPU resumes the checkpoint");
    check(loaded.step(view, parallel, {}, {}, b, &message) == uform_status_ok_k, "the CPU resumes the checkpoint");
    compare_reports(a, b, "the resumed step", 1e-3);
    std::remove(saved.c_str());
    std::printf("vram_train_step: %zu steps, %d passed, %d failed\n", steps, passes, failures);
    return failures ? 1 : 0;
}
