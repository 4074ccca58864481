// The step's plan over the kernel interface (cpp/train/kernels.hpp): a recording kernel set, which writes down each
// call's name and shapes and delegates to the RAM kernels, runs two steps of the golden mixed batch (batch.json on
// tiny.safetensors) beside a trainer on its own RAM kernels. The calls come in the plan's order (forward, zeroed
// gradients, backward, norm, clip, AdamW's check and step, refresh) with the batch's shapes (items, tokens, byte-logit
// rows, token-vector items, which output gradients the backward gets), and the two trainers agree bit for bit:
// going through the interface changes nothing. A cancelled step stops after the forward, before any update kernel; a
// kernel of the update that fails answers its own status (a device's `internal`), not the overflow's `corrupt`.
//
// Run from the repository root (or with UFORM_TEST_DATA naming tests/data).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/checkpoint.hpp"
#include "cpp/train/kernels.hpp"
#include "cpp/train/step.hpp"
#include "tests/unit/train_goldens.hpp"

namespace {

int failures = 0;

void check(bool ok, std::string const &what) {
    if (!ok) {
        ++failures;
        std::printf("FAIL %s\n", what.c_str());
    }
}

/// The RAM kernels, each call written down as its name and shapes first; the update's calls named by `refuse` answer
/// `internal` instead, as a device that refused a launch does.
class recording_kernels_t final : public uform::train::step_kernels_t {
  public:
    std::vector<std::string> calls;
    std::string refuse;

    uform_status_t forward(uform::train::parameters_t const &p, uform::train::trunk_request_t const &request,
                           uform::ram::parallel_t const &parallel, uform::train::poll_t poll,
                           uform::train::trunk_outputs_t &out, char const **message) noexcept override {
        std::size_t tokens = 0, flagged = 0;
        for (auto const &segment : request.segments) tokens += segment.count;
        for (std::uint8_t flag : request.token_vectors) flagged += flag;
        record("forward items=" + std::to_string(request.segments.size()) + " tokens=" + std::to_string(tokens) +
               " rows=" + std::to_string(request.logit_rows.size()) + " vectors=" + std::to_string(flagged));
        return ram.forward(p, request, parallel, poll, out, message);
    }
    uform_status_t zero_gradients(uform::train::parameters_t &p, char const **message) noexcept override {
        record("zero_gradients tensors=" + std::to_string(p.tensors.size()));
        return ram.zero_gradients(p, message);
    }
    uform_status_t backward(uform::train::parameters_t &p, float const *d_z, float const *d_vectors,
                            float const *d_logits, uform::ram::parallel_t const &parallel, uform::train::poll_t poll,
                            char const **message) noexcept override {
        record(std::string("backward z=") + (d_z ? "1" : "0") + " vectors=" + (d_vectors ? "1" : "0") +
               " logits=" + (d_logits ? "1" : "0"));
        return ram.backward(p, d_z, d_vectors, d_logits, parallel, poll, message);
    }
    uform_status_t gradient_norm(uform::train::parameters_t &p, double &norm, char const **message) noexcept override {
        record("gradient_norm");
        return ram.gradient_norm(p, norm, message);
    }
    uform_status_t scale_gradients(uform::train::parameters_t &p, double factor, uform::ram::parallel_t const &parallel,
                                   char const **message) noexcept override {
        record(std::string("scale_gradients clipped=") + (factor < 1 ? "1" : "0"));
        if (refuse == "scale_gradients") return refused(message);
        return ram.scale_gradients(p, factor, parallel, message);
    }
    uform_status_t update_stays_finite(uform::train::parameters_t &p, std::size_t k, double lr, double wd,
                                       uform::ram::parallel_t const &parallel, bool &finite,
                                       char const **message) noexcept override {
        record("update_stays_finite k=" + std::to_string(k));
        if (refuse == "update_stays_finite") return refused(message);
        return ram.update_stays_finite(p, k, lr, wd, parallel, finite, message);
    }
    uform_status_t update(uform::train::parameters_t &p, std::size_t k, double lr, double wd,
                          uform::ram::parallel_t const &parallel, char const **message) noexcept override {
        record("update k=" + std::to_string(k));
        if (refuse == "update") return refused(message);
        return ram.update(p, k, lr, wd, parallel, message);
    }
    uform_status_t refresh(uform::train::parameters_t &p, uform::ram::parallel_t const &parallel,
                           char const **message) noexcept override {
        record("refresh");
        return ram.refresh(p, parallel, message);
    }
    uform_status_t to_host(uform::train::parameters_t &p, char const **message) noexcept override {
        record("to_host");
        return ram.to_host(p, message);
    }

  private:
    static uform_status_t refused(char const **message) noexcept {
        *message = "the device refused the launch";
        return uform_status_internal_k;
    }
    void record(std::string call) noexcept {
        try {
            calls.push_back(std::move(call));
        } catch (...) {
            ++failures;
        }
    }
    uform::train::ram_kernels_t ram;
};

/// A trainer core on tiny.safetensors with the joint objective over batch.json's weights and schedule.
bool make_core(goldens::json_t const &batch, uform::train::trainer_core_t &core,
               uform::ram::parallel_t const &parallel) {
    std::string const path = goldens::directory() + "/../tiny.safetensors";
    char const *message = nullptr;
    uform::checkpoint_t checkpoint;
    if (uform::checkpoint_read_file(path.data(), path.size(), checkpoint, &message) ||
        uform::train::parameters_load(path.data(), path.size(), checkpoint, uform_pair_loss_form_info_nce_k,
                                      core.parameters, &message) ||
        core.agree(parallel, &message)) {
        std::printf("cannot load %s: %s\n", path.c_str(), message);
        return false;
    }
    goldens::json_t const &objective = batch["objective"], &weights = objective["weights"];
    goldens::json_t const &schedule = batch["schedule"];
    uform::train::settings_t &s = core.settings;
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

/// The calls one step of `data` makes, from its shapes, step count `k`, and whether its gradient is clipped.
std::vector<std::string> expected_step(goldens::batch_t const &data, std::size_t k, bool clipped) {
    std::size_t tokens = 0, choice_items = 0, flagged = 0;
    for (auto const &segment : data.segments) tokens += segment.count;
    for (std::size_t i = 0; i + 1 < data.choice_offsets.size(); ++i)
        choice_items += data.choice_offsets[i + 1] != data.choice_offsets[i];
    for (auto side : data.sides) flagged += side != uform_late_interaction_side_none_k;
    std::size_t const rows = data.mask_rows.size() + choice_items;
    return {"forward items=" + std::to_string(data.segments.size()) + " tokens=" + std::to_string(tokens) +
                " rows=" + std::to_string(rows) + " vectors=" + std::to_string(flagged),
            "zero_gradients tensors=",
            std::string("backward z=1 vectors=") + (flagged ? "1" : "0") + " logits=" + (rows ? "1" : "0"),
            "gradient_norm",
            std::string("scale_gradients clipped=") + (clipped ? "1" : "0"),
            "update_stays_finite k=" + std::to_string(k),
            "update k=" + std::to_string(k),
            "refresh"};
}

/// Whether `call` is `expected`, or starts with it where `expected` ends with '=' (a count this test does not pin).
bool matches(std::string const &call, std::string const &expected) {
    return expected.back() == '=' ? call.rfind(expected, 0) == 0 : call == expected;
}

/// A poll hook that stops at once.
bool always(void *) noexcept { return true; }

/// A progress hook that stops when the forward is done.
bool after_forward(void *, std::size_t completed, std::size_t) noexcept { return completed == 1; }

} // namespace

int main() {
    goldens::json_t const batch = goldens::batch();
    auto const t = goldens::read_safetensors(goldens::directory() + "/train.safetensors");
    goldens::batch_t const data = goldens::golden_batch(batch, t);
    uform::train::batch_t const view = data.view();
    uform::ram::parallel_t const parallel = goldens::threaded(2);
    char const *message = nullptr;

    recording_kernels_t recorder;
    uform::train::trainer_core_t recorded, plain;
    recorded.kernels = &recorder;
    if (!make_core(batch, recorded, parallel) || !make_core(batch, plain, parallel)) return 1;
    check(recorder.calls == std::vector<std::string>{"refresh"}, "agreeing refreshes the copies through the kernels");

    // A step stopped after the forward runs no backward or update kernel.
    recorder.calls.clear();
    uform::train::step_report_t a, b;
    uform_status_t status = recorded.step(view, parallel, {}, {after_forward, nullptr}, a, &message);
    check(status == uform_status_cancelled_k, "a progress hook stops the step after the forward");
    check(recorder.calls.size() == 1 && recorder.calls[0].rfind("forward ", 0) == 0,
          "a step cancelled after the forward calls the forward alone");
    status = recorded.step(view, parallel, {always, nullptr}, {}, a, &message);
    check(status == uform_status_cancelled_k && recorded.steps == 0, "a poll that stops cancels the step");

    for (std::size_t k = 0; k != 2; ++k) {
        recorder.calls.clear();
        status = recorded.step(view, parallel, {}, {}, a, &message);
        check(status == uform_status_ok_k, "a recorded step succeeds");
        check(plain.step(view, parallel, {}, {}, b, &message) == uform_status_ok_k, "a plain step succeeds");
        double const clip = recorded.settings.schedule.clip_norm;
        std::vector<std::string> const expected = expected_step(data, k, a.gradient_norm > clip);
        check(recorder.calls.size() == expected.size(), "step " + std::to_string(k) + " makes the plan's calls");
        for (std::size_t c = 0; c != std::min(expected.size(), recorder.calls.size()); ++c)
            check(matches(recorder.calls[c], expected[c]), "step " + std::to_string(k) + " call " + std::to_string(c) +
                                                               ": " + recorder.calls[c] + ", expected " + expected[c]);
        check(a.loss == b.loss && a.masking == b.masking && a.contrastive == b.contrastive &&
                  a.late_interaction == b.late_interaction && a.choices == b.choices &&
                  a.gradient_norm == b.gradient_norm && a.learning_rate == b.learning_rate && a.tokens == b.tokens,
              "step " + std::to_string(k) + " reports the plain trainer's figures");
    }
    for (std::size_t i = 0; i != plain.parameters.tensors.size(); ++i) {
        auto const &x = recorded.parameters.tensors[i], &y = plain.parameters.tensors[i];
        check(x.master == y.master && x.moment1 == y.moment1 && x.moment2 == y.moment2,
              x.name + " has the plain trainer's bits after two steps");
    }
    // A kernel that fails answers its own status, never `corrupt`; before the update nothing changed.
    for (char const *call : {"scale_gradients", "update_stays_finite", "update"}) {
        recorder.refuse = call;
        std::vector<float> const before = recorded.parameters.tensors[0].master;
        status = recorded.step(view, parallel, {}, {}, a, &message);
        check(status == uform_status_internal_k && recorded.steps == 2,
              std::string("a refused ") + call + " answers internal and counts no step");
        if (recorder.refuse != "update")
            check(recorded.parameters.tensors[0].master == before,
                  std::string("a refused ") + call + " writes nothing");
    }
    recorder.refuse.clear();

    std::vector<float> logits;
    std::uint8_t const choices[2] = {'a', 'b'};
    std::size_t const offsets[2] = {0, 2};
    std::uint16_t const tokens[3] = {'h', 'i', 257};
    uform::train::segment_t const segment{uform_modality_text_k, tokens, nullptr, nullptr, 3};
    recorder.calls.clear();
    status = recorded.choice_logits({&segment, 1}, choices, offsets, parallel, {}, logits, &message);
    check(status == uform_status_ok_k && recorder.calls.size() == 1 &&
              recorder.calls[0] == "forward items=1 tokens=3 rows=1 vectors=0",
          "calibration's logits are one forward through the kernels");
    if (failures) std::printf("%d failures\n", failures);
    else std::printf("train_kernels: the plan's calls and shapes, and the RAM trainer's bits\n");
    return failures ? 1 : 0;
}
