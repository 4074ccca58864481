// The CPU trainer's step against the PyTorch goldens of tests/data/train/: the mixed batch of
// batch.json (texts with bags and all three edge kinds, late-interaction sides, choice items, an image, an audio clip,
// a video clip) with its masks injected, on tiny.safetensors. Step 0: every term within 1e-3 relative, the
// embeddings, and every parameter's gradient at cosine >= 0.999 and relative error <= 1e-2; then 20 AdamW steps
// tracking the trajectory, every tensor within 1e-2 relative after step 20; a core resumed from what it saved scoring
// the next step with the same bits; the same seed and threads giving the same bits; a cancelled or non-finite step, or
// one whose update would overflow, changing nothing.
//
// Run from the repository root (or with UFORM_TEST_DATA naming tests/data).
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/checkpoint.hpp"
#include "cpp/train/save.hpp"
#include "cpp/train/step.hpp"
#include "tests/unit/train_goldens.hpp"

namespace {

int failures = 0;

void check(bool ok, char const *what, double a = 0, double b = 0) {
    if (!ok) {
        ++failures;
        std::printf("FAIL %s (%.9g vs %.9g)\n", what, a, b);
    }
}

using goldens::json_t;
using goldens::tensor_t;
using tensors_t = std::map<std::string, tensor_t>;

/// tiny.safetensors.
std::string tiny_path() {
    char const *data = std::getenv("UFORM_TEST_DATA");
    return std::string(data && *data ? data : "tests/data") + "/tiny.safetensors";
}

/// A trainer core on the checkpoint at `path` (tiny.safetensors unless named), at the step it saved, with batch.json's
/// objective and schedule.
bool make_core(json_t const &batch, uform::train::trainer_core_t &core, uform::ram::parallel_t const &parallel,
               std::string const &path = tiny_path()) {
    char const *message = nullptr;
    uform::checkpoint_t checkpoint;
    bool const loaded = !uform::checkpoint_read_file(path.data(), path.size(), checkpoint, &message) &&
                        !uform::train::parameters_load(path.data(), path.size(), checkpoint,
                                                       uform_pair_loss_form_info_nce_k, core.parameters, &message) &&
                        !uform::train::saved_steps(path.data(), path.size(), checkpoint, core.steps, &message);
    if (loaded) core.parameters.kernels = goldens::test_kernels();
    if (!loaded || uform::train::parameters_refresh(core.parameters, parallel, &message)) {
        std::printf("cannot load %s: %s\n", path.c_str(), message);
        return false;
    }
    json_t const &objective = batch["objective"], &weights = objective["weights"], &schedule = batch["schedule"];
    uform::train::settings_t &s = core.settings;
    s.objective = uform_objective_joint_k;
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
    return true;
}

double relative(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30); }

/// Compares a tensor with its golden `prefix + name`, whole or through the sketch, `scale` dividing ours first.
void compare_tensor(tensors_t const &t, std::string const &prefix, uform::train::tensor_t const &tensor,
                    std::vector<float> const &values, double scale, double min_cosine, double max_relative) {
    std::vector<double> ours(values.size());
    for (std::size_t i = 0; i != values.size(); ++i) ours[i] = double(values[i]) / scale;
    goldens::closeness_t c;
    auto whole = t.find(prefix + tensor.name);
    if (whole != t.end()) c = goldens::compare(ours.data(), whole->second.values.data(), ours.size());
    else {
        std::vector<double> const sketch = goldens::sketch(tensor.name, ours.data(), ours.size());
        c = goldens::compare(sketch.data(), t.at(prefix + tensor.name + ".sketch").values.data(), sketch.size());
    }
    std::string const what = prefix + tensor.name;
    check(c.cosine >= min_cosine, (what + " cosine").c_str(), c.cosine, min_cosine);
    check(c.relative <= max_relative, (what + " relative error").c_str(), c.relative, max_relative);
}

/// A poll hook that stops at once.
bool always(void *) noexcept { return true; }

/// A profiled core's phases over steps of `elapsed` CPU seconds: every phase timed (the sums, with no mesh, near
/// nothing), each part within its whole, and the wholes within the steps.
void check_phases(double const *phases, double elapsed) {
    using uform::train::step_phase_t;
    auto const at = [&](step_phase_t phase) { return phases[std::size_t(phase)]; };
    for (std::size_t i = 0; i != std::size_t(step_phase_t::count); ++i)
        if (step_phase_t(i) != step_phase_t::sums)
            check(phases[i] > 0, "a profiled step times each phase", double(i), phases[i]);
    check(at(step_phase_t::sums) >= -1e-9, "the sums' time is the backward phase's less the trunk's");
    check(at(step_phase_t::forward_linears) + at(step_phase_t::forward_attention) <= at(step_phase_t::forward),
          "the forward's products within the forward", at(step_phase_t::forward_linears), at(step_phase_t::forward));
    check(at(step_phase_t::backward_linears) + at(step_phase_t::backward_attention) <= at(step_phase_t::backward),
          "the backward's products within the backward", at(step_phase_t::backward_linears),
          at(step_phase_t::backward));
    double const wholes = at(step_phase_t::forward) + at(step_phase_t::losses) + at(step_phase_t::backward) +
                          at(step_phase_t::sums) + at(step_phase_t::clip) + at(step_phase_t::adamw) +
                          at(step_phase_t::refresh);
    check(wholes <= elapsed, "the phases sum within the steps", wholes, elapsed);
}

/// Save, then resume: a core loaded from what `core` saved continues its step count and scores the next step with its
/// bits (the forward reads the BF16 copies the checkpoint holds; only AdamW's moments, which it does not keep, differ).
void check_resume(json_t const &batch, uform::train::trainer_core_t &core, uform::train::batch_t const &view,
                  uform::ram::parallel_t const &parallel) {
    // Named by the products' tiles too, so the test's runs with and without them may run at once.
    char const *tiles = std::getenv("UFORM_TEST_TILES");
    std::string const path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                             "/uform-train-step-resume" + (tiles && *tiles ? std::string("-") + tiles : "") +
                             ".safetensors";
    char const *message = nullptr;
    uform_status_t status =
        uform::train::save_checkpoint(core.parameters, core.steps, path.data(), path.size(), &message);
    check(status == uform_status_ok_k, "save", status);
    uform::train::trainer_core_t resumed;
    bool const made = status == uform_status_ok_k && make_core(batch, resumed, parallel, path);
    std::remove(path.c_str());
    check(made && resumed.steps == core.steps, "a resumed core continues the step count", double(resumed.steps),
          double(core.steps));
    if (!made) return;
    uform::train::step_report_t saved, loaded;
    status = core.step(view, parallel, {}, {}, saved, &message);
    check(status == uform_status_ok_k && resumed.step(view, parallel, {}, {}, loaded, &message) == uform_status_ok_k,
          "the saved and the resumed cores step");
    check(saved.loss == loaded.loss, "the resumed core's loss has the saved one's bits", loaded.loss, saved.loss);
    check(saved.gradient_norm == loaded.gradient_norm, "the resumed core's gradient norm has the saved one's bits",
          loaded.gradient_norm, saved.gradient_norm);
    check(saved.learning_rate == loaded.learning_rate, "the resumed core's rate is the saved one's",
          loaded.learning_rate, saved.learning_rate);
}

} // namespace

int main() {
    json_t const batch = goldens::batch();
    tensors_t const t = goldens::read_safetensors(goldens::directory() + "/train.safetensors");
    goldens::batch_t const data = goldens::golden_batch(batch, t);
    uform::train::batch_t const view = data.view();
    uform::ram::parallel_t const parallel = goldens::threaded(2);
    char const *message = nullptr;

    uform::train::trainer_core_t core;
    if (!make_core(batch, core, parallel)) return 1;
    std::vector<std::vector<float>> initial;
    for (auto const &tensor : core.parameters.tensors) initial.push_back(tensor.master);

    // A cancelled step changes nothing.
    uform::train::step_report_t report;
    uform_status_t status = core.step(view, parallel, {always, nullptr}, {}, report, &message);
    check(status == uform_status_cancelled_k, "a poll that stops cancels the step", status);
    check(core.steps == 0, "a cancelled step is not counted");
    for (std::size_t i = 0; i != initial.size(); ++i)
        check(core.parameters.tensors[i].master == initial[i], "a cancelled step leaves the weights");

    // A step whose loss is not finite changes nothing either, and the next proceeds.
    goldens::batch_t broken = goldens::golden_batch(batch, t);
    broken.targets[0] = NAN;
    status = core.step(broken.view(), parallel, {}, {}, report, &message);
    check(status == uform_status_corrupt_k, "a NaN target answers corrupt", status);
    check(core.steps == 0, "a non-finite step is not counted");
    for (std::size_t i = 0; i != initial.size(); ++i)
        check(core.parameters.tensors[i].master == initial[i], "a non-finite step leaves the weights");

    // A step whose update would overflow a weight changes nothing, its moments included: the byte 0xFF's embedding
    // (a byte no UTF-8 text holds, so the forward never reads it and its gradient is zero) planted at the largest
    // float with a first moment pushing it further.
    if (uform::train::tensor_t *bytes = core.parameters.find("embed.byte.weight")) {
        std::size_t const at = 255 * bytes->shape[1];
        float const master = bytes->master[at];
        bytes->master[at] = FLT_MAX;
        bytes->moment1[at] = -FLT_MAX;
        std::vector<float> const moments = bytes->moment1;
        status = core.step(view, parallel, {}, {}, report, &message);
        check(status == uform_status_corrupt_k, "an overflowing update answers corrupt", status);
        check(core.steps == 0, "an overflowing step is not counted");
        check(bytes->master[at] == FLT_MAX && bytes->moment1 == moments, "an overflowing step leaves the moments");
        bytes->master[at] = master;
        bytes->moment1[at] = 0;
        for (std::size_t i = 0; i != initial.size(); ++i)
            check(core.parameters.tensors[i].master == initial[i], "an overflowing step leaves the weights");
    } else {
        check(false, "the tiny model has a byte embedding");
    }

    // Step 0: the terms, the embeddings and every gradient.
    tensor_t const &trajectory = t.at("trajectory");
    status = core.step(view, parallel, {}, {}, report, &message);
    check(status == uform_status_ok_k, "step 0 runs", status);
    if (status) std::printf("  %s\n", message);
    tensor_t const &terms = t.at("step0.terms");
    double const ours[5] = {report.masking, report.contrastive, report.late_interaction, report.choices, report.loss};
    char const *names[5] = {"masking term", "contrastive term", "late-interaction term", "choices term", "joint loss"};
    for (int k = 0; k != 5; ++k) {
        std::printf("step 0 %-22s %.7f golden %.7f\n", names[k], ours[k], terms.values[k]);
        check(relative(ours[k], terms.values[k]) <= 1e-3, names[k], ours[k], terms.values[k]);
    }
    tensor_t const &z = t.at("step0.z");
    std::size_t const dims = core.parameters.geometry.dimensions;
    for (std::size_t i = 0; i != z.shape[0]; ++i) {
        goldens::closeness_t const c = goldens::compare(report.embeddings + i * dims, &z.values[i * dims], dims);
        check(c.cosine >= 0.9999, "step 0 embedding cosine", c.cosine, double(i));
    }
    double const norm = report.gradient_norm, clip = std::min(1.0, double(core.settings.schedule.clip_norm) / norm);
    std::printf("step 0 gradient norm %.6f golden %.6f\n", norm, trajectory.values[5]);
    check(relative(norm, trajectory.values[5]) <= 1e-2, "step 0 gradient norm", norm, trajectory.values[5]);
    for (auto const &tensor : core.parameters.tensors)
        compare_tensor(t, "grad.", tensor, tensor.grad, double(float(clip)), 0.999, 1e-2);

    // Steps 1-19 track the trajectory; after step 20 every tensor is within 1e-2 relative.
    for (std::size_t k = 1; k != trajectory.shape[0] && status == uform_status_ok_k; ++k) {
        status = core.step(view, parallel, {}, {}, report, &message);
        check(status == uform_status_ok_k, "a step runs", status);
        double const *row = &trajectory.values[k * 7];
        std::printf("step %2zu loss %.6f golden %.6f  norm %.5f golden %.5f  rate %.6g\n", k, report.loss, row[4],
                    report.gradient_norm, row[5], report.learning_rate);
        check(relative(report.loss, row[4]) <= 1e-2, "the trajectory's loss", report.loss, row[4]);
        check(relative(report.learning_rate, row[6]) <= 1e-6, "the trajectory's rate", report.learning_rate, row[6]);
    }
    for (std::size_t i = 0; i != core.parameters.tensors.size(); ++i) {
        auto const &tensor = core.parameters.tensors[i];
        compare_tensor(t, "after.", tensor, tensor.master, 1.0, 0.9999, 1e-2);
    }

    check_resume(batch, core, view, parallel);

    // The same seed and threads give the same bits.
    uform::train::trainer_core_t again;
    if (!make_core(batch, again, parallel)) return 1;
    for (int k = 0; k != 3; ++k) again.step(view, parallel, {}, {}, report, &message);
    // The third is profiled (cpp/train/phases.hpp): timing its phases leaves its bits.
    uform::train::trainer_core_t third;
    if (!make_core(batch, third, parallel)) return 1;
    double phases[std::size_t(uform::train::step_phase_t::count)] = {};
    third.phases = phases;
    double const start = uform::train::process_cpu_seconds();
    for (int k = 0; k != 3; ++k) third.step(view, parallel, {}, {}, report, &message);
    check_phases(phases, uform::train::process_cpu_seconds() - start);
    for (std::size_t i = 0; i != again.parameters.tensors.size(); ++i)
        check(again.parameters.tensors[i].master == third.parameters.tensors[i].master,
              "the same seed and threads give the same weights");

    // Calibration's logits in chunks of whole items: 40 choice items of 300 tokens (12,000 tokens, two chunks) give
    // each item the logits it has alone.
    {
        std::vector<std::vector<std::uint16_t>> tokens(40);
        std::vector<uform::train::segment_t> segments;
        std::vector<std::uint8_t> legal;
        std::vector<std::size_t> offsets{0};
        for (std::size_t i = 0; i != tokens.size(); ++i) {
            for (std::size_t k = 0; k != 299; ++k) tokens[i].push_back(std::uint16_t(32 + (i * 31 + k * 7) % 95));
            tokens[i].push_back(257);
            segments.push_back({uform_modality_text_k, tokens[i].data(), nullptr, nullptr, tokens[i].size()});
            for (char c : {'A', 'B', 'C'}) legal.push_back(std::uint8_t(c));
            offsets.push_back(legal.size());
        }
        check(12000 > uform::train::calibration_chunk_tokens_k, "the items take more than one chunk");
        std::vector<float> together, alone;
        status = core.choice_logits(segments, legal.data(), offsets.data(), parallel, {}, together, &message);
        check(status == uform_status_ok_k, "calibration's logits over two chunks", status);
        double worst = 0;
        for (std::size_t i = 0; i != segments.size() && status == uform_status_ok_k; ++i) {
            status = core.choice_logits({&segments[i], 1}, legal.data() + offsets[i], offsets.data(), parallel, {},
                                        alone, &message);
            for (std::size_t k = 0; k != 3; ++k) worst = std::max(worst, relative(together[i * 3 + k], alone[k]));
        }
        std::printf("calibration's logits in chunks against alone: worst relative difference %.3g\n", worst);
        check(status == uform_status_ok_k && worst <= 1e-5, "chunked logits equal each item's alone", worst);
    }

    std::printf(failures ? "%d failures\n" : "all passed\n", failures);
    return failures ? 1 : 0;
}
